"""The snapshot benchmark (bench/snapshot_scale.py) at a tiny size: its generated cluster
is a valid fleet scenario, the snapshot read from it holds every node and pod, and the
snapshot simulates to settlement. No timings are asserted."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import snapshot_scale

from nodewright.sim.loading import load_scenario
from nodewright.sim.snapshot.outcome import run_what_if


def test_a_tiny_snapshot_is_taken_and_simulated_to_settlement(tmp_path: Path) -> None:
    snapshot, detail = snapshot_scale.take(nodes=6, pods=60, folder=tmp_path)
    assert detail["counts"]["nodeClaims"] == 6
    assert detail["counts"]["boundPods"] == 60
    assert detail["fleet_problems"] == 0
    scenario, problems = load_scenario(snapshot)
    assert scenario is not None, problems
    result, outcome = run_what_if(scenario)
    assert outcome.settled and not result.errors
    # Half of every node is idle: consolidation removes some.
    assert len(outcome.after) < len(outcome.before)
    assert outcome.cost(outcome.after) < outcome.cost(outcome.before)
    assert outcome.pending_total == 0


def test_the_bench_says_why_it_does_not_read_a_real_control_plane() -> None:
    assert "kube-apiserver" in snapshot_scale.control_plane_note()
