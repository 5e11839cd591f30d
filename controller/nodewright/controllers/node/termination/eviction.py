"""Removing one pod from a draining node (Karpenter's eviction queue, per pod).

Before the node's deadline a pod only leaves through the Eviction API, which respects
PodDisruptionBudgets: a 429 is retried with per-pod exponential backoff (100 ms doubling
to 10 s), and all the retries together are paced by a token bucket sized with the eviction
queue's workers as Karpenter sizes it (100 a second per 100 workers, bursts of ten
seconds' worth: `RETRY_BUCKET`). A pod with an active karpenter.sh/do-not-disrupt
annotation is left alone and retried. Once the pod's own grace period would run past the
node's deadline (karpenter.sh/nodeclaim-termination-timestamp), it is deleted directly
with a grace period that ends at the deadline (at least 1 s): PDBs and do-not-disrupt no
longer hold.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from nodewright import metrics
from nodewright.cluster.api import (
    ApiError,
    ClusterAPI,
    ConflictError,
    NotFoundError,
    TooManyRequestsError,
)
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common.podrules import do_not_disrupt_event
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.concurrency import (
    DEFAULT_CPU_REQUESTS,
    LinearScale,
    ScaledBucket,
    cores,
)
from nodewright.runtime.ratelimit import Backoff, TokenBucket, clock_seconds
from nodewright.state import podutil
from nodewright.state.pods import pod_key

log = logging.getLogger(__name__)

BACKOFF = Backoff(initial=0.1, maximum=10.0)
# Karpenter's eviction queue: LinearScaleReconciles(cores, 100, 5000) workers and
# GetTypedBucketConfigs(100, 100, workers) for its retries.
WORKERS = LinearScale(100, 5000)
RETRY_BUCKET = ScaledBucket(100, WORKERS)
# The eviction subresource's 500 for a pod that more than one budget selects.
MULTIPLE_BUDGETS = "more than one PodDisruptionBudget"
Pod = Mapping[str, Any]


def go_time_string(value: datetime) -> str:
    """A time as Go's fmt prints a time.Time (its String method), which is how Karpenter's
    Disrupted event shows the node's deadline: '2026-01-05 00:00:00 +0000 UTC'. The
    annotation Karpenter parses is UTC ('Z'), and its process runs in UTC; another offset
    prints as Go prints a fixed zone without a name ('+0200 +0200')."""
    offset = value.utcoffset() or timedelta(0)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    zone = value.strftime("%z")
    return f"{text} {zone} {'UTC' if offset == timedelta(0) else zone}"


def needs_force_delete(pod: Pod, deadline: datetime | None, now: datetime) -> bool:
    """Whether the pod must be deleted now to be gone by the node's deadline."""
    if deadline is None:
        return False
    deleted = (pod.get("metadata") or {}).get("deletionTimestamp")
    if deleted and parse_time(str(deleted)) <= deadline:
        return False  # already terminating, and gone by the deadline
    # A pod terminating past the deadline too, only once its own grace period would run
    # past it (Karpenter's DeleteExpiringPods checks both).
    grace = podutil.termination_grace_seconds(pod)
    if grace is None:
        return False
    # now > deadline - grace, without subtracting a grace longer than the calendar allows
    # (terminationGracePeriodSeconds is any int64).
    return (deadline - now).total_seconds() < grace


class Evictor:
    def __init__(self, cluster: ClusterAPI, clock: Clock, recorder: EventRecorder,
                 cpu_requests: int = DEFAULT_CPU_REQUESTS) -> None:
        self.cluster = cluster
        self.clock = clock
        self.recorder = recorder
        self.size_for_cpu(cpu_requests)
        # (node, pod key, uid) -> (failed attempts, next attempt)
        self._backoff: dict[tuple[str, str, str], tuple[int, datetime]] = {}

    def size_for_cpu(self, cpu_requests: int) -> None:
        """The retry bucket for a container requesting `cpu_requests` millicores."""
        qps, burst = RETRY_BUCKET.at(cores(cpu_requests))
        self.retry_bucket = TokenBucket(qps, burst, now=clock_seconds(self.clock))

    def next_attempt(self) -> datetime | None:
        return min((when for _, when in self._backoff.values()), default=None)

    def forget(self, node_name: str, waiting: set[tuple[str, str]]) -> None:
        """Drop the backoff of the node's pods that no longer wait (gone or replaced)."""
        for entry in list(self._backoff):
            if entry[0] == node_name and entry[1:] not in waiting:
                del self._backoff[entry]

    def remove(self, pod: Pod, deadline: datetime | None, node: Pod, reason: str) -> None:
        """One attempt at getting the pod off its node."""
        now = self.clock.now()
        key = pod_key(pod)
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        entry = (str((node.get("metadata") or {}).get("name") or ""), key, uid)
        if needs_force_delete(pod, deadline, now):
            assert deadline is not None
            self._force_delete(pod, deadline, reason)
            self._backoff.pop(entry, None)
            return
        if not podutil.is_active(pod):
            self._backoff.pop(entry, None)
            return
        waiting = self._backoff.get(entry)
        if waiting is not None and waiting[1] > now:
            return
        if not podutil.tolerates_disrupted_taint(pod) and not podutil.is_mirror(pod):
            told = do_not_disrupt_event(pod, now)  # as IsEvictable checks the annotation
            if told is not None:
                self.recorder.publish(told)
        if not podutil.is_evictable(pod, now):
            self._back_off(entry)
            return
        namespace, name = key.split("/", 1)
        try:
            # Only this pod: one recreated under its name since is not evicted (409).
            self.cluster.evict(name, namespace, uid=uid or None)
        except ApiError as error:
            metrics.PODS_EVICTION_REQUESTS.labels(code=str(error.status)).inc()
            self._eviction_failed(entry, key, node, error)
            return
        metrics.PODS_EVICTION_REQUESTS.labels(code="200").inc()
        self._backoff.pop(entry, None)
        metrics.PODS_DRAINED.labels(reason=reason).inc()
        self.recorder.publish(Event(
            regarding=pod, type="Normal", reason="Evicted", note=f"Evicted pod: {reason}",
            action="Evict", dedupe_values=(str((pod.get("metadata") or {}).get("name")),),
        ))

    def _eviction_failed(self, entry: tuple[str, str, str], key: str, node: Mapping[str, Any],
                         error: ApiError) -> None:
        if isinstance(error, NotFoundError | ConflictError):
            self._backoff.pop(entry, None)
            return
        self._back_off(entry)
        if isinstance(error, TooManyRequestsError) or MULTIPLE_BUDGETS in error.message:
            why = ("violates a PDB" if isinstance(error, TooManyRequestsError)
                   else "is refused: eviction does not support multiple PDBs")
            self.recorder.publish(Event(
                regarding=node, type="Warning", reason="FailedDraining",
                note=f"Failed to drain node, evicting pod {key} {why} ({error.message})",
                action="Drain", dedupe_values=(str((node.get("metadata") or {}).get("name")),),
            ))
            return
        log.warning("evicting pod %s: %s", key, error)

    def _back_off(self, entry: tuple[str, str, str]) -> None:
        attempts = self._backoff.get(entry, (0, self.clock.now()))[0] + 1
        # Karpenter's MaxOf(per-item exponential, bucket) limiter.
        delay = max(BACKOFF.delay(attempts), self.retry_bucket.reserve())
        self._backoff[entry] = (attempts, self.clock.now() + timedelta(seconds=delay))

    def _force_delete(self, pod: Pod, deadline: datetime, reason: str) -> None:
        now = self.clock.now()
        key = pod_key(pod)
        grace = max(int((deadline - now).total_seconds()), 1)
        metadata = pod.get("metadata") or {}
        namespace, name = key.split("/", 1)
        self.recorder.publish(Event(
            regarding=pod, type="Normal", reason="Disrupted",
            note=(f"Deleting the pod to accommodate the terminationTime {go_time_string(deadline)} "
                  f"of the node. The pod was granted {grace} seconds of grace-period of its "
                  f"{podutil.termination_grace_seconds(pod)} terminationGracePeriodSeconds. "
                  "This bypasses the PDB of the pod and the do-not-disrupt annotation."),
            action="Delete", dedupe_values=(str(metadata.get("name")),),
        ))
        try:
            self.cluster.delete("Pod", name, namespace, grace_period_seconds=grace,
                                uid=str(metadata.get("uid") or "") or None)
        except ConflictError:
            return
        except NotFoundError:
            pass  # gone already: Karpenter logs it as deleted all the same
        else:
            metrics.PODS_DRAINED.labels(reason=reason).inc()
        log.debug("deleting pod", extra={
            "Pod": key, "pod.terminationGracePeriodSeconds":
                podutil.termination_grace_seconds(pod),
            "delete.gracePeriodSeconds": grace, "nodeclaim.terminationTime": format_time(deadline),
        })
