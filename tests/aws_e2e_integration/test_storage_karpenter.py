"""Karpenter test/suites/storage/suite_test.go (v1.14.1). The volume stories are
cloud-agnostic: on the in-memory World of tests/harness.py (simulated EC2), whose cluster
binds claims (a WaitForFirstConsumer class's volume is provisioned in the zone of the node
the pod went to, as the EBS CSI driver does) and attaches and detaches volumes. The
instance-store stories run on the moto account (`moto_env.Env`), as their launch is the
AWS provider's."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.quantity import parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from tests.aws_e2e.moto_world import node_class
from tests.aws_e2e.moto_world import node_pool as moto_node_pool
from tests.aws_e2e.moto_world import pod as moto_pod
from tests.harness import NODE_CLASS, World, node_pool

from .moto_env import Env

ZONE = "topology.kubernetes.io/zone"
EBS_ZONE = "topology.ebs.csi.aws.com/zone"
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
POOL = node_pool(requirements=[
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
], disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "Never"})


def storage_class(zone: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "test-storage-class"}, "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": "WaitForFirstConsumer"}
    if zone is not None:
        body["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": EBS_ZONE, "values": [zone]}]}]
    return body


def claim(name: str, storage_class_name: str, volume: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName":
                            storage_class_name, "resources": {"requests": {"storage": "10Gi"}}}
    if volume is not None:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def volume(name: str, storage_class_name: str, zone: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                            "storageClassName": storage_class_name,
                            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{name}"}}
    if zone is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def pod(name: str, *claims: str, ephemeral: str | None = None) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [{"name": f"v{i}", "persistentVolumeClaim": {
        "claimName": c}} for i, c in enumerate(claims)]
    if ephemeral is not None:
        volumes.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "storageClassName": ephemeral, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}}})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "pause",
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     "volumes": volumes}}


def ephemeral_claim(storage_class_name: str, volume_name: str | None = None
                    ) -> dict[str, Any]:
    """The claim the ephemeral volume controller makes of pod p's volume `scratch` (the
    in-memory cluster runs no such controller). `volume_name`: the volume Kubernetes' PV
    controller binds it to (the in-memory one binds only claims that name their volume)."""
    made = claim("p-scratch", storage_class_name, volume_name)
    made["spec"]["resources"]["requests"]["storage"] = "1Gi"
    return made


def healthy(world: World, name: str) -> bool:
    try:
        found = world.cluster.get("Pod", name, "default")
    except NotFoundError:
        return False
    return bool(found["spec"].get("nodeName")) and (found.get("status") or {}).get(
        "phase") == "Running"


def runs(world: World, *sources: Any, name: str = "p") -> dict[str, Any]:
    """Apply; the pod runs (`EventuallyExpectHealthy`); the one node it runs on."""
    world.apply(NODE_CLASS, POOL, *sources)
    assert world.run_until(lambda: healthy(world, name), timeout=900), world.errors
    assert len(world.nodes()) == 1
    node_name = world.cluster.get("Pod", name, "default")["spec"]["nodeName"]
    node: dict[str, Any] = world.cluster.get("Node", node_name)
    assert world.errors == []
    return node


# -- Persistent Volumes, Static ---------------------------------------------------------


def test_a_pre_bound_volume_without_a_storage_class() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Static") It("should run a pod with a pre-bound persistent volume (empty storage
    class)")."""
    runs(World(), volume("test-volume", ""), claim("data", "", "test-volume"),
         pod("p", "data"))


def test_a_pre_bound_volume_of_a_storage_class_that_does_not_exist() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Static") It("should run a pod with a pre-bound persistent volume (non-existent
    storage class)")."""
    runs(World(), volume("test-volume", "non-existent-storage-class"),
         claim("data", "non-existent-storage-class", "test-volume"), pod("p", "data"))


def test_a_pre_bound_volume_s_zone_is_the_node_s() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Static") It("should run a pod with a pre-bound persistent volume while
    respecting topology constraints")."""
    world = World()
    zone = sorted(world.cloud.zones)[1]
    node = runs(world, volume("test-volume", "non-existent-storage-class", zone),
                claim("data", "non-existent-storage-class", "test-volume"), pod("p", "data"))

    assert node["metadata"]["labels"][ZONE] == zone


def test_a_generic_ephemeral_volume_of_a_storage_class_that_does_not_exist() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Static") It("should run a pod with a generic ephemeral volume") — its claim
    binds the PersistentVolume the story made of that class."""
    world = World()
    runs(world, volume("test-volume", "non-existent-storage-class"),
         ephemeral_claim("non-existent-storage-class", "test-volume"),
         pod("p", ephemeral="non-existent-storage-class"))

    (bound,) = world.cluster.list("PersistentVolumeClaim", "default")
    assert bound["spec"].get("volumeName") == "test-volume"


# -- Persistent Volumes, Dynamic ---------------------------------------------------------


def test_a_dynamic_volume() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Dynamic") It("should run a pod with a dynamic persistent volume")."""
    world = World()
    node = runs(world, storage_class(), claim("data", "test-storage-class"), pod("p", "data"))

    (provisioned,) = world.cluster.list("PersistentVolume")
    assert node["metadata"]["labels"][ZONE] in str(provisioned["spec"].get("nodeAffinity"))


def test_a_dynamic_volume_in_the_storage_class_s_zone() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Dynamic") It("should run a pod with a dynamic persistent volume while
    respecting allowed topologies")."""
    world = World()
    zone = sorted(world.cloud.zones)[2]
    node = runs(world, storage_class(zone), claim("data", "test-storage-class"),
                pod("p", "data"))

    assert node["metadata"]["labels"][ZONE] == zone


def test_a_generic_ephemeral_volume_of_a_storage_class() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Persistent Volumes")
    Context("Dynamic") It("should run a pod with a generic ephemeral volume")."""
    world = World()
    runs(world, storage_class(), ephemeral_claim("test-storage-class"),
         pod("p", ephemeral="test-storage-class"))

    (bound,) = world.cluster.list("PersistentVolumeClaim", "default")
    assert bound["spec"].get("volumeName")


# -- Stateful workloads ------------------------------------------------------------------


def stateful_set(**pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "my-app", "namespace": "default"},
            "spec": {"replicas": 1, "serviceName": "my-app",
                     "selector": {"matchLabels": {"app": "my-app"}},
                     "template": {"metadata": {"labels": {"app": "my-app"}}, "spec": {
                         "containers": [{"name": "app", "image": "pause",
                                         "resources": {"requests": {"cpu": "100m"}},
                                         "volumeMounts": [{"name": "data",
                                                           "mountPath": "/usr/share"}]}],
                         **pod_spec}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "storageClassName": "test-storage-class",
                         "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "10Gi"}}}}]}}


def stateful(world: World, **pod_spec: Any) -> tuple[str, str, str]:
    """The StatefulSet's one replica running; its NodeClaim, node and zone."""
    zone = sorted(world.cloud.zones)[0]
    world.apply(NODE_CLASS, POOL, storage_class(zone), stateful_set(**pod_spec))
    assert world.run_until(lambda: healthy(world, "my-app-0"), timeout=900)
    (claim_,) = world.nodeclaims()
    (node,) = world.nodes()
    return objects.name(claim_), objects.name(node), zone


def tainted_disrupted(world: World, node: str) -> bool:
    taints = world.cluster.get("Node", node)["spec"].get("taints") or []
    return any(t.get("key") == DISRUPTED["key"] and t.get("effect") == DISRUPTED["effect"]
               for t in taints)


def gone(world: World, claim_name: str, node: str) -> bool:
    return (claim_name not in {objects.name(c) for c in world.nodeclaims()}
            and node not in {objects.name(n) for n in world.nodes()})


def test_a_stateful_replica_moves_to_a_new_node_with_its_volume() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Stateful workloads") It("should
    run on a new node without 6+ minute delays when disrupted") — the volume detaches at
    the simulated cluster's pace (seconds), and the replica is Running again well before
    the 6-minute force detach."""
    world = World()
    claim_name, node, zone = stateful(world)

    world.delete("NodeClaim", claim_name)

    assert world.run_until(lambda: tainted_disrupted(world, node), timeout=60)
    assert world.run_until(lambda: gone(world, claim_name, node), timeout=900)
    moved_at = world.clock.now()
    assert world.run_until(lambda: healthy(world, "my-app-0"), timeout=120)
    assert (world.clock.now() - moved_at).total_seconds() < 6 * 60
    (new_node,) = [n for n in world.nodes() if not objects.is_deleting(n)]
    assert new_node["metadata"]["labels"][ZONE] == zone
    assert len(world.nodeclaims()) == 1
    assert world.errors == []


def test_an_undrainable_stateful_replica_does_not_block_node_deletion() -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Stateful workloads") It("should
    not block node deletion if stateful workload cannot be drained")."""
    world = World()
    claim_name, node, _ = stateful(world, tolerations=[{
        "key": "karpenter.sh/disruption", "operator": "Equal", "value": "disrupting",
        "effect": "NoExecute"}])

    world.delete("NodeClaim", claim_name)

    assert world.run_until(lambda: tainted_disrupted(world, node), timeout=60)
    assert world.run_until(lambda: gone(world, claim_name, node), timeout=900)
    assert world.errors == []


# -- Ephemeral Storage (moto) ------------------------------------------------------------


@pytest.mark.parametrize("alias", [
    pytest.param("al2@latest", id="AL2"),
    pytest.param("al2023@latest", id="AL2023"),
    pytest.param("bottlerocket@latest", id="Bottlerocket"),
])
def test_instance_store_ephemeral_storage_beyond_the_root_volume(env: Env, alias: str
                                                                 ) -> None:
    """Karpenter test/suites/storage/suite_test.go Describe("Ephemeral Storage")
    DescribeTable("should run a pod with instance-store ephemeral storage that exceeds EBS
    root block device mappings"): the Entry named by the case id."""
    wants = moto_pod("p")
    wants["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "100Gi"
    env.apply(node_class(instanceStorePolicy="RAID0", amiSelectorTerms=[{"alias": alias}]),
              moto_node_pool(), wants)

    assert env.run_until(lambda: env.healthy("p")), env.errors
    assert len(env.nodes()) == 1
    node = env.get("Node", env.node_of("p"))
    labels = node["metadata"]["labels"]
    assert int(labels["karpenter.k8s.aws/instance-local-nvme"]) >= 100
    allocatable = parse_quantity(node["status"]["allocatable"]["ephemeral-storage"])
    assert allocatable >= parse_quantity("100Gi")
