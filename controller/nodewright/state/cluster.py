"""The cluster state cache (Karpenter's state.Cluster), fed with every watch event.

It joins NodeClaims and Nodes by provider ID into `StateNode`s, keeps the pods bound to
each node with their requests, the pods waiting for capacity, the NodePools' resource
usage, DaemonSets, Namespaces and PodDisruptionBudgets, and what the controllers decided
in memory (nominations, nodes marked for deletion). Every update is O(1) in the number of
objects: nothing is recomputed from scratch when one object changes.

`synced(cluster)` is the gate the provisioner and the disruption loop wait on: every
NodeClaim and Node in the cluster is tracked, and every NodeClaim has launched (an
unlaunched NodeClaim's capacity is unknown, so no decision may count on it yet), as
Karpenter's Synced. A state unsynced for over 30 s is logged at ERROR every 10 s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from nodewright import metrics
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.managed import nodeclaim_is_managed, nodepool_is_managed
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.runtime.statelock import StateLock
from nodewright.scheduling import volumes
from nodewright.scheduling.overlays import OverlayStore
from nodewright.scheduling.pods import DaemonSet, Pod
from nodewright.state.buffers import BufferPods
from nodewright.state.cost import ClusterCost
from nodewright.state.objects import ConfigObjects, Parsed, with_copied_containers
from nodewright.state.pods import PodStore, pod_key
from nodewright.state.statenode import NodePods, StateNode
from nodewright.state.wellknown import (
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
)

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
# Karpenter: a node stays nominated for max(2 x batchMaxDuration, 10 s).
DEFAULT_NOMINATION_SECONDS = 20.0
# Karpenter logs an unsynced state at ERROR once it has lasted 30 s, then every 10 s.
UNSYNCED_LOG_AFTER_SECONDS = 30.0
UNSYNCED_LOG_EVERY_SECONDS = 10.0


# The kinds whose write answers are applied before their watch events (observe_written).
_VERSIONED_KINDS = frozenset({"NodeClaim", "Node"})


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _nodepool_spec_changed(before: Object | None, after: Object) -> bool:
    """A managed NodePool (on an EC2NodeClass) that is new or has a new generation."""
    if not nodepool_is_managed(after):
        return False
    if before is None:
        return True
    return bool((before.get("metadata") or {}).get("generation")
                != (after.get("metadata") or {}).get("generation"))


def _version(obj: Object) -> int | None:
    """The object's resourceVersion as etcd's integer (opaque elsewhere: None)."""
    raw = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(raw) if raw.isdigit() else None


class ClusterState:
    def __init__(self, clock: Clock, *, nomination_seconds: float = DEFAULT_NOMINATION_SECONDS):
        self.clock = clock
        self.nomination_seconds = nomination_seconds
        # The cluster CA bundle the controller runs with, which the EC2NodeClass drift hash
        # covers (Karpenter's caBundle); None in the simulator.
        self.ca_bundle: str | None = None
        # Each NodePool's cost, kept by the state.cost controllers (Karpenter's ClusterCost).
        self.cost = ClusterCost()
        self._nodes: dict[str, StateNode] = {}
        self._node_keys: dict[str, str] = {}  # node name -> state key
        # Every Node as last observed, tracked or not (a managed Node is tracked once it has
        # its instance type label or is initialized): what reads all Nodes reads here.
        self._node_objects: dict[str, Object] = {}
        self._claim_keys: dict[str, str] = {}  # nodeclaim name -> provider id ("" unlaunched)
        # provider id -> every NodeClaim naming it (more than one is Karpenter's duplicate)
        self._claims_by_provider: dict[str, set[str]] = {}
        self._nodeclaims: dict[str, Object] = {}
        self._unlaunched: set[str] = set()
        self._pool_usage: dict[str, dict[str, int]] = {}
        self._contributions: dict[str, tuple[str, Mapping[str, int]]] = {}
        self._pod_nominations: dict[str, tuple[str, datetime]] = {}
        # For the pod metrics only (Karpenter's PodAckTime, PodSchedulingDecisionTime,
        # PodSchedulingSuccessTime): when a pending pod was first seen, first tried and
        # first placed. Nothing decides on them.
        self._pod_ack: dict[str, datetime] = {}
        self._pod_decided: dict[str, datetime] = {}
        self._pod_schedulable: dict[str, datetime] = {}
        self._unsynced_since: datetime | None = None
        self._unsynced_logged: datetime | None = None
        # The highest resourceVersion the watch delivered, per kind in _VERSIONED_KINDS.
        self._watched_versions: dict[str, int] = {}
        self.pods = PodStore()
        self.config = ConfigObjects()
        self._has_synced = False
        self._consolidation_state = clock.now()
        # Bumped on every change; a solve over an unchanged generation decides the same.
        self.generation = 0
        # The NodeOverlay gate: what the overlays do to each NodePool's instance types,
        # written by the nodeoverlay controller (None: the gate is off).
        self.overlay_store: OverlayStore | None = None
        # The CapacityBuffer gate: the buffers' virtual pods, kept by the capacitybuffer
        # controller (None: the gate is off).
        self.buffers: BufferPods | None = None
        # Held by whoever reads or changes this cache while other threads may (the
        # operator's workers); see nodewright.runtime.statelock.
        self.lock = StateLock()

    def snapshot(self) -> ClusterState:
        """A copy later events do not change, for a controller that computes outside the
        lock (Karpenter's scheduler likewise works on copies of the cluster's nodes). Take
        it under the lock. Without other threads (`lock.concurrent` False) nothing can
        change meanwhile and the cache itself is returned."""
        if not self.lock.concurrent:
            return self
        return self.copy()

    def copy(self) -> ClusterState:
        """The snapshot proper: every container copied, the objects in them shared (an
        update replaces an object, it never changes one in place). The copy has a lock of
        its own and is for reading."""
        copied = with_copied_containers(self)
        copied._pool_usage = {pool: dict(usage) for pool, usage in self._pool_usage.items()}
        copied.pods = self.pods.copy()
        copied.config = self.config.copy()
        by_node = {id(pods): copied.pods.by_node[name]
                   for name, pods in self.pods.by_node.items()}
        copied._nodes = {key: node.copy(by_node.get(id(node.pods)))
                         for key, node in self._nodes.items()}
        copied.buffers = self.buffers.copy() if self.buffers is not None else None
        copied.lock = StateLock()
        return copied

    # -- feeding -------------------------------------------------------------------------

    def observe(self, event: WatchEvent) -> None:
        """The driver's listener: apply one watch event."""
        if event.kind in _VERSIONED_KINDS:
            version = _version(event.object)
            if version is not None:
                self._watched_versions[event.kind] = max(
                    version, self._watched_versions.get(event.kind, 0))
        self._apply(event)

    def observe_written(self, obj: Object) -> None:
        """What a write of a NodeClaim or Node answered, seen at once rather than when its
        watch event comes (the provisioner counts the NodeClaim it just created). The
        writer sent the request with the lock released, so the watch may already have
        delivered this version, a later one (the NodeClaim launched: its providerID) or
        the deletion: then the answer is older than what the cache holds and is dropped.
        Applying it would take the cache back to an unlaunched NodeClaim that no further
        event corrects, and the state would never sync again."""
        kind = str(obj.get("kind") or "")
        name = _name(obj)
        held = (self._nodeclaims if kind == "NodeClaim" else self._node_objects).get(name)
        written = _version(obj)
        if held is not None:
            current = _version(held)
            if written is not None and current is not None and written <= current:
                return
        elif written is not None and written <= self._watched_versions.get(kind, 0):
            return  # the watch is past it and no longer has it: deleted since
        self._apply(WatchEvent("MODIFIED" if held is not None else "ADDED", obj))

    def _apply(self, event: WatchEvent) -> None:
        kind = event.kind
        obj = event.object
        deleted = event.type == "DELETED"
        self.generation += 1
        if kind == "Pod":
            self._observe_pod(obj, deleted)
            self.config.daemonsets.observe_pod(obj, deleted)
        elif kind == "Node":
            if deleted:
                self._node_objects.pop(_name(obj), None)
                self._delete_node(_name(obj))
            else:
                self._node_objects[_name(obj)] = obj
                self._update_node(obj)
        elif kind == "NodeClaim":
            # Another provider's NodeClaims are not this Karpenter's (its informer's filter).
            if deleted or not nodeclaim_is_managed(obj):
                self._delete_nodeclaim(_name(obj))
            else:
                self._update_nodeclaim(obj)
        else:
            if kind == "NodePool" and not deleted and _nodepool_spec_changed(
                    self.config.nodepools.get(_name(obj)), obj):
                # Karpenter's state.nodepool informer: a NodePool created or changed (its
                # generation) makes consolidation look again.
                self.mark_unconsolidated()
            self.config.observe(kind, obj, deleted)

    # -- sync ----------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        """Karpenter's Cluster.HasSynced: the cache has matched the API server once."""
        return self._has_synced

    def synced(self, cluster: ClusterAPI) -> bool:
        synced = self._synced(cluster)
        # Karpenter sets its cluster-state gauges on every Synced() call.
        metrics.CLUSTER_STATE_SYNCED.set(1 if synced else 0)
        if synced:
            self._unsynced_since = None
            self._unsynced_logged = None
            metrics.CLUSTER_STATE_UNSYNCED_TIME.set(0)
            return True
        now = self.clock.now()
        if self._unsynced_since is None:
            self._unsynced_since = now
        waited = (now - self._unsynced_since).total_seconds()
        metrics.CLUSTER_STATE_UNSYNCED_TIME.set(waited)
        if waited > UNSYNCED_LOG_AFTER_SECONDS and (
                self._unsynced_logged is None
                or (now - self._unsynced_logged).total_seconds() > UNSYNCED_LOG_EVERY_SECONDS):
            self._unsynced_logged = now
            log.error("cluster is waiting on sync for extended duration", extra={
                "duration": f"{int(waited)}s",
                "unlaunched-nodeclaims": self.unlaunched_nodeclaims()[:10]})
        return False

    def _synced(self, cluster: ClusterAPI) -> bool:
        """Karpenter's rule (state.Cluster.Synced): every NodeClaim the cache holds has a
        providerID (an unlaunched one's capacity is unknown), and, until that has held
        once, the cache tracks every NodeClaim and Node the API server lists (a Node is
        tracked once it has a providerID and, if Karpenter manages it, an instance type or
        the initialized label). After the first sync, events keep the two consistent."""
        if self._unlaunched:
            return False
        if self._has_synced:
            return True
        try:
            claims = {_name(obj) for obj in cluster.list("NodeClaim")
                      if nodeclaim_is_managed(obj)}
            nodes = {_name(obj) for obj in cluster.list("Node")}
        except ApiError as error:
            log.error("failed checking cluster state sync: %s", error)
            return False
        if claims <= set(self._nodeclaims) and nodes <= set(self._node_keys):
            self._has_synced = True
        return self._has_synced

    # -- NodeClaims and Nodes ------------------------------------------------------------

    def _change(self, node: StateNode) -> None:
        """Re-count a StateNode's NodePool usage after it changed (or was removed)."""
        node.changed()
        metrics.CLUSTER_STATE_NODE_COUNT.set(len(self._nodes))
        previous = self._contributions.pop(node.key, None)
        if previous is not None:
            self._add_usage(previous[0], previous[1], -1)
        current = node.pool_usage() if self._nodes.get(node.key) is node else None
        if current is not None:
            self._add_usage(current[0], current[1], 1)
            self._contributions[node.key] = current
        self.mark_unconsolidated()

    def _add_usage(self, pool: str, amounts: Mapping[str, int], sign: int) -> None:
        """As Karpenter's updateNodePoolResources: a resource stays listed at zero (a
        node's hugepages, a device no node has any more) until every amount of the pool
        is zero, which forgets the pool."""
        usage = self._pool_usage.setdefault(pool, {})
        for name, amount in amounts.items():
            usage[name] = usage.get(name, 0) + sign * amount
        if not any(usage.values()):
            del self._pool_usage[pool]

    def _update_nodeclaim(self, claim: Object) -> None:
        name = _name(claim)
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        previous = self._claim_keys.get(name)
        if previous and previous != provider_id:
            self._detach_nodeclaim(name)
        self._nodeclaims[name] = claim
        if previous != provider_id:
            self._unindex_claim(name, previous)
            if provider_id:
                self._claims_by_provider.setdefault(provider_id, set()).add(name)
        self._claim_keys[name] = provider_id
        if not provider_id:
            self._unlaunched.add(name)
            return
        self._unlaunched.discard(name)
        node = self._nodes.get(provider_id)
        if node is None:
            node = self._nodes[provider_id] = StateNode(provider_id)
        node.nodeclaim = claim
        self._change(node)

    def _detach_nodeclaim(self, name: str) -> None:
        provider_id = self._claim_keys.get(name)
        node = self._nodes.get(provider_id) if provider_id else None
        if node is None or node.nodeclaim_name != name:
            return
        node.nodeclaim = None
        if node.node is None:
            del self._nodes[node.key]
        self._change(node)

    def _unindex_claim(self, name: str, provider_id: str | None) -> None:
        if not provider_id or (names := self._claims_by_provider.get(provider_id)) is None:
            return
        names.discard(name)
        if not names:
            del self._claims_by_provider[provider_id]

    def _delete_nodeclaim(self, name: str) -> None:
        self._detach_nodeclaim(name)
        self._unindex_claim(name, self._claim_keys.get(name))
        self._claim_keys.pop(name, None)
        self._nodeclaims.pop(name, None)
        self._unlaunched.discard(name)

    def _update_node(self, node_obj: Object) -> None:
        name = _name(node_obj)
        labels = (node_obj.get("metadata") or {}).get("labels") or {}
        managed = bool(labels.get(NODEPOOL_LABEL))
        provider_id = str((node_obj.get("spec") or {}).get("providerID") or "")
        if not provider_id:
            if managed:
                return
            provider_id = name
        if managed and not labels.get(INSTANCE_TYPE_LABEL) and not labels.get(INITIALIZED_LABEL):
            return
        previous = self._node_keys.get(name)
        if previous is not None and previous != provider_id:
            self._delete_node(name)
        node = self._nodes.get(provider_id)
        if node is None:
            node = self._nodes[provider_id] = StateNode(provider_id)
        node.node = node_obj
        node.pods = self.pods.node_pods(name)
        self._node_keys[name] = provider_id
        self._change(node)

    def _delete_node(self, name: str) -> None:
        key = self._node_keys.pop(name, None)
        node = self._nodes.get(key) if key is not None else None
        if node is None:
            return
        node.node = None
        node.pods = NodePods()
        if node.nodeclaim is None:
            del self._nodes[node.key]
        self._change(node)

    # -- pods ----------------------------------------------------------------------------

    def _observe_pod(self, pod: Object, deleted: bool) -> None:
        key = pod_key(pod)
        now = self.clock.now()
        if deleted:
            left = self.pods.delete(pod)
            self._pod_nominations.pop(key, None)
            self.clear_pod_scheduling(key)
            joined = None
        else:
            left, joined = self.pods.update(pod)
            if joined is not None:
                self._pod_nominations.pop(key, None)
            if key in self.pods.pending and key not in self._pod_ack:
                self._pod_ack[key] = now
        for node_name in (left, joined):
            if node_name is None:
                continue
            node = self.node_by_name(node_name)
            if node is not None:
                node.last_pod_event = now
            self.mark_unconsolidated()

    # -- reading -------------------------------------------------------------------------

    def nodes(self) -> list[StateNode]:
        """Every machine: registered or not, managed or not, deleting or not."""
        return list(self._nodes.values())

    def active_nodes(self) -> list[StateNode]:
        return [node for node in self._nodes.values() if not node.is_marked_for_deletion]

    def deleting_nodes(self) -> list[StateNode]:
        return [node for node in self._nodes.values() if node.is_marked_for_deletion]

    def node(self, provider_id: str) -> StateNode | None:
        return self._nodes.get(provider_id)

    def node_object(self, node_name: str) -> Object | None:
        """The Node of that name as last observed, whether or not the state tracks it."""
        return self._node_objects.get(node_name)

    def node_by_name(self, node_name: str) -> StateNode | None:
        key = self._node_keys.get(node_name)
        return self._nodes.get(key) if key is not None else None

    def node_for_nodeclaim(self, name: str) -> StateNode | None:
        provider_id = self._claim_keys.get(name)
        return self._nodes.get(provider_id) if provider_id else None

    def nodeclaim(self, name: str) -> Object | None:
        return self._nodeclaims.get(name)

    def nodeclaims(self) -> list[Object]:
        return list(self._nodeclaims.values())

    def nodeclaim_names_for_provider_id(self, provider_id: str) -> list[str]:
        """Every NodeClaim with this provider ID, the one the state joined to its node first
        (more than one is Karpenter's DuplicateNodeClaimError: no single source of truth)."""
        node = self._nodes.get(provider_id)
        joined = [node.nodeclaim_name] if node is not None and node.nodeclaim is not None else []
        return joined + sorted(self._claims_by_provider.get(provider_id, set()) - set(joined))

    def unlaunched_nodeclaims(self) -> list[str]:
        return sorted(self._unlaunched)

    def node_names_for_provider_id(self, provider_id: str) -> list[str]:
        """Every Node with this provider ID, the one the state joined to it first (more
        than one is an invariant violated: Karpenter's MultipleNodesFound)."""
        node = self._nodes.get(provider_id)
        names = [node.node_name] if node is not None and node.node is not None else []
        return names + [name for name, key in self._node_keys.items()
                        if key == provider_id and name not in names]

    def pod(self, key: str) -> Object | None:
        return self.pods.objects.get(key)

    def pods_on(self, node_name: str) -> list[Object]:
        return list(self.pods.on_node(node_name))

    def kept_pods_on(self, node_name: str) -> tuple[Object, ...]:
        """`pods_on` as the very tuple kept while no pod of the node changes (for readers
        that remember what they worked out from it)."""
        return self.pods.on_node(node_name)

    def provisionable_pods(self) -> list[Object]:
        """Pods kube-scheduler could not place and that Karpenter should make room for."""
        objects = self.pods.objects
        return [objects[key] for key in self.pods.pending]

    def has_provisionable_pods(self) -> bool:
        return bool(self.pods.pending)

    def pod_model(self, key: str) -> Pod:
        """The parsed pod, with what its volumes require (raises SpecError naming the bad
        field)."""
        return volumes.resolved(self.pods.model(key), self.config.storage)

    def volume_problem(self, pod: Pod) -> str | None:
        """Why the pod's PersistentVolumeClaims keep it from being planned now."""
        return volumes.problem(pod, self.config.storage) if pod.volume_claims else None

    def volume_limits(self, node_name: str) -> dict[str, int]:
        """Volumes each CSI driver can attach to the node (its CSINode)."""
        return self.config.storage.attach_limits(node_name)

    def volume_attachments(self, node_name: str) -> list[Object]:
        return self.config.storage.attachments_on(node_name)

    def bound_pod_models(self, node_names: Iterable[str]) -> Iterator[Pod]:
        """Parsed non-terminal pods bound to these nodes (unreadable ones are skipped)."""
        storage = self.config.storage
        for node_name in node_names:
            for model in self.pods.bound_models(node_name):
                if not model.volume_claims:
                    yield model
                    continue
                # What a claim's volumes require is read from the storage objects now.
                try:
                    resolved = volumes.resolved(model, storage)
                except (KeyError, ValueError):
                    continue
                yield resolved

    def daemonsets(self) -> list[DaemonSet]:
        """The DaemonSets whose pods take room on nodes; those claiming devices through
        DRA are left out, as Karpenter does with IGNORE_DRA_REQUESTS=true."""
        return [daemonset for daemonset in self.config.daemonsets.models()
                if not daemonset.pod.dra]

    def nodepools(self) -> list[Object]:
        return list(self.config.nodepools.objects.values())

    def nodepool(self, name: str) -> Object | None:
        return self.config.nodepools.get(name)

    def nodepool_model(self, name: str) -> Parsed[NodePool] | None:
        return self.config.nodepools.parsed(name)

    def node_class(self, name: str) -> Object | None:
        return self.config.node_classes.get(name)

    def node_class_model(self, name: str) -> Parsed[EC2NodeClass] | None:
        return self.config.node_classes.parsed(name)

    def namespaces(self) -> Mapping[str, Mapping[str, str]]:
        # A copy: a solve reads it outside the lock while events may add namespaces.
        return dict(self.config.namespaces)

    def overlays(self) -> list[Object]:
        return list(self.config.overlays.objects.values())

    def overlay_model(self, name: str) -> Parsed[NodeOverlay] | None:
        return self.config.overlays.parsed(name)

    def pdbs(self) -> list[Object]:
        return list(self.config.pdbs.values())

    def nodepool_resources(self, name: str) -> dict[str, int]:
        """What the NodePool's machines hold (capacity, milli-units, plus `nodes`), not
        counting machines marked for deletion."""
        return dict(self._pool_usage.get(name, {}))

    # -- pod scheduling times, for the pod metrics -------------------------------------

    def record_scheduling_decisions(self, tried: Iterable[str], placed: Iterable[str]) -> None:
        """A scheduling simulation tried these pods and placed some: observe how long each
        waited for its first try (karpenter_pods_scheduling_decision_duration_seconds). A
        pod it could not place is no longer schedulable since an earlier solve placed it,
        as Karpenter's MarkPodSchedulingDecisions forgets it for the pods with errors."""
        now = self.clock.now()
        kept = set(placed)
        for key in tried:
            if key not in kept:
                self._pod_schedulable.pop(key, None)
            if key in self._pod_decided:
                continue
            self._pod_decided[key] = now
            acked = self._pod_ack.get(key)
            if acked is not None:
                metrics.PODS_SCHEDULING_DECISION_DURATION.observe(
                    (now - acked).total_seconds())
        for key in kept:
            self._pod_schedulable.setdefault(key, now)

    def pod_ack_time(self, key: str) -> datetime | None:
        return self._pod_ack.get(key)

    def pod_decision_time(self, key: str) -> datetime | None:
        return self._pod_decided.get(key)

    def pod_schedulable_time(self, key: str) -> datetime | None:
        return self._pod_schedulable.get(key)

    def clear_pod_scheduling(self, key: str) -> None:
        self._pod_ack.pop(key, None)
        self._pod_decided.pop(key, None)
        self._pod_schedulable.pop(key, None)

    # -- decisions kept in memory --------------------------------------------------------

    def nominate(self, node: StateNode) -> None:
        """The provisioner placed pending pods on this machine: keep it for them a while."""
        node.nominated_until = self.clock.now() + timedelta(seconds=self.nomination_seconds)

    def record_pod_nominations(self, nominations: Mapping[str, str]) -> None:
        """Remember where a solve placed pending pods: `"nodeclaim/<name>"` or
        `"node/<name>"` (as the Nominated events say), from now."""
        now = self.clock.now()
        for pod, target in nominations.items():
            self._pod_nominations[pod] = (target, now)

    def pod_nomination(self, key: str) -> str | None:
        """Where a pending pod was last placed, while that holds (see `nominated_machine`)."""
        machine = self.nominated_machine(key)
        found = self._pod_nominations.get(key)
        return found[0] if machine is not None and found is not None else None

    def nominated_machine(self, key: str) -> StateNode | None:
        """The machine an earlier solve placed this pending pod on, while the nomination
        holds: the machine exists, is not marked for deletion, and has not initialized yet
        (the pod cannot bind before) or was nominated less than the nomination window
        ago (kube-scheduler had time to bind it and did not: plan it again)."""
        found = self._pod_nominations.get(key)
        if found is None:
            return None
        target, since = found
        kind, _, name = target.partition("/")
        machine = self.node_for_nodeclaim(name) if kind == "nodeclaim" else self.node_by_name(name)
        if machine is None or machine.is_marked_for_deletion:
            return None
        if machine.initialized and (self.clock.now() - since).total_seconds() >= (
            self.nomination_seconds
        ):
            return None
        return machine

    def mark_for_deletion(self, *provider_ids: str) -> None:
        for provider_id in provider_ids:
            node = self._nodes.get(provider_id)
            if node is not None and not node.marked_for_deletion:
                node.marked_for_deletion = True
                self._change(node)

    def unmark_for_deletion(self, *provider_ids: str) -> None:
        for provider_id in provider_ids:
            node = self._nodes.get(provider_id)
            if node is not None and node.marked_for_deletion:
                node.marked_for_deletion = False
                self._change(node)

    def mark_unconsolidated(self) -> datetime:
        # Strictly later than the last mark: a change at the very instant of a disruption
        # pass (a virtual clock's ticks) must still tell the next pass something changed.
        self._consolidation_state = max(self.clock.now(),
                                        self._consolidation_state + timedelta(microseconds=1))
        return self._consolidation_state

    def consolidation_state(self) -> datetime:
        """When the cluster last changed in a way consolidation cares about (refreshed at
        least every five minutes, as Karpenter does, so time-based decisions get retried)."""
        if self.clock.now() - self._consolidation_state >= timedelta(minutes=5):
            return self.mark_unconsolidated()
        return self._consolidation_state
