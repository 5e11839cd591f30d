"""NodeClaim objects for the NodeClaims the solver plans (Karpenter's NodeClaimTemplate
ToNodeClaim).

A NodeClaim is named `<nodepool>-<suffix>` by the API server, owned by its NodePool, and
carries the template's labels and annotations, `karpenter.sh/nodepool`, the node class
label, the NodePool hash annotations (drift compares them), the template's taints,
startup taints, expireAfter, terminationGracePeriod and nodeClassRef, its requirements
(the template's, the pods' and their topology's: not the zones, zone IDs or partitions
the solve listed from the offerings) narrowed to the instance types that fit (cheapest
first, at most 600) and to the capacity types those offer, and resource requests (its pods
plus DaemonSet overhead).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodewright.api.labels import restricted_label_problem
from nodewright.api.nodeclaim_template import nodeclaim_from_template
from nodewright.api.nodeoverlay import CAPACITY_OVERLAY_APPLIED, PRICE_OVERLAY_APPLIED
from nodewright.api.quantity import Resources, format_resources
from nodewright.controllers.provisioning.problem import PoolContext, without_hostname
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.nodepools import min_values_problem
from nodewright.scheduling.pods import Pod
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_ZONE,
    Requirement,
    Requirements,
    is_well_known,
)
from nodewright.scheduling.targets import PlannedNodeClaim
from nodewright.state.wellknown import NODECLASS_LABEL

MAX_INSTANCE_TYPES = 600
MAX_INT64 = 2**63 - 1
# Draws for a NotIn/Exists label value before giving up (each hits an excluded value with
# a chance of about len(values) / 2**63).
ANY_INTEGER_TRIES = 10
# Whether MIN_VALUES_POLICY=BestEffort lowered a minValues of the NodeClaim (Karpenter
# writes it on every NodeClaim the scheduler creates).
MIN_VALUES_RELAXED = "karpenter.sh/nodeclaim-min-values-relaxed"


def requirement_entries(requirement: Requirement) -> list[dict[str, Any]]:
    """A requirement as NodeSelectorRequirementWithMinValues entries, as Karpenter v1.14.1
    writes them: bounds as inclusive `Gte`/`Lte` (Gt 4 is Gte 5), one entry each, every
    entry with the minValues. Excluded values within the bounds stay as a NotIn entry
    (Karpenter's NodeSelectorRequirement leaves them out, so its NodeClaim would allow
    them)."""
    entries: list[dict[str, Any]] = []
    key = requirement.key
    if not requirement.complement:
        if requirement.values:
            entries.append({"key": key, "operator": "In", "values": sorted(requirement.values)})
        else:
            entries.append({"key": key, "operator": "DoesNotExist"})
    else:
        if requirement.values:
            entries.append({"key": key, "operator": "NotIn",
                            "values": sorted(requirement.values)})
        if requirement.greater_than is not None:
            entries.append({"key": key, "operator": "Gte",
                            "values": [str(requirement.greater_than + 1)]})
        if requirement.less_than is not None:
            # `Lt 0` stays so: the CRD takes no negative bound (Karpenter's Lte -1 is refused).
            upper = requirement.less_than
            entries.append({"key": key, "operator": "Lte" if upper > 0 else "Lt",
                            "values": [str(upper - 1 if upper > 0 else upper)]})
        if not entries:
            entries.append({"key": key, "operator": "Exists"})
    if requirement.min_values is not None:
        for entry in entries:
            entry["minValues"] = requirement.min_values
    return entries


def render_requirements(requirements: Requirements) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = []
    for key in sorted(requirements):
        rendered.extend(requirement_entries(requirements[key]))
    return rendered


def _capacity_types(types: Sequence[InstanceType], requirements: Requirements) -> list[str]:
    """The capacity types the types offer where the requirements allow (stops as soon as
    every allowed capacity type is found: a claim may list hundreds of types)."""
    zone = requirements.get(LABEL_ZONE)
    capacity = requirements.get(LABEL_CAPACITY_TYPE)
    wanted = None if capacity is None or capacity.complement else set(capacity.values)
    found: set[str] = set()
    for instance_type in types:
        for offering in instance_type.offerings:
            if (offering.available and offering.capacity_type not in found
                    and (zone is None or zone.has(offering.zone))
                    and (capacity is None or capacity.has(offering.capacity_type))):
                found.add(offering.capacity_type)
        if wanted is not None and found >= wanted:
            break
    return sorted(found)


def custom_labels(requirements: Requirements, seed: str = "") -> dict[str, str]:
    """The labels a NodeClaim's requirements give its node, for keys that are neither
    well-known nor restricted (Karpenter's resolveCustomLabelsFromRequirements): `In` one of
    its values (the first in order; Karpenter takes any); `NotIn`, `Exists`, `Gt` and `Lt`
    a random integer within the bounds and not excluded; `DoesNotExist` none. The random
    values come from `seed`, so one plan always gives the same labels."""
    rng = random.Random(zlib.crc32(seed.encode()))
    labels = {}
    for key in sorted(requirements):
        requirement = requirements[key]
        if is_well_known(key) or restricted_label_problem(key) is not None:
            continue
        if not requirement.complement:
            if requirement.values:
                labels[key] = min(requirement.values)
            continue
        value = _any_integer(requirement, rng)
        if value is not None:
            labels[key] = value
    return labels


def _any_integer(requirement: Requirement, rng: random.Random) -> str | None:
    """An integer `requirement` allows, as Karpenter's Requirement.Any picks one."""
    low = 0 if requirement.greater_than is None else requirement.greater_than + 1
    high = MAX_INT64 - 1 if requirement.less_than is None else requirement.less_than - 1
    if low > high:
        return None
    for _ in range(ANY_INTEGER_TRIES):
        value = str(rng.randint(low, high))
        if value not in requirement.values:
            return value
    return None


def as_asked(requirements: Requirements, offered_only: Iterable[str],
             template: Requirements) -> Requirements:
    """The requirements with each key in `offered_only` (one the solve narrowed to the zones,
    zone IDs or partitions the NodePool's offerings have, no pod asking) back as the
    NodePool's template has it, or left out when it has none: Karpenter's NodeClaim holds
    the template's, the pods' and the topology's requirements, never the offerings' domains
    (a zone requirement nobody asked for would pin the launch to the zones offered when
    planning; a partition one would send every launch to the lowest partition)."""
    dropped = set(offered_only)
    kept = Requirements(r for key, r in requirements.items() if key not in dropped)
    for key in sorted(dropped):
        asked = template.get(key)
        if asked is not None:
            kept.add(asked)
    return kept


def claim_requests(
    planned: PlannedNodeClaim, pods: Mapping[str, Pod], overhead: Resources
) -> Resources:
    total = dict(overhead)
    for key in planned.pods:
        pod = pods.get(key)
        if pod is None:
            continue
        for name, amount in pod.requests.items():
            total[name] = total.get(name, 0) + amount
    return total


def claim_capacity(planned: PlannedNodeClaim, pool: PoolContext) -> Resources:
    """The most the NodeClaim may hold once launched: per resource, the largest capacity
    among its instance types (what its NodePool's limits must have room for)."""
    capacity: Resources = {}
    for name, _ in planned.instance_types[:MAX_INSTANCE_TYPES]:
        instance_type = pool.instance_types.get(name)
        if instance_type is None:
            continue
        for resource, amount in instance_type.capacity.items():
            capacity[resource] = max(capacity.get(resource, 0), amount)
    return capacity


def truncation_problem(planned: PlannedNodeClaim, pool: PoolContext) -> str | None:
    """Why the NodeClaim cannot be created once its instance types are cut to the
    `MAX_INSTANCE_TYPES` cheapest: they no longer meet a minValues of its requirements
    (Karpenter's Results.TruncateInstanceTypes). None when they do, when nothing was cut,
    or under MIN_VALUES_POLICY=BestEffort (the NodePool's relaxed minValues)."""
    if len(planned.instance_types) <= MAX_INSTANCE_TYPES or pool.template.relax_min_values:
        return None
    if all(r.min_values is None for r in planned.requirements.values()):
        return None
    kept = [pool.instance_types[name] for name, _ in planned.instance_types[:MAX_INSTANCE_TYPES]
            if name in pool.instance_types]
    problem = min_values_problem(kept, planned.requirements)
    if problem is None:
        return None
    return ("pod didn't schedule because NodePool couldn't meet minValues requirements, "
            f"truncating to {MAX_INSTANCE_TYPES} instance type(s): {problem}")


def nodeclaim_manifest(
    planned: PlannedNodeClaim, pool: PoolContext, pods: Mapping[str, Pod],
) -> dict[str, Any]:
    node_class_ref = pool.model.spec.template.spec.node_class_ref
    type_names = [name for name, _ in planned.instance_types[:MAX_INSTANCE_TYPES]]
    requirements = without_hostname(planned.requirements)
    requirements.add(Requirement.single(NODECLASS_LABEL, node_class_ref.name))
    requirements.add(Requirement(LABEL_INSTANCE_TYPE, False, frozenset(type_names)))
    chosen = [pool.instance_types[name] for name in type_names if name in pool.instance_types]
    capacity_types = _capacity_types(chosen, requirements)
    if capacity_types:
        requirements.add(Requirement(LABEL_CAPACITY_TYPE, False, frozenset(capacity_types)))
    requirements = as_asked(requirements, planned.offered_only, pool.template.requirements)
    annotations = {MIN_VALUES_RELAXED: "true" if planned.min_values_relaxed else "false"}
    if any(o.price_overlaid for it in chosen for o in it.offerings):
        annotations[PRICE_OVERLAY_APPLIED] = "true"
    if any(it.capacity_overlaid for it in chosen):
        annotations[CAPACITY_OVERLAY_APPLIED] = "true"
    requests = format_resources(claim_requests(
        planned, pods, pool.daemon_overhead(name for name, _ in planned.instance_types)))
    return nodeclaim_from_template(
        pool.model, pool.uid, render_requirements(requirements),
        implied_labels=custom_labels(requirements, seed="|".join(sorted(planned.pods))),
        annotations=annotations, requests=requests)
