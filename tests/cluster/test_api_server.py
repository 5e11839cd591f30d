"""The in-memory API server behaves like Kubernetes' where controllers can tell."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import (
    AlreadyExistsError,
    ClusterAPI,
    ConflictError,
    InvalidError,
    NotFoundError,
)
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock

NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def nodepool(name: str, **spec: Any) -> dict[str, Any]:
    """A NodePool the CRD accepts; `template` spec fields are merged into the minimal one."""
    template = spec.pop("template", {})
    template_spec = {"nodeClassRef": NODE_CLASS_REF, "requirements": [],
                     **template.get("spec", {})}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"weight": 1, "template": {**template, "spec": template_spec}, **spec}}


def nodeclaim(**metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": {"nodeClassRef": NODE_CLASS_REF, "requirements": []}}


def pod(name: str, node: str | None = None, **metadata: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", **metadata}, "spec": spec}


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def cluster(clock: VirtualClock) -> InMemoryCluster:
    return InMemoryCluster(clock)


def test_it_is_a_cluster_api(cluster: InMemoryCluster) -> None:
    assert isinstance(cluster, ClusterAPI)


def test_the_system_namespaces_exist_from_the_start(cluster: InMemoryCluster) -> None:
    names = [objects.name(ns) for ns in cluster.list("Namespace")]
    assert names == ["default", "kube-node-lease", "kube-system"]
    assert objects.labels(cluster.get("Namespace", "default")) == {
        "kubernetes.io/metadata.name": "default"}


def test_create_stamps_server_metadata(cluster: InMemoryCluster, clock: VirtualClock) -> None:
    created = cluster.create(nodepool("general"))
    meta = created["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["generation"] == 1
    assert meta["creationTimestamp"] == "2026-01-05T00:00:00Z"
    with pytest.raises(AlreadyExistsError, match='nodepools "general" already exists'):
        cluster.create(nodepool("general"))


def test_every_write_moves_one_global_resource_version(cluster: InMemoryCluster) -> None:
    first = cluster.create(nodepool("a"))
    second = cluster.create(pod("web"))
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_reads_are_copies(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    read = cluster.get("NodePool", "a")
    read["spec"]["weight"] = 99
    assert cluster.get("NodePool", "a")["spec"]["weight"] == 1


def test_an_update_from_a_stale_read_conflicts(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    mine, theirs = cluster.get("NodePool", "a"), cluster.get("NodePool", "a")
    theirs["spec"]["weight"] = 5
    cluster.update(theirs)
    mine["spec"]["weight"] = 7
    with pytest.raises(ConflictError, match="the object has been modified"):
        cluster.update(mine)
    assert cluster.get("NodePool", "a")["spec"]["weight"] == 5


def test_a_write_that_changes_nothing_is_no_event(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    stream = cluster.watch(["NodePool"])
    stream.poll()
    before = cluster.get("NodePool", "a")
    after = cluster.update(before)
    cluster.patch("NodePool", "a", {"spec": {"weight": 1}})
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert stream.poll() == []


def test_generation_follows_the_spec_not_the_status(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    cluster.patch("NodePool", "a", {"status": {"nodes": 3}}, subresource="status")
    assert cluster.get("NodePool", "a")["metadata"]["generation"] == 1
    cluster.patch("NodePool", "a", {"metadata": {"labels": {"team": "x"}}})
    assert cluster.get("NodePool", "a")["metadata"]["generation"] == 1
    cluster.patch("NodePool", "a", {"spec": {"weight": 2}})
    assert cluster.get("NodePool", "a")["metadata"]["generation"] == 2


def test_the_status_subresource_is_separate_from_the_object(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    stored = cluster.get("NodePool", "a")
    stored["status"] = {"nodes": 4}
    stored["spec"]["weight"] = 3
    cluster.update(stored)
    assert cluster.get("NodePool", "a").get("status") is None
    assert cluster.get("NodePool", "a")["spec"]["weight"] == 3
    stored = cluster.get("NodePool", "a")
    stored["status"] = {"nodes": 4}
    stored["spec"]["weight"] = 9
    cluster.update(stored, subresource="status")
    result = cluster.get("NodePool", "a")
    assert (result["status"], result["spec"]["weight"]) == ({"nodes": 4}, 3)


def test_create_keeps_the_status_it_is_given(cluster: InMemoryCluster) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "2"}}}
    assert cluster.create(node)["status"] == {"allocatable": {"cpu": "2"}}


def test_generate_name_is_unique_and_the_same_every_run(clock: VirtualClock) -> None:
    def names() -> list[str]:
        cluster = InMemoryCluster(VirtualClock())
        claims = [cluster.create(nodeclaim(generateName="default-")) for _ in range(50)]
        return [objects.name(claim) for claim in claims]

    first = names()
    assert first == names()
    assert len(set(first)) == 50
    assert all(name.startswith("default-") and len(name) == len("default-") + 5
               for name in first)


def test_merge_patch_removes_with_null_and_replaces_lists(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a", limits={"cpu": "100", "memory": "1Ti"},
                            template={"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}))
    cluster.patch("NodePool", "a", {"spec": {"limits": {"memory": None},
                                             "template": {"spec": {"taints": []}}}})
    spec = cluster.get("NodePool", "a")["spec"]
    assert spec["limits"] == {"cpu": "100"}
    assert spec["template"]["spec"]["taints"] == []


def test_a_patch_with_a_resource_version_is_conditional(cluster: InMemoryCluster) -> None:
    created = cluster.create(nodepool("a"))
    cluster.patch("NodePool", "a", {"spec": {"weight": 2}})
    with pytest.raises(ConflictError):
        cluster.patch("NodePool", "a", {"metadata": {
            "resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"weight": 3}})
    assert cluster.get("NodePool", "a")["spec"]["weight"] == 2


def test_finalizers_hold_a_deleted_object_until_removed(cluster: InMemoryCluster) -> None:
    cluster.create(nodeclaim(name="claim", finalizers=["karpenter.sh/termination"]))
    cluster.delete("NodeClaim", "claim")
    deleting = cluster.get("NodeClaim", "claim")
    assert objects.is_deleting(deleting)
    deleting["metadata"]["finalizers"].append("example.com/other")
    with pytest.raises(InvalidError, match="no new finalizers"):
        cluster.update(deleting)
    cluster.patch("NodeClaim", "claim", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFoundError):
        cluster.get("NodeClaim", "claim")


def test_delete_with_a_uid_precondition(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    with pytest.raises(ConflictError, match="Precondition failed"):
        cluster.delete("NodePool", "a", uid="someone-else")
    cluster.delete("NodePool", "a", uid=cluster.get("NodePool", "a")["metadata"]["uid"])
    with pytest.raises(NotFoundError, match='nodepools "a" not found'):
        cluster.delete("NodePool", "a")


def test_a_bound_pod_terminates_gracefully_an_unbound_one_goes_at_once(
    cluster: InMemoryCluster,
) -> None:
    cluster.create(pod("pending"))
    cluster.create(pod("running", node="n1"))
    cluster.delete("Pod", "pending", "default")
    cluster.delete("Pod", "running", "default")
    assert [objects.name(p) for p in cluster.list("Pod")] == ["running"]
    running = cluster.get("Pod", "running", "default")
    assert running["metadata"]["deletionGracePeriodSeconds"] == 30
    assert running["metadata"]["deletionTimestamp"] == "2026-01-05T00:00:30Z"
    cluster.delete("Pod", "running", "default", grace_period_seconds=5)
    assert cluster.get("Pod", "running", "default")["metadata"]["deletionTimestamp"] == (
        "2026-01-05T00:00:05Z")
    cluster.delete("Pod", "running", "default", grace_period_seconds=0)
    assert cluster.list("Pod") == []


def test_owners_take_their_dependents_with_them(cluster: InMemoryCluster) -> None:
    owner = cluster.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                            "metadata": {"name": "web"}, "spec": {"replicas": 1}})
    other = cluster.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                            "metadata": {"name": "api"}, "spec": {"replicas": 1}})
    cluster.create(pod("web-1", ownerReferences=[objects.owner_reference(owner)]))
    both = [objects.owner_reference(owner), objects.owner_reference(other, controller=False)]
    cluster.create(pod("shared", ownerReferences=both))
    cluster.delete("ReplicaSet", "web")
    remaining = cluster.list("Pod")
    assert [objects.name(p) for p in remaining] == ["shared"]
    assert [ref["name"] for ref in objects.owner_references(remaining[0])] == ["api"]


def test_deleting_a_namespace_deletes_its_contents(cluster: InMemoryCluster) -> None:
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    cluster.create({**pod("x"), "metadata": {"name": "x", "namespace": "team"}})
    cluster.delete("Namespace", "team")
    assert cluster.list("Pod", "team") == []
    with pytest.raises(NotFoundError, match='namespaces "team" not found'):
        cluster.create({**pod("y"), "metadata": {"name": "y", "namespace": "team"}})


def test_scope_and_label_selection(cluster: InMemoryCluster) -> None:
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    cluster.create(pod("a", labels={"app": "web", "tier": "front"}))
    cluster.create({**pod("b"), "metadata": {"name": "b", "namespace": "team",
                                             "labels": {"app": "web"}}})
    assert [objects.key(p) for p in cluster.list("Pod", labels={"app": "web"})] == [
        "default/a", "team/b"]
    assert [objects.key(p) for p in cluster.list("Pod", "team")] == ["team/b"]
    assert cluster.list("Pod", labels={"app": "web", "tier": "back"}) == []
    node = cluster.create({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": "n1", "namespace": "ignored"}})
    assert objects.namespace(node) == "" and objects.key(node) == "n1"


def test_watch_starts_with_what_exists_then_follows_in_order(cluster: InMemoryCluster) -> None:
    cluster.create(nodepool("a"))
    cluster.create(pod("web"))
    first = cluster.watch(["NodePool", "Pod"])
    assert not first.synced()
    assert [(e.type, e.key) for e in first.poll()] == [("ADDED", "a"), ("ADDED", "default/web")]
    assert first.synced()
    second = cluster.watch(["Pod"])
    second.poll()
    cluster.patch("NodePool", "a", {"spec": {"weight": 4}})
    cluster.delete("Pod", "web", "default")
    cluster.create(nodepool("b"))
    assert [(e.type, e.key) for e in first.poll()] == [
        ("MODIFIED", "a"), ("DELETED", "default/web"), ("ADDED", "b")]
    assert [(e.type, e.key) for e in second.poll()] == [("DELETED", "default/web")]
    versions = [int(e.object["metadata"]["resourceVersion"]) for e in cluster.watch(
        ["NodePool"]).poll()]
    assert versions == sorted(versions)


def test_bad_input_is_named(cluster: InMemoryCluster) -> None:
    with pytest.raises(InvalidError, match="unsupported kind 'Widget'"):
        cluster.create({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}})
    with pytest.raises(InvalidError, match=r"metadata\.name: Invalid value"):
        cluster.create(nodepool("Not_A_Name"))
    with pytest.raises(InvalidError, match=r"metadata\.labels: Invalid value: 3: must be a str"):
        cluster.create({**nodepool("a"), "metadata": {"name": "a", "labels": {"team": 3}}})
    with pytest.raises(InvalidError, match="generateName is required"):
        cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {}})
