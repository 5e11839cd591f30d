"""A pod's preferences, dropped when they keep it from fitting (`relax`) or ignored
altogether (`ignore_preferences`, PREFERENCE_POLICY=Ignore)."""

from __future__ import annotations

from dataclasses import replace

from nodewright.scheduling.pods import PREFER_NO_SCHEDULE_TOLERATION, Pod, Taint


def ignore_preferences(pod: Pod) -> Pod:
    """PREFERENCE_POLICY=Ignore: the pod without preferred node or pod (anti-)affinity and
    without ScheduleAnyway spread constraints, as Karpenter's scheduler builds it then."""
    spread = tuple(c for c in pod.spread if c.when_unsatisfiable != "ScheduleAnyway")
    if not (pod.preferred_terms or pod.preferred_pod_affinity
            or pod.preferred_pod_anti_affinity or len(spread) != len(pod.spread)):
        return pod
    return replace(pod, preferred_terms=(), preferred_pod_affinity=(),
                   preferred_pod_anti_affinity=(), spread=spread)


def relax(pod: Pod) -> Pod | None:
    """The pod with its next preference dropped, or None when nothing is left to relax.

    Order: other required node-affinity terms, preferred pod affinity, preferred pod
    anti-affinity, preferred node affinity (heaviest first), ScheduleAnyway spread
    constraints, and last a toleration for PreferNoSchedule taints. Volume topology
    alternatives are not relaxed: each is tried on every node (`placement`).
    """
    if len(pod.required_terms) > 1:
        return replace(pod, required_terms=pod.required_terms[1:])
    if pod.preferred_pod_affinity:
        return replace(pod, preferred_pod_affinity=pod.preferred_pod_affinity[1:])
    if pod.preferred_pod_anti_affinity:
        return replace(pod, preferred_pod_anti_affinity=pod.preferred_pod_anti_affinity[1:])
    if pod.preferred_terms:
        return replace(pod, preferred_terms=pod.preferred_terms[1:])
    for index, constraint in enumerate(pod.spread):
        if constraint.when_unsatisfiable == "ScheduleAnyway":
            return replace(pod, spread=pod.spread[:index] + pod.spread[index + 1 :])
    prefer = Taint("", "", "PreferNoSchedule")
    if not any(t.tolerates(prefer) and not t.key for t in pod.tolerations):
        return replace(pod, tolerations=(*pod.tolerations, PREFER_NO_SCHEDULE_TOLERATION))
    return None

