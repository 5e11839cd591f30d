"""`--cloud sim` on a real cluster: the kubelet's part for nodes no machine backs, as kwok
plays it.

The simulated EC2 registers each instance's Node itself (`nodewright.cloud.sim`). A real
cluster then expects a kubelet behind it: one that renews the node's Lease in
kube-node-lease (or the node lifecycle controller marks the node unreachable and evicts
its pods), reports the pods the scheduler binds there as running, and removes a pod from
the API once it has been deleted (a kubelet confirms a deletion by deleting with grace 0).
These two reconcilers do that for nodes whose providerID is a running simulated instance,
and leave every other node alone.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cloud.sim.lost import LostInstances
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.cluster import objects
from nodewright.cluster.api import AlreadyExistsError, ApiError, ClusterAPI, NotFoundError
from nodewright.cluster.kube.access import NODE_LEASE_NAMESPACE
from nodewright.cluster.memory.kubelet_status import confirm_deletion, running_status
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Reconciler, Result, Watch, WatchEvent

log = logging.getLogger(__name__)

# The kubelet's defaults: a 40 s node lease renewed every 10 s (a quarter of it).
NODE_LEASE_SECONDS = 40
RENEW_SECONDS = 10.0
# How old the Ready condition's heartbeat may grow before it is written again (the kubelet
# reports status at least every 5 minutes once it uses Leases).
STATUS_REPORT_SECONDS = 60.0


def _micro_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _running_instance(cloud: CloudProvider, node: Mapping[str, Any]) -> bool:
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    if not provider_id:
        return False
    try:
        return cloud.get(provider_id).state == "running"
    except CloudProviderError:
        return False


class NodeHeartbeat:
    """Keeps the node Lease and the Ready heartbeat of simulated nodes fresh."""

    name = "sim.node-heartbeat"

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node"),)

    def reconcile(self, key: str) -> Result:
        try:
            node = self.cluster.get("Node", key)
        except NotFoundError:
            return Result()
        if objects.is_deleting(node) or not _running_instance(self.cloud, node):
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
        lease.setdefault("spec", {})["renewTime"] = _micro_time(now)
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
                     "renewTime": _micro_time(now)},
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


class PodRunner:
    """Reports pods bound to simulated nodes as running, and completes their deletion."""

    name = "sim.pod-runner"

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        # Pod keys by the node they are bound to, kept from the Pod events: a Node event
        # (one every heartbeat) must not copy every pod of the cluster to find its own.
        self._bound: dict[str, set[str]] = {}
        self._node_of: dict[str, str] = {}

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Pod", self._track), Watch("Node", self._pods_of_node))

    def _track(self, event: WatchEvent) -> list[str]:
        key = event.key
        node = "" if event.type == "DELETED" else str(
            (event.object.get("spec") or {}).get("nodeName") or "")
        previous = self._node_of.pop(key, "")
        if previous:
            keys = self._bound.get(previous, set())
            keys.discard(key)
            if not keys:
                self._bound.pop(previous, None)
        if node:
            self._node_of[key] = node
            self._bound.setdefault(node, set()).add(key)
        return [key]

    def _pods_of_node(self, event: WatchEvent) -> list[str]:
        """A node becoming ours (its instance running) makes the pods bound to it due."""
        if event.type == "DELETED":
            return []
        return sorted(self._bound.get(event.name, ()))

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        try:
            pod = self.cluster.get("Pod", name, namespace)
        except NotFoundError:
            return Result()
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return Result()
        try:
            node = self.cluster.get("Node", str(node_name))
        except NotFoundError:
            return Result()
        if not _running_instance(self.cloud, node):
            return Result()
        if objects.is_deleting(pod):
            self._finish_deletion(pod)
            return Result()
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Running", "Succeeded", "Failed"):
            self._start(pod, node)
        return Result()

    def _finish_deletion(self, pod: Mapping[str, Any]) -> None:
        try:
            confirm_deletion(self.cluster, pod)
        except ApiError as error:
            log.info("deleting pod %s: %s; will retry", objects.key(pod), error)
            raise

    def _start(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> None:
        status = running_status(pod, self.clock.now(), {
            "hostIP": _node_ip(node), "podIP": _pod_ip(objects.key(pod))})
        self.cluster.patch("Pod", objects.name(pod), {"status": status},
                           objects.namespace(pod), subresource="status")


def _node_ip(node: Mapping[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return str(objects.annotations(node).get("alpha.kubernetes.io/provided-node-ip", ""))


def _pod_ip(key: str) -> str:
    """A stable address in 10.244.0.0/16 (nothing routes to it; kwok does the same)."""
    digest = hashlib.sha256(key.encode()).digest()
    return f"10.244.{digest[0]}.{max(1, digest[1])}"


def sim_kubelet(cluster: ClusterAPI, cloud: SimulatedEC2, clock: Clock) -> list[Reconciler]:
    """What plays the kubelet of the simulated EC2's instances on a real cluster (the
    `--cloud sim` controller process), beside the simulated EC2's own node agent: node
    Leases and Ready heartbeats, pods run and their deletion confirmed, and NodeClaims
    whose instance died with another process replaced (`cloud.sim.lost`)."""
    return [NodeHeartbeat(cluster, cloud, clock), PodRunner(cluster, cloud, clock),
            LostInstances(cluster, cloud)]
