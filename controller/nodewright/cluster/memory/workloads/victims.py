"""Which pods a controller deletes first when it scales down: Kubernetes' ActivePods
ordering with ranks (pkg/controller/controller_utils.go), described from its rules.

Deleted first: pods not yet on a node; then by phase Pending, Unknown, Running; not ready
before ready; pods sharing their node with more of their siblings; the more recently
ready; more container restarts; the more recently created. The name breaks what is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.pod_status import is_ready, node_name, phase

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(
    pods: Sequence[Mapping[str, Any]], related: Sequence[Mapping[str, Any]] | None = None
) -> list[Mapping[str, Any]]:
    """`pods` sorted so that the first ones are deleted first; `related` (default `pods`)
    are the active siblings counted per node for the rank."""
    per_node = Counter(node_name(pod) for pod in (related if related is not None else pods)
                       if node_name(pod))
    return sorted(pods, key=lambda pod: _key(pod, per_node))


def _key(pod: Mapping[str, Any], per_node: Counter[str]) -> tuple[Any, ...]:
    node = node_name(pod)
    ready = is_ready(pod)
    ready_since = ""
    if ready:
        ready_since = str((objects.condition(pod, "Ready") or {}).get("lastTransitionTime") or "")
    restarts = sum(int(status.get("restartCount") or 0)
                   for status in (pod.get("status") or {}).get("containerStatuses") or [])
    created = str(objects.meta(pod).get("creationTimestamp") or "")
    return (
        bool(node),
        _PHASE_ORDER.get(phase(pod), 1),
        ready,
        -per_node[node] if node else 0,
        _descending(ready_since),
        -restarts,
        _descending(created),
        objects.name(pod),
    )


def _descending(timestamp: str) -> tuple[int, ...]:
    """RFC 3339 timestamps of one format sort as text; negate to put the latest first."""
    return tuple(-ord(ch) for ch in timestamp)
