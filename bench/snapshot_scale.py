#!/usr/bin/env python3
"""Snapshot benchmark (issue 33): a cluster of 2,000 nodes and 30,000 pods, snapshotted and
simulated until it settles; wall time, CPU time and peak RSS of each half.

- The cluster: a generated fleet scenario (NodeClaims of c5/m5/r5 2xlarge in three zones,
  Deployments of 250m / 512 MiB pods bound about 15 to a node, half the nodes'
  capacity idle) loaded into the in-memory cluster, as the simulator starts a snapshot.
- snapshot: `take_snapshot` reads that in-memory cluster through the ClusterAPI (list
  only, as from a real API server) and writes the scenario file. The issue's goal (under
  60 s) is for a real control plane; that needs the Kubernetes binaries of
  ../shared/k8s, which this machine lacks: the bench says so and measures the read from
  the in-memory cluster, the part that is ours.
- simulate: `nodewright simulate SNAPSHOT --quiet --json` in a process of its own, until
  the cluster settles (goal: under 3 minutes, RSS under 1 GiB).

    python bench/snapshot_scale.py [--nodes 2000] [--pods 30000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
NODEWRIGHT = [sys.executable, "-m", "nodewright"]
GOALS = {"snapshot": 60.0, "simulate": 180.0, "rss_mib": 1024.0}
TYPES = ("m5.2xlarge", "c5.2xlarge", "r5.2xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
REPLICAS = 100  # pods per Deployment


@dataclass
class Half:
    name: str
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    goal: float
    detail: dict[str, Any]


def fleet_scenario(nodes: int, pods: int) -> dict[str, Any]:
    """A scenario starting from `nodes` NodeClaims with `pods` pods bound round-robin."""
    deployments = max(1, -(-pods // REPLICAS))
    manifests: list[dict[str, Any]] = [
        {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
         "metadata": {"name": "default"},
         "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "NodeRole",
                  "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                  "securityGroupSelectorTerms": [
                      {"tags": {"karpenter.sh/discovery": "bench"}}]}},
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
         "spec": {"template": {"spec": {
             "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                              "name": "default"},
             "expireAfter": "720h",
             "requirements": [
                 {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                  "values": ["c5", "m5", "r5"]},
                 {"key": "karpenter.sh/capacity-type", "operator": "In",
                  "values": ["on-demand"]}]}},
             "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                            "consolidateAfter": "1m", "budgets": [{"nodes": "10%"}]}}},
    ]
    sizes: list[int] = []
    left = pods
    for index in range(deployments):
        replicas = min(REPLICAS, left)
        left -= replicas
        sizes.append(replicas)
        manifests.append({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"app-{index:04d}", "namespace": "default"},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"app": f"app-{index:04d}"}},
                     "template": {"metadata": {"labels": {"app": f"app-{index:04d}"}},
                                  "spec": {"terminationGracePeriodSeconds": 0,
                                           "containers": [{"name": "app", "image": "app",
                                                           "resources": {"requests": {
                                                               "cpu": "250m",
                                                               "memory": "512Mi"}}}]}}}})
    claims = [{"name": f"default-{index:05d}", "nodePool": "default",
               "instanceType": TYPES[index % len(TYPES)], "zone": ZONES[index % len(ZONES)],
               "age": f"{(index * 7) % 600}h"} for index in range(nodes)]
    counts: dict[tuple[str, str], int] = {}
    slot = 0
    for index, replicas in enumerate(sizes):
        for _ in range(replicas):
            key = (claims[slot % nodes]["name"], f"app-{index:04d}")
            counts[key] = counts.get(key, 0) + 1
            slot += 1
    bound = [{"node": node, "kind": "Deployment", "name": name, "count": count}
             for (node, name), count in sorted(counts.items())]
    return {"name": f"fleet-{nodes}", "manifests": manifests, "nodeClaims": claims,
            "boundPods": bound, "steps": [{"settle": {"timeout": "4h"}}]}


def take(nodes: int, pods: int, folder: Path) -> tuple[Path, dict[str, Any]]:
    """In this process: the cluster loaded into memory, then the snapshot read from it."""
    from nodewright.cli.snapshot import dump
    from nodewright.sim.fleet_start import start_fleet
    from nodewright.sim.loading import load_scenario
    from nodewright.sim.snapshot.read import take_snapshot
    from nodewright.sim.world import build_world

    source = folder / "cluster.yaml"
    source.write_text(yaml.safe_dump(fleet_scenario(nodes, pods), sort_keys=False))
    began = time.perf_counter()
    scenario, problems = load_scenario(source)
    if scenario is None:
        raise SystemExit(f"the generated cluster is invalid: {problems[:3]}")
    world = build_world(scenario)
    for document in scenario.manifests:
        world.apply(document)
    problems_left = start_fleet(world)
    # The controllers adopt the NodeClaims (a few virtual seconds; nothing is consolidated
    # before consolidateAfter): the cluster as a running Nodewright or Karpenter leaves it.
    world.driver.start()
    world.controllers.kick(world.driver)
    world.clock.advance(10)
    loaded = time.perf_counter() - began
    began, cpu = time.perf_counter(), time.process_time()
    snapshot = take_snapshot(world.cluster, world.clock.now(), name=f"snapshot-{nodes}")
    target = folder / "snapshot.yaml"
    target.write_text(dump(snapshot.document), encoding="utf-8")
    took, cpu = time.perf_counter() - began, time.process_time() - cpu
    return target, {"load_seconds": round(loaded, 2), "snapshot_seconds": round(took, 2),
                    "snapshot_cpu_seconds": round(cpu, 2),
                    "counts": snapshot.counts, "fleet_problems": len(problems_left),
                    "bytes": target.stat().st_size}


def simulate(snapshot: Path, folder: Path) -> Half:
    timeline = folder / "timeline.json"
    began = time.perf_counter()
    child = subprocess.Popen(
        [*NODEWRIGHT, "simulate", str(snapshot), "--quiet", "--json", str(timeline)],
        cwd=ROOT, stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT / "controller")})
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    detail: dict[str, Any] = {"exit": os.waitstatus_to_exitcode(status)}
    if timeline.exists():
        result = json.loads(timeline.read_text())
        outcome = (result.get("whatItWouldDo") or [{}])[0]
        detail.update({
            "virtual_time": result["timeline"][-1]["time"] if result["timeline"] else "",
            "disruptions": result["summary"]["disruptions"],
            "nodes_after": result["summary"]["nodes"],
            "hourly_before": outcome.get("before", {}).get("hourlyCost"),
            "hourly_after": outcome.get("after", {}).get("hourlyCost"),
            "settled": outcome.get("settled"),
        })
    return Half("simulate", round(seconds, 2), round(usage.ru_utime + usage.ru_stime, 2),
                round(usage.ru_maxrss / 1024, 1), GOALS["simulate"], detail)


def control_plane_note() -> str:
    present = [name for name in ("kube-apiserver", "etcd") if shutil.which(name)]
    if len(present) == 2:
        return ("kube-apiserver and etcd are present, but this bench does not start them: "
                "the real-control-plane half is the e2e story tests/e2e/test_snapshot.py")
    return ("taking the snapshot from a real control plane needs kube-apiserver and etcd "
            "(../shared/k8s), absent here: measured instead is the read from the in-memory "
            "cluster, through the same ClusterAPI")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--snapshot-only", action="store_true",
                        help="take the snapshot and stop (no simulation)")
    args = parser.parse_args()
    print(f"note: {control_plane_note()}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="nodewright-snapshot-bench-") as name:
        folder = Path(name)
        snapshot, detail = take(args.nodes, args.pods, folder)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        # Peak RSS of this process: the in-memory cluster plus the snapshot.
        halves = [Half("snapshot (in-memory cluster)", detail["snapshot_seconds"],
                       detail["snapshot_cpu_seconds"], round(usage.ru_maxrss / 1024, 1),
                       GOALS["snapshot"], detail)]
        print(f"snapshot: {detail['counts']} in {detail['snapshot_seconds']} s "
              f"({detail['snapshot_cpu_seconds']} s CPU) "
              f"(cluster loaded in {detail['load_seconds']} s), "
              f"{detail['bytes'] / 1e6:.1f} MB", file=sys.stderr, flush=True)
        if not args.snapshot_only:
            half = simulate(snapshot, folder)
            halves.append(half)
            print(f"simulate: {half.seconds} s wall, {half.cpu_seconds} s CPU, peak RSS "
                  f"{half.peak_rss_mib} MiB: {half.detail}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps([asdict(h) for h in halves], indent=2))


if __name__ == "__main__":
    main()
