#!/usr/bin/env python3
"""Controller latency benchmark: does a solve or a disruption pass hold the others up?

The operator (`nodewright.operator.process.Operator`: every controller on its own worker
thread, in real time) runs against the in-memory API server (one call at a time, as a
thread-safe client) and the simulated EC2. The cluster is bench/disruption.py's "full"
shape: N initialized m5.xlarge nodes with their NodeClaims and P pods filling ~97 % of
them (so a disruption pass judges every node and runs every method to the end), plus
Q pending pods the provisioner must solve for, and one NodeClaim whose instance the
lifecycle controller launches but whose Node does not exist yet.

Once a provisioning solve and a disruption pass are both running, at the same instant:
- a spot interruption warning for one node's instance goes onto the interruption queue
  (long-polled, as SQS is): timed until that Node carries the karpenter.sh/disrupted
  taint with its NodeClaim deleting (tainted and draining);
- the launched NodeClaim's Node appears (as its kubelet would register it): timed until
  the NodeClaim's Registered condition is True.
Reported with the solve's and the pass's own durations, and whether each was still
running when the interruption and the registration were done.

With `--slow-cloud S` the cloud answers as slowly as a real one can (tests/operator/
slow_cloud.py): the catalog refresh, the EC2NodeClass resolution, the TerminateInstances
of one deleted NodeClaim's instance and the CreateFleet of one new NodeClaim each take S
seconds, and all four are started just before the interruption, so it and the
registration arrive while they are in flight.

    python bench/controller_latency.py [--nodes 1000] [--pods 10000] [--pending 1000]
                                       [--slow-cloud 0] [--runs 1]
                                       [--switch-interval 0.001] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "controller"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # tests.operator.world

from disruption import TYPE, ZONES, write_cluster  # noqa: E402

from nodewright.cloud.provider import Instance, NodeClaimNotFoundError  # noqa: E402
from nodewright.cloud.sim import SimulatedEC2  # noqa: E402
from nodewright.cloud.sim.node import node_object  # noqa: E402
from nodewright.cluster.memory import InMemoryCluster  # noqa: E402
from nodewright.controllers.nodeclass.status import CatalogRefresh  # noqa: E402
from nodewright.controllers.provisioning import provisioner as provisioning  # noqa: E402
from nodewright.operator.main import SWITCH_INTERVAL_SECONDS  # noqa: E402
from nodewright.operator.process import Operator, OperatorSettings  # noqa: E402
from nodewright.runtime.clock import (  # noqa: E402
    Clock,
    SystemClock,
    parse_time,
)
from nodewright.state.wellknown import TERMINATION_FINALIZER  # noqa: E402
from tests.operator.slow_cloud import Gate, LongPollQueue, SlowCloud  # noqa: E402
from tests.operator.world import LockedCluster  # noqa: E402
from tests.support.operator import crash  # noqa: E402

DISRUPTED_TAINT = "karpenter.sh/disrupted"
REGISTERING = "registering"
DOOMED = "doomed"
SLOW_LAUNCH = "slow-launch"
INTERRUPTED_NODE = 7
SETTLE_SECONDS = 0.3


class BenchEC2(SimulatedEC2):
    """The simulated EC2, which also knows the instances of the nodes written before the
    start (so garbage collection keeps them)."""

    def __init__(self, clock: Clock, adopted: Mapping[str, Instance]) -> None:
        super().__init__(clock, region="us-east-1", seed=42)
        self.adopted = dict(adopted)
        self.interruption_queue = LongPollQueue(clock, "us-east-1", 42)
        self._adopted_lock = threading.Lock()

    def get(self, provider_id: str) -> Instance:
        found = self.adopted.get(provider_id)
        return found if found is not None else super().get(provider_id)

    def list(self) -> list[Instance]:
        with self._adopted_lock:
            adopted = list(self.adopted.values())
        return [*adopted, *super().list()]

    def delete(self, provider_id: str) -> None:
        with self._adopted_lock:
            if self.adopted.pop(provider_id, None) is not None:
                return
        super().delete(provider_id)

    def drift_reason(self, nodeclaim: Any, node_class: Any) -> str | None:
        provider_id = nodeclaim.status.provider_id if nodeclaim.status else None
        if provider_id in self.adopted:
            return None
        try:
            return super().drift_reason(nodeclaim, node_class)
        except NodeClaimNotFoundError:
            return None


def adopted_instances(cluster: InMemoryCluster) -> dict[str, Instance]:
    found = {}
    for claim in cluster.list("NodeClaim"):
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        if not provider_id:
            continue
        zone = provider_id.split("/")[3]
        found[provider_id] = Instance(
            provider_id=provider_id, instance_id=provider_id.rsplit("/", 1)[1],
            instance_type=TYPE, zone=zone, capacity_type="on-demand",
            image_id="ami-bench", state="running",
            launch_time=parse_time(claim["metadata"]["creationTimestamp"]),
            nodeclaim_name=claim["metadata"]["name"], nodepool_name="default",
            node_class_name="default")
    return found


def pending_pod(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"pending-{index:05d}", "namespace": "default",
                     "labels": {"app": f"pending-{index % 20}"}},
        "spec": {"nodeSelector": {"type": "bench"}, "containers": [{
            "name": "app", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]},
        "status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    }


def registering_claim(name: str = REGISTERING) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"},
                     "finalizers": ["karpenter.sh/termination"]},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": [
                     {"key": "node.kubernetes.io/instance-type", "operator": "In",
                      "values": [TYPE]},
                     {"key": "topology.kubernetes.io/zone", "operator": "In",
                      "values": [ZONES[0]]},
                     {"key": "karpenter.sh/capacity-type", "operator": "In",
                      "values": ["on-demand"]},
                     {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
                 "resources": {"requests": {"cpu": "100m"}}},
    }


class RecordingCluster(LockedCluster):
    """Notes when a write first shows what the benchmark waits for."""

    def __init__(self, memory: InMemoryCluster, checks: Mapping[str, Callable[[Any], bool]]
                 ) -> None:
        super().__init__(memory, threading.RLock())
        self.checks = checks
        self.seen: dict[str, float] = {}
        # What else to note when a check first passes (the slow calls in flight).
        self.in_flight: Callable[[], Any] = lambda: None
        self.context: dict[str, Any] = {}

    def _note(self, written: Any) -> Any:
        for name, check in self.checks.items():
            if name not in self.seen and check(written):
                self.seen[name] = time.monotonic()
                self.context[name] = self.in_flight()
        return written

    def update(self, obj: Any, *, subresource: str | None = None) -> Any:
        return self._note(super().update(obj, subresource=subresource))

    def patch(self, kind: str, name: str, patch: Any, namespace: str | None = None, *,
              subresource: str | None = None) -> Any:
        return self._note(super().patch(kind, name, patch, namespace, subresource=subresource))

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        super().delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                       uid=uid)
        self._note({"kind": kind, "metadata": {"name": name, "deleted": True}})


def _named(obj: Any, kind: str, name: str) -> bool:
    return bool(obj.get("kind") == kind and (obj.get("metadata") or {}).get("name") == name)


def tainted(name: str) -> Callable[[Any], bool]:
    def check(obj: Any) -> bool:
        taints = (obj.get("spec") or {}).get("taints") or []
        return _named(obj, "Node", name) and any(t.get("key") == DISRUPTED_TAINT
                                                 for t in taints)
    return check


def deleted(kind: str, name: str) -> Callable[[Any], bool]:
    def check(obj: Any) -> bool:
        return _named(obj, kind, name) and bool(obj["metadata"].get("deleted"))
    return check


def registered(name: str) -> Callable[[Any], bool]:
    def check(obj: Any) -> bool:
        return _named(obj, "NodeClaim", name) and any(
            c.get("type") == "Registered" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or [])
    return check


class Intervals:
    """When a wrapped call ran (monotonic start, end), and whether one runs now. The first
    call that `big` accepts sets `started` and waits until `partner` is set (so the big
    solve and the full pass start together, whichever is ready first)."""

    def __init__(self, big: Callable[..., bool] = lambda *a, **k: True,
                 patience: float = 300.0) -> None:
        self.spans: list[tuple[float, float | None]] = []
        self.patience = patience
        self._lock = threading.Lock()
        self.big = big
        self.started = threading.Event()
        self.partner = threading.Event()

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.started.is_set() and self.big(*args, **kwargs):
                self.started.set()
                self.partner.wait(self.patience)
            with self._lock:
                index = len(self.spans)
                self.spans.append((time.monotonic(), None))
            try:
                return call(*args, **kwargs)
            finally:
                with self._lock:
                    self.spans[index] = (self.spans[index][0], time.monotonic())
        return timed

    def running(self, at: float | None = None) -> bool:
        at = time.monotonic() if at is None else at
        with self._lock:
            return any(start <= at and (end is None or end > at) for start, end in self.spans)

    def durations(self) -> list[float]:
        now = time.monotonic()
        with self._lock:
            return [round((end if end is not None else now) - start, 2)
                    for start, end in self.spans]


class TimedOut(Exception):
    pass


def wait(check: Callable[[], Any], timeout: float, what: str, every: float = 0.005) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise TimedOut(f"timed out after {timeout:.0f}s waiting for {what}")


def measure(nodes: int, pods: int, pending: int, slow: float = 0.0,
            patience: float = 300.0) -> dict[str, Any]:
    """One run (see the module); `patience`: the longest each step may take."""
    started = time.perf_counter()
    clock = SystemClock()
    memory = InMemoryCluster(clock)
    write_cluster(memory, clock, nodes, pods, "full", finalizers=(TERMINATION_FINALIZER,))
    interrupted = f"node-{INTERRUPTED_NODE:05d}"
    cluster = RecordingCluster(memory, {
        "claim deleted": deleted("NodeClaim", f"default-{INTERRUPTED_NODE:05d}"),
        "tainted": tainted(interrupted),
        "registered": registered(REGISTERING)})
    cloud = BenchEC2(clock, adopted_instances(memory))
    slow_cloud = SlowCloud(cloud, seconds=slow, slow_launches={SLOW_LAUNCH}) if slow else None
    cluster.create(registering_claim())
    if slow_cloud is not None:
        cluster.create(registering_claim(DOOMED))
    for index in range(pending):
        cluster.create(pending_pod(index))
    setup = time.perf_counter() - started

    solves = Intervals(big=lambda problem, *rest, **options: len(problem.pods) >= pending // 2,
                       patience=patience)
    solved_pods: list[int] = []
    solve = provisioning.solve

    def counted(problem: Any, *rest: Any, **options: Any) -> Any:
        solved_pods.append(len(problem.pods))
        return solve(problem, *rest, **options)

    provisioning.solve = counted  # type: ignore[assignment]
    provisioning.solve = solves.wrap(provisioning.solve)  # type: ignore[assignment]
    settings = OperatorSettings(identity="bench", leader_elect=False)
    # The EC2NodeClass status controller comes from the registry (the simulated EC2 resolves
    # node classes); the catalog refresh the AWS provider would get, the slow cloud adds.
    refresh = CatalogRefresh(cluster, slow_cloud.refreshing_catalog()) if slow_cloud else None
    operator = Operator(cluster, slow_cloud or cloud, settings, clock=clock,
                        extra=[refresh] if refresh else [])
    gates: tuple[Gate, ...] = ()
    if slow_cloud is not None:
        slow_cloud.use_lock(operator.controllers.state.lock)
        gates = slow_cloud.gates
    cluster.in_flight = lambda: [gate.name for gate in gates if gate.blocked()]
    disruption = operator.controllers.disruption
    assert disruption is not None
    passes = Intervals(patience=patience)
    solves.partner, passes.partner = passes.started, solves.started
    controller = disruption.disruption
    judged: list[int] = []
    work_out = controller._work_out

    def counted_pass(*args: Any) -> Any:
        current, command = work_out(*args)
        judged.append(len(current.verdicts.by_node))
        return current, command

    controller._work_out = passes.wrap(counted_pass)  # type: ignore[method-assign]
    operator.start()
    try:
        instance_id = wait(lambda: cloud._by_nodeclaim.get(REGISTERING), patience,
                           "the registering NodeClaim's launch")
        try:
            # Started together (a tiny cluster's solve and pass may be over already).
            wait(lambda: solves.spans and passes.spans, patience,
                 "a solve and a disruption pass to start")
        except TimedOut as error:
            raise TimedOut(f"{error} (solves of {solved_pods} pods, passes over {judged} "
                           f"nodes)") from None
        time.sleep(SETTLE_SECONDS)  # both well under way (at a real size)
        if slow_cloud is not None and refresh is not None:
            doomed = wait(lambda: memory.get("NodeClaim", DOOMED).get("status", {})
                          .get("providerID"), 60, "the doomed NodeClaim's launch")
            slow_cloud.slow_terminations.add(doomed)
            for gate in gates:
                gate.arm()
            operator.driver.enqueue(refresh, "")
            operator.driver.enqueue(operator.controllers.built["nodeclass.status"], "default")
            cluster.create(registering_claim(SLOW_LAUNCH))
            cluster.delete("NodeClaim", DOOMED)
            wait(lambda: any(gate.blocked() for gate in gates), 60, "a slow cloud call")
            time.sleep(SETTLE_SECONDS)  # the others reach the cloud, if they can
        in_flight_at_send = cluster.in_flight()
        provider_id = memory.get("Node", interrupted)["spec"]["providerID"]
        instance = cloud._instances[instance_id]
        hostname = f"ip-{instance.private_ip.replace('.', '-')}.ec2.internal"
        node = node_object(instance, hostname, clock.now(),
                           cloud.settings.kubernetes_version)

        sent = time.monotonic()
        cloud.interruption_queue.spot_interruption(provider_id.rsplit("/", 1)[1])
        cluster.create(node)
        appeared = time.monotonic()
        try:
            wait(lambda: len(cluster.seen) == 3, patience,
                 "the interruption and the registration")
        except TimedOut:
            print(cluster.seen, list(operator.driver.errors)[-5:], file=sys.stderr)
            raise
        wait(lambda: judged and not solves.running(), patience,
             "the solve and the pass to end")
        for gate in gates:
            gate.open()
        verdicts = judged[0]
        last_of_draining = max(("tainted", "claim deleted"), key=lambda k: cluster.seen[k])
        results = {"draining": cluster.seen[last_of_draining],
                   "registered": cluster.seen["registered"]}
        return {
            "nodes": nodes, "pods": pods, "pending": pending, "slow_cloud_s": slow,
            "slow_calls_in_flight": {"at_send": in_flight_at_send,
                                     "at_draining": cluster.context.get(last_of_draining),
                                     "at_registered": cluster.context.get("registered")},
            "interruption_to_draining_s": round(results["draining"] - sent, 3),
            "node_to_registered_s": round(results["registered"] - appeared, 3),
            "solve_running_at_draining": solves.running(results["draining"]),
            "pass_running_at_draining": passes.running(results["draining"]),
            "solve_running_at_registered": solves.running(results["registered"]),
            "pass_running_at_registered": passes.running(results["registered"]),
            "solve_s": solves.durations()[:3],
            "solve_pods": solved_pods[:3],
            "pass_s": passes.durations()[:3],
            "pass_verdicts": verdicts,
            "setup_s": round(setup, 1),
            "cpus": os.cpu_count(),
            "load_average": round(os.getloadavg()[0], 1),
        }
    finally:
        for gate in gates:
            gate.open()
        queue = cloud.interruption_queue
        if isinstance(queue, LongPollQueue):
            queue.close()
        crash(operator)
        provisioning.solve = solve  # type: ignore[assignment]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--slow-cloud", type=float, default=0.0, metavar="SECONDS",
                        help="how long each slow cloud call takes (0: a fast cloud)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--switch-interval", type=float, default=SWITCH_INTERVAL_SECONDS,
                        help="sys.setswitchinterval for the run (default: what `nodewright "
                             "controller` sets; CPython's own is 0.005)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.one:
        print(json.dumps(measure(args.nodes, args.pods, args.pending, args.slow_cloud)))
        return 0
    rows = []
    for _ in range(args.runs):  # each run in a fresh process
        out = subprocess.run(
            [sys.executable, __file__, "--one", f"--nodes={args.nodes}",
             f"--pods={args.pods}", f"--pending={args.pending}",
             f"--slow-cloud={args.slow_cloud}",
             *([f"--switch-interval={args.switch_interval}"]
               if args.switch_interval is not None else [])],
            check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| nodes | pods | pending | slow cloud s | interruption -> draining s "
          "| Node -> Registered s | solve/pass running then | slow calls in flight then "
          "| solve s (pods) | pass s (verdicts) | load |")
    print("|---:|---:|---:|---:|---:|---:|---|---|---|---|---:|")
    for row in rows:
        running = (f"{'yes' if row['solve_running_at_draining'] else 'no'}/"
                   f"{'yes' if row['pass_running_at_draining'] else 'no'}, "
                   f"{'yes' if row['solve_running_at_registered'] else 'no'}/"
                   f"{'yes' if row['pass_running_at_registered'] else 'no'}")
        flight = row["slow_calls_in_flight"]
        in_flight = f"{len(flight['at_draining'] or [])}, {len(flight['at_registered'] or [])}"
        print(f"| {row['nodes']:,} | {row['pods']:,} | {row['pending']:,} "
              f"| {row['slow_cloud_s']:g} "
              f"| {row['interruption_to_draining_s']} | {row['node_to_registered_s']} "
              f"| {running} | {in_flight} | {row['solve_s'][0]} ({row['solve_pods'][0]}) "
              f"| {row['pass_s'][0]} ({row['pass_verdicts']}) | {row['load_average']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
