"""operatorpkg's status controller, as Karpenter runs it for NodeClaims, NodePools and
EC2NodeClasses, and for CapacityBuffers with the CapacityBuffer gate on: per object and
condition a count series (1) and how long the condition has been in its current status;
per condition transition a counter and, when the previous status was seen, how long the
condition stayed in it; per terminating object how long it has been terminating, and once
it is gone how long termination took.

Transitions are what this controller saw change between two of its reconciles, as in
operatorpkg: a condition that flips and flips back between two looks is not counted.
Unlike operatorpkg, a condition whose reason changed while its status did not drops its
old-reason series (the store replaces an object's series as a whole).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright import metrics
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.cluster.objects import conditions, deletion_time
from nodewright.runtime.clock import Clock, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState

REQUEUE_SECONDS = 10.0
GROUPS = {"NodeClaim": "karpenter.sh", "NodePool": "karpenter.sh",
          "EC2NodeClass": "karpenter.k8s.aws", "CapacityBuffer": "autoscaling.x-k8s.io"}
# Karpenter adds CapacityBuffers' conditions (a generic status controller over the upstream
# type) only where the gate runs the buffer controller.
GATED_KINDS = frozenset({"CapacityBuffer"})
Observed = dict[str, tuple[str, datetime | None]]  # type -> (status, lastTransitionTime)


def _key(event: WatchEvent) -> Iterable[str]:
    return (f"{event.kind}/{event.key}",)


def _time(raw: Any) -> datetime | None:
    try:
        return parse_time(str(raw)) if raw else None
    except ValueError:
        return None


class StatusConditionMetrics:
    name = "metrics.status"

    def __init__(self, clock: Clock, state: ClusterState,
                 requeue_seconds: float | None = REQUEUE_SECONDS, *,
                 buffers: ClusterAPI | None = None) -> None:
        """`buffers`: the cluster whose (cached) CapacityBuffers are reported; None leaves
        them out (the gate is off)."""
        self.clock = clock
        self.state = state
        self.requeue_seconds = requeue_seconds
        self.buffers = buffers
        self.store = metrics.Store()
        self._observed: dict[str, Observed] = {}
        self._terminating: dict[str, datetime] = {}
        self._watches = tuple(Watch(kind, keys=_key) for kind in GROUPS
                              if kind not in GATED_KINDS or buffers is not None)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind == "NodeClaim":
            return self.state.nodeclaim(name)
        if kind == "NodePool":
            return self.state.nodepool(name)
        if kind == "CapacityBuffer":
            if self.buffers is None:
                return None
            try:
                return self.buffers.get(kind, name, namespace)
            except NotFoundError:
                return None
        return self.state.node_class(name)

    def reconcile(self, key: str) -> Result:
        kind, _, object_key = key.partition("/")
        namespace, _, name = object_key.rpartition("/")
        group = GROUPS[kind]
        obj = self._get(kind, namespace, name)
        now = self.clock.now()
        ids = {"group": group, "kind": kind, "namespace": namespace, "name": name}
        if obj is None:
            self.store.delete(key)
            self._observed.pop(key, None)
            deleted = self._terminating.pop(key, None)
            if deleted is not None:
                metrics.TERMINATION_DURATION.labels(**ids).observe(
                    (now - deleted).total_seconds())
            return Result()
        series: list[metrics.Sample] = []
        current: Observed = {}
        for cond in conditions(obj):
            kind_of, status = str(cond.get("type") or ""), str(cond.get("status") or "")
            since = _time(cond.get("lastTransitionTime"))
            labels = {**ids, "type": kind_of, "status": status,
                      "reason": str(cond.get("reason") or "")}
            series.append((metrics.STATUS_CONDITION_COUNT, labels, 1.0))
            series.append((metrics.STATUS_CONDITION_CURRENT_STATUS_SECONDS, labels,
                           (now - since).total_seconds() if since is not None else 0.0))
            current[kind_of] = (status, since)
            self._transition(key, group, kind, labels, status, since)
        deleting = deletion_time(obj)
        if deleting is not None:
            series.append((metrics.TERMINATION_CURRENT_TIME, ids,
                           (now - deleting).total_seconds()))
            self._terminating[key] = deleting
        self.store.update(key, series)
        self._observed[key] = current
        return Result(requeue_after=self.requeue_seconds)

    def _transition(self, key: str, group: str, kind: str, labels: Mapping[str, str],
                    status: str, since: datetime | None) -> None:
        before = self._observed.get(key, {}).get(labels["type"])
        if before is not None and before[0] == status:
            return
        metrics.STATUS_CONDITION_TRANSITIONS.labels(
            group=group, kind=kind, type=labels["type"], status=status,
            reason=labels["reason"]).inc()
        if before is None:
            return
        previous_status, previous_since = before
        if since is not None and previous_since is not None:
            metrics.STATUS_CONDITION_TRANSITION_SECONDS.labels(
                group=group, kind=kind, type=labels["type"], status=previous_status,
            ).observe((since - previous_since).total_seconds())
