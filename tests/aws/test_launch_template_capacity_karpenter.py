"""Karpenter's launch template suite (pkg/providers/launchtemplate/suite_test.go, v1.14.1):
its Context("Ephemeral Storage") packing stories and the AL2 / Bottlerocket memory overhead
Its. Each test names its It.

Karpenter provisions pods through its scheduler against its fake instance types; here the
same NodePool and EC2NodeClass are planned against us-west-2's catalog
(`tests.aws.test_instancetype_karpenter.provisioned`), whose types have the root volume the
node class gives them (20Gi by default) as ephemeral storage, or their NVMe disks under
`instanceStorePolicy: RAID0`.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.quantity import parse_quantity
from nodewright.scheduling import offline_data
from nodewright.scheduling.solver import SchedulingResult
from tests.aws.test_instancetype_karpenter import (
    NO_VM_OVERHEAD,
    built,
    placed,
    pod_manifest,
    provisioned,
)
from tests.controllers.conftest import WORKSHOP
from tests.harness import World, node_pool

CUSTOM = {"amiFamily": "Custom", "amiSelectorTerms": [{"tags": {"*": "*"}}]}


def storage(name: str, request: str) -> dict[str, Any]:
    return pod_manifest(name, requests={"ephemeral-storage": request})


def scheduled(result: SchedulingResult) -> set[str]:
    return set(placed(result))


def unschedulable(result: SchedulingResult) -> set[str]:
    return {pod.split("/")[1] for pod, _ in result.unschedulable}


def ebs(device: str, size: str, root: bool = False) -> dict[str, Any]:
    mapping: dict[str, Any] = {"deviceName": device, "ebs": {"volumeSize": size}}
    if root:
        mapping["rootVolume"] = True
    return mapping


# --- Ephemeral Storage ----------------------------------------------------------------------


def test_pods_pack_beside_a_daemonset_asking_for_ephemeral_storage() -> None:
    """It("should pack pods when a daemonset has an ephemeral-storage request")"""
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "agent", "image": "agent", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}}}]}}}}
    result = provisioned([daemonset, pod_manifest("pod")])
    assert scheduled(result) == {"pod"}


def test_a_pod_with_any_ephemeral_storage_request_schedules() -> None:
    """It("should pack pods with any ephemeral-storage request")"""
    assert scheduled(provisioned([storage("pod", "1G")])) == {"pod"}


def test_a_pod_with_a_large_ephemeral_storage_request_schedules() -> None:
    """It("should pack pods with large ephemeral-storage request")"""
    assert scheduled(provisioned([storage("pod", "10Gi")])) == {"pod"}


def test_a_request_beyond_the_root_volume_less_overhead_does_not_schedule() -> None:
    """It("should not pack pods if the sum of pod ephemeral-storage and overhead exceeds node
    capacity"): 19Gi of a 20Gi root volume, less kube-reserved and the eviction threshold."""
    assert unschedulable(provisioned([storage("pod", "19Gi")])) == {"pod"}


def test_raid0_instance_storage_takes_a_request_larger_than_any_root_volume() -> None:
    """It("should pack pods if the pod's ephemeral-storage exceeds node capacity and instance
    storage is mounted"): with RAID0 the NVMe disks are the node's ephemeral storage
    (Karpenter's fake types pick m6idn.32xlarge, 7600G; here the cheapest type whose disks
    hold 5000Gi, with exactly its disks as capacity)."""
    result = provisioned([storage("pod", "5000Gi")], instanceStorePolicy="RAID0")

    (claim,) = result.nodeclaims
    assert claim.pods == ("default/pod",)
    info = next(i for i in offline_data.instance_types()
                if i["InstanceType"] == claim.instance_type)
    disks = info["InstanceStorageInfo"]["TotalSizeInGB"] * 1000**3
    assert disks * 1000 >= parse_quantity("5000Gi")  # quantities are in thousandths


def test_two_pods_whose_storage_fits_no_single_node_get_two_nodes() -> None:
    """It("should launch multiple nodes if sum of pod ephemeral-storage requests exceeds a
    single nodes capacity")"""
    result = provisioned([storage("one", "10Gi"), storage("two", "10Gi")])
    assert scheduled(result) == {"one", "two"}
    assert len(result.nodeclaims) == 2


def test_only_the_pod_whose_storage_fits_schedules() -> None:
    """It("should only pack pods with ephemeral-storage requests that will fit on an available
    node")"""
    result = provisioned([storage("fits", "10Gi"), storage("too-big", "150Gi")])
    assert scheduled(result) == {"fits"}
    assert unschedulable(result) == {"too-big"}


def test_no_type_with_enough_storage_leaves_the_pod_pending() -> None:
    """It("should not pack pod if no available instance types have enough storage")"""
    assert unschedulable(provisioned([storage("pod", "150Gi")])) == {"pod"}


def test_the_node_class_root_volume_sets_the_storage() -> None:
    """It("should pack pods using the blockdevicemappings from the provider spec when
    defined"): a 50G /dev/xvda root (AL2023's) holds 25Gi."""
    result = provisioned([storage("pod", "25Gi")],
                         blockDeviceMappings=[ebs("/dev/xvda", "50G"), ebs("/dev/xvdb", "20G")])
    assert scheduled(result) == {"pod"}


def test_custom_family_storage_is_its_last_volume() -> None:
    """It("should pack pods using blockdevicemappings for Custom AMIFamily"): without a root
    volume marked, the Custom family's ephemeral storage is its last mapping (40G)."""
    result = provisioned([storage("pod", "25Gi")], **CUSTOM,
                         blockDeviceMappings=[ebs("/dev/xvda", "20G"), ebs("/dev/xvdb", "40G")])
    assert scheduled(result) == {"pod"}


def test_the_volume_marked_root_sets_the_storage() -> None:
    """It("should pack pods using the configured root volume in blockdevicemappings"): the
    40G volume marked rootVolume, between two of 20G."""
    result = provisioned([storage("pod", "25Gi")], **CUSTOM, blockDeviceMappings=[
        ebs("/dev/xvda", "20G"), ebs("/dev/xvdb", "40G", root=True), ebs("/dev/xvdc", "20G")])
    assert scheduled(result) == {"pod"}


# --- Memory overhead ------------------------------------------------------------------------


def memory_overhead(alias: str, **kubelet: Any) -> int:
    m5 = built("m5.xlarge", NO_VM_OVERHEAD, amiSelectorTerms=[{"alias": alias}],
               kubelet=kubelet)
    return m5.overhead.total["memory"]


def test_al2_memory_overhead_follows_the_eni_limited_pods() -> None:
    """Context("AL2") It("should calculate memory overhead based on eni limited pods"):
    m5.xlarge, 58 pods: 11Mi each + 255Mi kube-reserved, + 100Mi eviction threshold."""
    assert memory_overhead("al2@latest") == parse_quantity("993Mi")


def test_bottlerocket_memory_overhead_follows_the_eni_limited_pods() -> None:
    """Context("Bottlerocket") It("should calculate memory overhead based on eni limited
    pods")"""
    assert memory_overhead("bottlerocket@latest") == parse_quantity("993Mi")


def test_bottlerocket_memory_overhead_follows_max_pods() -> None:
    """Context("Bottlerocket") It("should calculate memory overhead based on max pods"):
    110 pods: 11 x 110 + 255 + 100 = 1565Mi."""
    assert memory_overhead("bottlerocket@latest", maxPods=110) == parse_quantity("1565Mi")


# --- A NodePool whose EC2NodeClass does not exist -------------------------------------------


def test_a_nodepool_without_its_node_class_launches_nothing() -> None:
    """Context("User Data") Context("Bottlerocket") It("should not bootstrap when provider ref
    points to a non-existent EC2NodeClass resource"): in the in-memory cluster with the
    controllers, the NodePool names an EC2NodeClass that was never applied; no NodeClaim is
    made and the pod stays pending."""
    world = World()
    pool = node_pool("default", families=["m5"])
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "doesnotexist"
    world.apply(pool, pod_manifest("pod") | {"metadata": {"name": "pod",
                                                           "namespace": "default"}})
    world.advance(60)

    assert world.nodeclaims() == []
    assert [p["metadata"]["name"] for p in world.pending_pods()] == ["pod"]


# --- Labels ---------------------------------------------------------------------------------


def test_a_launched_node_is_labelled_with_its_os_arch_and_type() -> None:
    """Context("Labels") It("should apply labels to the node"), in the in-memory cluster with
    the controllers."""
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    assert world.settle()

    (node,) = world.nodes()
    assert {"kubernetes.io/os", "kubernetes.io/arch",
            "node.kubernetes.io/instance-type"} <= node["metadata"]["labels"].keys()
