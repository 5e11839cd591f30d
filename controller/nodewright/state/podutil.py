"""What a pod is, for the controllers (Karpenter's pkg/utils/pod), read from wire dicts.

- provisionable: kube-scheduler marked it PodScheduled=False/Unschedulable, it is not
  bound, not preempting, not owned by a DaemonSet or a Node (mirror pod), and neither
  terminal nor terminating;
- reschedulable: would need a new home if its node went away (active, or a terminating
  StatefulSet pod; not a DaemonSet or mirror pod);
- drainable/evictable: what the terminator waits for and what it may evict.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.formats import parse_duration
from nodewright.runtime.clock import parse_time
from nodewright.state.wellknown import (
    CRITICAL_PRIORITY_CLASSES,
    DISRUPTED_TAINT,
    DO_NOT_DISRUPT_ANNOTATION,
)

Pod = Mapping[str, Any]
_STUCK_TERMINATING = timedelta(minutes=1)


def _metadata(pod: Pod) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _spec(pod: Pod) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def _status(pod: Pod) -> Mapping[str, Any]:
    return pod.get("status") or {}


def node_name(pod: Pod) -> str:
    return str(_spec(pod).get("nodeName") or "")


def phase(pod: Pod) -> str:
    return str(_status(pod).get("phase") or "")


def is_terminal(pod: Pod) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_terminating(pod: Pod) -> bool:
    return bool(_metadata(pod).get("deletionTimestamp"))


def is_active(pod: Pod) -> bool:
    return not is_terminal(pod) and not is_terminating(pod)


def owner_kinds(pod: Pod) -> set[tuple[str, str]]:
    return {
        (str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        for ref in _metadata(pod).get("ownerReferences") or []
    }


def controller_owner(pod: Pod) -> str | None:
    """`Kind/name` of the controlling owner (how the solver tells DaemonSet pods apart)."""
    for ref in _metadata(pod).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return None


def is_owned_by_daemonset(pod: Pod) -> bool:
    return ("apps/v1", "DaemonSet") in owner_kinds(pod)


def is_owned_by_statefulset(pod: Pod) -> bool:
    return ("apps/v1", "StatefulSet") in owner_kinds(pod)


def is_mirror(pod: Pod) -> bool:
    """A static pod the kubelet owns (owner kind Node): read-only through the API."""
    return ("v1", "Node") in owner_kinds(pod)


def failed_to_schedule(pod: Pod) -> bool:
    for condition in _status(pod).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return True
    return False


def is_preempting(pod: Pod) -> bool:
    return bool(_status(pod).get("nominatedNodeName"))


def is_provisionable(pod: Pod) -> bool:
    return (
        failed_to_schedule(pod)
        and not node_name(pod)
        and not is_preempting(pod)
        and not is_owned_by_daemonset(pod)
        and not is_mirror(pod)
        and is_active(pod)
    )


def is_reschedulable(pod: Pod) -> bool:
    return (
        (is_active(pod) or (is_owned_by_statefulset(pod) and is_terminating(pod)))
        and not is_owned_by_daemonset(pod)
        and not is_mirror(pod)
    )


def tolerates_disrupted_taint(pod: Pod) -> bool:
    for toleration in _spec(pod).get("tolerations") or []:
        effect = toleration.get("effect") or ""
        if effect and effect != DISRUPTED_TAINT.effect:
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key == DISRUPTED_TAINT.key and (
            operator == "Exists" or (toleration.get("value") or "") == DISRUPTED_TAINT.value
        ):
            return True
    return False


def is_stuck_terminating(pod: Pod, now: datetime) -> bool:
    """Terminating for more than a minute past its deletion timestamp."""
    deleted = _metadata(pod).get("deletionTimestamp")
    return bool(deleted) and now - parse_time(str(deleted)) > _STUCK_TERMINATING


def is_drainable(pod: Pod, now: datetime) -> bool:
    """A pod a drain waits for (do-not-disrupt pods included: the drain stalls on them)."""
    return (
        not tolerates_disrupted_taint(pod)
        and not is_stuck_terminating(pod, now)
        and not is_mirror(pod)
    )


def is_waiting_eviction(pod: Pod, now: datetime) -> bool:
    return not is_terminal(pod) and is_drainable(pod, now)


def do_not_disrupt_active(pod: Pod, now: datetime) -> bool:
    """The karpenter.sh/do-not-disrupt annotation: "true", or a duration counted from the
    pod's start; an unreadable value counts as absent."""
    value = (_metadata(pod).get("annotations") or {}).get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None:
        return False
    if value == "true":
        return True
    try:
        seconds = parse_duration(str(value), allow_negative=True)
    except ValueError:
        return False
    if seconds <= 0:
        return False
    started = _status(pod).get("startTime")
    if not started:
        return True
    return now - parse_time(str(started)) < timedelta(seconds=seconds)


def is_evictable(pod: Pod, now: datetime) -> bool:
    return (
        is_active(pod)
        and not tolerates_disrupted_taint(pod)
        and not is_mirror(pod)
        and not do_not_disrupt_active(pod, now)
    )


def is_critical(pod: Pod) -> bool:
    return _spec(pod).get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


def termination_grace_seconds(pod: Pod) -> int | None:
    value = _spec(pod).get("terminationGracePeriodSeconds")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
