"""`--compare`: the scenario as written beside a what-if, on the numbers that decide."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodewright.cli import main
from nodewright.sim.compare import Comparison
from nodewright.sim.loading import load_scenario
from nodewright.sim.result import RunResult
from nodewright.sim.runner import run_scenario
from nodewright.sim.scenario import Scenario
from nodewright.sim.whatif import load_replacements, with_replacements
from tests.sim.conftest import SCENARIOS, ScenarioWriter

WHAT_IF = SCENARIOS / "what-if"


@pytest.fixture(scope="module")
def day() -> Scenario:
    scenario, problems = load_scenario(SCENARIOS / "what-if-spot.yaml")
    assert scenario is not None, problems
    return scenario


@pytest.fixture(scope="module")
def as_written(day: Scenario) -> RunResult:
    return run_scenario(day)


def what_if(day: Scenario, manifest: str) -> RunResult:
    replacements, problems = load_replacements([str(WHAT_IF / manifest)])
    assert not problems
    variant, notes = with_replacements(day, replacements)
    assert notes == []  # it replaces the scenario's NodePool, adds nothing
    return run_scenario(variant, label="what-if")


def test_allowing_spot_spends_less_for_the_same_day(
    day: Scenario, as_written: RunResult
) -> None:
    variant = what_if(day, "allow-spot.yaml")

    comparison = Comparison(as_written, variant, ("allow-spot.yaml",), ())
    assert variant.summary.dollars_spent < 0.6 * as_written.summary.dollars_spent
    assert variant.summary.peak_nodes == as_written.summary.peak_nodes
    assert {node.capacity_type for node in variant.fleet} == {"spot"}
    assert [row[0] for row in comparison.rows()[:5]] == [
        "dollars spent", "node-hours", "peak nodes", "pending pod-seconds", "disruptions"]


def test_the_command_prints_and_charts_both_runs_side_by_side(
    write_scenario: ScenarioWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: grow
        manifests:
          - WORKSHOP/ec2nodeclass.yaml
          - WORKSHOP/inflate.yaml
          - BASE
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect: {nodes: 1, capacityTypes: {on-demand: 1}}
        """.replace("BASE", str(WHAT_IF / "base-nodepool.yaml")))
    report, timeline = tmp_path / "report.html", tmp_path / "timeline.json"

    code = main(["simulate", str(path), "--quiet", "--compare", str(WHAT_IF / "allow-spot.yaml"),
                 "--report", str(report), "--json", str(timeline)])

    output = capsys.readouterr().out
    assert code == 0  # the exit status is the scenario's as written
    assert f"What-if: {WHAT_IF / 'allow-spot.yaml'}" in output
    assert re.search(r"^  dollars spent +\$\d+\.\d{4} +\$\d+\.\d{4} +-\d+%$", output,
                     re.MULTILINE)
    assert re.search(r"^  peak nodes +1 +1 +=$", output, re.MULTILINE)
    assert "(the what-if run: 0 of 1 expectations held" in output
    compare = json.loads(timeline.read_text())["compare"]
    assert set(compare["metrics"]) >= {"dollarsSpent", "nodeHours", "peakNodes",
                                       "pendingPodSeconds", "disruptions"}
    assert compare["whatIf"]["fleet"][0]["capacityType"] == "spot"
    html = report.read_text()
    assert "What-if: " in html and html.count("<svg") == 5


def test_allowing_r5_changes_the_fleet_not_the_workload(
    day: Scenario, as_written: RunResult
) -> None:
    variant = what_if(day, "add-r5.yaml")

    comparison = Comparison(as_written, variant, ("add-r5.yaml",), ())
    assert variant.summary.pending_pod_seconds == pytest.approx(
        as_written.summary.pending_pod_seconds, rel=0.5)
    assert any(sample.nodes.keys() & {"r5.large", "r5.xlarge", "r5.2xlarge"}
               for sample in variant.samples)
    assert comparison.rows()[0][0] == "dollars spent"


def test_a_longer_consolidate_after_keeps_nodes_longer(
    day: Scenario, as_written: RunResult
) -> None:
    variant = what_if(day, "consolidate-after-5m.yaml")

    assert variant.summary.node_hours > as_written.summary.node_hours
    assert variant.summary.dollars_spent > as_written.summary.dollars_spent


def test_a_what_if_object_the_scenario_lacks_is_added_with_a_note(day: Scenario) -> None:
    replacements, _ = load_replacements([str(WHAT_IF / "allow-spot.yaml")])
    renamed = replacements[0]
    renamed.body["metadata"]["name"] = "spot"

    variant, notes = with_replacements(day, [renamed])

    assert notes == ["NodePool/spot is not in the scenario's manifests; the what-if adds it"]
    assert [d.name for d in variant.manifests if d.kind == "NodePool"] == ["default", "spot"]


def test_an_invalid_what_if_manifest_stops_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text((WHAT_IF / "allow-spot.yaml").read_text().replace(
        "consolidateAfter: 1m", "consolidateAfter: soon"))

    code = main(["simulate", str(SCENARIOS / "what-if-spot.yaml"), "--compare", str(broken)])

    output = capsys.readouterr().out
    assert code == 2
    assert f"{broken}:" in output and "spec.disruption.consolidateAfter" in output
    assert "[00:00:00]" not in output
