"""Pod status conditions as the kubelet and kube-scheduler write them (PodCondition:
no observedGeneration; lastTransitionTime moves only when the status changes)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.timestamps import time_text

RUNNING = "Running"
PENDING = "Pending"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL_PHASES = (SUCCEEDED, FAILED)


def set_pod_condition(
    pod: dict[str, Any],
    condition_type: str,
    status: str,
    now: datetime,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> None:
    """Set a condition in place (reason and message dropped when None)."""
    items: list[dict[str, Any]] = pod.setdefault("status", {}).setdefault("conditions", [])
    entry: dict[str, Any] = next((c for c in items if c.get("type") == condition_type), {})
    if not entry:
        items.append(entry)
    if entry.get("status") != status or "lastTransitionTime" not in entry:
        entry["lastTransitionTime"] = time_text(now)
    entry.update(type=condition_type, status=status)
    for field, value in (("reason", reason), ("message", message)):
        if value is None:
            entry.pop(field, None)
        else:
            entry[field] = value


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or PENDING)


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in TERMINAL_PHASES


def node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def is_ready(pod: Mapping[str, Any]) -> bool:
    return objects.condition_is_true(pod, "Ready")
