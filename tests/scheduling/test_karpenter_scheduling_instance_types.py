"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Instance Type
Compatibility"), Describe("Binpacking") and Describe("NodePool requirements instance
filtering"). Each test names its It."""

from __future__ import annotations

from nodewright.scheduling.catalog import Offering
from nodewright.scheduling.solver import SchedulingProblem, solve
from tests.scheduling.karpenter_scheduling import (
    ARCH,
    INSTANCE_TYPE,
    SIZE,
    SPECIAL,
    ZONE,
    expression,
    fake_it,
    nodepool,
    not_scheduled,
    numbered_catalog,
    pod,
    provisioned,
    requirement,
    scheduled,
)

BOTH_ARCHS = [requirement(ARCH, "In", "arm64", "amd64")]
AMD_ONLY = [requirement(ARCH, "In", "amd64")]


# -- Describe("Instance Type Compatibility") ---------------------------------------------


def test_a_pod_bigger_than_every_type_is_not_scheduled() -> None:
    # It("should not schedule if requesting more resources than any instance type has")
    p = pod(requests={"cpu": "512"})
    not_scheduled(provisioned(p), p)


def test_pods_of_different_archs_get_different_nodes() -> None:
    # It("should launch pods with different archs on different instances")
    pods = [pod(node_selector={ARCH: "amd64"}), pod(node_selector={ARCH: "arm64"})]
    cluster = provisioned(*pods, pools=[nodepool(requirements=BOTH_ARCHS)])
    assert len({scheduled(cluster, p).name for p in pods}) == 2


def test_an_instance_type_outside_the_nodepools_arch_is_excluded() -> None:
    # It("should exclude instance types that are not supported by the pod constraints (node
    # affinity/instance type)")
    p = pod(requirements=[expression(INSTANCE_TYPE, "In", "arm-instance-type")])
    not_scheduled(provisioned(p, pools=[nodepool(requirements=AMD_ONLY)]), p)


def test_only_the_type_big_enough_is_outside_the_nodepools_arch() -> None:
    # It("should exclude instance types that are not supported by the provider constraints
    # (arch)"): only the arm type has 14 cpu.
    p = pod(limits={"cpu": "14"})
    not_scheduled(provisioned(p, pools=[nodepool(requirements=AMD_ONLY)]), p)


def test_pods_of_different_instance_type_selectors_get_different_nodes() -> None:
    # It("should launch pods with different instance type node selectors on different
    # instances"): the deprecated beta key is read as the stable one.
    pods = [pod(node_selector={"beta.kubernetes.io/instance-type": "small-instance-type"}),
            pod(node_selector={INSTANCE_TYPE: "default-instance-type"})]
    cluster = provisioned(*pods, pools=[nodepool(requirements=BOTH_ARCHS)])
    assert len({scheduled(cluster, p).name for p in pods}) == 2


def test_pods_of_different_zone_selectors_get_different_nodes() -> None:
    # It("should launch pods with different zone selectors on different instances")
    pods = [pod(node_selector={ZONE: "test-zone-1"}), pod(node_selector={ZONE: "test-zone-2"})]
    cluster = provisioned(*pods, pools=[nodepool(requirements=BOTH_ARCHS)])
    assert len({scheduled(cluster, p).name for p in pods}) == 2


SUPER_GPU = "karpenter.sh/super-great-gpu"
BETTER_GPU = "karpenter.sh/even-better-gpu"


def _two_gpu_catalog() -> list[object]:
    catalog = list(numbered_catalog(5))
    catalog[0] = fake_it("fake-it-0", cpu=1, memory_gi=2, pods=10, extra={SUPER_GPU: 25})
    catalog[1] = fake_it("fake-it-1", cpu=2, memory_gi=4, pods=20, extra={BETTER_GPU: 25})
    return catalog


def test_resources_no_single_type_has_together_go_to_different_nodes() -> None:
    # It("should launch pods with resources that aren't on any single instance type on
    # different instances")
    pods = [pod(limits={SUPER_GPU: "1"}), pod(limits={BETTER_GPU: "1"})]
    cluster = provisioned(*pods, pools=[nodepool(catalog=_two_gpu_catalog())])  # type: ignore[arg-type]
    assert len({scheduled(cluster, p).name for p in pods}) == 2


def test_a_pod_asking_resources_no_single_type_has_is_not_scheduled() -> None:
    # It("should fail to schedule a pod with resources requests that aren't on a single
    # instance type")
    p = pod(limits={SUPER_GPU: "1", BETTER_GPU: "1"})
    not_scheduled(provisioned(p, pools=[nodepool(catalog=_two_gpu_catalog())]), p)  # type: ignore[arg-type]


# -- Context("Provider Specific Labels") -------------------------------------------------


def test_instance_types_are_filtered_by_their_labels() -> None:
    # It("should filter instance types that match labels")
    large, small = pod(node_selector={SIZE: "large"}), pod(node_selector={SIZE: "small"})
    cluster = provisioned(large, small, pools=[nodepool(catalog=numbered_catalog(5))])
    assert scheduled(cluster, large).labels[INSTANCE_TYPE] == "fake-it-4"
    assert scheduled(cluster, small).labels[INSTANCE_TYPE] == "fake-it-0"


def test_labels_no_type_has_together_are_not_scheduled() -> None:
    # It("should not schedule with incompatible labels")
    pods = [pod(node_selector={SIZE: "large", INSTANCE_TYPE: "fake-it-0"}),
            pod(node_selector={SIZE: "small", INSTANCE_TYPE: "fake-it-4"})]
    cluster = provisioned(*pods, pools=[nodepool(catalog=numbered_catalog(5))])
    for p in pods:
        not_scheduled(cluster, p)


def test_an_optional_label_is_scheduled_on_the_types_that_have_it() -> None:
    # It("should schedule optional labels")
    p = pod(requirements=[expression(SPECIAL, "Exists")])
    node = scheduled(provisioned(p, pools=[nodepool(catalog=numbered_catalog(5))]), p)
    assert SPECIAL in node.labels
    assert node.labels[INSTANCE_TYPE] == "fake-it-4"


def test_an_optional_label_can_be_refused() -> None:
    # It("should schedule without optional labels if disallowed")
    p = pod(requirements=[expression(SPECIAL, "DoesNotExist")])
    node = scheduled(provisioned(p, pools=[nodepool(catalog=numbered_catalog(5))]), p)
    assert SPECIAL not in node.labels


# -- Describe("Binpacking") --------------------------------------------------------------


def test_a_small_pod_gets_the_smallest_instance() -> None:
    # It("should schedule a small pod on the smallest instance")
    p = pod(requests={"memory": "100M"})
    assert scheduled(provisioned(p), p).labels[INSTANCE_TYPE] == "small-instance-type"


def test_a_small_pod_gets_the_smallest_possible_instance_type() -> None:
    # It("should schedule a small pod on the smallest possible instance type")
    p = pod(requests={"memory": "2000M"})
    assert scheduled(provisioned(p), p).labels[INSTANCE_TYPE] == "small-instance-type"


def test_several_small_pods_share_the_smallest_type() -> None:
    # It("should schedule multiple small pods on the smallest possible instance type")
    pods = [pod(requests={"memory": "10M"}) for _ in range(5)]
    cluster = provisioned(*pods)
    nodes = {scheduled(cluster, p).name for p in pods}
    assert len(nodes) == 1
    assert all(scheduled(cluster, p).labels[INSTANCE_TYPE] == "small-instance-type"
               for p in pods)


def test_new_nodes_are_created_when_a_node_is_full() -> None:
    # It("should create new nodes when a node is at capacity")
    pods = [pod(node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"}) for _ in range(40)]
    cluster = provisioned(*pods)
    assert len({scheduled(cluster, p).name for p in pods}) == 20
    assert {scheduled(cluster, p).labels[INSTANCE_TYPE] for p in pods} == {
        "default-instance-type"}


def test_small_and_large_pods_are_packed_together() -> None:
    # It("should pack small and large pods together")
    large = [pod(node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"}) for _ in range(40)]
    small = [pod(node_selector={ARCH: "amd64"}, requests={"memory": "400M"}) for _ in range(20)]
    cluster = provisioned(*large, *small)
    pods = [*large, *small]
    assert len({scheduled(cluster, p).name for p in pods}) == 20
    assert {scheduled(cluster, p).labels[INSTANCE_TYPE] for p in pods} == {
        "default-instance-type"}


def test_nodes_are_packed_tightly() -> None:
    # It("should pack nodes tightly")
    big, little = pod(requests={"cpu": "4.5"}), pod(requests={"cpu": "1"})
    cluster = provisioned(big, little, pools=[nodepool(catalog=numbered_catalog(5))])
    first, second = scheduled(cluster, big), scheduled(cluster, little)
    assert first.labels[INSTANCE_TYPE] != second.labels[INSTANCE_TYPE]


def test_zero_quantity_requests_of_unknown_resources_are_fine() -> None:
    # It("should handle zero-quantity resource requests")
    p = pod(requests={"foo.com/weird-resources": "0"}, limits={"foo.com/weird-resources": "0"})
    scheduled(provisioned(p), p)


def test_a_pod_above_every_types_memory_is_not_scheduled() -> None:
    # It("should not schedule pods that exceed every instance type's capacity")
    p = pod(requests={"memory": "2Ti"})
    not_scheduled(provisioned(p), p)


def test_new_nodes_are_created_when_a_node_has_no_pod_slot_left() -> None:
    # It("should create new nodes when a node is at capacity due to pod limits per node")
    pods = [pod(node_selector={ARCH: "amd64"}, requests={"memory": "1m", "cpu": "1m"})
            for _ in range(25)]
    cluster = provisioned(*pods)
    assert len({scheduled(cluster, p).name for p in pods}) == 5
    assert {scheduled(cluster, p).labels[INSTANCE_TYPE] for p in pods} == {
        "small-instance-type"}


def test_every_valid_type_is_offered_and_the_cheapest_launched() -> None:
    # It("should select for valid instance types, regardless of price")
    def one_offering(name: str, cpu: int, memory_gi: int, price: float) -> object:
        return fake_it(name, cpu=cpu, memory_gi=memory_gi,
                       offerings=[Offering("test-zone-1a", None, "on-demand", price)])
    catalog = [one_offering("medium", 2, 2, 3.0), one_offering("small", 1, 1, 2.0),
               one_offering("large", 4, 4, 1.0)]
    p = pod(limits={"cpu": "1m", "memory": "1Mi"})
    result = solve(SchedulingProblem(pods=[p], nodepools=[nodepool(catalog=catalog)]))  # type: ignore[arg-type]
    (claim,) = result.nodeclaims
    assert claim.instance_type == "large"
    assert {name for name, _ in claim.instance_types} == {"small", "medium", "large"}


def test_runtime_class_overhead_is_counted() -> None:
    # It("should take pod runtime class into consideration"): 1 cpu and a runtime class's
    # 2 cpu of overhead do not fit the 2-cpu type.
    p = pod(requests={"cpu": "1"}, overhead={"cpu": "2"})
    assert scheduled(provisioned(p), p).labels[INSTANCE_TYPE] == "default-instance-type"


# -- Describe("NodePool requirements instance filtering") --------------------------------


FILTERED = "no instance type satisfies the NodePool's requirements"


def _filtered_reasons(pool_requirements: list[object], *pods: object) -> list[str]:
    pool = nodepool(requirements=pool_requirements)  # type: ignore[arg-type]
    result = solve(SchedulingProblem(pods=list(pods), nodepools=[pool]))  # type: ignore[arg-type]
    assert result.nodeclaims == ()
    assert sorted(key for key, _ in result.unschedulable) == sorted(
        p.key for p in pods)  # type: ignore[attr-defined]
    return [reason for _, reason in result.unschedulable]


def test_a_pod_gets_a_reason_when_the_nodepool_leaves_no_type() -> None:
    # It("should return appropriate pod error when no available instance types exist"):
    # Karpenter's "nodepool requirements filtered out all available instance types".
    first = pod()
    scheduled(provisioned(first), first)
    big = pod(requests={"cpu": "32", "memory": "256Gi"}, limits={"cpu": "32", "memory": "256Gi"})
    (reason,) = _filtered_reasons(
        [requirement(INSTANCE_TYPE, "In", "non-existent-instance-type")], big)
    assert FILTERED in reason


def test_every_pod_gets_the_reason() -> None:
    # It("should handle multiple pods when requirements filter out all instance types")
    reasons = _filtered_reasons([requirement(ARCH, "In", "non-existent-arch")],
                                pod(), pod(), pod())
    assert len(reasons) == 3 and all(FILTERED in reason for reason in reasons)


def test_conflicting_nodepool_requirements_leave_no_type() -> None:
    # It("should handle conflicting requirements that eliminate all instance types")
    (reason,) = _filtered_reasons([requirement(ARCH, "In", "amd64"),
                                   requirement(ARCH, "In", "arm64")], pod())
    assert FILTERED in reason


def test_zones_no_type_is_offered_in_leave_no_type() -> None:
    # It("should handle zone requirements that filter out all instance types")
    (reason,) = _filtered_reasons(
        [requirement(ZONE, "In", "non-existent-zone-1", "non-existent-zone-2")], pod())
    assert FILTERED in reason
