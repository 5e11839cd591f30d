#!/usr/bin/env python3
"""Scheduling benchmark: Karpenter's diverse workload against a synthetic and the real catalog.

Workload: five equal groups of pods (generic; zone spread maxSkew 1; hostname spread
maxSkew 1; zonal self-affinity; hostname self-anti-affinity), cpu drawn from
{100, 250, 500, 1000, 1500}m and memory from {100, 256, 512, 1024, 2048, 4096}Mi with a
fixed seed. Catalogs: 400 synthetic types (type i: i+1 vCPU, 2(i+1) GiB, 10(i+1) pods,
0.1 $/h per vCPU + 0.1 $/h per GiB, spot in two zones and on-demand in three, no
overhead) and the offline us-east-1 catalog (Karpenter's allocatable, list prices).

NodePools: "default" allows every Linux type, spot and on-demand; "realistic" only
categories c, m and r of generation 5 and later, at most 16 vCPU, amd64 and arm64.

Lower bound: the larger of the configuration (cutting-stock) LP by column generation and
the node-count MIP relaxation (`costbound.py`), with the restricted master solved as a MIP
for the best known packing. It ignores
topology, so for diverse rows it is loose (reported only with --bound-all).

    python bench/scheduling.py [--sizes 100,1000,5000,10000] [--catalog synthetic,real]
        [--pools default,realistic] [--seeds 42,7,2024] [--bound-up-to 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering, offline_catalog
from nodewright.scheduling.nodepools import NodePoolTemplate, cheapest_price, labels_compatible
from nodewright.scheduling.pods import Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve

if TYPE_CHECKING:
    import costbound  # numpy and scipy: loaded only when a bound is asked for (below)

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


def pool(catalog: Sequence[InstanceType], name: str = "default") -> NodePoolTemplate:
    requirements = Requirements([
        Requirement.build("kubernetes.io/os", "In", ["linux"]),
        Requirement.build("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        Requirement.single("karpenter.sh/nodepool", name),
    ])
    if name == "realistic":
        for requirement in (
            Requirement.build("karpenter.k8s.aws/instance-category", "In", ["c", "m", "r"]),
            Requirement.build("karpenter.k8s.aws/instance-generation", "Gt", ["4"]),
            Requirement.build("karpenter.k8s.aws/instance-cpu", "Lt", ["17"]),
            Requirement.build("kubernetes.io/arch", "In", ["amd64", "arm64"]),
        ):
            requirements.add(requirement)
    return NodePoolTemplate(name, requirements, catalog)


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


RESOURCES = ("cpu", "memory", "pods")


def node_types(template: NodePoolTemplate) -> list[costbound.NodeType]:
    """Every type the NodePool can launch, at its cheapest allowed offering (no DaemonSets
    in this benchmark, so the room is the allocatable)."""
    import costbound

    types = []
    for it in template.instance_types:
        if not labels_compatible(it, template.requirements):
            continue
        price = cheapest_price(it, template.requirements)
        if price is not None:
            room = tuple(it.allocatable.get(r, 0) for r in RESOURCES)
            types.append(costbound.NodeType(it.name, price, room))
    return types


def measure(name: str, catalog: Sequence[InstanceType], size: int, groups: Sequence[str],
            label: str, pool_name: str, seed: int, bound: bool) -> dict[str, Any]:
    pods = workload(size, groups, seed)
    template = pool(catalog, pool_name)
    problem = SchedulingProblem(pods=pods, nodepools=[template])
    started = time.perf_counter()
    result: SchedulingResult = solve(problem)
    elapsed = time.perf_counter() - started
    row: dict[str, Any] = {
        "catalog": name,
        "nodepool": pool_name,
        "workload": label,
        "seed": seed,
        "pods": len(pods),
        "seconds": round(elapsed, 3),
        "podsPerSecond": round(len(pods) / elapsed) if elapsed else None,
        "nodes": len(result.nodeclaims),
        "unschedulable": len(result.unschedulable),
        "hourlyCost": round(result.hourly_cost, 5),
        "lowerBound": None,
        "bestKnown": None,
        "planOverBound": None,
        "bestOverBound": None,
    }
    if bound:
        import costbound

        counts = costbound.shape_counts([p.requests for p in pods], RESOURCES)
        found = costbound.configuration_bound(counts, node_types(template))
        row.update({
            "lowerBound": round(found.lower, 5),
            "bestKnown": round(found.upper, 5),
            "boundConverged": found.converged,
            "boundMethod": found.method,
            "boundIsOptimum": found.optimal,
            "lpBound": round(found.lp_lower, 5),
            "nodeCountBound": round(found.node_lower, 5),
            "planOverBound": round(result.hourly_cost / found.lower, 4),
            "bestOverBound": round(found.upper / found.lower, 4),
        })
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    parser.add_argument("--catalog", default="synthetic,real")
    parser.add_argument("--pools", default="default,realistic")
    parser.add_argument("--seeds", default="42", help="seeds for the generic rows")
    parser.add_argument("--workloads", default="diverse,generic")
    parser.add_argument("--bound-up-to", type=int, default=5000,
                        help="compute the LP bound for generic rows up to this many pods")
    parser.add_argument("--bound-all", action="store_true", help="bound diverse rows too")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    catalogs = {"synthetic": synthetic_catalog, "real": real_catalog}
    workloads = {"diverse": GROUPS, "generic": ("generic",)}
    rows = []
    for name in args.catalog.split(","):
        catalog = catalogs[name]()
        pools = args.pools.split(",") if name == "real" else ["default"]
        for pool_name in pools:
            for size in sizes:
                for label in args.workloads.split(","):
                    for seed in seeds if label == "generic" else seeds[:1]:
                        bound = size <= args.bound_up_to and (label == "generic" or args.bound_all)
                        row = measure(name, catalog, size, workloads[label], label, pool_name,
                                      seed, bound)
                        rows.append(row)
                        if not args.json:
                            print(_line(row), flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def _line(row: dict[str, Any]) -> str:
    bound = (
        f"bound ${row['lowerBound']:.5f} ({row['boundMethod']}) best ${row['bestKnown']:.5f} "
        f"plan/bound {row['planOverBound']:.4f} best/bound {row['bestOverBound']:.4f}"
        if row["lowerBound"] is not None
        else "bound -"
    )
    return (
        f"{row['catalog']:9} {row['nodepool']:9} {row['workload']:8} seed {row['seed']:>4} "
        f"{row['pods']:>6} pods {row['podsPerSecond']:>7} pods/s {row['nodes']:>5} nodes "
        f"{row['unschedulable']:>3} unsched ${row['hourlyCost']:>10.5f}/h  {bound}"
    )


if __name__ == "__main__":
    sys.exit(main())
