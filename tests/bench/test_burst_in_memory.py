"""bench/burst_in_memory.py at a tiny size: Karpenter's basic burst in memory runs to the end
and reports its numbers; each of Karpenter's six performance tests runs every phase. No
timings: the numbers are for docs/performance.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import burst_in_memory
import pytest
import suite_in_memory
from karpenter_performance import PhaseResult
from perf_shapes import TESTS, scaled

from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.options import ControllerOptions


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


# --- Karpenter's six performance tests, every phase (bench/suite_in_memory.py) ----------------

# Fast enough for the suite: quick simulated instances, short batching windows, a disruption
# loop polling twice a second, consolidateAfter 1s instead of Karpenter's 30s.
SMOKE_OPTIONS = ControllerOptions(
    batch_idle_seconds=0.2, batch_max_seconds=1.0,
    disruption=DisruptionOptions(poll_seconds=0.5, validation_seconds=0.5,
                                 in_flight_poll_seconds=0.2, unsynced_retry_seconds=0.2))


def run_smoke(name: str) -> list[PhaseResult]:
    test = scaled(TESTS[name], 0.01)
    return suite_in_memory.run_in_memory(
        test, quiet=4.0, poll=0.2, timeout=120.0, settle_before_drift=0.0, as_json=True,
        create_fleet=0.1, launch_delay=0.1, registration_delay=0.1,
        consolidate_after="1s", options=SMOKE_OPTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TESTS))
def test_each_of_karpenters_performance_tests_runs_every_phase_in_memory(name: str) -> None:
    """Each of Karpenter's six tests (test/suites/performance/*_test.go, as
    bench/perf_shapes.py has them) at 1 % of its pods: every phase ends (the pods of a
    scale-out Running; consolidation and drift quiet, every node there before a drift
    gone), and no instance is left without its NodeClaim."""
    test = scaled(TESTS[name], 0.01)
    results = run_smoke(name)

    assert [r.kind for r in results] == [p.kind for p in test.phases]
    for result, phase in zip(results, test.phases, strict=True):
        assert result.seconds is not None, f"phase {result.phase} stalled: {result.notes}"
        assert result.pods >= phase.healthy if phase.at_least else result.pods == phase.healthy
        assert result.memory_of == "process"
        assert not [n for n in result.notes if "WITHOUT A NODECLAIM" in n], result.notes
    if name == "do-not-disrupt":
        kept = next(n for n in results[-1].notes if "do-not-disrupt pods kept" in n)
        assert not kept.startswith("0 of"), kept


def test_the_suites_short_names_are_karpenters_tests() -> None:
    assert suite_in_memory.test_names("basic,hostname,hostname-xl") == [
        "basic", "hostname-spreading", "hostname-spreading-xl"]
    assert suite_in_memory.test_names("all") == list(TESTS)
    with pytest.raises(ValueError, match=r"unknown test.*spread"):
        suite_in_memory.test_names("basic,spread")
