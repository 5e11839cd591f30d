#!/usr/bin/env python3
"""Controller benchmark: pending pods to all bound, through the real controllers.

The in-memory cluster (kube-scheduler, kubelet), the simulated EC2 (offline us-east-1
catalog) and Nodewright's controllers run on a virtual clock (`World`). The workload is
the scheduling benchmark's (bench/scheduling.py): five equal groups (generic; zone
spread; hostname spread; zonal self-affinity; hostname self-anti-affinity), cpu and
memory drawn with seed 42, here as bare Pods. One NodePool allows Linux, spot and
on-demand.

Reported per size, each measured in a fresh process:
- decision: wall seconds of the provisioner's first solve (state -> problem -> solver ->
  NodeClaims created) and its pods/s;
- controller work: wall seconds spent in Nodewright's reconcilers and the state cache's
  event handling from the first pod to the last one bound (the actors, the API server's
  own work outside our calls, and the simulated EC2's answers excluded: the latter is
  reported as cloud seconds), and pods/s over that;
- NodeClaims created, virtual minutes to all bound, total wall seconds, peak RSS (MB)
  (taken before the yardstick below runs);
- the bare solver's CPU seconds on the same pods (the scheduling benchmark's problem), a
  yardstick for how much the controllers add to a decision on a machine of any load.

    python bench/controllers.py [--sizes 1000,10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "controller"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # tests.harness

from scheduling import (  # noqa: E402
    CPU_CHOICES,
    GROUPS,
    MEMORY_CHOICES,
    group_spec,
    pool,
    real_catalog,
    workload,
)

from nodewright.runtime.reconciler import Reconciler, Result, WatchEvent  # noqa: E402
from nodewright.scheduling.solver import SchedulingProblem, solve  # noqa: E402
from tests.harness import World  # noqa: E402

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  disruption: {consolidateAfter: Never}
"""
NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-bench
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
"""


def pod_manifests(count: int, seed: int = 42) -> list[dict[str, Any]]:
    """The scheduling benchmark's pods (same draws, same order) as Pod objects."""
    rng = random.Random(seed)
    pods = []
    per_group = count // len(GROUPS)
    for group in GROUPS:
        label = {"app": group}
        for n in range(per_group):
            spec = {
                "containers": [{"name": "app", "image": "pause", "resources": {"requests": {
                    "cpu": rng.choice(CPU_CHOICES), "memory": rng.choice(MEMORY_CHOICES)}}}],
                **group_spec(group, label),
            }
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{group}-{n}", "namespace": "default",
                                      "labels": dict(label)},
                         "spec": spec})
    return pods


class Stopwatch:
    """Accumulates the wall seconds and the CPU seconds of this process spent in the
    wrapped calls (on a shared machine the CPU seconds are the stable number)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.cpu = 0.0

    def add(self, wall_started: float, cpu_started: float) -> None:
        self.seconds += time.perf_counter() - wall_started
        self.cpu += time.process_time() - cpu_started

    def wrap_reconciler(self, reconciler: Reconciler) -> None:
        original: Callable[[str], Result] = reconciler.reconcile

        def timed(key: str) -> Result:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return original(key)
            finally:
                self.add(started, cpu)

        reconciler.reconcile = timed  # type: ignore[method-assign]

    def wrap_listener(self, listener: Callable[[WatchEvent], None]
                      ) -> Callable[[WatchEvent], None]:
        def timed(event: WatchEvent) -> None:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                listener(event)
            finally:
                self.add(started, cpu)

        return timed

    def wrap_method(self, owner: Any, name: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(started, cpu)

        setattr(owner, name, timed)


def measure(size: int) -> dict[str, Any]:
    started = time.perf_counter()
    world = World()
    controllers = world.controllers
    work = Stopwatch()
    for reconciler in controllers.reconcilers:
        work.wrap_reconciler(reconciler)
    # The driver holds the state's listener: time it there.
    world.driver._listeners = [work.wrap_listener(fn) for fn in world.driver._listeners]
    # The simulated EC2 answers inside the controllers' reconciles; its time is the
    # cloud's (an API call's latency in production), reported apart.
    cloud = Stopwatch()
    for method in ("create", "get", "list", "delete", "get_instance_types"):
        cloud.wrap_method(world.cloud, method)
    cpu_started = time.process_time()
    provisioner = controllers.provisioner
    decisions: list[tuple[float, float, int, int]] = []
    provision = provisioner.provision

    def timed_provision() -> Any:
        begun, cpu = time.perf_counter(), time.process_time()
        outcome = provision()
        decisions.append((time.perf_counter() - begun, time.process_time() - cpu,
                          outcome.pods, len(outcome.created)))
        return outcome

    provisioner.provision = timed_provision  # type: ignore[method-assign]
    world.apply(NODECLASS, NODEPOOL)
    virtual_start = world.clock.now()
    world.apply(pod_manifests(size))
    pods = world.cluster.count("Pod")

    def all_bound() -> bool:
        # Counted on the stored objects: `world.running_pods()` would copy all of them
        # every 10 virtual seconds, a cost of this loop, not of the cluster or controllers.
        return running_pods(world) == pods

    bound = world.run_until(all_bound, timeout=3 * 3600, step=10)
    first_seconds, first_cpu, first_pods, first_claims = (
        decisions[0] if decisions else (0.0, 0.0, 0, 0))
    net_cpu = work.cpu - cloud.cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reference = reference_solve_cpu(size)
    return {
        "pods": pods,
        "allBound": bound,
        "decisionSeconds": round(first_seconds, 3),
        "decisionPodsPerSecond": round(first_pods / first_seconds) if first_seconds else None,
        "decisionCpuSeconds": round(first_cpu, 3),
        "decisionPodsPerCpuSecond": round(first_pods / first_cpu) if first_cpu else None,
        "firstDecisionNodeClaims": first_claims,
        "solves": len(decisions),
        "controllerSeconds": round(work.seconds - cloud.seconds, 3),
        "controllerPodsPerSecond": (
            round(pods / (work.seconds - cloud.seconds)) if work.seconds > cloud.seconds else None
        ),
        "controllerCpuSeconds": round(net_cpu, 3),
        "controllerPodsPerCpuSecond": round(pods / net_cpu) if net_cpu > 0 else None,
        "cloudSeconds": round(cloud.seconds, 3),
        "cloudCpuSeconds": round(cloud.cpu, 3),
        "cpuSeconds": round(time.process_time() - cpu_started, 1),
        "nodeClaims": len(world.nodeclaims()),
        "virtualMinutes": round((world.clock.now() - virtual_start).total_seconds() / 60, 1),
        "wallSeconds": round(time.perf_counter() - started, 1),
        "peakRssMb": round(peak_mb),
        "referenceSolveCpuSeconds": round(reference, 3),
    }


def running_pods(world: World) -> int:
    return sum(
        1 for pod in world.cluster.peek_all("Pod")
        if pod["spec"].get("nodeName") and pod["status"].get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    )


def reference_solve_cpu(size: int) -> float:
    """CPU seconds of the bare solver on the same pods (bench/scheduling.py's problem on
    the offline catalog): a yardstick measured in the same process, so the ratio of the
    decision to it does not depend on how busy the machine is."""
    problem = SchedulingProblem(pods=workload(size, GROUPS), nodepools=[pool(real_catalog())])
    started = time.process_time()
    solve(problem)
    return time.process_time() - started


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['pods']:>6} pods  decision {row['decisionSeconds']:.2f}s wall / "
        f"{row['decisionCpuSeconds']:.2f}s cpu ({row['decisionPodsPerCpuSecond']} pods/cpu-s, "
        f"{row['firstDecisionNodeClaims']} NodeClaims)  controllers {row['controllerSeconds']:.2f}s"
        f" wall / {row['controllerCpuSeconds']:.2f}s cpu ({row['controllerPodsPerCpuSecond']} "
        f"pods/cpu-s, {row['solves']} solves)  cloud {row['cloudCpuSeconds']:.2f}s cpu  "
        f"{row['nodeClaims']} NodeClaims  {row['virtualMinutes']} virtual min  "
        f"{row['wallSeconds']}s wall ({row['cpuSeconds']}s cpu)  {row['peakRssMb']} MB peak  "
        f"all bound: {row['allBound']}  bare solve {row['referenceSolveCpuSeconds']:.2f}s cpu"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single size, in-process
    args = parser.parse_args(argv)
    if args.one:
        json.dump(measure(args.one), sys.stdout)
        return 0
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        # A fresh process per size, so the peak RSS is that size's alone.
        output = subprocess.run(
            [sys.executable, __file__, "--one", str(size)],
            check=True, capture_output=True, text=True,
        ).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
        if not args.json:
            print(_line(rows[-1]), flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
