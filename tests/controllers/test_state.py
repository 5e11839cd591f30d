"""The state cache: NodeClaims and Nodes joined by provider ID, pods per node, NodePool
usage kept incrementally (checked against a recount over random event sequences),
nominations and the synced gate."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.state import ClusterState

START = datetime(2026, 1, 5, tzinfo=UTC)


def nodeclaim(name: str, provider_id: str = "", pool: str = "default", cpu: str = "2",
              deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"karpenter.sh/nodepool": pool}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-05T00:00:00Z"
    status: dict[str, Any] = {}
    if provider_id:
        status = {"providerID": provider_id, "capacity": {"cpu": cpu, "memory": "8Gi"},
                  "allocatable": {"cpu": "1930m", "memory": "6903Mi", "pods": "29"}}
    spec = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"}, "requirements": []}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": spec, "status": status}


def node(name: str, provider_id: str, pool: str = "default", initialized: bool = True
         ) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": "m5.large",
              "karpenter.sh/registered": "true"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"providerID": provider_id},
            "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                       "allocatable": {"cpu": "1930m", "memory": "6903Mi", "pods": "29"}}}


def pod(name: str, node_name: str = "", cpu: str = "500m") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending", "conditions": [] if
                       node_name else [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable"}]}}


def feed(state: ClusterState, *events: tuple[str, dict[str, Any]]) -> None:
    for kind, obj in events:
        state.observe(WatchEvent(kind, obj))  # type: ignore[arg-type]


def test_a_nodeclaim_and_its_node_are_one_machine() -> None:
    state = ClusterState(VirtualClock(START))
    feed(state, ("ADDED", nodeclaim("c1")))
    assert state.unlaunched_nodeclaims() == ["c1"] and state.nodes() == []
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-1")))
    (machine,) = state.nodes()
    assert (machine.name, machine.registered, machine.nodeclaim_name) == ("c1", False, "c1")
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")))
    (machine,) = state.nodes()
    assert (machine.name, machine.registered, machine.initialized) == ("n1", True, True)
    assert state.node_by_name("n1") is state.node_for_nodeclaim("c1") is machine
    feed(state, ("ADDED", pod("p1", "n1")), ("ADDED", pod("p2", "n1", "250m")))
    assert machine.pod_requests() == {"cpu": 750, "pods": 2000}
    assert machine.available()["cpu"] == 1930 - 750
    feed(state, ("DELETED", pod("p1", "n1")))
    assert machine.pod_requests() == {"cpu": 250, "pods": 1000}
    feed(state, ("DELETED", node("n1", "aws:///a/i-1")))
    assert state.nodes()[0].node is None
    feed(state, ("DELETED", nodeclaim("c1", "aws:///a/i-1")))
    assert state.nodes() == []


def test_pending_pods_are_known_until_bound() -> None:
    state = ClusterState(VirtualClock(START))
    feed(state, ("ADDED", pod("p1")))
    assert [p["metadata"]["name"] for p in state.provisionable_pods()] == ["p1"]
    feed(state, ("MODIFIED", pod("p1", "n1")))
    assert state.provisionable_pods() == []


def test_nominations_hold_until_the_machine_initialized_and_had_its_window() -> None:
    clock = VirtualClock(START)
    state = ClusterState(clock, nomination_seconds=20)
    feed(state, ("ADDED", nodeclaim("c1", "aws:///a/i-1")), ("ADDED", pod("p1")))
    state.record_pod_nominations({"default/p1": "nodeclaim/c1"})
    clock.advance(600)
    assert state.nominated_machine("default/p1") is state.node_for_nodeclaim("c1")
    feed(state, ("ADDED", node("n1", "aws:///a/i-1")))  # initialized now
    assert state.nominated_machine("default/p1") is None  # nominated 600 s ago
    state.record_pod_nominations({"default/p1": "node/n1"})
    clock.advance(10)
    assert state.nominated_machine("default/p1") is not None
    clock.advance(11)
    assert state.nominated_machine("default/p1") is None


def test_the_state_is_synced_once_it_saw_everything_and_everything_launched() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    cluster.create(nodeclaim("c1"))
    state = ClusterState(clock)
    assert not state.synced(cluster)
    stream = cluster.watch(["NodeClaim", "Node"])
    for event in stream.poll():
        state.observe(event)
    assert not state.synced(cluster), "an unlaunched NodeClaim's capacity is unknown"
    cluster.patch("NodeClaim", "c1", {"status": {"providerID": "aws:///a/i-1"}},
                  subresource="status")
    for event in stream.poll():
        state.observe(event)
    assert state.synced(cluster)


def recount(state: ClusterState, pool: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for machine in state.nodes():
        usage = machine.pool_usage()
        if usage is None or usage[0] != pool:
            continue
        for name, amount in usage[1].items():
            total[name] = total.get(name, 0) + amount
    return {k: v for k, v in total.items() if v}


operations = st.lists(st.tuples(
    st.sampled_from(["claim", "launch", "node", "delete-node", "delete-claim", "deleting",
                     "mark", "unmark"]),
    st.integers(0, 3), st.sampled_from(["a", "b"])), max_size=40)


@settings(max_examples=100, deadline=None)
@given(operations)
def test_nodepool_usage_always_equals_a_recount(steps: list[tuple[str, int, str]]) -> None:
    state = ClusterState(VirtualClock(START))
    for action, index, pool in steps:
        name, provider_id = f"c{index}", f"aws:///a/i-{index}"
        if action == "claim":
            feed(state, ("ADDED", nodeclaim(name, pool=pool)))
        elif action == "launch":
            feed(state, ("MODIFIED", nodeclaim(name, provider_id, pool=pool)))
        elif action == "node":
            feed(state, ("ADDED", node(f"n{index}", provider_id, pool=pool)))
        elif action == "delete-node":
            feed(state, ("DELETED", node(f"n{index}", provider_id, pool=pool)))
        elif action == "delete-claim":
            feed(state, ("DELETED", nodeclaim(name, provider_id, pool=pool)))
        elif action == "deleting":
            feed(state, ("MODIFIED", nodeclaim(name, provider_id, pool=pool, deleting=True)))
        elif action == "mark":
            state.mark_for_deletion(provider_id)
        else:
            state.unmark_for_deletion(provider_id)
        for checked in ("a", "b"):
            # Resources that went back to zero stay listed at zero, as in Karpenter's
            # updateNodePoolResources, until the whole pool is zero.
            usage = state.nodepool_resources(checked)
            assert {k: v for k, v in usage.items() if v} == recount(state, checked)
            assert all(v >= 0 for v in usage.values())


# -- the sync rule (Karpenter's pkg/controllers/state/suite_test.go, "Cluster State Sync")


def synced_state(*objects: dict[str, Any]) -> tuple[VirtualClock, InMemoryCluster, ClusterState,
                                                    Any]:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    for obj in objects:
        cluster.create(obj)
    state = ClusterState(clock)
    stream = cluster.watch(["NodeClaim", "Node"])
    for event in stream.poll():
        state.observe(event)
    return clock, cluster, state, stream


def test_a_node_the_state_does_not_track_yet_keeps_it_unsynced() -> None:
    """Karpenter "Cluster State Sync": "shouldn't consider the cluster state synced if a
    node isn't tracked". A managed Node without its providerID (or instance type) yet is
    not tracked (Karpenter's UpdateNode skips it), so the state is not synced until it is:
    having seen the Node's event is not enough."""
    joining = node("n1", "")
    _, cluster, state, stream = synced_state(joining)
    assert not state.synced(cluster)
    cluster.patch("Node", "n1", {"spec": {"providerID": "aws:///a/i-1"}})
    for event in stream.poll():
        state.observe(event)
    assert state.synced(cluster)


def test_nodes_without_a_provider_id_that_nobody_manages_are_tracked_by_name() -> None:
    """Karpenter "Cluster State Sync": "should consider the cluster state synced when nodes
    don't have provider id"."""
    unmanaged = node("n1", "")
    del unmanaged["metadata"]["labels"]["karpenter.sh/nodepool"]
    _, cluster, state, _ = synced_state(unmanaged)
    assert state.synced(cluster)


def test_a_nodeclaim_without_a_provider_id_keeps_it_unsynced_until_deleted() -> None:
    """Karpenter "Cluster State Sync": "shouldn't consider the cluster state synced if a
    nodeclaim without a providerID is deleted" (unsynced while it exists, synced once its
    deletion is seen) and "should emit cluster_state_unsynced_time_seconds metric when
    cluster state is unsynced"."""
    from nodewright import metrics

    clock, cluster, state, stream = synced_state(nodeclaim("c1"))
    assert not state.synced(cluster)
    clock.advance(120)
    assert not state.synced(cluster)
    assert metrics.CLUSTER_STATE_UNSYNCED_TIME._value.get() >= 120
    assert metrics.CLUSTER_STATE_SYNCED._value.get() == 0
    cluster.delete("NodeClaim", "c1")
    for event in stream.poll():
        state.observe(event)
    assert state.synced(cluster)
    assert metrics.CLUSTER_STATE_SYNCED._value.get() == 1


def test_an_unsynced_state_is_an_error_after_thirty_seconds_then_every_ten(
        caplog: Any) -> None:
    """As Karpenter's Synced: "cluster is waiting on sync for extended duration" at ERROR
    once the state has been unsynced for 30 s, at most every 10 s (not on every call)."""
    import logging

    clock, cluster, state, _ = synced_state(nodeclaim("c1"))
    caplog.set_level(logging.ERROR, logger="nodewright.state.cluster")

    def errors() -> int:
        return sum(1 for r in caplog.records if "waiting on sync" in r.getMessage())

    for _ in range(30):  # once a second, as a waiting provisioner asks
        assert not state.synced(cluster)
        clock.advance(1)
    assert errors() == 0
    clock.advance(1)
    state.synced(cluster)
    assert errors() == 1
    for _ in range(10):
        state.synced(cluster)
    assert errors() == 1, "logged on every call"
    clock.advance(11)
    state.synced(cluster)
    assert errors() == 2
    record = [r for r in caplog.records if "waiting on sync" in r.getMessage()][-1]
    assert record.levelname == "ERROR"
    assert record.__dict__["unlaunched-nodeclaims"] == ["c1"]


# -- a write's answer against the watch


def test_a_write_answer_older_than_the_watch_never_takes_the_cache_back() -> None:
    """The burst that stalled provisioning: the provisioner created a NodeClaim with the
    cache's lock released; before it applied the create's answer, the watch delivered the
    NodeClaim launched (its providerID). The late answer must not make it unlaunched again
    (the state would never sync: no further event corrects it)."""
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    stream = cluster.watch(["NodeClaim", "Node"])
    answer = cluster.create(nodeclaim("c1"))
    cluster.patch("NodeClaim", "c1", {"status": {"providerID": "aws:///a/i-1"}},
                  subresource="status")
    cluster.create(node("n1", "aws:///a/i-1"))
    for event in stream.poll():
        state.observe(event)

    state.observe_written(answer)

    assert state.unlaunched_nodeclaims() == []
    assert state.nodeclaim_names_for_provider_id("aws:///a/i-1") == ["c1"]
    assert state.synced(cluster)


def test_a_write_answer_of_a_deleted_object_does_not_revive_it() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    stream = cluster.watch(["NodeClaim"])
    answer = cluster.create(nodeclaim("c1"))
    cluster.delete("NodeClaim", "c1")
    for event in stream.poll():
        state.observe(event)

    state.observe_written(answer)

    assert state.nodeclaim("c1") is None and state.unlaunched_nodeclaims() == []


def test_a_write_answer_ahead_of_the_watch_is_seen_at_once() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    cluster.watch(["NodeClaim"])
    state.observe_written(cluster.create(nodeclaim("c1")))
    assert state.unlaunched_nodeclaims() == ["c1"]
