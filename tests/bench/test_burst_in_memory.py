"""bench/burst_in_memory.py at a tiny size: Karpenter's basic burst in memory runs to the end
and reports its numbers. No timings: the numbers are for docs/performance.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import burst_in_memory


def test_the_in_memory_burst_benchmark_runs_every_pod_with_one_instance_per_nodeclaim() -> None:
    row = burst_in_memory.measure(scale=0.02, create_fleet=0.1, launch_delay=0.1,
                                  registration_delay=0.1, timeout=120)

    assert row["in_memory"] and row["pods"] == 20
    assert row["all_running"] is not None, "the pods did not all run"
    assert row["nodeclaims"] == row["instances_launched"] > 0
    assert sum(row["create_fleet_batches"]) == row["instances_launched"]
    assert row["lifecycle_workers"] == 100 and row["termination_workers"] == 100


def test_the_in_memory_burst_benchmark_runs_with_the_old_worker_counts() -> None:
    row = burst_in_memory.measure(scale=0.02, create_fleet=0.1, launch_delay=0.1,
                                  registration_delay=0.1, timeout=120,
                                  lifecycle_workers=4, termination_workers=4)

    assert row["all_running"] is not None
    assert row["lifecycle_workers"] == 4 and max(row["create_fleet_batches"]) <= 4
