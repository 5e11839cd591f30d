"""The simulated kubelet's pod half: one reconciler for every node it plays.

- A pod bound to a node starts `start_delay` seconds after it was bound, whatever the
  node's conditions say: phase Running, conditions Initialized, ContainersReady and Ready
  True, container statuses running (with hostIP and podIP when `addresses`). (The Node's
  own Ready condition belongs to whoever created the Node, or to the node half.)
- A pod that may finish (restartPolicy Never or OnFailure) and carries the
  `nodewright.io/run-duration` annotation (a Go duration such as 90s or 1h30m; "Never"
  means no end) completes that long after it started (phase Succeeded, not ready);
  without it, it runs until deleted.
- A pod labelled `kwok.x-k8s.io/stage: unhealthy` (the stage Karpenter's kwok suites give
  pods whose readiness probe never passes) starts but never becomes ready: Running,
  ContainersReady and Ready False, so a PodDisruptionBudget over it stays unhealthy.
- A pod being deleted is removed when its grace period ends (`deletionTimestamp`), or at
  once when its containers stop at once (`stop_at_once`, as kwok does).
- With `collect_orphans`, where no kube-controller-manager runs: a pod bound to a node
  that does not exist is removed after the pod garbage collector's 40 s quarantine, as
  Kubernetes' PodGC does for orphaned pods.

`plays` says which nodes it is the kubelet of (every node when None); a node it does not
play keeps its pods as they are, and any change of such a node makes its pods due again
(it may have become one of ours).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.formats import parse_duration
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.memory.kubelet.status import (
    completed_status,
    confirm_deletion,
    pod_addresses,
    running_status,
    unready_status,
)
from nodewright.cluster.memory.pod_status import PENDING, is_terminal, node_name, phase
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

log = logging.getLogger(__name__)

RUN_DURATION_ANNOTATION = "nodewright.io/run-duration"
KWOK_STAGE_LABEL = "kwok.x-k8s.io/stage"
ORPHAN_QUARANTINE = 40.0

NodePredicate = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class KubeletSettings:
    """What differs between the places the kubelet runs. `start_delay`: seconds from a
    pod's binding to it running (image pull and start); `stop_at_once`: a deleted pod's
    containers stop at once instead of taking their grace period; `addresses`: write
    hostIP and podIP (a real cluster's clients read them); `collect_orphans`: play the
    pod garbage collector too (no kube-controller-manager runs)."""

    start_delay: float = 2.0
    stop_at_once: bool = False
    addresses: bool = False
    collect_orphans: bool = True


class Kubelet:
    name = "kubelet"

    def __init__(self, cluster: ClusterAPI, clock: Clock,
                 settings: KubeletSettings = KubeletSettings(), *,
                 plays: NodePredicate | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.settings = settings
        self.plays = plays
        # On the in-memory API server, read the stored objects without copies and hand
        # statuses over: `simulate` runs this for every pod of every node.
        self._memory = cluster if isinstance(cluster, InMemoryCluster) else None
        self._orphans_seen: dict[str, datetime] = {}
        # Pod keys by the node they are bound to, kept from the Pod events: a Node event
        # must not read every pod of the cluster to find its own.
        self._bound: dict[str, dict[str, None]] = {}
        self._node_of: dict[str, str] = {}
        self._watches = (Watch("Pod", self._track), Watch("Node", self._pods_of_node))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _track(self, event: WatchEvent) -> Iterable[str]:
        key = event.key
        node = "" if event.type == "DELETED" else node_name(event.object)
        previous = self._node_of.get(key, "")
        if previous != node:
            if previous:
                del self._node_of[key]
                keys = self._bound[previous]
                keys.pop(key, None)
                if not keys:
                    del self._bound[previous]
            if node:
                self._node_of[key] = node
                self._bound.setdefault(node, {})[key] = None
        return (key,)

    def _pods_of_node(self, event: WatchEvent) -> Iterable[str]:
        """A Node gone: its pods become orphans. A Node changed: its pods are due when it
        may have become one this kubelet plays."""
        if event.type == "DELETED":
            wanted = self.settings.collect_orphans
        else:
            wanted = self.plays is not None
        return list(self._bound.get(event.name, ())) if wanted else ()

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        pod = self._read("Pod", name, namespace)
        if pod is None or not node_name(pod):
            self._orphans_seen.pop(key, None)
            return Result()
        now = self.clock.now()
        node = self._read("Node", node_name(pod))
        if node is None:
            if self.settings.collect_orphans:
                return self._collect_orphan(key, pod, now)
            return Result()
        self._orphans_seen.pop(key, None)
        if self.plays is not None and not self.plays(node):
            return Result()
        if objects.is_deleting(pod):
            return self._terminate(pod, now)
        if is_terminal(pod):
            return Result()
        if phase(pod) == PENDING or not (objects.condition_is_true(pod, "Ready")
                                         or _never_ready(pod)):
            return self._start(pod, node, now)
        return self._maybe_complete(pod, now)

    def _read(self, kind: str, name: str, namespace: str | None = None
              ) -> Mapping[str, Any] | None:
        if self._memory is not None:
            return self._memory.peek(kind, name, namespace)
        try:
            return self.cluster.get(kind, name, namespace)
        except NotFoundError:
            return None

    def _collect_orphan(self, key: str, pod: Mapping[str, Any], now: datetime) -> Result:
        first_seen = self._orphans_seen.setdefault(key, now)
        wait = ORPHAN_QUARANTINE - (now - first_seen).total_seconds()
        if wait > 0:
            return Result(requeue_after=wait)
        self._orphans_seen.pop(key, None)
        self._delete_now(pod)
        return Result()

    def _terminate(self, pod: Mapping[str, Any], now: datetime) -> Result:
        deadline = now if self.settings.stop_at_once else objects.deletion_time(pod) or now
        if now < deadline:
            return Result(requeue_after=(deadline - now).total_seconds())
        self._delete_now(pod)
        return Result()

    def _delete_now(self, pod: Mapping[str, Any]) -> None:
        """Other API errors than a pod replaced under the same name are retried."""
        try:
            confirm_deletion(self.cluster, pod)
        except ConflictError as error:
            log.info("kubelet: removing %s: %s", objects.key(pod), error)

    def _start(self, pod: Mapping[str, Any], node: Mapping[str, Any], now: datetime) -> Result:
        start_at = _bound_at(pod, now) + timedelta(seconds=self.settings.start_delay)
        if now < start_at:
            return Result(requeue_after=(start_at - now).total_seconds())
        addresses = pod_addresses(pod, node) if self.settings.addresses else None
        started = unready_status if _never_ready(pod) else running_status
        self._write_status(pod, started(pod, now, addresses))
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
        self._write_status(pod, completed_status(pod, now))
        return Result()

    def _write_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        name, namespace = objects.name(pod), objects.namespace(pod)
        try:
            if self._memory is not None:
                self._memory.set_status("Pod", name, namespace, status)
            else:
                self.cluster.patch("Pod", name, {"status": status}, namespace,
                                   subresource="status")
        except NotFoundError:
            return


def _bound_at(pod: Mapping[str, Any], now: datetime) -> datetime:
    """When the pod was bound: its PodScheduled transition, else its creation."""
    bound = objects.creation_time(pod) or now
    scheduled = objects.condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "True" and scheduled.get(
            "lastTransitionTime"):
        bound = max(bound, parse_time(str(scheduled["lastTransitionTime"])))
    return bound


def _never_ready(pod: Mapping[str, Any]) -> bool:
    return objects.labels(pod).get(KWOK_STAGE_LABEL) == "unhealthy"


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
