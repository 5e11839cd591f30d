"""What the simulated kubelet writes for the pods it runs, on any cluster.

- `running_status`: the pod started (phase Running, Initialized, ContainersReady and Ready
  True, every container running), with `pod_addresses` when the cluster's clients read
  them;
- `unready_status`: the pod started, but its readiness never passes (Running, Initialized
  True, ContainersReady and Ready False, containers running and not ready);
- `completed_status`: a pod that may finish has (phase Succeeded, not ready);
- `confirm_deletion`: a pod being deleted is removed (the kubelet deletes it with grace 0).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.cluster.memory.pod_status import RUNNING, SUCCEEDED, set_pod_condition
from nodewright.cluster.memory.timestamps import time_text
from nodewright.runtime.clock import format_time

RUNNING_CONDITIONS = ("Initialized", "ContainersReady", "Ready")


def status_copy(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod's status with its own conditions list (the rest is replaced or shared)."""
    status = dict(pod.get("status") or {})
    status["conditions"] = [dict(c) for c in status.get("conditions") or []]
    return status


def containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = (pod.get("spec") or {}).get("containers") or []
    return [c for c in found if isinstance(c, Mapping)]


def container_status(container: Mapping[str, Any], now: datetime,
                     finished_at: datetime | None = None) -> dict[str, Any]:
    state: dict[str, Any]
    if finished_at is None:
        state = {"running": {"startedAt": time_text(now)}}
    else:
        state = {"terminated": {"exitCode": 0, "reason": "Completed",
                                "finishedAt": format_time(finished_at)}}
    return {
        "name": container.get("name", ""),
        "image": container.get("image", ""),
        "ready": finished_at is None,
        "started": finished_at is None,
        "restartCount": 0,
        "state": state,
    }


def running_status(pod: Mapping[str, Any], now: datetime,
                   addresses: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The status of the pod once started at `now`; `addresses`: hostIP and podIP, when
    the cluster's clients read them."""
    status = status_copy(pod)
    status["phase"] = RUNNING
    status.setdefault("startTime", time_text(now))
    if addresses:
        status.update(addresses)
    holder = {"status": status}
    for condition in RUNNING_CONDITIONS:
        set_pod_condition(holder, condition, "True", now)
    status["containerStatuses"] = [container_status(c, now) for c in containers(pod)]
    return status


def unready_status(pod: Mapping[str, Any], now: datetime,
                   addresses: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A started pod whose readiness probe never succeeds."""
    status = running_status(pod, now, addresses)
    holder = {"status": status}
    for condition in ("ContainersReady", "Ready"):
        set_pod_condition(holder, condition, "False", now, reason="ContainersNotReady")
    for container in status["containerStatuses"]:
        container["ready"] = False
    return status


def completed_status(pod: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    status = status_copy(pod)
    status["phase"] = SUCCEEDED
    holder = {"status": status}
    for condition in ("ContainersReady", "Ready"):
        set_pod_condition(holder, condition, "False", now, reason="PodCompleted")
    status["containerStatuses"] = [container_status(c, now, finished_at=now)
                                   for c in containers(pod)]
    return status


def pod_addresses(pod: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, str]:
    """hostIP: the node's InternalIP; podIP: a stable address in 10.244.0.0/16 (nothing
    routes to it; kwok does the same)."""
    digest = hashlib.sha256(objects.key(pod).encode()).digest()
    return {"hostIP": _node_ip(node), "podIP": f"10.244.{digest[0]}.{max(1, digest[1])}"}


def _node_ip(node: Mapping[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return str(objects.annotations(node).get("alpha.kubernetes.io/provided-node-ip", ""))


def confirm_deletion(cluster: ClusterAPI, pod: Mapping[str, Any]) -> None:
    """Remove a pod being deleted (gone already: nothing to do). Other API errors are the
    caller's to retry or report."""
    try:
        cluster.delete("Pod", objects.name(pod), objects.namespace(pod),
                       grace_period_seconds=0, uid=objects.uid(pod))
    except NotFoundError:
        return
