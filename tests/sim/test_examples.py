"""Every example scenario runs green, and gives the same JSON on a second run (in another
process, with another hash seed, so no set or dict order can sneak into the output; one
process runs every example's second run, beside the first runs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.sim.conftest import REPO, SCENARIOS
from tests.sim.simulate_each import DONE

EXAMPLES = sorted(path.name for path in SCENARIOS.glob("*.yaml"))


def test_the_examples_are_the_ones_the_docs_promise() -> None:
    assert EXAMPLES == [
        "budgets.yaml", "capacity-buffer.yaml", "drift-ami-upgrade.yaml",
        "reserved-capacity.yaml", "spot-interruption.yaml", "statefulset-volumes.yaml",
        "static-capacity.yaml", "teams.yaml", "topology-spread.yaml", "what-if-spot.yaml",
        "workshop.yaml",
    ]


class SecondRuns:
    """Each example's second run, in one other process (PYTHONHASHSEED fixed, so another
    seed than this process's random one) that simulates them one after another
    (tests/sim/simulate_each.py) while the first runs go on here."""

    def __init__(self, examples: list[str], folder: Path) -> None:
        self.folder = folder
        self.done = {example: threading.Event() for example in examples}
        self.codes: dict[str, int] = {}
        self.output: list[str] = []
        arguments = [str(path) for example in examples
                     for path in (SCENARIOS / example, self.json(example))]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.sim.simulate_each", *arguments],
            cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "12345"},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, name="second-runs", daemon=True)
        self.reader.start()

    def json(self, example: str) -> Path:
        return self.folder / f"{example}.json"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            word, _, rest = line.partition(" ")
            if word == DONE:
                example, _, code = rest.strip().partition(" ")
                self.codes[example] = int(code)
                self.done[example].set()
        self.process.wait()
        for event in self.done.values():
            event.set()  # the process ended: whatever did not run is missing from `codes`

    def result(self, example: str) -> bytes:
        """The second run's JSON (it must have ended with exit code 0)."""
        assert self.done[example].wait(timeout=600), f"{example}: no second run in 600 s"
        assert self.codes.get(example) == 0, "".join(self.output)
        return self.json(example).read_bytes()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.reader.join(10)


EXAMPLE_TEST = "test_an_example_holds_every_expectation_and_runs_the_same_twice"


@pytest.fixture(scope="module")
def second_runs(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecondRuns]:
    """The selected examples' second runs, started together when the first is needed."""
    selected = [item.callspec.params["example"] for item in request.session.items  # type: ignore[attr-defined]
                if item.module is request.module
                and getattr(item, "originalname", "") == EXAMPLE_TEST]
    runs = SecondRuns(selected, tmp_path_factory.mktemp("second-runs"))
    yield runs
    runs.stop()


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_holds_every_expectation_and_runs_the_same_twice(
    example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], second_runs: SecondRuns
) -> None:
    first = tmp_path / "first.json"

    code = main(["simulate", str(SCENARIOS / example), "--json", str(first), "--quiet"])

    output = capsys.readouterr().out
    assert code == 0, output
    result = json.loads(first.read_text())
    assert result["passed"] is True
    assert result["expectations"] and all(e["held"] for e in result["expectations"])
    assert result["summary"]["violations"] == 0

    assert second_runs.result(example) == first.read_bytes()


def test_the_workshop_reproduces_the_seed_fleet_after_each_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "workshop.json"

    code = main(["simulate", str(SCENARIOS / "workshop.yaml"), "--json", str(report)])

    output = capsys.readouterr().out
    result = json.loads(report.read_text())
    assert code == 0
    expected_fleets = [{"m5.large": 1}, {"m5.large": 2}, {"m5.large": 1}, {"c5.large": 1}]
    checked = [e for e in result["expectations"] if e["held"]]
    assert len(checked) == len(expected_fleets)
    fleets_at_checks = [_fleet_at(result["series"], e["at"]) for e in checked]
    assert fleets_at_checks == expected_fleets
    assert result["summary"]["disruptions"] == {"Empty": 1, "Underutilized": 1}
    assert re.search(
        r"^\[00:00:0\d\] provisioner: created NodeClaim default-\w{5} "
        r"\(m5\.large, on-demand, us-east-1[abc]\) for 5 pods$", output, re.MULTILINE)
    assert re.search(r"^\[\d\d:\d\d:\d\d\] disruption: Underutilized: replace node \S+ "
                     r"\(NodeClaim default-\w{5}, m5\.large\) with default-\w{5}, saving "
                     r"\$0\.0110/hour$", output, re.MULTILINE)
    assert "Summary of workshop (seed 0): every expectation held" in output
    assert _readme_timeline() <= _normalized(output.splitlines())


def _readme_timeline() -> set[str]:
    """The workshop timeline the README shows, which must stay what the command prints."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quickstart", 1)[1].split("```\n[00:00:00]", 1)[1].split("```")[0]
    lines = ["[00:00:00]" + block.splitlines()[0], *block.splitlines()[1:]]
    return _normalized(line for line in lines if line.startswith(("[", "  ")))


def _normalized(lines: Iterable[str]) -> set[str]:
    """Generated names vary with any change to how objects are named; the story may not."""
    return {re.sub(r"default-\w{5}|ip-[\d-]+\.ec2\.internal", "NAME", line) for line in lines}


def _fleet_at(series: list[dict[str, object]], at: float) -> object:
    return [sample["nodes"] for sample in series if float(str(sample["at"])) <= at][-1]


def test_the_team_nodepools_are_what_infras_teams_config_makes() -> None:
    import yaml

    from infra.config import TeamSettings
    from infra.teams import team_node_pool_spec

    teams = {
        "data": TeamSettings("data", {"cpu": "16", "memory": "128Gi"}, ("r6i", "r7i"),
                             ("spot", "on-demand"), None, None, None),
        "payments": TeamSettings("payments", {"cpu": "8", "memory": "32Gi"}, ("m7i", "c7i"),
                                 ("on-demand",), None, None, 50),
    }
    documents = yaml.safe_load_all((SCENARIOS / "teams" / "nodepools.yaml").read_text())

    for document in documents:
        team = teams[document["metadata"]["name"].removeprefix("team-")]
        expected = team_node_pool_spec(team)
        expected["template"]["spec"]["nodeClassRef"] = {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        assert document["spec"] == expected
