#!/usr/bin/env python3
"""Karpenter's basic performance burst against the operator IN MEMORY: NOT the real control
plane.

For a machine without the Kubernetes binaries that bench/karpenter_performance.py needs.
The shape is Karpenter's basic test (test/suites/performance/basic_test.go: 500 pods of
900m/3100Mi and 500 of 3500m/28Gi in one burst, its performance NodePool), and the
controller is the operator as `nodewright controller` runs it (the real driver, every
controller on its own worker threads, the CPU_REQUESTS sizing), but the API server is the
in-memory one with its kube-scheduler, Deployment controller and kubelets
(tests/operator/world.py), in this same process, and the cloud is the simulated EC2 behind
`tests/operator/slow_cloud.SlowCloud`: each CreateFleet answers after `--create-fleet`
seconds and goes through the AWS provider's CreateFleet batcher with Karpenter's window
(35 ms idle, 1 s at most); instances run `--launch-delay` seconds later and register
`--registration-delay` after that (kwok-like, as bench/karpenter_performance.py).

Reported: the scale-out time (the Deployments applied to every pod Running, Karpenter's
measure), when the first NodeClaim was created and the last one launched, the NodeClaims,
the CreateFleet batches and the most launches in flight at once, Karpenter's average CPU
and memory utilization, and the CPU spent: the whole process (the in-memory API server
and its actors included) and the controller's own threads.

    python bench/burst_in_memory.py [--scale 1] [--create-fleet 1.0] [--runs 1] [--json]
        [--lifecycle-workers N] [--termination-workers N]   # e.g. 4: the count before
        [--cpu-requests 1000]                              # issue 32's change
        [--max-vcpus 16]   # Karpenter's NodePool narrowed to small instances (ours)
        [--create-latency 0.05]   # each NodeClaim create answers after 50 ms

Karpenter's NodePool lets the solve pick 48xlarge instances: the burst needs 13 to 17
NodeClaims. `--max-vcpus 16` (not Karpenter's test: instance-cpu < 17 added to its
NodePool) makes it need about 150, as kwok's small instance types do on Karpenter's run.
The in-memory API server answers a create at once; `--create-latency` makes each NodeClaim
create answer after that many seconds, as a real API server's round trip (the most creates
in flight at once is reported).

With `--test`, Karpenter's seven performance tests, every phase (bench/suite_in_memory.py):

    python bench/burst_in_memory.py --test basic,hostname,hostname-xl,do-not-disrupt,\
        interference,drift,wide-deployments|all [--scale 0.2] [--quiet 60] [--trace 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "controller"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # tests.operator

from karpenter_performance import average_utilization  # noqa: E402

from nodewright.cloud.aws.ec2_batcher import CREATE_FLEET_WINDOW  # noqa: E402
from nodewright.cloud.sim import SimSettings  # noqa: E402
from nodewright.cluster.memory import ActorSettings  # noqa: E402
from nodewright.controllers.node.termination import NodeTermination  # noqa: E402
from nodewright.controllers.nodeclaim import NodeClaimLifecycle  # noqa: E402
from nodewright.controllers.options import ControllerOptions  # noqa: E402
from nodewright.operator.main import SWITCH_INTERVAL_SECONDS  # noqa: E402
from nodewright.operator.process import Operator, OperatorSettings  # noqa: E402
from nodewright.runtime.concurrency import Concurrency  # noqa: E402
from tests.harness import NODE_CLASS  # noqa: E402
from tests.operator.slow_cloud import SlowCloud  # noqa: E402
from tests.operator.world import RealTimeWorld  # noqa: E402
from tests.perf_shape import REPLICAS, burst, perf_nodepool  # noqa: E402
from tests.support.operator import crash  # noqa: E402

IDENTITY = "burst"
POLL_SECONDS = 0.2


@contextmanager
def workers(lifecycle: Concurrency | None, termination: Concurrency | None) -> Iterator[None]:
    """The two controllers' declared worker counts replaced for the run (None: as built)."""
    kept = (NodeClaimLifecycle.max_concurrent_reconciles,
            NodeTermination.max_concurrent_reconciles)
    if lifecycle is not None:
        NodeClaimLifecycle.max_concurrent_reconciles = lifecycle
    if termination is not None:
        NodeTermination.max_concurrent_reconciles = termination
    try:
        yield
    finally:
        NodeClaimLifecycle.max_concurrent_reconciles, \
            NodeTermination.max_concurrent_reconciles = kept


def thread_cpu(prefix: str) -> dict[tuple[int, int], float]:
    """CPU seconds of each live thread of this process whose name starts with `prefix`,
    by (native id, ident)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[tuple[int, int], float] = {}
    for thread in threading.enumerate():
        if not thread.name.startswith(prefix) or thread.native_id is None:
            continue
        try:
            stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        found[(thread.native_id, thread.ident or 0)] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def thread_cpu_seconds(prefix: str) -> float:
    """CPU seconds of this process's live threads whose names start with `prefix`."""
    return sum(thread_cpu(prefix).values())


class SlowNodeClaimCreates:
    """The operator's API client, whose NodeClaim creates answer after `seconds` (a real
    API server's round trip); counts the most in flight at once."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds
        self._counts = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, obj: dict[str, Any]) -> Any:
        if obj.get("kind") != "NodeClaim":
            return self.inner.create(obj)
        with self._counts:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.seconds)
            return self.inner.create(obj)
        finally:
            with self._counts:
                self.in_flight -= 1


def start_operator(world: RealTimeWorld, cloud: SlowCloud, cpu_requests: int,
                   api: Any, options: ControllerOptions | None = None) -> Operator:
    """The controller process as `nodewright controller` runs it: no turn at the world lock,
    Karpenter's batching windows and module waits (unless `options`, for a smoke run),
    CPU_REQUESTS given."""
    settings = OperatorSettings(identity=IDENTITY, leader_elect=False,
                                controllers=options or ControllerOptions(),
                                cpu_requests=cpu_requests)
    operator = Operator(api, cloud, settings)
    operator.start()
    world.operators.append(operator)
    return operator


@contextmanager
def operator_world(create_fleet: float = 1.0, launch_delay: float = 2.0,
                   registration_delay: float = 3.0, cpu_requests: int = 1000,
                   max_vcpus: int | None = None, create_latency: float = 0.0,
                   consolidate_after: str | None = None,
                   options: ControllerOptions | None = None,
                   ) -> Iterator[tuple[RealTimeWorld, SlowCloud, Operator, SlowNodeClaimCreates]]:
    """The in-memory cluster with the node class and Karpenter's performance NodePool (with
    `max_vcpus`: narrowed to instance types of at most that many vCPUs; `consolidate_after`
    instead of its 30s, and the operator's `options`, for smoke runs), the simulated EC2
    behind SlowCloud, and the operator started and synced; all torn down on leaving."""
    sim = SimSettings(launch_delay=launch_delay, registration_delay=registration_delay,
                      termination_delay=1.0, startup_taint_delay=1.0)
    world = RealTimeWorld(cloud=sim, actors=ActorSettings(pod_start_delay=0.5))
    try:
        cloud = SlowCloud(world.cloud, seconds=create_fleet, launch_window=CREATE_FLEET_WINDOW)
        cloud.use_lock(world.lock)
        cloud.launch.arm()
        pool = perf_nodepool()
        if max_vcpus is not None:
            pool["spec"]["template"]["spec"]["requirements"].append(
                {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt",
                 "values": [str(max_vcpus + 1)]})
        if consolidate_after is not None:
            pool["spec"]["disruption"]["consolidateAfter"] = consolidate_after
        world.apply(NODE_CLASS, pool)
        api = SlowNodeClaimCreates(world.cluster, create_latency)
        operator = start_operator(world, cloud, cpu_requests, api, options)
        while not operator.driver.synced():
            time.sleep(POLL_SECONDS)
        yield world, cloud, operator, api
    finally:
        for running in world.operators:
            crash(running)
        world.operators.clear()
        world.close()


def measure(scale: float = 1.0, create_fleet: float = 1.0, launch_delay: float = 2.0,
            registration_delay: float = 3.0, cpu_requests: int = 1000,
            lifecycle_workers: int | None = None, termination_workers: int | None = None,
            timeout: float = 900.0, trace: bool = False,
            max_vcpus: int | None = None, create_latency: float = 0.0) -> dict[str, Any]:
    replicas = max(1, round(REPLICAS * scale))
    pods = 2 * replicas
    with workers(lifecycle_workers, termination_workers), \
            operator_world(create_fleet, launch_delay, registration_delay, cpu_requests,
                           max_vcpus, create_latency) as (world, cloud, operator, api):
        lifecycle = operator.driver.workers(operator.controllers.lifecycle)
        termination = operator.driver.workers(operator.controllers.built["node.termination"])
        cpu_before = time.process_time()
        controller_cpu_before = thread_cpu_seconds(IDENTITY)
        started = time.monotonic()
        world.apply(*burst(replicas))
        timeline = follow(world, pods, started, timeout, trace)
        wall = time.monotonic() - started
        cpu = time.process_time() - cpu_before
        controller_cpu = thread_cpu_seconds(IDENTITY) - controller_cpu_before
        with world.lock:
            nodes = world.memory.peek_all("Node")
            bound = world.memory.peek_all("Pod", "default")
            claims = len(world.memory.peek_all("NodeClaim"))
            launched = world.cloud.counters.launched
        return {
            "in_memory": True, "pods": pods, "replicas_each": replicas,
            "max_vcpus": max_vcpus,
            "lifecycle_workers": lifecycle, "termination_workers": termination,
            "cpu_requests": cpu_requests, "create_fleet_s": create_fleet,
            "launch_delay_s": launch_delay, "registration_delay_s": registration_delay,
            "scale_out_s": timeline["all_running"], **timeline,
            "nodeclaims": claims, "instances_launched": launched,
            "create_fleet_batches": sorted(cloud.batch_sizes, reverse=True),
            "most_launches_in_flight": cloud.most_launches_in_flight,
            "create_latency_s": create_latency,
            "most_creates_in_flight": api.most_in_flight,
            "cpu_utilization": round(average_utilization(nodes, bound, "cpu"), 3),
            "memory_utilization": round(average_utilization(nodes, bound, "memory"), 3),
            "process_cpu_s": round(cpu, 2), "controller_cpu_s": round(controller_cpu, 2),
            "wall_s": round(wall, 2), "load": round(os.getloadavg()[0], 2),
        }


def follow(world: RealTimeWorld, pods: int, started: float, timeout: float,
           trace: bool = False) -> dict[str, Any]:
    """Seconds from `started` to the first NodeClaim, to every NodeClaim of the first
    provisioning round launched, to the last launch seen and to every pod Running (None:
    not within `timeout`); the NodeClaim count at each change. `trace`: the counts every
    second on stderr."""
    first_claim: float | None = None
    first_round_launched: float | None = None
    last_launch: float | None = None
    claims_at: list[tuple[float, int]] = []
    launched_before = 0
    traced = -1.0
    while time.monotonic() - started < timeout:
        now = round(time.monotonic() - started, 2)
        with world.lock:
            claims = world.memory.peek_all("NodeClaim")
            every_pod = world.memory.peek_all("Pod", "default")
            nodes = len(world.memory.peek_all("Node"))
        running = sum(1 for pod in every_pod
                      if (pod.get("status") or {}).get("phase") == "Running")
        launched = sum(1 for claim in claims if (claim.get("status") or {}).get("providerID"))
        if trace and now - traced >= 1.0:
            traced = now
            bound = sum(1 for pod in every_pod if (pod.get("spec") or {}).get("nodeName"))
            print(f"  {now:6.1f}s pods {len(every_pod)} bound {bound} running {running}; "
                  f"nodeclaims {len(claims)} launched {launched}; nodes {nodes}",
                  file=sys.stderr, flush=True)
        if claims and first_claim is None:
            first_claim = now
        if claims and first_round_launched is None and launched == len(claims):
            first_round_launched = now
        if not claims_at or claims_at[-1][1] != len(claims):
            claims_at.append((now, len(claims)))
        if launched > launched_before:
            last_launch, launched_before = now, launched
        if running >= pods:
            return {"first_nodeclaim_s": first_claim,
                    "first_round_launched_s": first_round_launched,
                    "last_launch_s": last_launch, "all_running": now,
                    "nodeclaims_at": claims_at}
        time.sleep(POLL_SECONDS)
    return {"first_nodeclaim_s": first_claim, "first_round_launched_s": first_round_launched,
            "last_launch_s": last_launch, "all_running": None, "nodeclaims_at": claims_at}


def main() -> int:
    if any(arg == "--test" or arg.startswith("--test=") for arg in sys.argv[1:]):
        import suite_in_memory  # Karpenter's seven tests, every phase

        return suite_in_memory.main(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="replicas times this (0.02 for a smoke run)")
    parser.add_argument("--create-fleet", type=float, default=1.0, metavar="SECONDS",
                        help="how long each CreateFleet takes to answer")
    parser.add_argument("--launch-delay", type=float, default=2.0)
    parser.add_argument("--registration-delay", type=float, default=3.0)
    parser.add_argument("--cpu-requests", type=int, default=1000, metavar="MILLICORES")
    parser.add_argument("--lifecycle-workers", type=int, default=None)
    parser.add_argument("--termination-workers", type=int, default=None)
    parser.add_argument("--max-vcpus", type=int, default=None,
                        help="only instance types of at most this many vCPUs (not Karpenter's)")
    parser.add_argument("--create-latency", type=float, default=0.0, metavar="SECONDS",
                        help="how long each NodeClaim create takes to answer")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--trace", action="store_true",
                        help="the pods, NodeClaims and nodes every second, on stderr")
    parser.add_argument("--switch-interval", type=float, default=SWITCH_INTERVAL_SECONDS,
                        help="sys.setswitchinterval, as `nodewright controller` sets it")
    args = parser.parse_args()
    sys.setswitchinterval(args.switch_interval)
    print("IN MEMORY, NOT THE REAL CONTROL PLANE: the in-memory API server and the "
          "simulated EC2 run in this process", file=sys.stderr, flush=True)
    rows = []
    for _ in range(args.runs):
        row = measure(args.scale, args.create_fleet, args.launch_delay,
                      args.registration_delay, args.cpu_requests, args.lifecycle_workers,
                      args.termination_workers, args.timeout, args.trace, args.max_vcpus,
                      args.create_latency)
        rows.append(row)
        if not args.json:
            print(", ".join(f"{key}={value}" for key, value in row.items()), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
