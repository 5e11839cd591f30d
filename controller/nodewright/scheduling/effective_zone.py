"""A pending pod's effective zone, as Karpenter's scheduler reports it in
karpenter_scheduler_pending_pods_by_effective_zone_count (computeEffectiveZoneFromPod): the
intersection of the zones the pod's strict node requirements allow, those its volumes allow
and those its zonal topology terms (spread, pod affinity and anti-affinity) leave it before
the solve (`solver.zone_constraints`). One zone is named; several are "flexible"; none left
is "none".
"""

from __future__ import annotations

from nodewright.scheduling.pods import Pod
from nodewright.scheduling.requirements import LABEL_ZONE, Requirement, Requirements

FLEXIBLE = "flexible"
NONE = "none"


def _volume_zones(pod: Pod) -> frozenset[str] | None:
    """The union of the zones the volume alternatives allow; None when a volume does not
    constrain zones (Karpenter's volumeZoneReq)."""
    if not pod.volume_requirements:
        return None
    zones: set[str] = set()
    for alternative in pod.volume_requirements:
        requirement = alternative.get(LABEL_ZONE)
        if requirement is None or requirement.operator != "In":
            return None
        zones |= requirement.values
    return frozenset(zones)


def effective_zone(pod: Pod, topology: frozenset[str] | None = frozenset()) -> str:
    """`topology`: the zones the pod's topology terms allow (empty: no constraint; None:
    they allow none, and the answer is "none")."""
    if topology is None:
        return NONE
    strict = Requirements.from_labels(pod.node_selector)
    if pod.required_terms:
        strict = strict.merged(pod.required_terms[0])
    zone: Requirement | None = strict.get(LABEL_ZONE)
    volumes = _volume_zones(pod)
    if zone is not None and zone.operator == "In":
        candidates = sorted(zone.values)
    elif volumes is not None:
        candidates = sorted(volumes)
    elif topology:
        candidates = sorted(topology)
    else:
        return FLEXIBLE
    matched = [z for z in candidates
               if (zone is None or zone.has(z)) and (volumes is None or z in volumes)
               and (not topology or z in topology)]
    if len(matched) > 1:
        return FLEXIBLE
    return matched[0] if matched else NONE
