"""The kubelets of every node, and the pod garbage collector.

- A pod bound to a node starts `pod_start_delay` seconds after it was bound, whatever the
  node's conditions say: phase Running, conditions Initialized, ContainersReady and Ready
  True, container statuses running. (The Node's own Ready condition belongs to whoever
  created the Node.)
- A pod that may finish (restartPolicy Never or OnFailure) and carries the
  `nodewright.io/run-duration` annotation (a Go duration such as 90s or 1h30m; "Never"
  means no end) completes that long after it started (phase Succeeded, not ready);
  without it, it runs until deleted.
- A pod being deleted is removed when its grace period ends (`deletionTimestamp`).
- A pod bound to a node that does not exist is removed after the pod garbage
  collector's 40 s quarantine, as Kubernetes' PodGC does for orphaned pods.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.formats import parse_duration
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, NotFoundError
from nodewright.cluster.memory.kubelet_status import (
    completed_status,
    confirm_deletion,
    running_status,
)
from nodewright.cluster.memory.pod_status import (
    PENDING,
    is_terminal,
    node_name,
    phase,
)
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.runtime.clock import format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

log = logging.getLogger(__name__)

RUN_DURATION_ANNOTATION = "nodewright.io/run-duration"
ORPHAN_QUARANTINE = 40.0


class Kubelet:
    name = "kubelet"

    def __init__(self, cluster: InMemoryCluster, *, pod_start_delay: float = 2.0) -> None:
        self.cluster = cluster
        self.pod_start_delay = pod_start_delay
        self._orphans_seen: dict[str, datetime] = {}
        self._watches = (Watch("Pod"), Watch("Node", self._node_pod_keys))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _node_pod_keys(self, event: WatchEvent) -> Iterable[str]:
        """A Node gone: its pods become orphans."""
        if event.type != "DELETED":
            return ()
        return [objects.key(pod) for pod in self.cluster.peek_all("Pod")
                if node_name(pod) == event.name]

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        pod = self.cluster.peek("Pod", name, namespace)
        if pod is None or not node_name(pod):
            self._orphans_seen.pop(key, None)
            return Result()
        now = self.cluster.clock.now()
        if self.cluster.peek("Node", node_name(pod)) is None:
            return self._collect_orphan(key, pod, now)
        self._orphans_seen.pop(key, None)
        if objects.is_deleting(pod):
            return self._terminate(pod, now)
        if is_terminal(pod):
            return Result()
        if phase(pod) == PENDING or not objects.condition_is_true(pod, "Ready"):
            return self._start(pod, now)
        return self._maybe_complete(pod, now)

    def _collect_orphan(self, key: str, pod: Mapping[str, Any], now: datetime) -> Result:
        first_seen = self._orphans_seen.setdefault(key, now)
        wait = ORPHAN_QUARANTINE - (now - first_seen).total_seconds()
        if wait > 0:
            return Result(requeue_after=wait)
        self._orphans_seen.pop(key, None)
        self._delete_now(pod)
        return Result()

    def _terminate(self, pod: Mapping[str, Any], now: datetime) -> Result:
        deadline = objects.deletion_time(pod) or now
        if now < deadline:
            return Result(requeue_after=(deadline - now).total_seconds())
        self._delete_now(pod)
        return Result()

    def _delete_now(self, pod: Mapping[str, Any]) -> None:
        try:
            confirm_deletion(self.cluster, pod)
        except ApiError as error:
            log.info("kubelet: removing %s: %s", objects.key(pod), error)

    def _start(self, pod: Mapping[str, Any], now: datetime) -> Result:
        start_at = _bound_at(pod, now) + timedelta(seconds=self.pod_start_delay)
        if now < start_at:
            return Result(requeue_after=(start_at - now).total_seconds())
        status = running_status(pod, now)
        self._write_status(pod, status)
        run_for = _run_duration(pod)
        return Result() if run_for is None else Result(requeue_after=run_for)

    def _maybe_complete(self, pod: Mapping[str, Any], now: datetime) -> Result:
        run_for = _run_duration(pod)
        if run_for is None:
            return Result()
        started = parse_time(str((pod.get("status") or {}).get("startTime") or format_time(now)))
        finish_at = started + timedelta(seconds=run_for)
        if now < finish_at:
            return Result(requeue_after=(finish_at - now).total_seconds())
        status = completed_status(pod, now)
        self._write_status(pod, status)
        return Result()

    def _write_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        with contextlib.suppress(NotFoundError):
            self.cluster.set_status("Pod", objects.name(pod), objects.namespace(pod), status)


def _bound_at(pod: Mapping[str, Any], now: datetime) -> datetime:
    """When the pod was bound: its PodScheduled transition, else its creation."""
    bound = objects.creation_time(pod) or now
    scheduled = objects.condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "True" and scheduled.get(
            "lastTransitionTime"):
        bound = max(bound, parse_time(str(scheduled["lastTransitionTime"])))
    return bound


def _run_duration(pod: Mapping[str, Any]) -> float | None:
    if (pod.get("spec") or {}).get("restartPolicy", "Always") == "Always":
        return None
    value = objects.annotations(pod).get(RUN_DURATION_ANNOTATION)
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as error:
        log.warning("kubelet: pod %s: annotation %s: %s; it runs until deleted",
                    objects.key(pod), RUN_DURATION_ANNOTATION, error)
        return None
