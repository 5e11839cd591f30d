"""The state cache parses replicas once: pods the API server stored with the same labels
and spec parts share one model (renamed), and a pod with a spec of its own gets its own."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from nodewright.state.pods import PodStore


def replica(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "web",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def stored_pods(*pods: dict[str, Any]) -> PodStore:
    cluster = InMemoryCluster(VirtualClock())
    for pod in pods:
        cluster.create(pod)
    store = PodStore()
    for obj in cluster.peek_all("Pod", "default", sort=True):
        store.update(obj)
    return store


def test_replicas_share_one_parsed_model_under_their_own_names() -> None:
    store = stored_pods(replica("web-1", "1"), replica("web-2", "1"), replica("big", "4"))

    one, two, big = (store.model(f"default/{name}") for name in ("web-1", "web-2", "big"))

    assert (one.name, two.name, big.name) == ("web-1", "web-2", "big")
    assert one.requests is two.requests and one.requests["cpu"] == 1000
    assert big.requests["cpu"] == 4000 and big.requests is not one.requests
    assert one.node_name is None and two.node_name is None


def test_a_bound_replica_keeps_its_own_node() -> None:
    cluster = InMemoryCluster(VirtualClock())
    for name in ("web-1", "web-2"):
        cluster.create(replica(name, "1"))
    cluster.bind("web-2", "default", "node-a")
    store = PodStore()
    for obj in cluster.peek_all("Pod", "default", sort=True):
        store.update(obj)

    assert store.model("default/web-1").node_name is None
    assert store.model("default/web-2").node_name == "node-a"
