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
        [--bound-cache /tmp/nodewright-scheduling-bounds.json] [--recompute-bounds]
        [--workloads diverse,generic,preferences,preferences-ignored]

"preferences" is Karpenter's BenchmarkRespectPreferences: alike pods of one drawn size that
prefer the first zone and prefer, by pod anti-affinity, no other of them in their zone
(weight 10: cannot hold for all) nor on their node (weight 1); "preferences-ignored" is
BenchmarkIgnorePreferences, the same pods under PREFERENCE_POLICY=Ignore.

Per row: CPU seconds of one `solve()` (`time.process_time`), pods per CPU second, the plan
and plan / bound. Bounds are expensive (minutes a row): those of docs/performance.md's cost
table are built in (`KNOWN_BOUNDS`) and computed ones are cached in --bound-cache.
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
from nodewright.scheduling.solver import (
    SchedulingProblem,
    SchedulingResult,
    ignore_preferences,
    solve,
)

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


def preference_pods(count: int, zone: str, seed: int = 42) -> list[Pod]:
    """Karpenter's makePreferencePods: `count` alike pods (one size drawn once) that prefer
    `zone`, prefer (weight 10) no other of them in their zone, which cannot hold for all,
    and prefer (weight 1) no other on their node."""
    rng = random.Random(seed)
    label = {"app": "nginx"}
    selector = {"matchLabels": label}
    requests = {"cpu": rng.choice(CPU_CHOICES), "memory": rng.choice(MEMORY_CHOICES)}
    spec = {
        "containers": [{"name": "app", "resources": {"requests": requests}}],
        "affinity": {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 1, "preference": {"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": [zone]}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"topologyKey": ZONE,
                                                   "labelSelector": selector}},
                {"weight": 1, "podAffinityTerm": {"topologyKey": HOSTNAME,
                                                  "labelSelector": selector}},
            ]},
        },
    }
    return [parse_pod_spec("default", f"preference-{n}", label, spec, "spec")
            for n in range(count)]


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


WORKLOADS: dict[str, tuple[str, ...]] = {
    "diverse": GROUPS,
    "generic": ("generic",),
    # Karpenter's BenchmarkRespectPreferences and BenchmarkIgnorePreferences (4,000 pods)
    "preferences": (),
    "preferences-ignored": (),
}


def pods_for(label: str, size: int, catalog: Sequence[InstanceType], seed: int) -> list[Pod]:
    if not label.startswith("preferences"):
        return workload(size, WORKLOADS[label], seed)
    first_zone = min(o.zone for it in catalog for o in it.offerings)
    pods = preference_pods(size, first_zone, seed)
    if label == "preferences-ignored":  # PREFERENCE_POLICY=Ignore, as the provisioner does
        pods = [ignore_preferences(pod) for pod in pods]
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


# Bounds of the cost table in docs/performance.md (generic rows, real catalog): the bound
# takes minutes a row, so rows already known are not computed again. Key: catalog,
# NodePool, workload, seed, pods; value: (bound $/h, method).
KNOWN_BOUNDS: dict[tuple[str, str, str, int, int], tuple[float, str]] = {
    ("real", "default", "generic", 42, 100): (0.39689, "optimum"),
    ("real", "default", "generic", 7, 100): (0.38262, "optimum"),
    ("real", "default", "generic", 2024, 100): (0.43155, "optimum"),
    ("real", "default", "generic", 42, 1000): (4.17950, "LP"),
    ("real", "default", "generic", 7, 1000): (3.93836, "LP"),
    ("real", "default", "generic", 2024, 1000): (4.19348, "LP"),
    ("real", "default", "generic", 42, 5000): (20.97891, "LP"),
    ("real", "default", "generic", 7, 5000): (20.26307, "LP"),
    ("real", "default", "generic", 2024, 5000): (20.72805, "LP"),
    ("real", "realistic", "generic", 42, 100): (0.86656, "optimum"),
    ("real", "realistic", "generic", 7, 100): (0.92480, "optimum"),
    ("real", "realistic", "generic", 2024, 100): (0.88676, "optimum"),
    ("real", "realistic", "generic", 42, 1000): (9.44145, "LP"),
    ("real", "realistic", "generic", 7, 1000): (8.99658, "LP (not converged)"),
    ("real", "realistic", "generic", 2024, 1000): (9.11149, "node-count MIP"),
    ("real", "realistic", "generic", 42, 5000): (47.52931, "LP"),
    ("real", "realistic", "generic", 7, 5000): (45.22504, "node-count MIP"),
    ("real", "realistic", "generic", 2024, 5000): (46.16320, "node-count MIP"),
}
DEFAULT_BOUND_CACHE = "/tmp/nodewright-scheduling-bounds.json"


def _cache_key(key: tuple[str, str, str, int, int]) -> str:
    return "/".join(str(part) for part in key)


def load_bounds(path: str | None) -> dict[str, dict[str, Any]]:
    """Known bounds, then those cached in `path` by earlier runs (a cached one wins)."""
    bounds = {
        _cache_key(key): {"lowerBound": lower, "boundMethod": method, "source": "docs"}
        for key, (lower, method) in KNOWN_BOUNDS.items()
    }
    if path and Path(path).exists():
        try:
            bounds.update(json.loads(Path(path).read_text()))
        except (OSError, ValueError) as error:
            print(f"ignoring the bound cache {path}: {error}", file=sys.stderr)
    return bounds


def save_bounds(path: str | None, bounds: dict[str, dict[str, Any]]) -> None:
    if path:
        computed = {k: v for k, v in bounds.items() if v.get("source") != "docs"}
        Path(path).write_text(json.dumps(computed, indent=1, sort_keys=True))


def measure(name: str, catalog: Sequence[InstanceType], size: int,
            label: str, pool_name: str, seed: int, bound: bool,
            bounds: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """One row. Times are CPU seconds of `solve()` alone (`time.process_time`: the machine
    is shared, so wall time says more about the other processes than about the solver);
    pods/s is per CPU second. `bounds` caches lower bounds by row (computed ones are
    added)."""
    pods = pods_for(label, size, catalog, seed)
    template = pool(catalog, pool_name)
    problem = SchedulingProblem(pods=pods, nodepools=[template])
    started, started_cpu = time.perf_counter(), time.process_time()
    result: SchedulingResult = solve(problem)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    row: dict[str, Any] = {
        "catalog": name,
        "nodepool": pool_name,
        "workload": label,
        "seed": seed,
        "pods": len(pods),
        "cpuSeconds": round(cpu, 3),
        "seconds": round(elapsed, 3),
        "podsPerSecond": round(len(pods) / cpu) if cpu else None,
        "nodes": len(result.nodeclaims),
        "unschedulable": len(result.unschedulable),
        "hourlyCost": round(result.hourly_cost, 5),
        "lowerBound": None,
        "bestKnown": None,
        "planOverBound": None,
        "bestOverBound": None,
    }
    key = _cache_key((name, pool_name, label, seed, size))
    known = (bounds or {}).get(key)
    if bound and known is not None:
        row.update({k: v for k, v in known.items() if k != "source"})
        row["boundSource"] = known.get("source", "cache")
        row["planOverBound"] = round(result.hourly_cost / known["lowerBound"], 4)
        if known.get("bestKnown"):
            row["bestOverBound"] = round(known["bestKnown"] / known["lowerBound"], 4)
    elif bound:
        import costbound

        counts = costbound.shape_counts([p.requests for p in pods], RESOURCES)
        found = costbound.configuration_bound(counts, node_types(template))
        computed = {
            "lowerBound": round(found.lower, 5),
            "bestKnown": round(found.upper, 5),
            "boundConverged": found.converged,
            "boundMethod": found.method,
            "boundIsOptimum": found.optimal,
            "lpBound": round(found.lp_lower, 5),
            "nodeCountBound": round(found.node_lower, 5),
        }
        row.update(computed)
        row.update({
            "boundSource": "computed",
            "planOverBound": round(result.hourly_cost / found.lower, 4),
            "bestOverBound": round(found.upper / found.lower, 4),
        })
        if bounds is not None:
            bounds[key] = {**computed, "source": "computed"}
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    parser.add_argument("--catalog", default="synthetic,real")
    parser.add_argument("--pools", default="default,realistic")
    parser.add_argument("--seeds", default="42", help="seeds for the generic rows")
    parser.add_argument("--workloads", default="diverse,generic",
                        help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    parser.add_argument("--bound-up-to", type=int, default=5000,
                        help="compute the LP bound for generic rows up to this many pods")
    parser.add_argument("--bound-all", action="store_true", help="bound diverse rows too")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--bound-cache", default=DEFAULT_BOUND_CACHE,
                        help="JSON file of bounds computed by earlier runs ('' for none)")
    parser.add_argument("--recompute-bounds", action="store_true",
                        help="compute every bound again (minutes a row)")
    args = parser.parse_args(argv)
    bounds = {} if args.recompute_bounds else load_bounds(args.bound_cache)
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    catalogs = {"synthetic": synthetic_catalog, "real": real_catalog}
    rows = []
    for name in args.catalog.split(","):
        catalog = catalogs[name]()
        pools = args.pools.split(",") if name == "real" else ["default"]
        for pool_name in pools:
            for size in sizes:
                for label in args.workloads.split(","):
                    for seed in seeds if label == "generic" else seeds[:1]:
                        bound = size <= args.bound_up_to and (label == "generic" or args.bound_all)
                        row = measure(name, catalog, size, label, pool_name, seed, bound,
                                      bounds)
                        rows.append(row)
                        if row.get("boundSource") == "computed":
                            save_bounds(args.bound_cache, bounds)
                        if not args.json:
                            print(_line(row), flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def _line(row: dict[str, Any]) -> str:
    best = (f" best ${row['bestKnown']:.5f} best/bound {row['bestOverBound']:.4f}"
            if row.get("bestOverBound") else "")
    bound = (
        f"bound ${row['lowerBound']:.5f} ({row['boundMethod']}, {row['boundSource']}) "
        f"plan/bound {row['planOverBound']:.4f}{best}"
        if row["lowerBound"] is not None
        else "bound -"
    )
    return (
        f"{row['catalog']:9} {row['nodepool']:9} {row['workload']:8} seed {row['seed']:>4} "
        f"{row['pods']:>6} pods {row['cpuSeconds']:>7.3f} cpu s {row['podsPerSecond']:>7} pods/s "
        f"{row['nodes']:>5} nodes {row['unschedulable']:>3} unsched "
        f"${row['hourlyCost']:>10.5f}/h  {bound}"
    )


if __name__ == "__main__":
    sys.exit(main())
