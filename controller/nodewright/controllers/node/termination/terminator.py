"""Draining a node (Karpenter's terminator): which pods to wait for and in what order.

Waited for: every pod on the node that is not terminal, does not tolerate the
karpenter.sh/disrupted taint, is not a mirror pod and is not stuck terminating (more
than a minute past its deletion timestamp). Pods past the force-delete point are deleted
at once, whatever their group; the others are evicted in groups, each only once every pod
of the previous ones (those being deleted included) is gone: non-critical pods not owned
by a DaemonSet, non-critical DaemonSet pods, critical (system-cluster-critical /
system-node-critical) others, critical DaemonSet pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.controllers.node.termination.eviction import Evictor, needs_force_delete
from nodewright.state import ClusterState, podutil
from nodewright.state.pods import pod_key

Pod = Mapping[str, Any]


def drain_groups(pods: Sequence[Pod]) -> list[list[Pod]]:
    groups: list[list[Pod]] = [[], [], [], []]
    for pod in pods:
        index = (2 if podutil.is_critical(pod) else 0) + (
            1 if podutil.is_owned_by_daemonset(pod) else 0
        )
        groups[index].append(pod)
    return groups


class Terminator:
    def __init__(self, state: ClusterState, evictor: Evictor) -> None:
        self.state = state
        self.evictor = evictor

    def waiting_pods(self, node_name: str, now: datetime) -> list[Pod]:
        return [
            pod for pod in self.state.pods_on(node_name)
            if podutil.is_waiting_eviction(pod, now)
        ]

    def drain(self, node: Pod, deadline: datetime | None, reason: str) -> int:
        """Evict what may go now; returns how many pods the node still waits for."""
        now = self.evictor.clock.now()
        name = str((node.get("metadata") or {}).get("name") or "")
        waiting = self.waiting_pods(name, now)
        self.evictor.forget(name, {
            (pod_key(p), str((p.get("metadata") or {}).get("uid") or "")) for p in waiting
        })
        forced = [pod for pod in waiting if needs_force_delete(pod, deadline, now)]
        deleted = {id(pod) for pod in forced}
        for pod in forced:
            self.evictor.remove(pod, deadline, node, reason)
        # The groups hold the pods just deleted too (Karpenter groups every waiting pod):
        # DaemonSet and critical pods wait until the pods deleted for the deadline are gone.
        for group in drain_groups(waiting):
            if group:
                for pod in group:
                    if id(pod) not in deleted:
                        self.evictor.remove(pod, deadline, node, reason)
                break
        return len(waiting)
