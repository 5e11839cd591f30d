"""Karpenter's cluster state suite, ported where it maps to our state package:
kubernetes-sigs/karpenter v1.14.1 pkg/controllers/state/suite_test.go. Each test names
its Describe and It.

Karpenter reconciles its node, nodeclaim and pod informer controllers into `state.Cluster`;
ours is `ClusterState.observe`, fed here the watch events those controllers would see.
Resources are in thousandths (cpu in millicores, memory in thousandths of a byte)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nodewright import metrics
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.scheduling.pods import Taint
from nodewright.state import ClusterState

START = datetime(2026, 1, 5, tzinfo=UTC)
GI = 1024**3 * 1000


def fresh() -> tuple[ClusterState, VirtualClock]:
    clock = VirtualClock(START)
    return ClusterState(clock), clock


def feed(state: ClusterState, *events: tuple[str, dict[str, Any]]) -> None:
    for kind, obj in events:
        state.observe(WatchEvent(kind, obj))  # type: ignore[arg-type]


def nodeclaim(name: str, provider_id: str = "", *, pool: str = "default", cpu: str = "2",
              startup_taints: list[dict[str, str]] | None = None,
              deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {
        "karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": "m5.large"}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-05T00:00:00Z"
    spec: dict[str, Any] = {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                             "kind": "EC2NodeClass", "name": "default"},
                            "requirements": []}
    if startup_taints:
        spec["startupTaints"] = startup_taints
    status: dict[str, Any] = {}
    if provider_id:
        status = {"providerID": provider_id, "capacity": {"cpu": cpu, "memory": "8Gi"},
                  "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "29"}}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": spec, "status": status}


def node(name: str, provider_id: str = "", *, pool: str | None = "default", cpu: str = "4",
         memory: str = "8Gi", initialized: bool = True, taints: list[dict[str, str]] | None
         = None, deleting: bool = False) -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": "m5.large"}
    if pool is not None:
        labels["karpenter.sh/nodepool"] = pool
        labels["karpenter.sh/registered"] = "true"
        if initialized:
            labels["karpenter.sh/initialized"] = "true"
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-05T00:00:00Z"
    spec: dict[str, Any] = {"providerID": provider_id} if provider_id else {}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec,
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, node_name: str = "", *, cpu: str = "1500m", memory: str | None = None,
        phase: str | None = None, daemon: bool = False) -> dict[str, Any]:
    requests = {"cpu": cpu} | ({"memory": memory} if memory else {})
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": name}
    if daemon:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                        "name": "ds", "uid": "ds", "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": phase or ("Running" if node_name else "Pending")}
    if not node_name:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": status}


def cpu_of(resources: Any) -> int:
    return int(resources.get("cpu", 0))


# -- Describe("Node Resource Level") --------------------------------------------------------


def test_pods_not_bound_to_nodes_are_not_counted() -> None:
    """Node Resource Level, It("should not count pods not bound to nodes")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")), ("ADDED", pod("p1")), ("ADDED", pod("p2")))
    (machine,) = state.nodes()
    assert cpu_of(machine.available()) == 4000
    assert cpu_of(machine.pod_requests()) == 0


def test_new_pods_bound_to_a_node_are_counted() -> None:
    """Node Resource Level, It("should count new pods bound to nodes")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")), ("ADDED", pod("p1")),
         ("MODIFIED", pod("p1", "n1")))
    (machine,) = state.nodes()
    assert cpu_of(machine.available()) == 2500
    assert cpu_of(machine.pod_requests()) == 1500
    feed(state, ("ADDED", pod("p2", "n1", cpu="2")))
    assert cpu_of(machine.available()) == 500
    assert cpu_of(machine.pod_requests()) == 3500


def test_pods_seen_before_their_node_are_counted() -> None:
    """Node Resource Level, It("should count existing pods bound to nodes")."""
    state, _ = fresh()
    feed(state, ("ADDED", pod("p1", "n1")), ("ADDED", pod("p2", "n1", cpu="2")),
         ("ADDED", node("n1", "aws:///a/i-1")))
    (machine,) = state.nodes()
    assert cpu_of(machine.available()) == 500
    assert cpu_of(machine.pod_requests()) == 3500


def test_a_deleted_pods_requests_are_subtracted() -> None:
    """Node Resource Level, It("should subtract requests if the pod is deleted")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")), ("ADDED", pod("p1", "n1")),
         ("ADDED", pod("p2", "n1", cpu="2")))
    (machine,) = state.nodes()
    assert cpu_of(machine.pod_requests()) == 3500
    feed(state, ("DELETED", pod("p2", "n1", cpu="2")))
    assert cpu_of(machine.available()) == 2500
    assert cpu_of(machine.pod_requests()) == 1500


def test_a_terminal_pods_requests_are_not_added() -> None:
    """Node Resource Level, It("should not add requests if the pod is terminal")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")),
         ("ADDED", pod("failed", "n1", phase="Failed")),
         ("ADDED", pod("succeeded", "n1", cpu="2", phase="Succeeded")))
    (machine,) = state.nodes()
    assert cpu_of(machine.available()) == 4000
    assert cpu_of(machine.pod_requests()) == 0


def test_a_deleted_node_is_no_longer_tracked() -> None:
    """Node Resource Level, It("should stop tracking nodes that are deleted")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")), ("ADDED", pod("p1", "n1")))
    (machine,) = state.nodes()
    assert (cpu_of(machine.available()), cpu_of(machine.pod_requests())) == (2500, 1500)
    feed(state, ("DELETED", node("n1", "aws:///a/i-1")))
    assert state.nodes() == []


def test_a_pod_seen_again_on_another_node_leaves_the_first() -> None:
    """Node Resource Level, It("should track pods correctly if we miss events or they are
    consolidated"): the pod's deletion is never seen; a pod of the same name bound to a
    bigger node is."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")),
         ("ADDED", pod("stateful-set-pod", "n1")))
    first = state.node_by_name("n1")
    assert first is not None and cpu_of(first.pod_requests()) == 1500
    feed(state, ("ADDED", node("n2", "aws:///a/i-2", cpu="8")),
         ("MODIFIED", pod("stateful-set-pod", "n2", cpu="5")))
    second = state.node_by_name("n2")
    assert second is not None
    assert (cpu_of(first.available()), cpu_of(first.pod_requests())) == (4000, 0)
    assert (cpu_of(second.available()), cpu_of(second.pod_requests())) == (3000, 5000)


def test_usage_stays_right_as_pods_come_and_go() -> None:
    """Node Resource Level, It("should maintain a correct count of resource usage as pods are
    deleted/added"): 25 pods of 100m each added and deleted in turn."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1", cpu="200")))
    (machine,) = state.nodes()
    pods = [pod(f"p{i}", "n1", cpu="100m") for i in range(25)]
    total = 0
    for i, body in enumerate(pods):
        feed(state, ("ADDED", body))
        total += 100
        assert cpu_of(machine.pod_requests()) == total
        if i % 3 == 0:
            feed(state, ("DELETED", body))
            total -= 100
            assert cpu_of(machine.pod_requests()) == total
    assert cpu_of(machine.available()) == 200_000 - total


def test_daemonset_requests_are_kept_apart() -> None:
    """Node Resource Level, It("should track daemonset requested resources separately")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")), ("ADDED", pod("p1", "n1")))
    (machine,) = state.nodes()
    assert cpu_of(machine.daemonset_requests()) == 0
    assert cpu_of(machine.pod_requests()) == 1500
    daemon = pod("ds-pod", "n1", cpu="1", memory="2Gi", daemon=True)
    feed(state, ("ADDED", daemon))
    assert dict(machine.daemonset_requests()) | {"pods": 0} == {
        "cpu": 1000, "memory": 2 * GI, "pods": 0}
    assert cpu_of(machine.pod_requests()) == 2500
    feed(state, ("DELETED", daemon))
    assert cpu_of(machine.daemonset_requests()) == 0
    assert cpu_of(machine.pod_requests()) == 1500


def test_a_deleting_node_is_marked_for_deletion() -> None:
    """Node Resource Level, It("should mark node for deletion when node is deleted"): a Node
    no NodeClaim owns, with a deletion timestamp (its finalizer keeps it)."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")))
    (machine,) = state.nodes()
    assert not machine.is_marked_for_deletion
    feed(state, ("MODIFIED", node("n1", "aws:///a/i-1", deleting=True)))
    assert state.nodes()[0].is_marked_for_deletion


def test_a_deleting_nodeclaim_marks_its_node_for_deletion() -> None:
    """Node Resource Level, It("should mark node for deletion when nodeclaim is deleted")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1")),
         ("ADDED", node("n1", "aws:///a/i-1")))
    assert len(state.nodes()) == 1
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-1", deleting=True)))
    machine = state.node_for_nodeclaim("c1")
    assert machine is not None and machine.is_marked_for_deletion
    assert state.node_by_name("n1") is machine


def test_a_nomination_holds_for_its_window() -> None:
    """Node Resource Level, It("should nominate the node until the nomination time
    passes"): 20 s by default (twice the batcher's maximum, at least 10 s)."""
    state, clock = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")))
    (machine,) = state.nodes()
    state.nominate(machine)
    assert machine.nominated(clock.now())
    clock.advance(10)
    assert machine.nominated(clock.now())
    clock.advance(11)
    assert not machine.nominated(clock.now())


def test_a_node_that_gets_its_provider_id_later_stays_one_node() -> None:
    """Node Resource Level, It("should handle a node changing from no providerID to
    registering a providerID")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", pool=None)))
    assert [m.node_name for m in state.nodes()] == ["n1"]
    feed(state, ("MODIFIED", node("n1", "aws:///a/i-1", pool=None)))
    assert [m.node_name for m in state.nodes()] == ["n1"]
    assert state.nodes()[0].provider_id == "aws:///a/i-1"


def test_a_nodeclaim_and_node_of_one_name_leak_nothing() -> None:
    """Describe("Volume Usage/Node Deletion"), It("should not leak a state node when the
    NodeClaim and Node names match")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("same", "aws:///a/i-1")),
         ("ADDED", node("same", "aws:///a/i-1")))
    assert len(state.nodes()) == 1
    feed(state, ("DELETED", nodeclaim("same", "aws:///a/i-1")))
    assert len(state.nodes()) == 1
    feed(state, ("DELETED", node("same", "aws:///a/i-1")))
    assert state.nodes() == []


# -- Describe("Taints") ---------------------------------------------------------------------


EPHEMERAL = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
    {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
     "effect": "NoSchedule"},
]
STARTUP = [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"},
           {"key": "taint-key2", "value": "taint-value2", "effect": "NoExecute"}]


def taints_of(state: ClusterState) -> set[Taint]:
    (machine,) = state.nodes()
    return set(machine.taints())


def as_taints(bodies: list[dict[str, str]]) -> set[Taint]:
    return {Taint(b["key"], b.get("value", ""), b["effect"]) for b in bodies}


def test_ephemeral_taints_of_an_uninitialized_managed_node_do_not_count() -> None:
    """Taints, Managed, It("should not consider ephemeral taints on a managed node that
    isn't initialized")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1")),
         ("ADDED", node("n1", "aws:///a/i-1", initialized=False, taints=EPHEMERAL)))
    assert taints_of(state) == set()


def test_node_readiness_controller_taints_of_an_uninitialized_node_do_not_count() -> None:
    """Taints, Managed, It("should not consider NodeReadinessController taints on a managed
    node that isn't initialized")."""
    state, _ = fresh()
    readiness = [{"key": "readiness.k8s.io/some-rule", "effect": "NoSchedule"},
                 {"key": "readiness.k8s.io/another-rule", "effect": "NoExecute"}]
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1")),
         ("ADDED", node("n1", "aws:///a/i-1", initialized=False, taints=readiness)))
    assert taints_of(state) == set()


def test_ephemeral_taints_of_an_initialized_managed_node_count() -> None:
    """Taints, Managed, It("should consider ephemeral taints on a managed node after the
    node is initialized")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1")),
         ("ADDED", node("n1", "aws:///a/i-1", taints=EPHEMERAL)))
    assert taints_of(state) == as_taints(EPHEMERAL)


def test_startup_taints_of_an_uninitialized_managed_node_do_not_count() -> None:
    """Taints, Managed, It("should consider startup taints on a managed node that isn't
    initialized") (none counted, as Karpenter's expectation)."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", startup_taints=STARTUP)),
         ("ADDED", node("n1", "aws:///a/i-1", initialized=False, taints=STARTUP)))
    assert taints_of(state) == set()


def test_startup_taints_of_an_initialized_managed_node_count() -> None:
    """Taints, Managed, It("should consider startup taints on a managed node after the node
    is initialized")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", startup_taints=STARTUP)),
         ("ADDED", node("n1", "aws:///a/i-1", taints=STARTUP)))
    assert taints_of(state) == as_taints(STARTUP)


def test_ephemeral_taints_of_an_unmanaged_node_count_before_initialization() -> None:
    """Taints, Unmanaged, It("should consider ephemeral taints on an unmanaged node that
    isn't initialized")."""
    state, _ = fresh()
    feed(state, ("ADDED", node("n1", "aws:///a/i-1", pool=None, taints=EPHEMERAL)))
    assert taints_of(state) == as_taints(EPHEMERAL)


def test_ephemeral_taints_of_an_unmanaged_node_count_after_initialization() -> None:
    """Taints, Unmanaged, It("should consider ephemeral taints on an unmanaged node after
    the node is initialized")."""
    state, _ = fresh()
    body = node("n1", "aws:///a/i-1", pool=None, taints=EPHEMERAL)
    body["metadata"]["labels"]["karpenter.sh/initialized"] = "true"
    feed(state, ("ADDED", body))
    assert taints_of(state) == as_taints(EPHEMERAL)


# -- Describe("Consolidated State") ---------------------------------------------------------


def test_marking_unconsolidated_changes_the_consolidation_state() -> None:
    """Consolidated State, It("should update the consolidated value when setting
    consolidation")."""
    state, clock = fresh()
    before = state.consolidation_state()
    assert state.consolidation_state() == before
    clock.advance(1)
    state.mark_unconsolidated()
    assert state.consolidation_state() != before


def test_the_consolidation_state_changes_by_itself_after_five_minutes() -> None:
    """Consolidated State, It("should update the consolidated value when state timeout (5m)
    has passed and state hasn't changed")."""
    state, clock = fresh()
    before = state.consolidation_state()
    clock.advance(60)
    assert state.consolidation_state() == before
    clock.advance(120)
    assert state.consolidation_state() == before
    clock.advance(120)
    assert state.consolidation_state() != before


def test_a_nodepool_update_changes_the_consolidation_state() -> None:
    """Consolidated State, It("should cause consolidation state to change when a NodePool is
    updated")."""
    state, clock = fresh()
    state.mark_unconsolidated()
    clock.advance(60)
    before = state.consolidation_state()
    feed(state, ("ADDED", {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                           "metadata": {"name": "default", "generation": 1},
                           "spec": {"template": {"spec": {
                               "nodeClassRef": {"group": "karpenter.k8s.aws",
                                                "kind": "EC2NodeClass", "name": "default"},
                               "requirements": []}}}}))
    assert state.consolidation_state() != before


# -- Describe("Cluster State Sync") ---------------------------------------------------------
# Karpenter applies 1000 objects from goroutines; 60 here, one after another.


class Synced:
    """An API server and a state fed only what `track` hands it (Karpenter's informer
    controllers reconciling an object)."""

    def __init__(self) -> None:
        self.clock = VirtualClock(START)
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        self.count = 0

    def apply(self, body: dict[str, Any], *, track: bool = True) -> dict[str, Any]:
        status = body.pop("status", None)
        created = self.cluster.create(body)
        if status and body["kind"] == "NodeClaim":
            created = self.cluster.patch("NodeClaim", created["metadata"]["name"],
                                         {"status": status}, subresource="status")
        if track:
            self.state.observe(WatchEvent("ADDED", created))
        return created

    def new_id(self) -> str:
        self.count += 1
        return f"aws:///us-east-1a/i-{self.count:017x}"

    def synced(self) -> bool:
        return self.state.synced(self.cluster)


def unmanaged_node(name: str, provider_id: str = "") -> dict[str, Any]:
    return node(name, provider_id, pool=None)


def test_synced_when_every_node_is_tracked() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when all nodes are
    tracked") (with the synced gauge at 1 and the unsynced time at 0)."""
    bench = Synced()
    for i in range(60):
        bench.apply(unmanaged_node(f"n{i}", bench.new_id()))
    assert bench.synced()
    assert metrics.CLUSTER_STATE_SYNCED._value.get() == 1
    assert metrics.CLUSTER_STATE_UNSYNCED_TIME._value.get() == 0


def test_synced_when_nodes_register_their_provider_ids() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when nodes register
    provider id")."""
    bench = Synced()
    nodes = [bench.apply(unmanaged_node(f"n{i}")) for i in range(60)]
    assert bench.synced()
    for body in nodes:
        body["spec"]["providerID"] = bench.new_id()
        updated = bench.cluster.update(body)
        bench.state.observe(WatchEvent("MODIFIED", updated))
    assert bench.synced()
    assert len(bench.state.nodes()) == 60


def test_synced_when_every_nodeclaim_is_tracked() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when all nodeclaims
    are tracked")."""
    bench = Synced()
    for i in range(60):
        bench.apply(nodeclaim(f"c{i}", bench.new_id()))
    assert bench.synced()


def test_synced_with_nodeclaims_and_nodes_tracked_together() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when a combination
    of nodeclaims and node are tracked")."""
    bench = Synced()
    for i in range(15):
        provider_id = bench.new_id()
        bench.apply(node(f"n{i}", provider_id))
        bench.apply(nodeclaim(f"c{i}", provider_id))
    for i in range(15, 30):
        bench.apply(unmanaged_node(f"n{i}", bench.new_id()))
    for i in range(30, 60):
        bench.apply(nodeclaim(f"c{i}", bench.new_id()))
    assert bench.synced()


def test_synced_when_nodeclaims_and_their_nodes_are_one_machine_each() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when the
    representation of nodes is the same"): each NodeClaim and its Node, seen in turn."""
    bench = Synced()
    for i in range(30):
        provider_id = bench.new_id()
        bench.apply(nodeclaim(f"c{i}", provider_id))
        bench.apply(node(f"n{i}", provider_id))
    assert bench.synced()
    assert len(bench.state.nodes()) == 30


def test_not_synced_while_a_nodeclaim_is_untracked() -> None:
    """Cluster State Sync, It("shouldn't consider the cluster state synced if a nodeclaim
    isn't tracked")."""
    bench = Synced()
    for i in range(60):
        bench.apply(nodeclaim(f"c{i}", bench.new_id()), track=i != 45)
    assert not bench.synced()


def test_not_synced_with_a_nodeclaim_only_the_state_knows_without_a_provider_id() -> None:
    """Cluster State Sync, It("shouldn't consider the cluster state synced if a nodeclaim is
    added manually with UpdateNodeClaim")."""
    bench = Synced()
    bench.state.observe(WatchEvent("ADDED", nodeclaim("manual")))
    assert not bench.synced()


def test_a_node_added_after_the_first_sync_keeps_it_synced() -> None:
    """Cluster State Sync, It("should consider the cluster state synced when a new node is
    added after the initial sync")."""
    bench = Synced()
    for i in range(15):
        provider_id = bench.new_id()
        bench.apply(node(f"n{i}", provider_id))
        bench.apply(nodeclaim(f"c{i}", provider_id))
    for i in range(15, 30):
        bench.apply(unmanaged_node(f"n{i}", bench.new_id()))
    assert bench.synced()
    bench.apply(unmanaged_node("late", bench.new_id()), track=False)
    assert bench.synced()


# -- Describe("NodePool Resources") ---------------------------------------------------------


def claimed(pool: str = "blue") -> tuple[dict[str, Any], dict[str, Any]]:
    """A NodeClaim with 2 CPU of capacity and its registered (uninitialized) Node."""
    claim = nodeclaim("c1", "aws:///a/i-1", pool=pool, cpu="2")
    body = node("n1", "aws:///a/i-1", pool=pool, cpu="2", initialized=False)
    return claim, body


def pool_cpu(state: ClusterState, pool: str = "blue") -> int:
    return int(state.nodepool_resources(pool).get("cpu", 0))


def test_each_nodepool_counts_its_own_machines() -> None:
    """NodePool Resources, It("should calculate nodepool resources for multiple
    nodepools")."""
    state, _ = fresh()
    for i in range(3):
        feed(state, ("ADDED", nodeclaim(f"a{i}", f"aws:///a/i-a{i}", pool="a", cpu="2")),
             ("ADDED", nodeclaim(f"b{i}", f"aws:///a/i-b{i}", pool="b", cpu="4")))
    assert pool_cpu(state, "a") == 6000
    assert pool_cpu(state, "b") == 12000
    assert state.nodepool_resources("a")["nodes"] == 3000


def test_a_deleting_nodeclaim_stops_counting() -> None:
    """NodePool Resources, It("should update nodepool resources when node is terminating
    (deletionTimestamp set)")."""
    state, _ = fresh()
    claim, body = claimed()
    feed(state, ("ADDED", claim), ("ADDED", body))
    assert pool_cpu(state) == 2000
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-1", pool="blue", deleting=True)))
    assert pool_cpu(state) == 0


def test_marking_for_deletion_uncounts_and_unmarking_counts_again() -> None:
    """NodePool Resources, It("should update nodepool resources when node is marked/unmarked
    for deletion")."""
    state, _ = fresh()
    claim, body = claimed()
    feed(state, ("ADDED", claim), ("ADDED", body))
    state.mark_for_deletion("aws:///a/i-1")
    assert pool_cpu(state) == 0
    state.unmark_for_deletion("aws:///a/i-1")
    assert pool_cpu(state) == 2000


def test_marking_then_deleting_subtracts_once() -> None:
    """NodePool Resources, It("should not double subtract resources when marking for
    deletion and then deleting")."""
    state, _ = fresh()
    claim, body = claimed()
    feed(state, ("ADDED", claim), ("ADDED", body))
    state.mark_for_deletion("aws:///a/i-1")
    assert pool_cpu(state) == 0
    deleting_claim = nodeclaim("c1", "aws:///a/i-1", pool="blue", cpu="2", deleting=True)
    feed(state, ("MODIFIED", deleting_claim))
    assert pool_cpu(state) == 0
    deleting_node = node("n1", "aws:///a/i-1", pool="blue", cpu="2", initialized=False,
                         deleting=True)
    feed(state, ("MODIFIED", deleting_node))
    assert pool_cpu(state) == 0
    feed(state, ("DELETED", deleting_claim))
    assert pool_cpu(state) == 0
    feed(state, ("DELETED", deleting_node))
    assert pool_cpu(state) == 0
    assert state.nodepool_resources("blue").get("nodes", 0) == 0


# -- Describe("DaemonSet Controller") -------------------------------------------------------
# Karpenter's GetDaemonSetPod is the pod a DaemonSet is sized by; ours is the DaemonSet
# model's pod (its requests tell which pod sized it: the template asks 1 CPU, each pod
# of a story another amount, as a LimitRange would make it).


DAEMONSET = {"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": "ds", "namespace": "default", "uid": "ds-uid"},
             "spec": {"selector": {"matchLabels": {"app": "ds"}}, "template": {
                 "metadata": {"labels": {"app": "ds"}},
                 "spec": {"containers": [{"name": "c", "resources": {
                     "requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}


def daemon_pod(name: str, cpu: str, created: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "default", "uid": name, "creationTimestamp": created,
        "labels": {"app": "ds"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                             "uid": "ds-uid", "controller": True}]},
        "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": cpu, "memory": "1Gi"}}}]},
        "status": {"phase": "Pending"}}


def daemon_cpu(state: ClusterState) -> list[int]:
    return [int(d.pod.requests.get("cpu", 0)) for d in state.daemonsets()]


def test_a_daemonset_without_a_pod_is_sized_by_its_template() -> None:
    """DaemonSet Controller, It("should not update daemonsetCache when daemonset pod is not
    present")."""
    state, _ = fresh()
    feed(state, ("ADDED", DAEMONSET))
    assert daemon_cpu(state) == [1000]


def test_a_daemonset_is_sized_by_its_pod_once_created() -> None:
    """DaemonSet Controller, It("should update daemonsetCache when daemonset pod is
    created")."""
    state, _ = fresh()
    feed(state, ("ADDED", DAEMONSET), ("ADDED", daemon_pod("p1", "2", "2026-01-05T00:00:00Z")))
    assert daemon_cpu(state) == [2000]


def test_a_daemonset_is_sized_by_its_newest_pod() -> None:
    """DaemonSet Controller, It("should update daemonsetCache with the newest created
    pod")."""
    state, _ = fresh()
    feed(state, ("ADDED", DAEMONSET), ("ADDED", daemon_pod("p1", "2", "2026-01-05T00:00:00Z")))
    assert daemon_cpu(state) == [2000]
    feed(state, ("ADDED", daemon_pod("p2", "3", "2026-01-05T00:00:01Z")))
    assert daemon_cpu(state) == [3000]


def test_a_deleted_daemonset_leaves_the_cache() -> None:
    """DaemonSet Controller, It("should delete daemonset in cache when daemonset is
    deleted")."""
    state, _ = fresh()
    pod_body = daemon_pod("p1", "2", "2026-01-05T00:00:00Z")
    feed(state, ("ADDED", DAEMONSET), ("ADDED", pod_body))
    assert daemon_cpu(state) == [2000]
    feed(state, ("DELETED", DAEMONSET), ("DELETED", pod_body))
    assert daemon_cpu(state) == []


def test_only_the_daemonsets_own_pods_size_it() -> None:
    """DaemonSet Controller, It("should only return daemonset pods from the daemonset
    cache"): 100 other pods in its namespace (Karpenter's 1000) change nothing."""
    state, _ = fresh()
    feed(state, ("ADDED", DAEMONSET))
    for i in range(100):
        feed(state, ("ADDED", pod(f"other-{i}", cpu="5")))
    assert daemon_cpu(state) == [1000]


# -- Describe("StateNode Capacity") ---------------------------------------------------------
# Karpenter adds resources.Node (1) to a StateNode's capacity so a NodePool's `nodes` limit
# counts it; ours adds it to what the machine counts against its NodePool (pool_usage).


def nodes_counted_for(state: ClusterState, name: str) -> int:
    machine = state.node_for_nodeclaim(name)
    assert machine is not None
    usage = machine.pool_usage()
    assert usage is not None
    return usage[1]["nodes"] // 1000


def test_an_initialized_node_counts_one_node() -> None:
    """StateNode Capacity, It("should include resources.Node in capacity for an initialized
    node")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", cpu="4")),
         ("ADDED", node("n1", "aws:///a/i-1")))
    assert nodes_counted_for(state, "c1") == 1
    assert state.nodepool_resources("default")["nodes"] == 1000


def test_a_nodeclaim_without_a_node_counts_one_node() -> None:
    """StateNode Capacity, It("should include resources.Node in capacity for a NodeClaim
    without a Node")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", cpu="4")))
    assert nodes_counted_for(state, "c1") == 1


def test_an_uninitialized_node_counts_one_node() -> None:
    """StateNode Capacity, It("should include resources.Node in capacity for uninitialized
    node with NodeClaim")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", cpu="4")),
         ("ADDED", node("n1", "aws:///a/i-1", initialized=False)))
    assert nodes_counted_for(state, "c1") == 1


# -- Describe("Pod Ack") ----------------------------------------------------------------------
# Karpenter's MarkPodSchedulingDecisions is our record_scheduling_decisions (tried, placed)
# with record_pod_nominations for the NodeClaim a pod was placed on; an error for a pod is
# the provisioner's clear_pod_scheduling.


def test_a_pod_is_marked_schedulable_once() -> None:
    """Pod Ack, It("should only mark pods as schedulable once")."""
    state, clock = fresh()
    feed(state, ("ADDED", pod("p1")))
    assert state.pod_schedulable_time("default/p1") is None
    state.record_scheduling_decisions(["default/p1"], ["default/p1"])
    state.record_pod_nominations({"default/p1": "nodeclaim/nc1"})
    first = state.pod_schedulable_time("default/p1")
    assert first is not None
    clock.advance(60)
    state.record_scheduling_decisions(["default/p1"], ["default/p1"])
    assert state.pod_schedulable_time("default/p1") == first
    feed(state, ("ADDED", nodeclaim("nc1", "aws:///a/i-9")))
    assert state.pod_nomination("default/p1") == "nodeclaim/nc1"


def test_an_error_for_the_pod_forgets_its_scheduling_times() -> None:
    """Pod Ack, It("should delete pod schedulable time and pod to nodeClaim mapping if we
    get error for the pod")."""
    state, _ = fresh()
    feed(state, ("ADDED", pod("p1")))
    state.record_scheduling_decisions(["default/p1"], ["default/p1"])
    assert state.pod_schedulable_time("default/p1") is not None
    state.clear_pod_scheduling("default/p1")
    assert state.pod_schedulable_time("default/p1") is None
    assert state.pod_nomination("default/p1") is None


def test_a_deleted_pod_forgets_its_scheduling_times_and_nomination() -> None:
    """Pod Ack, It("should delete the pod mappings from memory when the pod is deleted")."""
    state, _ = fresh()
    feed(state, ("ADDED", pod("p1")), ("ADDED", nodeclaim("nc1", "aws:///a/i-9")))
    state.record_scheduling_decisions(["default/p1"], ["default/p1"])
    state.record_pod_nominations({"default/p1": "nodeclaim/nc1"})
    assert state.pod_schedulable_time("default/p1") is not None
    assert state.pod_decision_time("default/p1") is not None
    assert state.pod_nomination("default/p1") == "nodeclaim/nc1"
    feed(state, ("DELETED", pod("p1")))
    assert state.pod_schedulable_time("default/p1") is None
    assert state.pod_decision_time("default/p1") is None
    assert state.pod_nomination("default/p1") is None


def test_a_node_moving_to_another_nodepool_takes_its_count_along() -> None:
    """NodePool Resources, It("should update nodepool resources when a node switches from
    one nodepool to another"): a registered node's NodePool is its Node's label."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", pool="old", cpu="2")),
         ("ADDED", node("n1", "aws:///a/i-1", pool="old", cpu="2", initialized=False)))
    assert (pool_cpu(state, "old"), pool_cpu(state, "new")) == (2000, 0)
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-1", pool="new", cpu="2")))
    assert (pool_cpu(state, "old"), pool_cpu(state, "new")) == (2000, 0)
    feed(state, ("MODIFIED", node("n1", "aws:///a/i-1", pool="new", cpu="2",
                                  initialized=False)))
    assert (pool_cpu(state, "old"), pool_cpu(state, "new")) == (0, 2000)


def test_a_nodeclaim_changing_provider_id_counts_twice_until_its_node_follows() -> None:
    """NodePool Resources, It("should update nodepool resources when the node changes
    providerID")."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", pool="blue", cpu="2")),
         ("ADDED", node("n1", "aws:///a/i-1", pool="blue", cpu="2", initialized=False)))
    assert pool_cpu(state) == 2000
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-2", pool="blue", cpu="2")))
    assert pool_cpu(state) == 4000
    feed(state, ("MODIFIED", node("n1", "aws:///a/i-2", pool="blue", cpu="2",
                                  initialized=False)))
    assert pool_cpu(state) == 2000


def test_a_removed_node_leaves_its_nodeclaims_count() -> None:
    """NodePool Resources, It("should handle nodepool resources when node inside of the
    state node is removed") (the Node deleted): the Node's capacity (1 CPU) counts while it
    is there, the NodeClaim's (2) once it is gone."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", pool="blue", cpu="2")),
         ("ADDED", node("n1", "aws:///a/i-1", pool="blue", cpu="1", initialized=False)))
    assert pool_cpu(state) == 1000
    feed(state, ("DELETED", node("n1", "aws:///a/i-1", pool="blue", cpu="1",
                                 initialized=False)))
    assert pool_cpu(state) == 2000


def test_a_removed_nodeclaim_leaves_its_nodes_count() -> None:
    """NodePool Resources, It("should handle nodepool resources when node inside of the
    state node is removed") (the NodeClaim deleted): the Node's 1 CPU still counts."""
    state, _ = fresh()
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1", pool="blue", cpu="2")),
         ("ADDED", node("n1", "aws:///a/i-1", pool="blue", cpu="1", initialized=False)))
    assert pool_cpu(state) == 1000
    feed(state, ("DELETED", nodeclaim("c1", "aws:///a/i-1", pool="blue", cpu="2")))
    assert pool_cpu(state) == 1000
