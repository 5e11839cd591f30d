"""A snapshot of the state cache (what the disruption loop works out a pass on, outside
the state lock) is the cache as it was: later events change the cache, not the copy."""

from __future__ import annotations

from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState


def node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {}},
            "spec": {"providerID": f"aws:///us-east-1a/{name}"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}}


def pod(name: str, node_name: str | None, cpu: str = "100m") -> dict[str, object]:
    spec: dict[str, object] = {"containers": [
        {"name": "app", "resources": {"requests": {"cpu": cpu}}}]}
    status: dict[str, object] = {"phase": "Running"}
    if node_name:
        spec["nodeName"] = node_name
    else:
        status = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": spec, "status": status}


def namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_a_snapshot_does_not_change_with_later_events() -> None:
    state = ClusterState(VirtualClock())
    for obj in (node("a"), pod("one", "a"), pod("waiting", None), namespace("default")):
        state.observe(WatchEvent("ADDED", obj))
    state.lock.concurrent = True
    snapshot = state.snapshot()
    assert snapshot is not state

    for obj in (node("b"), pod("two", "a", cpu="500m"), pod("three", "b"),
                namespace("other")):
        state.observe(WatchEvent("ADDED", obj))
    state.observe(WatchEvent("DELETED", pod("waiting", None)))
    state.mark_for_deletion("aws:///us-east-1a/a")

    assert sorted(n.name for n in snapshot.nodes()) == ["a"]
    [seen] = snapshot.nodes()
    assert not seen.is_marked_for_deletion
    assert sorted(seen.pods.requests) == ["default/one"]
    assert seen.pod_requests() == {"cpu": 100, "pods": 1000}
    assert seen.pods is snapshot.pods.by_node["a"]
    assert [p["metadata"]["name"] for p in snapshot.pods_on("a")] == ["one"]
    assert [p["metadata"]["name"] for p in snapshot.provisionable_pods()] == ["waiting"]
    assert sorted(snapshot.namespaces()) == ["default"]

    assert sorted(n.name for n in state.nodes()) == ["a", "b"]
    assert sorted(state.node("aws:///us-east-1a/a").pods.requests) == [  # type: ignore[union-attr]
        "default/one", "default/two"]
    assert state.provisionable_pods() == []


def test_without_other_threads_the_snapshot_is_the_cache_itself() -> None:
    state = ClusterState(VirtualClock())
    assert not state.lock.concurrent  # the simulator's driver: one thread
    assert state.snapshot() is state
