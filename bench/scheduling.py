#!/usr/bin/env python3
"""Scheduling benchmark: Karpenter's diverse workload against a synthetic and the real catalog.

Workload: five equal groups of pods (generic; zone spread maxSkew 1; hostname spread
maxSkew 1; zonal self-affinity; hostname self-anti-affinity), cpu drawn from
{100, 250, 500, 1000, 1500}m and memory from {100, 256, 512, 1024, 2048, 4096}Mi with a
fixed seed. Catalogs: 400 synthetic types (type i: i+1 vCPU, 2(i+1) GiB, 10(i+1) pods,
0.1 $/h per vCPU + 0.1 $/h per GiB, spot in two zones and on-demand in three, no
overhead) and the offline us-east-1 catalog (Karpenter's allocatable, list prices).

Lower bound (the LP relaxation of bin packing): for each resource r, the total request
of r times the cheapest price per allocatable unit of r over all offerings; the bound is
the largest of these. No set of nodes can cost less, because every node pays at least
that rate for the r it provides.

    python bench/scheduling.py [--sizes 100,1000,5000,10000] [--catalog synthetic,real] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering, offline_catalog
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve

CPU_CHOICES = ("100m", "250m", "500m", "1000m", "1500m")
MEMORY_CHOICES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
GROUPS = ("generic", "zone-spread", "hostname-spread", "zonal-affinity", "hostname-anti-affinity")
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
GIB_MILLIS = 2**30 * 1000


def synthetic_catalog() -> list[InstanceType]:
    types = []
    for i in range(400):
        vcpu, gib = i + 1, 2 * (i + 1)
        price = round(0.1 * vcpu + 0.1 * gib, 6)
        offerings = [Offering(z, None, "on-demand", price) for z in ("zone-a", "zone-b", "zone-c")]
        offerings += [Offering(z, None, "spot", price) for z in ("zone-a", "zone-b")]
        name = f"synthetic.{vcpu}x"
        types.append(
            InstanceType(
                name=name,
                labels={
                    "node.kubernetes.io/instance-type": name,
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/os": "linux",
                },
                capacity={"cpu": vcpu * 1000, "memory": gib * GIB_MILLIS, "pods": 10 * vcpu * 1000},
                overhead=Overhead({}, {}, {}),
                offerings=tuple(offerings),
            )
        )
    return types


def real_catalog() -> list[InstanceType]:
    return offline_catalog("us-east-1")


def pool(catalog: Sequence[InstanceType]) -> NodePoolTemplate:
    requirements = Requirements([
        Requirement.build("kubernetes.io/os", "In", ["linux"]),
        Requirement.build("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        Requirement.single("karpenter.sh/nodepool", "default"),
    ])
    return NodePoolTemplate("default", requirements, catalog)


def group_spec(group: str, label: dict[str, str]) -> dict[str, Any]:
    selector = {"matchLabels": label}
    if group == "zone-spread":
        return {"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector}]}
    if group == "hostname-spread":
        return {"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector}]}
    if group == "zonal-affinity":
        return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": ZONE, "labelSelector": selector}]}}}
    if group == "hostname-anti-affinity":
        return {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": HOSTNAME, "labelSelector": selector}]}}}
    return {}


def workload(count: int, groups: Sequence[str], seed: int = 42) -> list[Pod]:
    rng = random.Random(seed)
    pods = []
    per_group = count // len(groups)
    for group in groups:
        label = {"app": group}
        for n in range(per_group):
            spec = {
                "containers": [{"name": "app", "resources": {"requests": {
                    "cpu": rng.choice(CPU_CHOICES), "memory": rng.choice(MEMORY_CHOICES)}}}],
                **group_spec(group, label),
            }
            pods.append(parse_pod_spec("default", f"{group}-{n}", label, spec, "spec"))
    return pods


def lower_bound(pods: Sequence[Pod], catalog: Sequence[InstanceType]) -> float:
    bound = 0.0
    for resource in ("cpu", "memory"):
        total = sum(pod.requests.get(resource, 0) for pod in pods)
        rate = min(
            offering.price / it.allocatable[resource]
            for it in catalog
            if it.allocatable.get(resource, 0) > 0
            for offering in it.offerings
            if offering.available
        )
        bound = max(bound, total * rate)
    return bound


def measure(name: str, catalog: Sequence[InstanceType], size: int, groups: Sequence[str],
            label: str) -> dict[str, Any]:
    pods = workload(size, groups)
    problem = SchedulingProblem(pods=pods, nodepools=[pool(catalog)])
    started = time.perf_counter()
    result: SchedulingResult = solve(problem)
    elapsed = time.perf_counter() - started
    bound = lower_bound(pods, catalog)
    return {
        "catalog": name,
        "workload": label,
        "pods": len(pods),
        "seconds": round(elapsed, 3),
        "podsPerSecond": round(len(pods) / elapsed) if elapsed else None,
        "nodes": len(result.nodeclaims),
        "unschedulable": len(result.unschedulable),
        "hourlyCost": round(result.hourly_cost, 4),
        "lowerBound": round(bound, 4),
        "costOverBound": round(result.hourly_cost / bound, 3) if bound else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    parser.add_argument("--catalog", default="synthetic,real")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    catalogs = {"synthetic": synthetic_catalog, "real": real_catalog}
    rows = []
    for name in args.catalog.split(","):
        catalog = catalogs[name]()
        for size in sizes:
            rows.append(measure(name, catalog, size, GROUPS, "diverse"))
            rows.append(measure(name, catalog, size, ("generic",), "generic"))
            if not args.json:
                for row in rows[-2:]:
                    print(_line(row), flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['catalog']:9} {row['workload']:8} {row['pods']:>6} pods  "
        f"{row['podsPerSecond']:>7} pods/s  {row['nodes']:>5} nodes  "
        f"{row['unschedulable']:>4} unschedulable  ${row['hourlyCost']:>10.4f}/h  "
        f"bound ${row['lowerBound']:>10.4f}  ratio {row['costOverBound']}"
    )


if __name__ == "__main__":
    sys.exit(main())
