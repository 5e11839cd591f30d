"""Equal parts of stored objects are one object (`cluster.memory.sharing`), and sharing
never lets a write to one object show in another."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.sharing import SubtreeSharing
from nodewright.runtime.clock import VirtualClock
from tests.support.read_only import guarded_cluster, verify_read_only


def replica(name: str, cpu: str = "250m") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "web",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}},
                 "topologyKey": "kubernetes.io/hostname"}]}},
        },
    }


def stored(cluster: InMemoryCluster, name: str) -> dict[str, Any]:
    found = cluster.peek("Pod", name, "default")
    assert found is not None
    return found


def test_replicas_store_their_identical_parts_once() -> None:
    cluster = guarded_cluster()
    cluster.create(replica("web-1"))
    cluster.create(replica("web-2"))
    cluster.create(replica("web-3", cpu="500m"))

    one, two, three = (stored(cluster, f"web-{n}") for n in (1, 2, 3))

    assert one["spec"]["containers"] is two["spec"]["containers"]
    assert one["spec"]["affinity"] is two["spec"]["affinity"] is three["spec"]["affinity"]
    assert one["metadata"]["labels"] is three["metadata"]["labels"]
    # Different requests: a container of its own, whose unchanged parts are still shared.
    assert three["spec"]["containers"] != one["spec"]["containers"]
    assert one["spec"]["tolerations"] is three["spec"]["tolerations"]
    # Each object keeps its own top-level parts.
    assert one["metadata"] is not two["metadata"] and one["spec"] is not two["spec"]
    verify_read_only(cluster)


def test_a_write_to_one_replica_never_shows_in_another() -> None:
    cluster = guarded_cluster()
    cluster.create(replica("web-1"))
    cluster.create(replica("web-2"))
    before = json.dumps(stored(cluster, "web-2"), sort_keys=True)

    cluster.patch("Pod", "web-1", {"metadata": {"labels": {"tier": "front"}}}, "default")
    cluster.patch("Pod", "web-1", {"spec": {"tolerations": [{"operator": "Exists"}]}},
                  "default")
    updated = cluster.get("Pod", "web-1", "default")
    updated["spec"]["containers"][0]["image"] = "web:2"
    cluster.update(updated)

    assert json.dumps(stored(cluster, "web-2"), sort_keys=True) == before
    assert stored(cluster, "web-1")["spec"]["containers"][0]["image"] == "web:2"
    assert stored(cluster, "web-1")["metadata"]["labels"] == {"app": "web", "tier": "front"}
    verify_read_only(cluster)


def test_reads_hand_out_copies_of_shared_parts() -> None:
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(replica("web-1"))
    cluster.create(replica("web-2"))

    copy = cluster.get("Pod", "web-1", "default")
    copy["spec"]["containers"][0]["image"] = "mine"

    assert stored(cluster, "web-2")["spec"]["containers"][0]["image"] == "web"


def test_json_types_are_never_merged() -> None:
    sharing = SubtreeSharing()
    ones = [{"x": {"v": 1}}, {"x": {"v": 1.0}}, {"x": {"v": True}}, {"x": {"v": "1"}}]
    for obj in ones:
        sharing.share(obj)

    values = [obj["x"]["v"] for obj in ones]
    assert [type(v) for v in values] == [int, float, bool, str]


def test_parts_nothing_refers_to_any_more_are_swept() -> None:
    sharing = SubtreeSharing()
    kept = {"spec": {"containers": [{"name": "kept"}]}}
    sharing.share(kept)
    for n in range(100):
        sharing.share({"spec": {"containers": [{"name": f"gone-{n}"}]}})
    assert len(sharing) == 2 + 2 * 100

    removed = sharing.sweep()

    assert removed == 200 and len(sharing) == 2
    again = {"spec": {"containers": [{"name": "kept"}]}}
    sharing.share(again)
    assert again["spec"]["containers"] is kept["spec"]["containers"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False)
    | st.sampled_from(["a", "b", ""]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
    max_leaves=12,
)


@given(st.lists(st.dictionaries(st.sampled_from(["spec", "status"]), json_values,
                                min_size=1), min_size=1, max_size=6))
def test_sharing_keeps_every_object_equal_to_what_was_written(
        objects: list[dict[str, Any]]) -> None:
    sharing = SubtreeSharing()
    originals = [json.dumps(obj) for obj in objects]
    for obj in objects:
        sharing.share(obj)
    # Equal, in the same key order, with every scalar of the same JSON type.
    assert [json.dumps(obj) for obj in objects] == originals
