"""The simulated kubelet's node half, for a real cluster: the node Lease and the Ready
heartbeat.

A real cluster expects a kubelet behind every Node: one that renews the node's Lease in
kube-node-lease (or the node lifecycle controller marks the node unreachable and evicts
its pods) and reports the node's status now and then. `NodeHeartbeat` does that for the
nodes it plays, and leaves every other node alone. (The in-memory cluster runs no node
lifecycle controller: there nothing needs it.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import AlreadyExistsError, ClusterAPI, NotFoundError
from nodewright.cluster.kube.access import NODE_LEASE_NAMESPACE
from nodewright.cluster.memory.kubelet.pods import NodePredicate
from nodewright.cluster.memory.timestamps import micro_time_text
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch

# The kubelet's defaults: a 40 s node lease renewed every 10 s (a quarter of it).
NODE_LEASE_SECONDS = 40
RENEW_SECONDS = 10.0
# How old the Ready condition's heartbeat may grow before it is written again (the kubelet
# reports status at least every 5 minutes once it uses Leases).
STATUS_REPORT_SECONDS = 60.0


class NodeHeartbeat:
    """Keeps the node Lease and the Ready heartbeat of the nodes it plays fresh."""

    name = "kubelet.heartbeat"

    def __init__(self, cluster: ClusterAPI, clock: Clock, plays: NodePredicate) -> None:
        self.cluster = cluster
        self.clock = clock
        self.plays = plays

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node"),)

    def reconcile(self, key: str) -> Result:
        try:
            node = self.cluster.get("Node", key)
        except NotFoundError:
            return Result()
        if objects.is_deleting(node) or not self.plays(node):
            return Result()
        now = self.clock.now()
        self._renew_lease(node, now)
        self._report_ready(node, now)
        return Result(requeue_after=RENEW_SECONDS)

    def _renew_lease(self, node: Mapping[str, Any], now: datetime) -> None:
        name = objects.name(node)
        try:
            lease = self.cluster.get("Lease", name, NODE_LEASE_NAMESPACE)
        except NotFoundError:
            self._create_lease(node, now)
            return
        renewed = (lease.get("spec") or {}).get("renewTime")
        if renewed and now - parse_time(renewed) < timedelta(seconds=RENEW_SECONDS / 2):
            return
        lease.setdefault("spec", {})["renewTime"] = micro_time_text(now)
        self.cluster.update(lease)

    def _create_lease(self, node: Mapping[str, Any], now: datetime) -> None:
        name = objects.name(node)
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": NODE_LEASE_NAMESPACE,
                # Deleting the Node deletes its Lease (the garbage collector follows this).
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                     "uid": objects.uid(node)}],
            },
            "spec": {"holderIdentity": name, "leaseDurationSeconds": NODE_LEASE_SECONDS,
                     "renewTime": micro_time_text(now)},
        }
        try:
            self.cluster.create(lease)
        except AlreadyExistsError:
            return

    def _report_ready(self, node: Mapping[str, Any], now: datetime) -> None:
        conditions = [dict(c) for c in objects.conditions(node)]
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") != "True":
            return  # not ready yet, or marked otherwise: the simulated EC2 decides
        beat = ready.get("lastHeartbeatTime")
        if beat and now - parse_time(beat) < timedelta(seconds=STATUS_REPORT_SECONDS):
            return
        stamp = format_time(now)
        for condition in conditions:
            condition["lastHeartbeatTime"] = stamp
        version = objects.meta(node).get("resourceVersion")
        self.cluster.patch("Node", objects.name(node),
                           {"metadata": {"resourceVersion": version},
                            "status": {"conditions": conditions}},
                           subresource="status")
