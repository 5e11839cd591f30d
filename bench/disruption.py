#!/usr/bin/env python3
"""Disruption benchmark: one pass of the disruption loop deciding over a large cluster.

The cluster is written straight into the in-memory API server (no provisioning): one
NodePool on the workshop's EC2NodeClass, N initialized m5.xlarge nodes (with their
NodeClaims, across three zones), and P pods bound evenly to them, cpu and memory drawn
with seed 42. The state cache is fed from one watch, and one disruption pass runs with the
offline us-east-1 catalog as the cloud (it only supplies instance types and prices). Only
the pass is timed: building the view of the cluster, every candidate's verdict, the
methods in order (emptiness, drift, multi-node, single-node consolidation) until one
proposes a command, and publishing the verdicts (NodeClaim conditions, Events).

Shapes:
- full: pods fill ~97 % of every node; nothing can be consolidated, so every method runs
  to the end (the worst case: single-node consolidation judges every node);
- packed: pods fill ~80 % of every node; the holes left on the others take a node's pods;
- underutilized: pods fill ~25 % of every node; multi-node consolidation merges many.

Pods come from 50 workloads (each with its own requests drawn around the fill), as
Deployments do; the NodePool allows m5.large and m5.xlarge only, so a merge is never
cheaper per unit and only emptying nodes saves money.

    python bench/disruption.py [--nodes 1000] [--pods 10000] [--shape packed,underutilized]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "controller"))

from nodewright.api.hashes import nodeclaim_hash_annotations  # noqa: E402
from nodewright.cluster.events import EventRecorder  # noqa: E402
from nodewright.cluster.memory import InMemoryCluster  # noqa: E402
from nodewright.controllers.disruption.controller import (  # noqa: E402
    DisruptionController,
    DisruptionOptions,
)
from nodewright.controllers.disruption.why_from_cluster import OfflineCatalog  # noqa: E402
from nodewright.runtime.clock import Clock, VirtualClock, format_time  # noqa: E402
from nodewright.scheduling.catalog import offline_catalog  # noqa: E402
from nodewright.state import ClusterState  # noqa: E402

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"type": "bench"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
                "requirements": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In",
                     "values": ["on-demand"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": ["m5.large", "m5.xlarge"]},
                ],
            },
        },
        "disruption": {"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]},
    },
}
NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {"role": "bench", "amiSelectorTerms": [{"alias": "al2023@latest"}],
             "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
             "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]},
}
TYPE = "m5.xlarge"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
FILL = {"full": 0.97, "packed": 0.8, "underutilized": 0.25}
APPS = 50


def build_cluster(nodes: int, pods: int, shape: str) -> tuple[VirtualClock, InMemoryCluster]:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    write_cluster(cluster, clock, nodes, pods, shape)
    return clock, cluster


def write_cluster(cluster: InMemoryCluster, clock: Clock, nodes: int, pods: int,
                  shape: str, finalizers: tuple[str, ...] = ()) -> None:
    """The NodePool, the EC2NodeClass, the nodes with their NodeClaims (with
    `finalizers`) and the bound pods (also used by bench/controller_latency.py, on a
    real-time clock, where the termination controller must see them go)."""
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.api.nodepool import NodePool

    cluster.create(NODECLASS)
    cluster.create(NODEPOOL)
    [instance_type] = [it for it in offline_catalog("us-east-1") if it.name == TYPE]
    allocatable = {"cpu": f"{instance_type.allocatable['cpu']}m",
                   "memory": f"{instance_type.allocatable['memory'] // 1000}",
                   "pods": str(instance_type.allocatable["pods"] // 1000)}
    capacity = {"cpu": f"{instance_type.capacity['cpu']}m",
                "memory": f"{instance_type.capacity['memory'] // 1000}",
                "pods": str(instance_type.capacity["pods"] // 1000)}
    annotations = nodeclaim_hash_annotations(NodePool.model_validate(NODEPOOL),
                                             EC2NodeClass.model_validate(NODECLASS))
    created = format_time(clock.now())
    rng = random.Random(42)
    per_node = max(pods // nodes, 1)
    cpu_budget = instance_type.allocatable["cpu"] * FILL[shape] / per_node
    memory_budget = instance_type.allocatable["memory"] / 1000 * FILL[shape] / per_node
    # 50 workloads, each with its own requests (as Deployments have), around the budget.
    shapes = [(int(cpu_budget * rng.uniform(0.8, 1.2)),
               int(memory_budget * rng.uniform(0.8, 1.2)))
              for _ in range(APPS)]
    conditions = [{"type": kind, "status": "True", "reason": kind, "message": "",
                   "lastTransitionTime": created}
                  for kind in ("Launched", "Registered", "Initialized", "Ready")]
    for index in range(nodes):
        zone = ZONES[index % 3]
        name = f"node-{index:05d}"
        provider_id = f"aws:///{zone}/i-{index:017x}"
        labels = {"karpenter.sh/nodepool": "default", "type": "bench",
                  "node.kubernetes.io/instance-type": TYPE, "topology.kubernetes.io/zone": zone,
                  "karpenter.sh/capacity-type": "on-demand", "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-category": "m",
                  "karpenter.k8s.aws/ec2nodeclass": "default"}
        claim = cluster.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"default-{index:05d}", "labels": labels,
                         "annotations": annotations, "finalizers": list(finalizers)},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"},
                     "requirements": [], "expireAfter": "720h"},
        })
        claim["status"] = {"providerID": provider_id, "nodeName": name, "conditions": conditions,
                           "capacity": capacity, "allocatable": allocatable}
        cluster.update(claim, subresource="status")
        node = cluster.create({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "finalizers": list(finalizers), "labels": {
                **labels, "kubernetes.io/hostname": name, "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true"}},
            "spec": {"providerID": provider_id},
        })
        node["status"] = {"allocatable": allocatable, "capacity": capacity,
                          "conditions": [{"type": "Ready", "status": "True"}]}
        cluster.update(node, subresource="status")
        for slot in range(per_node):
            app = (index * per_node + slot) % APPS
            cpu, memory = shapes[app]
            pod = cluster.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"app-{index:05d}-{slot}", "namespace": "default",
                             "labels": {"app": f"app-{app}"}},
                "spec": {"nodeName": name, "nodeSelector": {"type": "bench"},
                         "containers": [{"name": "app", "resources": {"requests": {
                             "cpu": f"{cpu}m", "memory": str(memory)}}}]},
            })
            pod["status"] = {"phase": "Running", "startTime": created,
                             "conditions": [{"type": "Ready", "status": "True"}]}
            cluster.update(pod, subresource="status")


def one_pass(nodes: int, pods: int, shape: str) -> dict[str, Any]:
    started = time.perf_counter()
    clock, cluster = build_cluster(nodes, pods, shape)
    clock.advance(3600)
    state = ClusterState(clock)
    stream = cluster.watch(["NodePool", "EC2NodeClass", "NodeClaim", "Node", "Pod",
                            "PodDisruptionBudget", "DaemonSet", "Namespace"])
    for event in stream.poll():
        state.observe(event)
    cloud = OfflineCatalog("us-east-1")
    controller = DisruptionController(cluster, cloud, clock, state,
                                      EventRecorder(cluster, clock), options=DisruptionOptions())
    setup = time.perf_counter() - started
    tick, cpu_tick = time.perf_counter(), time.process_time()
    controller.reconcile("")
    seconds = time.perf_counter() - tick
    cpu_seconds = time.process_time() - cpu_tick
    pending = controller.pending
    decided = pending.command if pending is not None else None
    return {
        "shape": shape, "nodes": nodes, "pods": pods,
        "pass_seconds": round(seconds, 2),
        "pass_cpu_seconds": round(cpu_seconds, 2),
        "decision": (f"{decided.method}: {decided.decision} of {len(decided.candidates)} "
                     f"node(s) -> {len(decided.replacements)} replacement(s)"
                     if decided else "nothing to do"),
        "verdicts": len(controller.last_pass.verdicts.by_node) if controller.last_pass else 0,
        "setup_seconds": round(setup, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--shape", default="full,packed,underutilized")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    offline_catalog("us-east-1")  # built once, as the running controller has it
    rows = [one_pass(args.nodes, args.pods, shape) for shape in args.shape.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| shape | nodes | pods | pass s (wall) | pass s (cpu) | decision | verdicts | setup s "
          "| peak RSS MB |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row['shape']} | {row['nodes']:,} | {row['pods']:,} | {row['pass_seconds']} "
              f"| {row['pass_cpu_seconds']} "
              f"| {row['decision']} | {row['verdicts']} | {row['setup_seconds']} "
              f"| {row['peak_rss_mb']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
