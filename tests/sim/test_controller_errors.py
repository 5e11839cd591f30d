"""A controller that keeps failing is retried, as in a cluster, and the run goes on; the
result says so (timeline, summary, JSON, report) instead of passing off what the failures
held up as the autoscaler's answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodewright.cli import main
from nodewright.controllers.nodepool.cost import NodeClaimCost
from nodewright.runtime.reconciler import Result
from nodewright.sim.controller_errors import error_text

from .conftest import ScenarioWriter

SCENARIO = """
    name: failing-controller
    manifests: [WORKSHOP]
    steps:
      - scale: {name: inflate, replicas: 3}
      - settle: {timeout: 10m}
    """


def run(path: Path, capsys: pytest.CaptureFixture[str], out: Path) -> tuple[int, str, dict]:
    code = main(["simulate", str(path), "--json", str(out), "--report",
                 str(out.with_suffix(".html"))])
    printed = capsys.readouterr().out
    return code, printed, json.loads(out.read_text(encoding="utf-8"))


def test_a_controller_that_keeps_failing_is_on_the_timeline_once_and_counted(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    def broken(self: NodeClaimCost, key: str) -> Result:
        raise TypeError("object of type 'Pass' has no len()")

    monkeypatch.setattr(NodeClaimCost, "reconcile", broken)

    code, printed, document = run(write_scenario(SCENARIO), capsys, tmp_path / "run.json")

    (error,) = document["controllerErrors"]
    assert error["controller"] == "state.cost.nodeclaim"
    assert error["error"] == "TypeError: object of type 'Pass' has no len()"
    assert error["count"] > 1, "each NodeClaim's reconcile failed, and was retried"
    lines = [event for event in document["timeline"]
             if event["source"] == "scenario" and event["kind"] == "error"]
    assert len(lines) == 1 and lines[0]["at"] == error["firstAt"]
    assert "state.cost.nodeclaim: reconcile" in lines[0]["message"]
    assert "Controller errors (retried" in printed
    assert f"a reconcile failed {error['count']} times" in printed
    assert "controller error (retried)" in (tmp_path / "run.html").read_text(encoding="utf-8")
    # Not a verdict of its own: the scenario's expectations decide it.
    assert code == 0 and document["passed"] is True


def test_a_clean_run_lists_no_controller_errors(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    code, printed, document = run(write_scenario(SCENARIO), capsys, tmp_path / "run.json")

    assert code == 0
    assert document["controllerErrors"] == []
    assert "Controller errors" not in printed


def test_an_error_is_one_line_and_cut_when_long() -> None:
    assert error_text(ValueError("two\n  lines")) == "ValueError: two lines"
    assert error_text(KeyError()) == "KeyError"
    long = error_text(RuntimeError("x" * 1000))
    assert len(long) == 300 and long.endswith("...")


def test_the_json_of_a_failing_run_is_the_same_bytes_twice(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    def broken(self: NodeClaimCost, key: str) -> Result:
        raise RuntimeError("boom")

    monkeypatch.setattr(NodeClaimCost, "reconcile", broken)
    path = write_scenario(SCENARIO)
    run(path, capsys, tmp_path / "a.json")
    run(path, capsys, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
