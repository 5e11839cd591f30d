"""kube-scheduler sorts the stored pods into pending and bound once, then takes in only
the pods written since (the API server's write journal). Whatever is written in between
(pods created, bound, finished, deleted gracefully or at once, created again under the
same name, a namespace deleted), the index holds what sorting every stored pod again
would, and says whether an unfinished bound pod appeared or went."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.kube_scheduler.pod_index import PodIndex
from nodewright.runtime.clock import VirtualClock
from tests.cluster.world import pod

NAMES = [f"p{i}" for i in range(5)]
NAMESPACES = ["default", "team"]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "gated", "other-scheduler", "bind", "finish", "delete",
                         "delete-at-once", "drop-namespace", "refresh"]),
        st.sampled_from(NAMESPACES), st.sampled_from(NAMES), st.sampled_from(["n1", "n2"])),
    min_size=1, max_size=40,
)


def sorted_afresh(cluster: InMemoryCluster) -> tuple[set[str], dict[str, set[str]]]:
    """The pending pods' uids and each node's unfinished bound pods' uids, from every
    stored pod."""
    pending: set[str] = set()
    bound: dict[str, set[str]] = {}
    for obj in cluster.peek_all("Pod"):
        meta, spec = obj["metadata"], obj.get("spec") or {}
        finished = obj.get("status", {}).get("phase") in ("Succeeded", "Failed")
        if spec.get("nodeName"):
            if not finished:
                bound.setdefault(spec["nodeName"], set()).add(meta["uid"])
        elif (not finished and spec.get("schedulerName") == "default-scheduler"
              and not meta.get("deletionTimestamp") and not spec.get("schedulingGates")):
            pending.add(meta["uid"])
    return pending, bound


def uids(objs: Any) -> set[str]:
    return {obj["metadata"]["uid"] for obj in objs}


def write(cluster: InMemoryCluster, step: tuple[str, str, str, str]) -> None:
    action, namespace, name, node = step
    stored = cluster.peek("Pod", name, namespace)
    if action in ("create", "gated", "other-scheduler"):
        if cluster.peek("Namespace", namespace) is None:
            cluster.create({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": namespace}})
        if stored is None:
            manifest = pod(name, cpu="100m")
            manifest["metadata"]["namespace"] = namespace
            if action == "gated":
                manifest["spec"]["schedulingGates"] = [{"name": "wait"}]
            elif action == "other-scheduler":
                manifest["spec"]["schedulerName"] = "another"
            cluster.create(manifest)
    elif stored is None:
        return
    elif action == "bind" and not stored["spec"].get("nodeName") and not (
            stored["metadata"].get("deletionTimestamp")):
        cluster.bind(name, namespace, node)
    elif action == "finish":
        cluster.set_status("Pod", name, namespace, {**stored["status"], "phase": "Succeeded"})
    elif action == "delete":
        cluster.delete("Pod", name, namespace)
    elif action == "delete-at-once":
        cluster.delete("Pod", name, namespace, grace_period_seconds=0)
    elif action == "drop-namespace" and namespace != "default":
        cluster.delete("Namespace", namespace)


@settings(max_examples=80, deadline=None)
@given(STEPS)
def test_the_index_holds_what_sorting_every_stored_pod_again_would(
        steps: list[tuple[str, str, str, str]]) -> None:
    cluster = InMemoryCluster(VirtualClock())
    index = PodIndex(cluster)
    # A few pods stored before the first refresh, as in a snapshot.
    write(cluster, ("create", "default", "p0", "n1"))
    write(cluster, ("bind", "default", "p0", "n1"))
    write(cluster, ("create", "default", "p1", "n1"))
    bound_before: set[str] = set()
    for step in [*steps, ("refresh", "default", "p0", "n1")]:
        if step[0] != "refresh":
            write(cluster, step)
            continue
        changes = index.refresh()
        pending, bound = sorted_afresh(cluster)
        assert uids(index.pending()) == pending
        assert {node: uids(objs) for node, objs in index.bound().items()} == bound
        bound_now = set().union(*bound.values())
        assert changes.bound_added == bool(bound_now - bound_before)
        assert changes.bound_gone == bool(bound_before - bound_now)
        bound_before = bound_now
        # Every object the index hands out is the one stored now.
        for obj in [*index.pending(), *(o for objs in index.bound().values() for o in objs)]:
            meta = obj["metadata"]
            assert cluster.peek("Pod", meta["name"], meta["namespace"]) is obj


def test_a_pod_deleted_and_created_again_under_its_name_is_a_new_pod() -> None:
    cluster = InMemoryCluster(VirtualClock())
    index = PodIndex(cluster)
    cluster.create(pod("web", cpu="100m"))
    cluster.bind("web", "default", "n1")
    first: Mapping[str, Any] = cluster.peek("Pod", "web", "default") or {}
    index.refresh()

    cluster.delete("Pod", "web", "default", grace_period_seconds=0)
    cluster.create(pod("web", cpu="100m"))
    cluster.bind("web", "default", "n1")
    changes = index.refresh()

    assert changes.bound_added and changes.bound_gone
    assert changes.gone_uids == (first["metadata"]["uid"],)
