"""NodeClaim `status.lastPodEventTime` (Karpenter's nodeclaim.podevents controller).

A pod event is a pod being bound to a node, or a pod on a node going terminal (Succeeded
or Failed) or terminating (deletionTimestamp set); DaemonSet pods do not count. The node's
NodeClaim then records the time, unless it recorded one less than 10 seconds ago: pods
come and go often, and Karpenter drops those writes (the window is shorter than
consolidation's 15 s validation, which catches what the window hides). Consolidation
counts consolidateAfter from this time (see `nodeclaim.disruption_conditions`).

Watch events carry only the new object, so the controller remembers, per pod, where it
was bound and whether it was terminal or terminating, and compares. A pod seen for the
first time counts only if it was created already bound within the window: a restarted
controller replays every pod as new, and those are not events. A bound pod deleted at once
(a grace period of 0: no terminating phase) counts as removed from its node, which is
what the field means; Karpenter, reading the pod after the event, misses that case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.copying import copy_object
from nodewright.controllers.common.patching import patch_status
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState, podutil
from nodewright.state.pods import pod_key

DEDUPE_SECONDS = 10.0
CONFLICT_RETRY_SECONDS = 0.1


class PodPhase(NamedTuple):
    node_name: str
    terminal: bool
    terminating: bool


def phase_of(pod: Mapping[str, Any]) -> PodPhase:
    return PodPhase(
        node_name=podutil.node_name(pod) or "",
        terminal=podutil.is_terminal(pod),
        terminating=podutil.is_terminating(pod),
    )


def is_pod_event(before: PodPhase, after: PodPhase) -> bool:
    """Karpenter's filter: newly bound, newly terminal or newly terminating on a node."""
    bound = not before.node_name and bool(after.node_name)
    terminal = bool(after.node_name) and not before.terminal and after.terminal
    terminating = bool(after.node_name) and not before.terminating and after.terminating
    return bound or terminal or terminating


class PodEvents:
    name = "nodeclaim.podevents"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self._phases: dict[str, PodPhase] = {}
        self._watches = (Watch("Pod", keys=self._nodeclaim_of_pod_event),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _nodeclaim_of_pod_event(self, event: WatchEvent) -> Iterable[str]:
        pod = event.object
        key = pod_key(pod)
        if event.type == "DELETED":
            last = self._phases.pop(key, None) or phase_of(pod)
            # Gone at once from a node (no terminating phase first): a removal.
            removed = bool(last.node_name) and not (last.terminal or last.terminating)
            node_name = last.node_name if removed else ""
        else:
            after = phase_of(pod)
            before = self._phases.get(key)
            self._phases[key] = after
            if before is None and self._created_recently(pod):
                before = PodPhase("", False, False)
            node_name = after.node_name if before and is_pod_event(before, after) else ""
        if not node_name or podutil.is_owned_by_daemonset(pod):
            return ()
        node = self.state.node_by_name(node_name)
        if node is None or not node.managed:
            return ()
        return (node.nodeclaim_name,)

    def _created_recently(self, pod: Mapping[str, Any]) -> bool:
        created = (pod.get("metadata") or {}).get("creationTimestamp")
        if not created:
            return False
        age = self.clock.now() - parse_time(str(created))
        return age < timedelta(seconds=DEDUPE_SECONDS)

    def reconcile(self, key: str) -> Result:
        cached = self.state.nodeclaim(key)
        if cached is None:
            return Result()
        now = self.clock.now()
        recorded = (cached.get("status") or {}).get("lastPodEventTime")
        if recorded and now - parse_time(str(recorded)) < timedelta(seconds=DEDUPE_SECONDS):
            return Result()
        after = copy_object(cached)
        after.setdefault("status", {})["lastPodEventTime"] = format_time(now)
        try:
            patch_status(self.cluster, cached, after)
        except ConflictError:
            return Result(requeue_after=CONFLICT_RETRY_SECONDS)
        except NotFoundError:
            return Result()
        return Result()
