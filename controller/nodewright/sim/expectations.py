"""Checking an `expect` step against the cluster and the run so far."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodewright.sim.fleet import Fleet, differences
from nodewright.sim.scenario import Expectation


@dataclass(frozen=True)
class RunSoFar:
    """The counters `expect` reads besides the fleet."""

    disruptions: Mapping[str, int]
    launched: int
    pods_evicted: int
    violations: int


def check(expectation: Expectation, fleet: Fleet, run: RunSoFar) -> list[str]:
    """What differs from the expectation, one sentence per key; empty when it holds."""
    found: list[str] = []
    nodes = len(fleet.nodes)
    if expectation.nodes is not None and nodes != expectation.nodes:
        found.append(f"nodes: expected {expectation.nodes}, found {nodes} "
                     f"({_types(fleet)})")
    for key, wanted, attribute in (
        ("instanceTypes", expectation.instance_types, "instance_type"),
        ("capacityTypes", expectation.capacity_types, "capacity_type"),
        ("zones", expectation.zones, "zone"),
        ("nodePools", expectation.node_pools, "nodepool"),
    ):
        if wanted is not None:
            problem = differences(wanted, fleet.by(attribute))
            if problem:
                found.append(f"{key}: {problem}")
    if expectation.zones_distinct is not None:
        distinct = len(fleet.by("zone"))
        if distinct != expectation.zones_distinct:
            found.append(f"zones: expected {expectation.zones_distinct} distinct, found "
                         f"{distinct} ({', '.join(fleet.by('zone')) or 'none'})")
    if expectation.pending_pods is not None and fleet.pending_pods != expectation.pending_pods:
        found.append(f"pendingPods: expected {expectation.pending_pods}, found "
                     f"{fleet.pending_pods}")
    cost = fleet.hourly_cost
    low, high = expectation.hourly_cost_min, expectation.hourly_cost_max
    if (low is not None and cost < low - 1e-9) or (high is not None and cost > high + 1e-9):
        bounds = f"[{'' if low is None else low}, {'' if high is None else high}]"
        found.append(f"hourlyCost: ${cost:.4f} is outside {bounds}")
    if expectation.disruptions is not None:
        for reason, wanted_count in sorted(expectation.disruptions.items()):
            actual = run.disruptions.get(reason, 0)
            if actual != wanted_count:
                found.append(f"disruptions.{reason}: expected {wanted_count}, found {actual}")
    if expectation.launched is not None and run.launched != expectation.launched:
        found.append(f"launched: expected {expectation.launched}, found {run.launched}")
    if expectation.pods_evicted_max is not None and run.pods_evicted > expectation.pods_evicted_max:
        found.append(f"podsEvicted: {run.pods_evicted} evictions, more than "
                     f"{expectation.pods_evicted_max}")
    if expectation.violations is not None and run.violations != expectation.violations:
        found.append(f"violations: expected {expectation.violations}, found {run.violations}")
    return found


def _types(fleet: Fleet) -> str:
    return ", ".join(f"{name}: {count}" for name, count in fleet.by("instance_type").items()) \
        or "none"
