"""Karpenter's metrics.pod controller: one karpenter_pods_state series per pod (its
owner, node, phase, readiness and its node's NodePool, zone, architecture, capacity type
and instance type), and how long pods wait: the unbound / unstarted / undecided gauges
while they wait, the bound and startup durations once they stop waiting.

Runs on each pod's watch events; Karpenter also requeues every pod every 30 seconds,
which only matters while a pod waits (its waiting gauges grow), so a waiting pod is
requeued and a running one is not (the simulator has tens of thousands of pods).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import Gauge

from nodewright import metrics
from nodewright.cluster.objects import condition, creation_time
from nodewright.runtime.clock import Clock, parse_time
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState
from nodewright.state.podutil import is_terminal
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)

REQUEUE_SECONDS = 30.0
ARCH_LABEL = "kubernetes.io/arch"
_WAITING = (
    metrics.PODS_UNSTARTED_TIME, metrics.PODS_PROVISIONING_UNSTARTED_TIME,
    metrics.PODS_UNBOUND_TIME, metrics.PODS_PROVISIONING_UNBOUND_TIME,
    metrics.PODS_SCHEDULING_UNDECIDED_TIME,
)


def owner_self_link(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    owners = metadata.get("ownerReferences") or []
    if not owners:
        return ""
    owner = owners[0]
    return (f"/apis/{owner.get('apiVersion', '')}/namespaces/{metadata.get('namespace', '')}/"
            f"{str(owner.get('kind', '')).lower()}s/{owner.get('name', '')}")


def _true(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    found = condition(pod, kind)
    return found if found is not None and found.get("status") == "True" else None


def _since(obj: Mapping[str, Any] | None) -> datetime | None:
    raw = (obj or {}).get("lastTransitionTime")
    try:
        return parse_time(str(raw)) if raw else None
    except ValueError:
        return None


class PodMetrics:
    name = "metrics.pod"

    def __init__(self, clock: Clock, state: ClusterState) -> None:
        self.clock = clock
        self.state = state
        self.store = metrics.Store()
        self._pending: set[str] = set()
        self._unscheduled: set[str] = set()
        self._watches = (Watch("Pod"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        pod = self.state.pod(key)
        namespace, _, name = key.partition("/")
        ids = (name, namespace)
        if pod is None:
            self._pending.discard(key)
            self._unscheduled.discard(key)
            for gauge in _WAITING:
                _remove(gauge, ids)
            self.store.delete(key)
            return Result()
        self.store.update(key, [(metrics.PODS_STATE, self.labels(pod), 1.0)])
        now = self.clock.now()
        self._undecided(key, pod, ids, now)
        schedulable = self.state.pod_schedulable_time(key)
        self._startup(key, pod, ids, now, schedulable)
        self._bound(key, pod, ids, now, schedulable)
        waiting = key in self._pending or key in self._unscheduled
        return Result(requeue_after=REQUEUE_SECONDS) if waiting else Result()

    def labels(self, pod: Mapping[str, Any]) -> dict[str, str]:
        metadata = pod.get("metadata") or {}
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.state.node_by_name(node_name) if node_name else None
        node_labels = ((node.node or {}).get("metadata") or {}).get("labels") or {} \
            if node is not None else {}
        return {
            "name": str(metadata.get("name") or ""),
            "namespace": str(metadata.get("namespace") or ""),
            "owner": owner_self_link(pod),
            "node": node_name,
            "scheduled": "true" if node_name else "false",
            metrics.NODEPOOL: str(node_labels.get(NODEPOOL_LABEL, "")),
            metrics.ZONE: str(node_labels.get(ZONE_LABEL, "")),
            "arch": str(node_labels.get(ARCH_LABEL, "")),
            metrics.CAPACITY_TYPE: str(node_labels.get(CAPACITY_TYPE_LABEL, "")),
            "instance_type": str(node_labels.get(INSTANCE_TYPE_LABEL, "")),
            "phase": str((pod.get("status") or {}).get("phase") or ""),
            "ready": "true" if _true(pod, "Ready") else "false",
            "managed": "true" if node_labels.get(NODEPOOL_LABEL) else "false",
        }

    def _undecided(self, key: str, pod: Mapping[str, Any], ids: tuple[str, str],
                   now: datetime) -> None:
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if (self.state.pod_decision_time(key) is not None or _true(pod, "PodScheduled")
                or bound or is_terminal(pod)):
            _remove(metrics.PODS_SCHEDULING_UNDECIDED_TIME, ids)
            return
        acked = self.state.pod_ack_time(key)
        if acked is not None:
            metrics.set_series(metrics.PODS_SCHEDULING_UNDECIDED_TIME, ids,
                               (now - acked).total_seconds())

    def _startup(self, key: str, pod: Mapping[str, Any], ids: tuple[str, str], now: datetime,
                 schedulable: datetime | None) -> None:
        created = creation_time(pod) or now
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Pending":
            self._waiting(metrics.PODS_UNSTARTED_TIME, metrics.PODS_PROVISIONING_UNSTARTED_TIME,
                          ids, now, created, schedulable)
            self._pending.add(key)
            return
        if key not in self._pending:
            return
        ready = _true(pod, "Ready")
        if ready is not None or is_terminal(pod):
            _remove(metrics.PODS_UNSTARTED_TIME, ids)
            _remove(metrics.PODS_PROVISIONING_UNSTARTED_TIME, ids)
            started = _since(ready)
            if started is not None:
                metrics.PODS_STARTUP_DURATION.observe((started - created).total_seconds())
                if schedulable is not None:
                    metrics.PODS_PROVISIONING_STARTUP_DURATION.observe(
                        (started - schedulable).total_seconds())
            self._pending.discard(key)
            self.state.clear_pod_scheduling(key)
            return
        self._waiting(metrics.PODS_UNSTARTED_TIME, metrics.PODS_PROVISIONING_UNSTARTED_TIME,
                      ids, now, created, schedulable)

    def _bound(self, key: str, pod: Mapping[str, Any], ids: tuple[str, str], now: datetime,
               schedulable: datetime | None) -> None:
        created = creation_time(pod) or now
        scheduled = _true(pod, "PodScheduled")
        if (pod.get("status") or {}).get("phase") == "Pending":
            if scheduled is None:
                self._waiting(metrics.PODS_UNBOUND_TIME, metrics.PODS_PROVISIONING_UNBOUND_TIME,
                              ids, now, created, schedulable)
            self._unscheduled.add(key)
            return
        if key in self._unscheduled and scheduled is not None:
            _remove(metrics.PODS_UNBOUND_TIME, ids)
            _remove(metrics.PODS_PROVISIONING_UNBOUND_TIME, ids)
            bound = _since(scheduled)
            if bound is not None:
                metrics.PODS_BOUND_DURATION.observe((bound - created).total_seconds())
                if schedulable is not None:
                    metrics.PODS_PROVISIONING_BOUND_DURATION.observe(
                        (bound - schedulable).total_seconds())
            self._unscheduled.discard(key)

    @staticmethod
    def _waiting(since_created: Gauge, since_schedulable: Gauge, ids: tuple[str, str],
                 now: datetime, created: datetime, schedulable: datetime | None) -> None:
        metrics.set_series(since_created, ids, (now - created).total_seconds())
        if schedulable is not None:
            metrics.set_series(since_schedulable, ids, (now - schedulable).total_seconds())
        else:
            _remove(since_schedulable, ids)


def _remove(gauge: Gauge, ids: tuple[str, str]) -> None:
    metrics.remove_series(gauge, ids)
