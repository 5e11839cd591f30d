"""A burst of Karpenter's basic performance shape launches its NodeClaims side by side
(issues 28 and 32).

Karpenter's lifecycle controller reconciles up to 1,000 NodeClaims at once, so the
CreateFleet batcher sees every launch of a burst in one window. Ours ran 4 workers: a
burst's NodeClaims launched four at a time, each group waiting out its batching window and
its CreateFleet before the next four started. The lifecycle now runs Karpenter's count,
capped (`runtime.concurrency`).

The operator runs as `nodewright controller` runs it (its real driver, every controller on
its own worker threads, no world lock) against the in-memory API server with its
kube-scheduler and kubelets, and a `SlowCloud` whose CreateFleet takes a while and goes
through the AWS provider's CreateFleet batcher. Nothing here is timed: how many launches
joined one CreateFleet, and how many were in flight together, are counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nodewright.cloud.aws.batcher import Window
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim import NodeClaimLifecycle
from nodewright.controllers.nodeclaim.registration import REGISTERED
from nodewright.operator.driver import OperatorDriver
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.concurrency import WORKER_CEILING, LinearScale, worker_count
from nodewright.runtime.reconciler import Result, Watch
from nodewright.runtime.statelock import StateLock
from tests.controllers.expectations import claim_names, condition, expect_consistent
from tests.harness import NODE_CLASS
from tests.kube.waiting import eventually
from tests.operator.slow_cloud import GATE_LIMIT_SECONDS, SlowCloud
from tests.operator.world import RealTimeWorld
from tests.perf_shape import burst, perf_nodepool

World = Callable[..., RealTimeWorld]

# The lifecycle's workers before this change: at most this many launches in one batch.
OLD_WORKERS = 4
# A fifth of Karpenter's 500 + 500 (the full shape runs in bench/burst_in_memory.py).
REPLICAS = 100
# Karpenter's NodePool lets the solve choose 48xlarge instances, which hold a fifth of the
# shape in three or four; at most 16 vCPUs each, the burst needs about thirty NodeClaims,
# as the full shape does on Karpenter's test (kwok's instance types are small).
AT_MOST_16_VCPUS = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt",
                    "values": ["17"]}
# Each CreateFleet is slow enough that launches started together are in flight together.
CREATE_FLEET_SECONDS = 0.5
# Karpenter's CreateFleet window (35 ms idle, 1 s at most) is measured in wall time; on a
# loaded 2-core machine two launches a worker apart can be further apart than 35 ms, so
# the story's window waits longer for the next launch. It never holds more launches than
# the controllers have in flight at once.
BURST_WINDOW = Window(idle_seconds=1.0, max_seconds=5.0, max_items=1_000)


def burst_nodepool() -> dict[str, Any]:
    pool = perf_nodepool()
    pool["spec"]["template"]["spec"]["requirements"].append(AT_MOST_16_VCPUS)
    # The story is about launches: no consolidation may start (consolidateAfter 30 s comes
    # within the story on a loaded machine) and replace a node while it is judged.
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    return pool


def slow_cloud(world: RealTimeWorld) -> SlowCloud:
    cloud = SlowCloud(world.cloud, seconds=CREATE_FLEET_SECONDS, launch_window=BURST_WINDOW)
    cloud.use_lock(world.lock)
    cloud.launch.arm()
    return cloud


def expect_every_pod_on_one_node_per_nodeclaim(world: RealTimeWorld, pods: int) -> None:
    eventually(lambda: len(world.running_pods()) == pods,
               f"{pods} running pods (now {len(world.running_pods())})", 300)

    def unregistered() -> list[str]:
        with world.lock:
            return [name for name in claim_names(world)
                    if condition(world.cluster.get("NodeClaim", name), REGISTERED) != "True"]

    # A quiet moment is not the end: on a loaded machine a NodeClaim's CreateFleet or its
    # registration's status write can still be on its way when nothing changed for a while.
    eventually(lambda: not unregistered(), "every NodeClaim to register", 120)
    world.settle()
    with world.lock:
        assert len(world.running_pods()) == pods
        expect_consistent(world)
        names = claim_names(world)
        assert not unregistered()
        # No NodeClaim launched twice (a doubled instance garbage-collected since included).
        assert world.cloud.counters.launched == len(names)
    assert world.errors == []


def test_a_burst_of_karpenters_basic_shape_launches_its_nodeclaims_in_large_batches(
        make_world: World) -> None:
    """Karpenter's test/suites/performance/basic_test.go "should efficiently scale two
    deployments with different resource profiles", at a fifth of its pods, on instances of
    at most 16 vCPUs (so the burst needs many NodeClaims): every pod runs,
    each NodeClaim has exactly one instance, and the launches went to CreateFleet
    together, more than four at a time."""
    world = make_world()
    world.apply(NODE_CLASS, burst_nodepool())
    world.apply(*burst(REPLICAS))
    # All of it pending when the controller starts: its first batch is the whole burst.
    eventually(lambda: len(world.pods()) == 2 * REPLICAS, "the Deployments' pods")
    cloud = slow_cloud(world)
    operator = world.operator("nodewright-a", leader_elect=False, cloud=cloud)
    assert operator.driver.workers(operator.controllers.lifecycle) > OLD_WORKERS

    expect_every_pod_on_one_node_per_nodeclaim(world, 2 * REPLICAS)
    assert len(claim_names(world)) > OLD_WORKERS
    assert max(cloud.batch_sizes) > OLD_WORKERS, cloud.batch_sizes
    assert cloud.most_launches_in_flight > OLD_WORKERS


@pytest.mark.parametrize("cpu_requests", [250, 1000, 8000])
def test_the_lifecycle_and_termination_workers_follow_karpenters_count_up_to_the_ceiling(
        make_world: World, cpu_requests: int) -> None:
    """Karpenter's lifecycle (1,000 at one core) and termination (100) counts are both at
    or above the ceiling whatever the CPU; controllers Karpenter leaves at one keep one."""
    world = make_world()
    operator = Operator(world.cluster, SlowCloud(world.cloud),
                        OperatorSettings(identity="sizing", leader_elect=False,
                                         cpu_requests=cpu_requests))
    built = operator.controllers.built
    assert operator.driver.workers(built["nodeclaim.lifecycle"]) == WORKER_CEILING
    assert operator.driver.workers(built["node.termination"]) == WORKER_CEILING
    assert operator.driver.workers(built["provisioner"]) == 1
    assert isinstance(built["nodeclaim.lifecycle"], NodeClaimLifecycle)


class Crowded:
    """A controller with Karpenter's lifecycle count whose reconciles make a request that
    is answered when the story says (`answer`), out of the state lock as every request
    is; it notes every key ever taken by two workers at once."""

    watches: Sequence[Watch] = ()
    max_concurrent_reconciles = LinearScale(1000, 5000)

    def __init__(self, lock: StateLock) -> None:
        self.name = "nodeclaim.lifecycle"
        self.lock = lock
        self.answer = threading.Event()
        self.changed = threading.Lock()
        self.in_flight: list[str] = []
        self.most_in_flight = 0
        self.twice_at_once: list[str] = []
        # Per key: how many times it had been enqueued when its latest reconcile started.
        self.seen: dict[str, int] = {}
        self.wanted: dict[str, int] = {}

    def want(self, key: str) -> None:
        with self.changed:
            self.wanted[key] = self.wanted.get(key, 0) + 1

    def reconcile(self, key: str) -> Result:
        with self.changed:
            if key in self.in_flight:
                self.twice_at_once.append(key)
            self.in_flight.append(key)
            self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
            self.seen[key] = self.wanted.get(key, 0)
        with self.lock.released():
            self.answer.wait(GATE_LIMIT_SECONDS)
        with self.changed:
            self.in_flight.remove(key)
        return Result()


def test_many_workers_never_take_one_key_twice_at_once_and_lose_no_change() -> None:
    """controller-runtime's guarantee, with the lifecycle's hundred workers: twenty keys
    are reconciled side by side; each enqueued again while in flight runs again after,
    never beside itself, and once for all the enqueues it missed."""
    keys = [f"nodeclaim-{index}" for index in range(20)]
    lock = StateLock()
    crowded = Crowded(lock)
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodeClaim"],
                            state_lock=lock)
    driver.add(crowded)
    driver.start()
    try:
        assert driver.workers(crowded) == WORKER_CEILING
        for key in keys:
            crowded.want(key)
            driver.enqueue(crowded, key)
        eventually(lambda: len(crowded.in_flight) == len(keys), "every key in flight at once")
        for _ in range(5):
            for key in keys:
                crowded.want(key)
                driver.enqueue(crowded, key)
        crowded.answer.set()

        def every_change_seen() -> bool:
            with crowded.changed:
                return (not crowded.in_flight and driver.pending() == 0
                        and crowded.seen == crowded.wanted)
        eventually(every_change_seen, "a reconcile after each key's last enqueue")
    finally:
        crowded.answer.set()
        driver.stop(timeout=5)
    assert crowded.twice_at_once == []
    assert crowded.most_in_flight == len(keys)
    assert threading.active_count() < 2 * WORKER_CEILING


@pytest.mark.parametrize(("cores", "workers"), [
    (0.5, 10), (1.0, 10), (1.5, 26), (15.0, 244), (60.0, 1000), (100.0, 1000)],
    ids=["half a core", "one core", "one and a half (two)", "fifteen", "sixty", "a hundred"])
def test_linear_scale_reconciles_as_karpenter_computes_them(cores: float,
                                                          workers: int) -> None:
    """Karpenter's pkg/utils/controller/suite_test.go, "LinearScaleReconciles
    Calculations": DescribeTable "should calculate reconciles correctly based on CPU
    cores" (its six entries, minReconciles 10, maxReconciles 1000)."""
    assert LinearScale(10, 1000).at(cores) == workers


def test_cpu_requests_size_workers_up_to_the_ceiling() -> None:
    """CPU_REQUESTS in millicores (0 or less: 1000, as Karpenter); a fixed count stays."""
    scale = LinearScale(10, 1000)
    assert worker_count(scale, 1000) == 10
    assert worker_count(scale, 0) == 10
    assert worker_count(scale, 7000) == min(110, WORKER_CEILING)
    assert worker_count(scale, 60_000) == WORKER_CEILING
    assert worker_count(LinearScale(1000, 5000), 1000) == WORKER_CEILING
    assert worker_count(1, 60_000) == 1
    assert worker_count(10, 1000) == 10
