"""Each NodePool as the solver sees it: the instance types it may launch with the room the
DaemonSets leave on each, the finite domains topology can pick among, and the room its
limits leave. `PoolSetup` is worked out once per problem (and memoised across problems
alike); `pool_state` is one plan's mutable copy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.scheduling.daemons import DaemonLoad, daemon_loads
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    cheapest_price,
    compatible_mask,
    offering_values,
)
from nodewright.scheduling.pods import DaemonSet, ExistingNode
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_NODEPOOL,
    LABEL_PARTITION,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
)
from nodewright.scheduling.targets import (
    LIMIT_NODES,
    Candidate,
    PoolState,
    ResourceIndex,
    Vector,
)
from nodewright.scheduling.topology import DomainSource


@dataclass
class PoolSetup:
    template: NodePoolTemplate
    requirements: Requirements
    candidates: list[Candidate]
    zero: Vector
    remaining: dict[str, int] | None
    source: DomainSource
    domains: list[tuple[str, str]]
    # The DaemonSets of each type, by type name, where some hold host ports.
    daemon_ports: Mapping[str, DaemonLoad] = field(default_factory=dict)
    # Types left out because the DaemonSets that run on them take more than they hold.
    overfilled: int = 0
    # PoolState.candidates_for's answers, shared by every solver of this pool setup.
    filter_cache: dict[Requirements, list[Candidate]] = field(default_factory=dict)


# Pool setups by what they depend on (`setup.Setup._memoised_pool`); the value keeps the
# objects whose ids are in the key.
PoolMemo = dict[tuple[object, ...], tuple[object, PoolSetup]]


def pool_order(template: NodePoolTemplate) -> tuple[int, str]:
    """Sorted in reverse: heaviest first, and among equal weights the name that sorts last
    first (Karpenter's OrderByWeight)."""
    return (template.weight, template.name)


def pool_setup(template: NodePoolTemplate, index: ResourceIndex,
               daemonsets: Sequence[DaemonSet], remaining: dict[str, int] | None
               ) -> PoolSetup:
    requirements = template.requirements.copy()
    priced = [
        (it, price)
        for it, compatible in zip(template.instance_types,
                                  compatible_mask(template.instance_types, requirements),
                                  strict=True)
        if compatible and (price := cheapest_price(it, requirements)) is not None
    ]
    # Each type's room is what is left after the DaemonSets that run on it (Karpenter's
    # daemon overhead groups); a type they overfill can hold no pod.
    loads = daemon_loads(template, [it for it, _ in priced], daemonsets)
    base = []
    overfilled = 0
    for it, price in priced:
        overhead = index.vector(loads[it.name].requests)
        room = tuple(a - o for a, o in zip(index.vector(it.allocatable), overhead,
                                          strict=True))
        if min(room, default=0) >= 0:
            base.append(Candidate(it, room, price, overhead))
        else:
            overfilled += 1
    # Make zone, zone id, capacity type and partition finite so that topology can pick
    # among them (the domains come from the offerings; zone ids only where the catalog
    # knows them, partitions only for a partition placement group).
    for key in (LABEL_ZONE, LABEL_CAPACITY_TYPE, LABEL_ZONE_ID, LABEL_PARTITION):
        offered = {
            value
            for value in offering_values([c.instance_type for c in base], key)
            if key not in requirements or requirements[key].has(value)
        }
        if key in (LABEL_ZONE_ID, LABEL_PARTITION) and not offered and key not in requirements:
            continue
        requirements.add(Requirement(key, False, frozenset(offered)))
    base.sort(key=lambda c: (c.price, c.instance_type.name))
    domains = [
        (key, value)
        for key, requirement in requirements.items() if not requirement.complement
        for value in requirement.values
    ]
    ports = {c.instance_type.name: loads[c.instance_type.name] for c in base
             if loads[c.instance_type.name].host_ports}
    return PoolSetup(template, requirements, base, index.vector({}), remaining,
                     DomainSource(template.taints, requirements=requirements), domains,
                     ports, overfilled=overfilled)


def limits_room(template: NodePoolTemplate, nodes: Sequence[ExistingNode]
                ) -> dict[str, int] | None:
    """The room the NodePool's limits leave beside its existing nodes (None: no limits)."""
    if template.limits is None:
        return None
    usage = dict(template.usage)
    for node in nodes:
        if node.labels.get(LABEL_NODEPOOL) == template.name:
            for name, amount in (node.capacity or node.allocatable or {}).items():
                usage[name] = usage.get(name, 0) + amount
            usage[LIMIT_NODES] = usage.get(LIMIT_NODES, 0) + 1000
    return {name: limit - usage.get(name, 0) for name, limit in sorted(template.limits.items())}


def pool_state(setup: PoolSetup) -> PoolState:
    """One plan's copy of the pool (its limits' room goes down as NodeClaims open)."""
    remaining = dict(setup.remaining) if setup.remaining is not None else None
    return PoolState(setup.template, setup.requirements, setup.candidates,
                     setup.zero, remaining, filter_cache=setup.filter_cache,
                     daemon_ports=setup.daemon_ports, overfilled=setup.overfilled)
