"""Each controller has its own worker: a provisioning solve or a disruption pass that runs
long never holds up the others (interruption, termination, registration). The state cache
is shared under one lock: the driver holds it around event delivery and every ordinary
reconcile; the CPU-heavy controllers step out of it while they compute."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.provisioning import provisioner as provisioning
from nodewright.operator.driver import HealthLimits, OperatorDriver
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import Result, WatchEvent
from nodewright.runtime.statelock import StateLock
from nodewright.scheduling.solver import (
    PreparedNodes,
    SchedulingProblem,
    SchedulingResult,
    solve,
)
from tests.controllers.conftest import WORKSHOP
from tests.harness import World
from tests.kube.waiting import eventually
from tests.operator.test_liveness import Blocking, Quick
from tests.operator.world import RealTimeWorld


class Heavy(Blocking):
    """A controller that computes outside the state lock (as the provisioner does)."""

    manages_state_lock = True


class Watching(Quick):
    """Notes whether it held the state lock while it reconciled."""

    def __init__(self, name: str, lock: StateLock) -> None:
        super().__init__(name)
        self.lock = lock
        self.held: list[bool] = []

    def reconcile(self, key: str) -> Result:
        self.held.append(self.lock.held())
        return super().reconcile(key)


def started_driver(*reconcilers: Blocking | Quick,
                   lock: StateLock | None = None) -> OperatorDriver:
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"],
                            state_lock=lock or StateLock(),
                            health=HealthLimits(stall_budget=0.2, stall_budgets={}))
    driver.add(*reconcilers)
    driver.start()
    return driver


def test_a_provisioning_solve_that_runs_on_does_not_hold_up_interruption() -> None:
    provisioner = Heavy("provisioner")
    interruption = Quick("interruption")
    driver = started_driver(provisioner, interruption)
    try:
        driver.enqueue(provisioner, "")
        assert provisioner.running.wait(30)
        driver.enqueue(interruption, "queue")
        eventually(lambda: interruption.done == ["queue"],
                   "interruption to act while the solve runs")
        assert provisioner.done == []
    finally:
        provisioner.release.set()
        driver.stop(timeout=5)


def test_one_controller_stuck_in_a_reconcile_fails_liveness_under_its_own_name() -> None:
    provisioner = Heavy("provisioner")
    termination = Quick("termination")
    driver = started_driver(provisioner, termination)
    try:
        driver.enqueue(provisioner, "")
        assert provisioner.running.wait(30)
        problem = eventually(driver.stalled, "liveness to fail")
        assert "controller provisioner has been in one reconcile" in problem
        driver.enqueue(termination, "node-a")
        eventually(lambda: termination.done == ["node-a"], "termination's own worker")
    finally:
        provisioner.release.set()
        driver.stop(timeout=5)


def test_ordinary_reconciles_hold_the_state_lock_and_the_heavy_ones_take_it_themselves() -> None:
    lock = StateLock()
    ordinary = Watching("termination", lock)
    heavy = Watching("provisioner", lock)
    heavy.manages_state_lock = True  # type: ignore[attr-defined]
    driver = started_driver(ordinary, heavy, lock=lock)
    try:
        driver.enqueue(ordinary, "a")
        driver.enqueue(heavy, "")
        eventually(lambda: ordinary.done and heavy.done, "both to reconcile")
        assert (ordinary.held, heavy.held) == ([True], [False])
        assert lock.concurrent  # a driver with workers: passes work on snapshots
    finally:
        driver.stop(timeout=5)


def test_an_ordinary_controller_stuck_holding_the_lock_keeps_events_from_the_cache() -> None:
    """The price of one lock: a reconcile that hangs in the cache's lock stops delivery
    too. Liveness names it, and the kubelet restarts the process."""
    lock = StateLock()
    stuck = Blocking("termination")
    seen: list[WatchEvent] = []
    clock = SystemClock()
    cluster = InMemoryCluster(clock)
    driver = OperatorDriver(cluster, clock=clock, kinds=["Namespace"], state_lock=lock,
                            health=HealthLimits(stall_budget=0.2, stall_budgets={}))
    driver.add(stuck)
    driver.listen(seen.append)
    driver.start()
    try:
        eventually(driver.synced, "the namespaces there are")
        eventually(lambda: seen, "the namespaces there are")
        driver.enqueue(stuck, "node-a")
        assert stuck.running.wait(30)
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
        problem = eventually(driver.stalled, "liveness to fail")
        assert "controller termination" in problem
        assert "x" not in {event.name for event in seen}
        stuck.release.set()
        eventually(lambda: "x" in {event.name for event in seen},
                   "the event, once the lock is free")
    finally:
        stuck.release.set()
        driver.stop(timeout=5)


def test_the_state_lock_can_be_stepped_out_of_and_taken_back() -> None:
    lock = StateLock()
    taken_elsewhere = threading.Event()

    def other_thread() -> None:
        with lock:
            taken_elsewhere.set()

    with lock, lock:
        with lock.released():
            assert not lock.held()
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join(30)
            assert taken_elsewhere.is_set()
        assert lock.held()
    assert not lock.held()


def test_the_provisioner_solves_outside_the_state_lock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    state = world.controllers.state
    held: list[bool] = []

    def watched_solve(problem: SchedulingProblem, prepared: PreparedNodes | None = None,
                      deadline: float | None = None) -> SchedulingResult:
        held.append(state.lock.held())
        return solve(problem, prepared, deadline=deadline)

    monkeypatch.setattr(provisioning, "solve", watched_solve)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    assert held and not any(held)
    assert world.controllers.provisioner.manages_state_lock




@pytest.mark.parametrize("outside", [True, False], ids=["aws-like", "simulated-ec2"])
def test_a_cloud_that_allows_it_launches_outside_the_state_lock(
        make_world: Callable[..., RealTimeWorld], monkeypatch: pytest.MonkeyPatch,
        outside: bool) -> None:
    """A CreateFleet takes seconds: with the AWS provider the lifecycle controller makes
    it outside the state lock; the simulated EC2, written for one thread, launches under
    it."""
    world = make_world()
    held: list[bool] = []
    create = world.cloud.create
    monkeypatch.setattr(world.cloud, "launches_outside_state_lock", outside, raising=False)
    operator = world.operator("nodewright-a", leader_elect=False)
    state = operator.controllers.state

    def watched_create(nodeclaim: Any, node_class: Any) -> Any:
        held.append(state.lock.held())
        return create(nodeclaim, node_class)

    monkeypatch.setattr(world.cloud, "create", watched_create)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    assert held and set(held) == {not outside}
