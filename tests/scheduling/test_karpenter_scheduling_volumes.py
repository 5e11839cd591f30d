"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("VolumeUsage"). Each test
names its It/Entry. The storage objects live in the in-memory API server
(`karpenter_storage`)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodewright.scheduling import volumes
from nodewright.scheduling.pods import Pod
from tests.scheduling.karpenter_scheduling import (
    HOSTNAME,
    SPECIAL,
    ZONE,
    nodepool,
    numbered_catalog,
    pod,
    scheduled,
)
from tests.scheduling.karpenter_storage import (
    CSI_PROVIDER,
    Storage,
    claim,
    storage_class,
    volume,
    with_claims,
    with_ephemeral,
)


def first_node(storage: Storage) -> str:
    """The initial pod of most stories: launches the node the CSINode is for."""
    initial = pod()
    storage.provision(initial)
    return scheduled(storage.cluster, initial).name


def test_volume_limits_launch_a_second_node() -> None:
    # It("should launch multiple nodes if required due to volume limits"): 10 volumes fit
    # the in-flight node, six pods with two claims each need a second one.
    storage = Storage()
    node = first_node(storage)
    storage.csi_node(node, {CSI_PROVIDER: 10})
    storage.apply(storage_class("my-storage-class", mode="WaitForFirstConsumer",
                                zones=["test-zone-1"]))
    pods = []
    for i in range(6):
        storage.apply(claim(f"my-claim-a-{i}", class_name="my-storage-class"),
                      claim(f"my-claim-b-{i}", class_name="my-storage-class"))
        pods.append(with_claims(f"my-claim-a-{i}", f"my-claim-b-{i}"))
    storage.provision(*pods)
    assert len(storage.cluster.nodes) == 2


def test_pods_sharing_one_claim_launch_one_node() -> None:
    # It("should launch a single node if all pods use the same PVC")
    storage = Storage()
    node = first_node(storage)
    storage.csi_node(node, {CSI_PROVIDER: 10})
    storage.apply(storage_class("my-storage-class", zones=["test-zone-1"]),
                  volume("my-volume", zones=["test-zone-1"]),
                  claim("my-claim", class_name="my-storage-class", volume_name="my-volume"))
    storage.provision(*[with_claims("my-claim") for _ in range(100)])
    assert len(storage.cluster.nodes) == 1


def test_nfs_volumes_do_not_fail() -> None:
    # It("should not fail for NFS volumes")
    storage = Storage()
    first_node(storage)
    storage.apply(volume("my-volume", source="nfs", zones=["test-zone-1"], class_name="nfs"),
                  claim("my-claim", class_name="", volume_name="my-volume"))
    storage.provision(*[with_claims("my-claim", "my-claim") for _ in range(5)])
    assert len(storage.cluster.nodes) == 1


ANTI_ZONE = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "multi-zone-app"}}, "topologyKey": ZONE}]}}


def test_a_volume_of_several_zones_leaves_each_pod_a_zone() -> None:
    # It("should schedule pods using a PV with multiple zones"): ORed zone terms.
    storage = Storage(nodepool())
    terms = [[{"key": ZONE, "operator": "In", "values": [z]}] for z in ("test-zone-1",
                                                                         "test-zone-2")]
    pods = []
    for i in range(2):
        storage.apply(volume(f"multi-zone-pv-{i}", terms=terms),
                      claim(f"multi-zone-pvc-{i}", volume_name=f"multi-zone-pv-{i}"))
        pods.append(with_claims(f"multi-zone-pvc-{i}", labels={"app": "multi-zone-app"},
                                affinity=ANTI_ZONE))
    storage.provision(*pods)
    zones = [scheduled(storage.cluster, p).labels[ZONE] for p in pods]
    assert set(zones) == {"test-zone-1", "test-zone-2"}


@pytest.mark.parametrize("source", ["local", "hostPath"],
                         ids=["for local volumes", "for hostpath volumes"])
def test_a_local_volumes_other_alternative_is_kept(source: str) -> None:
    # DescribeTable("should preserve unconstrained PV alternatives after ignoring hostname
    # affinity"): the hostname term becomes "anywhere", the invalid zone term stays.
    storage = Storage(nodepool())
    terms = [[{"key": HOSTNAME, "operator": "In", "values": ["existing-host"]}],
             [{"key": ZONE, "operator": "In", "values": ["invalid-zone"]}]]
    storage.apply(volume("hostname-or-zone-pv", source=source, terms=terms),
                  claim("hostname-or-zone-pvc", volume_name="hostname-or-zone-pv"))
    p = with_claims("hostname-or-zone-pvc", name="hostname-or-zone-pod")
    storage.provision(p)
    scheduled(storage.cluster, p)


def test_a_class_of_several_zones_leaves_each_pod_a_zone() -> None:
    # It("should schedule pods using a StorageClass with multiple zones in
    # AllowedTopologies")
    storage = Storage(nodepool())
    storage.apply(storage_class("multi-zone-sc", mode="WaitForFirstConsumer", topologies=[
        [(ZONE, ["test-zone-1"])], [(ZONE, ["test-zone-2"])]]))
    pods = []
    for i in range(2):
        storage.apply(claim(f"multi-zone-pvc-{i}", class_name="multi-zone-sc"))
        pods.append(with_claims(f"multi-zone-pvc-{i}", labels={"app": "multi-zone-app"},
                                affinity=ANTI_ZONE))
    storage.provision(*pods)
    zones = [scheduled(storage.cluster, p).labels[ZONE] for p in pods]
    assert set(zones) == {"test-zone-1", "test-zone-2"}


def test_the_compatible_combination_of_two_volumes_remains() -> None:
    # It("should schedule pods when a valid multi-volume topology alternative remains after
    # pruning disjoint branches"): `special` is the optional label only fake-it-4 has
    # (here karpenter.k8s.aws/instance-local-nvme, "900"; "100" is on no type).
    storage = Storage(nodepool(catalog=numbered_catalog(5)))
    storage.apply(
        storage_class("pruned-overlap-a", mode="WaitForFirstConsumer",
                      topologies=[[(SPECIAL, ["100"])], [(SPECIAL, ["900"])]]),
        storage_class("pruned-overlap-b", mode="WaitForFirstConsumer", topologies=[
            [(ZONE, ["test-zone-1"]), (SPECIAL, ["900"])],
            [(ZONE, ["test-zone-2"]), (SPECIAL, ["100"])]]),
        claim("pruned-overlap-pvc-a", class_name="pruned-overlap-a"),
        claim("pruned-overlap-pvc-b", class_name="pruned-overlap-b"))
    p = with_claims("pruned-overlap-pvc-a", "pruned-overlap-pvc-b")
    storage.provision(p)
    node = scheduled(storage.cluster, p)
    assert node.labels[ZONE] == "test-zone-1"
    assert node.labels[SPECIAL] == "900"


def _ephemeral_story(storage: Storage, class_name: str | None,
                     limits: Mapping[str, int]) -> None:
    """The ephemeral-volume stories: an initial pod's volume takes the node's one
    attachment of its driver, so the next pod's launches a second node."""
    initial = with_ephemeral("initial", class_name)
    storage.apply(claim("initial-tmp-ephemeral", class_name=class_name))
    storage.provision(initial)
    node = scheduled(storage.cluster, initial).name
    storage.csi_node(node, limits)
    second = with_ephemeral("second", class_name)
    storage.apply(claim("second-tmp-ephemeral", class_name=class_name))
    storage.provision(second)
    assert scheduled(storage.cluster, second).name != node


def test_an_ephemeral_volume_of_a_named_class_counts_against_its_driver() -> None:
    # It("should launch nodes for pods with ephemeral volume using the specified storage
    # class name")
    storage = Storage()
    storage.apply(storage_class("my-storage-class", mode="WaitForFirstConsumer",
                                zones=["test-zone-1"]),
                  storage_class("default-storage-class", provisioner="other-provider",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"],
                                default=True))
    _ephemeral_story(storage, "my-storage-class", {CSI_PROVIDER: 1, "other-provider": 10})


def test_an_ephemeral_volume_of_the_default_class_counts_against_its_driver() -> None:
    # It("should launch nodes for pods with ephemeral volume using a default storage class")
    storage = Storage()
    storage.apply(storage_class("default-storage-class", mode="WaitForFirstConsumer",
                                zones=["test-zone-1"], default=True))
    _ephemeral_story(storage, None, {CSI_PROVIDER: 1})


def test_an_ephemeral_volume_takes_the_newest_default_class() -> None:
    # It("should launch nodes for pods with ephemeral volume using the newest storage
    # class"): the older default class's driver has room for ten.
    storage = Storage()
    storage.apply(storage_class("default-storage-class", provisioner="other-provider",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"],
                                default=True),
                  storage_class("newer-default-storage-class", mode="WaitForFirstConsumer",
                                zones=["test-zone-1"], default=True))
    _ephemeral_story(storage, None, {CSI_PROVIDER: 1, "other-provider": 10})


def _pending_without_nodes(storage: Storage, p: Pod) -> None:
    storage.provision(p)
    assert storage.cluster.nodes == []
    assert [key for key, _ in storage.left_out] == [p.key]


def test_an_unbound_claim_of_an_immediate_class_waits() -> None:
    # It("should not launch nodes for pod with unbound volume for volumeBindingMode
    # immediate")
    storage = Storage()
    storage.apply(storage_class("default-storage-class", provisioner="other-provider",
                                mode="Immediate", zones=["test-zone-1"]),
                  claim("tmp-ephemeral", class_name="default-storage-class"))
    _pending_without_nodes(storage, with_claims("tmp-ephemeral"))


def test_a_deleting_claim_waits() -> None:
    # It("should not launch nodes for pod with deleting persistentVolumeClaim")
    storage = Storage()
    storage.apply(storage_class("default-storage-class", provisioner="other-provider",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"]),
                  claim("tmp-ephemeral", class_name="default-storage-class",
                        finalizers=["kubernetes.io/pvc-protection"]))
    storage.api.delete("PersistentVolumeClaim", "tmp-ephemeral", "default")
    _pending_without_nodes(storage, with_claims("tmp-ephemeral"))


def test_a_bound_volume_being_deleted_waits() -> None:
    # It("should not launch nodes for pod with bound persistentVolume that is marked for
    # deletion")
    storage = Storage()
    p = with_ephemeral("pod")
    pv = volume("test-pv", driver="other-provider")
    pv["metadata"]["finalizers"] = ["kubernetes.io/pv-protection"]
    storage.apply(pv, claim("pod-tmp-ephemeral", volume_name="test-pv"))
    storage.api.delete("PersistentVolume", "test-pv")
    _pending_without_nodes(storage, p)


def test_a_lost_claim_waits() -> None:
    # It("should not launch nodes for pod with Lost persistentVolumeClaim")
    storage = Storage()
    storage.apply(storage_class("default-storage-class", provisioner="other-provider",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"]))
    storage.apply(claim("tmp-ephemeral", class_name="default-storage-class"))
    lost = dict(storage.api.get("PersistentVolumeClaim", "tmp-ephemeral", "default"))
    storage.api.update({**lost, "status": {"phase": "Lost"}}, subresource="status")
    _pending_without_nodes(storage, with_claims("tmp-ephemeral"))


@pytest.mark.parametrize("annotated", [False, True],
                         ids=["when pv.kubernetes.io/bind-completed is missing",
                              "when pv.kubernetes.io/bind-completed is present"])
def test_a_claim_naming_its_volume_needs_the_bind_completed_annotation(annotated: bool
                                                                      ) -> None:
    # DescribeTable("should handle pods with PVCs with defined volumeName")
    storage = Storage()
    storage.apply(storage_class("default-storage-class", provisioner="other-provider",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"]),
                  volume("test-pv", driver="other-provider"),
                  claim("tmp-ephemeral", class_name="default-storage-class",
                        volume_name="test-pv", bind_completed=annotated))
    p = with_claims("tmp-ephemeral")
    storage.provision(p)
    assert (storage.cluster.node_of(p) is not None) == annotated


CLASSLESS = pytest.mark.parametrize("class_name", ["non-existent", ""],
                                    ids=["non-existent storage class",
                                         "explicitly disabled storage class (empty string)"])


@CLASSLESS
def test_a_bound_ephemeral_claim_without_a_class_launches(class_name: str) -> None:
    # DescribeTable("should launch nodes for pods with ephemeral volume without a storage
    # class when the PVC is bound")
    storage = Storage()
    storage.apply(claim("pod-tmp-ephemeral", class_name=class_name, volume_name="test-pv"),
                  volume("test-pv"))
    storage.provision(with_ephemeral("pod", class_name))
    assert len(storage.cluster.nodes) == 1


@CLASSLESS
def test_an_unbound_ephemeral_claim_without_a_class_waits(class_name: str) -> None:
    # DescribeTable("should not launch nodes for pods with ephemeral volume without a
    # storage class when the PVC is unbound"): its claim does not exist yet.
    _pending_without_nodes(Storage(), with_ephemeral("pod", class_name))


# -- Context("CSIMigration"): an in-tree class's volumes count against the EBS CSI driver.


def test_a_migrated_claim_counts_against_the_csi_driver() -> None:
    # It("should launch nodes for pods with non-dynamic PVC using a migrated PVC/PV")
    storage = Storage()
    storage.apply(storage_class("in-tree-storage-class", provisioner="kubernetes.io/aws-ebs",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"],
                                default=True),
                  claim("first", class_name="in-tree-storage-class"))
    initial = with_claims("first")
    storage.provision(initial)
    node = scheduled(storage.cluster, initial).name
    storage.csi_node(node, {"ebs.csi.aws.com": 1})
    storage.apply(volume("my-volume", zones=["test-zone-1"], source="awsElasticBlockStore"),
                  claim("second", class_name="in-tree-storage-class"))
    second = with_claims("second")
    storage.provision(second)
    assert scheduled(storage.cluster, second).name != node


def test_a_migrated_ephemeral_claim_counts_against_the_csi_driver() -> None:
    # It("should launch nodes for pods with ephemeral volume using a migrated PVC/PV")
    storage = Storage()
    storage.apply(storage_class("in-tree-storage-class", provisioner="kubernetes.io/aws-ebs",
                                mode="WaitForFirstConsumer", zones=["test-zone-1"],
                                default=True))
    _ephemeral_story(storage, "in-tree-storage-class", {"ebs.csi.aws.com": 1})


def test_plan_reads_the_newest_default_class_too() -> None:
    # "should launch nodes for pods with ephemeral volume using the newest storage class",
    # for `nodewright plan`: of two default classes in the manifests, the one applied last
    # is the claim's (no creationTimestamp), the later creationTimestamp when they have one.
    older = storage_class("a-newer-name-but-older", provisioner="other-provider", default=True)
    newer = storage_class("b-default", default=True)
    bodies = [older, newer, claim("data")]
    lookup = volumes.manifest_lookup(bodies)
    assert volumes.claim_class(lookup.claim("default", "data") or {}) == "b-default"
    stamped = [{**older, "metadata": {**older["metadata"],
                                      "creationTimestamp": "2026-01-05T00:00:02Z"}},
               {**newer, "metadata": {**newer["metadata"],
                                      "creationTimestamp": "2026-01-05T00:00:01Z"}},
               claim("data")]
    lookup = volumes.manifest_lookup(stamped)
    assert volumes.claim_class(lookup.claim("default", "data") or {}) == "a-newer-name-but-older"
