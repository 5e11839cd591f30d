"""operatorpkg's status controller, as Karpenter runs it (pkg/controllers/controllers.go) for
NodeClaims, NodePools, Nodes and EC2NodeClasses, and for CapacityBuffers with the
CapacityBuffer gate on.

Per object and condition a count series (1) and how long the condition has been in its
current status; per condition transition a counter and, when the previous status was
seen, how long the condition stayed in it; per terminating object how long it has been
terminating, and once it is gone how long termination took. Each kind writes its own
operator_<kind>_* families (Karpenter's label keys and buckets per kind, `KINDS`) and,
where Karpenter passes EmitDeprecatedMetrics (every kind but Node), the generic
operator_status_condition_* / operator_termination_* ones too.

It also publishes operatorpkg's events: a Normal event whose reason is the condition type
("Status condition transitioned, Type: Launched, Status: Unknown -> True, Reason:
Launched") when a condition it saw before changes status, and "Finalized <finalizer>"
when a finalizer it saw is gone. These make `kubectl describe nodeclaim` a timeline.

Transitions are what this controller saw change between two of its reconciles, as in
operatorpkg: a condition that flips and flips back between two looks is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client import Gauge

from nodewright import metrics
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.objects import conditions, deletion_time, finalizers, labels
from nodewright.runtime.clock import Clock, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState

REQUEUE_SECONDS = 10.0
NODE_CLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"  # v1.NodeClassLabelKey(EC2NodeClass)
NODEPOOL_LABEL = "karpenter.sh/nodepool"
INITIALIZED_LABEL = "karpenter.sh/initialized"


@dataclass(frozen=True)
class StatusKind:
    """How Karpenter builds one kind's status controller."""

    group: str
    # Object label keys that become metric labels (status.WithLabels).
    label_keys: tuple[str, ...] = ()
    buckets: tuple[float, ...] = metrics.STATUS_BUCKETS
    # status.EmitDeprecatedMetrics: the generic operator_status_condition_* names too.
    deprecated: bool = True
    # Only where the CapacityBuffer gate runs the buffer controller.
    gated: bool = False


KINDS: dict[str, StatusKind] = {
    "NodeClaim": StatusKind("karpenter.sh", (NODE_CLASS_LABEL, NODEPOOL_LABEL)),
    "NodePool": StatusKind("karpenter.sh"),
    "Node": StatusKind("", (NODE_CLASS_LABEL, NODEPOOL_LABEL, INITIALIZED_LABEL),
                       deprecated=False),
    # The AWS provider's controller: EmitDeprecatedMetrics, operatorpkg's default buckets.
    "EC2NodeClass": StatusKind("karpenter.k8s.aws",
                               buckets=tuple(metrics.DEFAULT_BUCKETS)),
    "CapacityBuffer": StatusKind("autoscaling.x-k8s.io", gated=True),
}
# The generic names' group label per kind (kept for callers reading it).
GROUPS = {kind: spec.group for kind, spec in KINDS.items()}
# Registered on import, as Karpenter's are when its controllers are built.
FAMILIES = {kind: metrics.kind_status_metrics(kind, spec.label_keys, spec.buckets)
            for kind, spec in KINDS.items()}


@dataclass
class _Seen:
    conditions: dict[str, Mapping[str, Any]]
    finalizers: list[str]
    extra: tuple[str, ...]
    obj: Mapping[str, Any]
    # The time of the last reconcile: the series whose value is the seconds since a moment
    # (its conditions' and its termination's ages) count up to it when scraped. A
    # reconcile that finds the same object (the state replaces an object on update, never
    # changes one) only moves it on: the other series hold constants already set, and the
    # ages read what setting each of them at this reconcile would have left.
    looked: metrics.Moment
    # Per condition (type, status, reason) its series: the count and the age, then the
    # generic count and age where the kind has them.
    series: dict[tuple[str, str, str], tuple[metrics.Series, ...]] = field(
        default_factory=dict)


def _key(event: WatchEvent) -> Iterable[str]:
    return (f"{event.kind}/{event.key}",)


def _time(raw: Any) -> datetime | None:
    try:
        return parse_time(str(raw)) if raw else None
    except ValueError:
        return None


def _series(gauge: Gauge, labels_: Mapping[str, str]) -> metrics.Series:
    return gauge, tuple(labels_[label] for label in gauge._labelnames)


def _condition_series(per_kind: metrics.KindStatusMetrics, deprecated: bool,
                      labels_: Mapping[str, str], extra_labels: Mapping[str, str],
                      generic: Mapping[str, str]) -> tuple[metrics.Series, ...]:
    own = {**labels_, **extra_labels}
    made = (_series(per_kind.count, own), _series(per_kind.current_status_seconds, own))
    if not deprecated:
        return made
    shared = {**labels_, **generic}
    return (*made, _series(metrics.STATUS_CONDITION_COUNT, shared),
            _series(metrics.STATUS_CONDITION_CURRENT_STATUS_SECONDS, shared))


def transition_note(condition: Mapping[str, Any], previous_status: str) -> str:
    """operatorpkg's event message for a status transition."""
    message = str(condition.get("message") or "")
    return (f"Status condition transitioned, Type: {condition.get('type', '')}, "
            f"Status: {previous_status} -> {condition.get('status', '')}, "
            f"Reason: {condition.get('reason') or ''}"
            + (f", Message: {message}" if message else ""))


class StatusConditionMetrics:
    name = "metrics.status"

    def __init__(self, clock: Clock, state: ClusterState,
                 requeue_seconds: float | None = REQUEUE_SECONDS, *,
                 buffers: ClusterAPI | None = None,
                 recorder: EventRecorder | None = None) -> None:
        """`buffers`: the cluster whose (cached) CapacityBuffers are reported; None leaves
        them out (the gate is off). `recorder`: where transition and Finalized events go
        (None: metrics only)."""
        self.clock = clock
        self.state = state
        self.requeue_seconds = requeue_seconds
        self.buffers = buffers
        self.recorder = recorder
        # Conditions flip back and forth (Disruptable, Consolidatable): their series are
        # kept while the object lives and set again when it has them again.
        self.store = metrics.Store(keep_removed=True)
        self._seen: dict[str, _Seen] = {}
        self._terminating: dict[str, tuple[datetime, tuple[str, ...]]] = {}
        self._kinds = {kind: spec for kind, spec in KINDS.items()
                       if not spec.gated or buffers is not None}
        self._metrics = {kind: FAMILIES[kind] for kind in self._kinds}
        self._watches = tuple(Watch(kind, keys=_key) for kind in self._kinds)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind == "NodeClaim":
            return self.state.nodeclaim(name)
        if kind == "NodePool":
            return self.state.nodepool(name)
        if kind == "Node":
            # Every Node, as Karpenter's generic status controller watches them all: not
            # only those the state tracks (it waits for the instance type label).
            return self.state.node_object(name)
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
        spec = self._kinds[kind]
        obj = self._get(kind, namespace, name)
        if obj is None:
            self._gone(key, kind)
            return Result()
        now = self.clock.now()
        seen = self._seen.get(key)
        if seen is not None and seen.obj is obj and not seen.looked.lost:
            seen.looked.at = now
            return Result(requeue_after=self.requeue_seconds)
        per_kind = self._metrics[kind]
        object_labels = labels(obj)
        extra = tuple(object_labels.get(k, "") for k in spec.label_keys)
        extra_labels = dict(zip(per_kind.extra_labels, extra, strict=True))
        self._finalized(seen, obj)
        generic = {"group": spec.group, "kind": kind}
        ids = {"namespace": namespace, "name": name}
        # A condition's series are those it had at the last look when its type, status and
        # reason and the object's label values are the same (their label values are those).
        known = seen.series if seen is not None and seen.extra == extra else {}
        # (series, the moment the value is the seconds since or None, else the value)
        timed: list[tuple[metrics.Series, datetime | None, float]] = []
        current: dict[str, Mapping[str, Any]] = {}
        series_now: dict[tuple[str, str, str], tuple[metrics.Series, ...]] = {}
        for cond in conditions(obj):
            type_, status = str(cond.get("type") or ""), str(cond.get("status") or "")
            reason = str(cond.get("reason") or "")
            since = _time(cond.get("lastTransitionTime"))
            held = (type_, status, reason)
            made = known.get(held)
            if made is None:
                made = _condition_series(
                    per_kind, spec.deprecated,
                    {**ids, "type": type_, "status": status, "reason": reason},
                    extra_labels, generic)
            series_now[held] = made
            for count, age in zip(made[::2], made[1::2], strict=True):
                timed += [(count, None, 1.0), (age, since, 0.0)]
            current[type_] = cond
            before = seen.conditions.get(type_) if seen is not None else None
            self._transition(obj, kind, cond, before, extra_labels)
        deleting = deletion_time(obj)
        if deleting is not None:
            timed.append((_series(per_kind.termination_current_time, {**ids, **extra_labels}),
                          deleting, 0.0))
            if spec.deprecated:
                timed.append((_series(metrics.TERMINATION_CURRENT_TIME, {**ids, **generic}),
                              deleting, 0.0))
            self._terminating[key] = (deleting, extra)
        # The ages written too: a scrape between the writes and `count_up` reads them right.
        children = self.store.update_series(key, [
            (series, value if since is None else (now - since).total_seconds())
            for series, since, value in timed])
        looked = metrics.Moment(now)
        for child, (_, since, _) in zip(children, timed, strict=True):
            if since is not None:
                metrics.count_up(child, looked, since)
        self._seen[key] = _Seen(current, finalizers(obj), extra, obj, looked, series_now)
        return Result(requeue_after=self.requeue_seconds)

    def _gone(self, key: str, kind: str) -> None:
        spec, per_kind = self._kinds[kind], self._metrics[kind]
        self.store.delete(key)
        seen = self._seen.pop(key, None)
        terminating = self._terminating.pop(key, None)
        if terminating is not None:
            deleted, extra = terminating
            took = (self.clock.now() - deleted).total_seconds()
            if extra:
                per_kind.termination_duration.labels(*extra).observe(took)
            else:
                per_kind.termination_duration.observe(took)
            if spec.deprecated:
                metrics.TERMINATION_DURATION.labels(group=spec.group, kind=kind).observe(took)
        if seen is not None:
            # operatorpkg records these on the empty object its failed Get left behind;
            # the last object seen is the one they are about.
            self._publish(seen.obj, *(("Finalized", f"Finalized {f}") for f in seen.finalizers))

    def _finalized(self, seen: _Seen | None, obj: Mapping[str, Any]) -> None:
        if seen is None:
            return
        now_held = set(finalizers(obj))
        self._publish(obj, *(("Finalized", f"Finalized {f}")
                             for f in seen.finalizers if f not in now_held))

    def _transition(self, obj: Mapping[str, Any], kind: str, cond: Mapping[str, Any],
                    before: Mapping[str, Any] | None, extra_labels: Mapping[str, str]) -> None:
        spec, per_kind = self._kinds[kind], self._metrics[kind]
        type_, status = str(cond.get("type") or ""), str(cond.get("status") or "")
        # operatorpkg reads a condition it has not seen as Unknown: first seen Unknown is
        # no transition.
        if str((before or {}).get("status") or "Unknown") == status:
            return
        reason = str(cond.get("reason") or "")
        per_kind.transitions.labels(type=type_, status=status, reason=reason,
                                    **extra_labels).inc()
        if spec.deprecated:
            metrics.STATUS_CONDITION_TRANSITIONS.labels(
                group=spec.group, kind=kind, type=type_, status=status, reason=reason).inc()
        if before is None:
            return
        previous_status = str(before.get("status") or "")
        since, previous_since = (_time(cond.get("lastTransitionTime")),
                                 _time(before.get("lastTransitionTime")))
        if since is not None and previous_since is not None:
            stayed = (since - previous_since).total_seconds()
            per_kind.transition_seconds.labels(type=type_, status=previous_status,
                                               **extra_labels).observe(stayed)
            if spec.deprecated:
                metrics.STATUS_CONDITION_TRANSITION_SECONDS.labels(
                    group=spec.group, kind=kind, type=type_, status=previous_status,
                ).observe(stayed)
        self._publish(obj, (type_, transition_note(cond, previous_status)))

    def _publish(self, obj: Mapping[str, Any], *notes: tuple[str, str]) -> None:
        if self.recorder is None or not notes:
            return
        self.recorder.publish(*(Event(regarding=obj, type="Normal", reason=reason, note=note)
                                for reason, note in notes))
