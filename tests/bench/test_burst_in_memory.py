"""bench/burst_in_memory.py at a tiny size: Karpenter's basic burst in memory runs to the end
and reports its numbers; each of Karpenter's seven performance tests runs every phase. No
timings: the numbers are for docs/performance.md."""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


# --- Karpenter's seven performance tests, every phase (bench/suite_in_memory.py) --------------

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


WIDE = "wide-deployments"


def placements(run: suite_in_memory.InMemoryRun) -> dict[str, list[str]]:
    """Each Deployment's Running pods' node names (a pod not Running: "")."""
    nodes: dict[str, list[str]] = defaultdict(list)
    for pod in run.pods():
        running = (pod.get("status") or {}).get("phase") == "Running"
        nodes[pod["metadata"]["labels"]["app"]].append(
            pod["spec"].get("nodeName", "") if running else "")
    return nodes


def managed(run: suite_in_memory.InMemoryRun) -> set[str]:
    return {n["metadata"]["name"] for n in run.nodes()
            if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == "default"}


@dataclass
class WideRun:
    """The wide test's two phases and what the cluster held after each."""

    created: set[str]
    out: PhaseResult
    placed: dict[str, list[str]]
    nodes_out: set[str]
    scaled_in: PhaseResult
    placed_in: dict[str, list[str]]
    nodes_in: set[str]
    # The Nodes the disruption controller terminated in the scale-in (this cluster's
    # DisruptionTerminating events: the disruption metrics are the whole process's).
    disrupted_in: list[str]


def disrupted_nodes(world: Any) -> list[str]:
    with world.lock:
        return [str(e.get("note")) for e in world.memory.peek_all("Event")
                if e.get("reason") == "DisruptionTerminating"
                and (e.get("regarding") or {}).get("kind") == "Node"]


def run_wide() -> WideRun:
    test = scaled(TESTS[WIDE], 0.05)
    out_phase, in_phase = test.phases
    with burst_in_memory.operator_world(
            create_fleet=0.1, launch_delay=0.1, registration_delay=0.1,
            consolidate_after="1s", options=SMOKE_OPTIONS) as (world, _cloud, _op, _api):
        run = suite_in_memory.InMemoryRun(world, poll=0.2, quiet=4.0, timeout=120.0,
                                          settle_before_drift=0.0)
        created: set[str] = set()

        out = run.phase(test, 0, out_phase, created)
        placed, nodes_out = placements(run), managed(run)
        before = len(disrupted_nodes(world))

        scaled_in = run.phase(test, 1, in_phase, created)
        placed_in, nodes_in = placements(run), managed(run)
        disrupted_in = disrupted_nodes(world)[before:]
    return WideRun(created, out, placed, nodes_out, scaled_in, placed_in, nodes_in,
                   disrupted_in)


# The seven tests' runs, each in its own in-memory cluster with its own operator, go on in
# a background thread one after another. The fixture waits for every run before the first
# test goes on, so nothing of theirs runs beside the module's other tests (one of which
# changes the controllers' worker counts).
SMOKE_TEST = "test_each_of_karpenters_performance_tests_runs_every_phase_in_memory"
WIDE_TEST = "test_the_wide_deployments_test_runs_out_and_in_with_its_anti_affinity_kept"


@pytest.fixture(scope="module")
def smoke_runs(request: pytest.FixtureRequest) -> Iterator[dict[str, Future[Any]]]:
    """Each selected run of this module (a Karpenter test's name, or WIDE for the wide
    test's own run), finished. One after another: side by side, the seven in-memory
    clusters share one interpreter, and on a loaded machine (two busy processes beside
    `-n 4` on 2 cores) they starved each other past their phases' timeouts."""
    wanted: dict[str, Callable[[], Any]] = {}
    for item in request.session.items:
        if item.module is not request.module:
            continue
        name = getattr(item, "originalname", item.name)
        if name == SMOKE_TEST:
            which = item.callspec.params["name"]  # type: ignore[attr-defined]
            wanted[which] = lambda which=which: run_smoke(which)
        elif name == WIDE_TEST:
            wanted[WIDE] = run_wide
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="smoke-run") as pool:
        runs = {name: pool.submit(run) for name, run in wanted.items()}
        for run in runs.values():
            run.exception()  # every run ends (each phase has its timeout)
        yield runs


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in TESTS if name != WIDE])
def test_each_of_karpenters_performance_tests_runs_every_phase_in_memory(
        name: str, smoke_runs: dict[str, Future[Any]]) -> None:
    """Each of Karpenter's first six tests (test/suites/performance/*_test.go, as
    bench/perf_shapes.py has them) at 1 % of its pods: every phase ends (the pods of a
    scale-out Running; consolidation and drift quiet, every node there before a drift
    gone), and no instance is left without its NodeClaim."""
    test = scaled(TESTS[name], 0.01)
    results: list[PhaseResult] = smoke_runs[name].result()

    assert [r.kind for r in results] == [p.kind for p in test.phases]
    for result, phase in zip(results, test.phases, strict=True):
        assert result.seconds is not None, f"phase {result.phase} stalled: {result.notes}"
        assert result.pods >= phase.healthy if phase.at_least else result.pods == phase.healthy
        assert result.memory_of == "process"
        assert not [n for n in result.notes if "WITHOUT A NODECLAIM" in n], result.notes
    if name == "do-not-disrupt":
        kept = next(n for n in results[-1].notes if "do-not-disrupt pods kept" in n)
        assert not kept.startswith("0 of"), kept


@pytest.mark.slow
def test_the_wide_deployments_test_runs_out_and_in_with_its_anti_affinity_kept(
        smoke_runs: dict[str, Future[Any]]) -> None:
    """Karpenter's wide_deployments_test.go ("should efficiently scale 30 deployments with
    varied resources and topology constraints") at 5 % of its pods, the least at which its
    scale-in removes pods (at 1 % every Deployment has one pod before and after): 30
    Deployments, 60 pods out, each Running on a node of the NodePool, the two pods of each
    anti-affinity Deployment on two nodes (they are spread over zones too: the check fails
    only without both); then every Deployment scaled in (30 pods), the consolidation comes
    to rest on fewer nodes with nothing left Pending or doubled."""
    out_phase, in_phase = scaled(TESTS[WIDE], 0.05).phases
    assert (out_phase.healthy, in_phase.healthy) == (60, 30)
    wide: WideRun = smoke_runs[WIDE].result()
    out, scaled_in, placed, placed_in = wide.out, wide.scaled_in, wide.placed, wide.placed_in

    results: list[Any] = [out, scaled_in]
    for result in results:
        assert result.seconds is not None, f"phase {result.phase} stalled: {result.notes}"
        assert not [n for n in result.notes if "WITHOUT A NODECLAIM" in n], result.notes
    assert len(wide.created) == 30 and len(placed) == 30
    assert out.pods == 60 and all(set(on) <= wide.nodes_out for on in placed.values())
    for name in ("wide-deployment-1", "wide-deployment-2", "wide-deployment-3"):
        assert len(placed[name]) == len(set(placed[name])) == 2, (name, placed[name])
    assert scaled_in.pods == 30
    assert wide.disrupted_in, "the disruption controller terminated no node in the scale-in"
    assert sorted(len(on) for on in placed_in.values()) == [1] * 30
    assert all(set(on) <= wide.nodes_in for on in placed_in.values())
    assert 1 <= len(wide.nodes_in) < len(wide.nodes_out) == out.nodes


def test_the_suites_short_names_are_karpenters_tests() -> None:
    assert suite_in_memory.test_names("basic,hostname,hostname-xl,wide") == [
        "basic", "hostname-spreading", "hostname-spreading-xl", "wide-deployments"]
    assert suite_in_memory.test_names("all") == list(TESTS)
    with pytest.raises(ValueError, match=r"unknown test.*spread"):
        suite_in_memory.test_names("basic,spread")


def test_a_disruption_phase_says_what_the_disruption_controller_did_in_it() -> None:
    """Where a consolidation's or a drift's time went, from the disruption controller's
    Karpenter metrics: the commands started in the phase by decision and reason, the
    candidates that failed validation, the evaluations per method and their seconds (the
    counts before the phase taken away)."""
    started, failed = suite_in_memory.STARTED, suite_in_memory.FAILED_VALIDATIONS
    count, seconds = f"{suite_in_memory.PASSES}_count", f"{suite_in_memory.PASSES}_sum"
    before = {(started, "delete", "underutilized"): 2.0, (failed,): 1.0,
              (count, "underutilized", "single"): 10.0, (seconds, "underutilized", "single"): 4.0}
    after = {(started, "delete", "underutilized"): 5.0,
             (started, "replace", "underutilized"): 4.0, (failed,): 7.0,
             (started, "replace", "drifted"): 0.0,
             (count, "underutilized", "single"): 40.0, (seconds, "underutilized", "single"): 10.5,
             (count, "drifted", ""): 3.0, (seconds, "drifted", ""): 0.25,
             (suite_in_memory.CREATED, "provisioned"): 2.0}

    assert suite_in_memory.disruption_work(before, after) == (
        "disruption commands started: delete underutilized 3, replace underutilized 4; "
        "candidates failing validation 6; evaluations drifted 3 in 0.2 s, single 30 in 6.5 s; "
        "NodeClaims created: provisioned 2")
    assert suite_in_memory.disruption_work(after, after).startswith(
        "disruption commands started: none; candidates failing validation 0; evaluations none; "
        "NodeClaims created: none")
    assert isinstance(suite_in_memory.disruption_tally(), dict)


class EventsOnly:
    """What `rejections` reads of the in-memory world: its lock and its stored Events."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.lock = threading.Lock()
        self.memory = self
        self._events = events

    def peek_all(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        assert kind == "Event"
        return self._events


def test_a_disruption_phase_lists_the_consolidations_dropped_at_validation_by_reason() -> None:
    """Each ConsolidationRejected event's failure reason counted, with the newest message, so
    a phase whose commands each waited out two validations says why the first failed."""
    def rejected(reason: str, when: str, why: str) -> dict[str, Any]:
        return {"reason": "ConsolidationRejected", "eventTime": when,
                "note": f"consolidation rejected after validation (reason: {reason}): {why}"}

    world = EventsOnly([
        rejected("churn", "2026-11-29T00:36:01.000000Z", "a candidate changed"),
        rejected("churn", "2026-11-29T00:37:01.000000Z", "the pods moved"),
        rejected("scheduling", "2026-11-29T00:36:30.000000Z", "a pod fits nowhere"),
        {"reason": "Nominated", "eventTime": "2026-11-29T00:38:00.000000Z", "note": "x"},
    ])

    notes = suite_in_memory.rejections(world)  # type: ignore[arg-type]

    assert len(notes) == 2
    assert notes[0].startswith("rejected at validation (churn): 2 event(s), the newest "
                               "consolidation rejected after validation (reason: churn): "
                               "the pods moved")
    assert notes[1].startswith("rejected at validation (scheduling): 1 event(s)")
    assert suite_in_memory.rejections(EventsOnly([])) == []  # type: ignore[arg-type]
