"""bench/controller_latency.py at a tiny size: it runs to the end and reports its numbers
(it once crashed on the solver's new keyword argument and nothing noticed). No timings:
the numbers are for docs/performance.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import controller_latency


def test_the_controller_latency_benchmark_runs_with_a_slow_cloud() -> None:
    row = controller_latency.measure(nodes=12, pods=48, pending=12, slow=1.0, patience=60)

    assert row["solve_pods"] and row["pass_verdicts"] > 0
    assert row["interruption_to_draining_s"] >= 0 and row["node_to_registered_s"] >= 0
    # The interruption arrived while every slow cloud call was in flight.
    assert sorted(row["slow_calls_in_flight"]["at_send"]) == [
        "catalog refresh", "launch", "resolution", "termination"]


def test_the_controller_latency_benchmark_runs_with_a_fast_cloud() -> None:
    row = controller_latency.measure(nodes=12, pods=48, pending=12, patience=60)

    assert row["slow_cloud_s"] == 0 and row["slow_calls_in_flight"]["at_send"] == []
    assert row["solve_pods"] and row["pass_verdicts"] > 0
