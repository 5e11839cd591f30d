"""Karpenter's instance type selection suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/instance_selection_test.go, Describe("Instance Type
Selection"). Each test (or table row) names its It.

As in Karpenter, the catalog is `fake.InstanceTypesAssorted()`: a type for every cpu count
(1 to 64), memory size (1 to 128 Gi), zone, capacity type, OS (linux or windows) and arch,
each with one offering priced by its resources, handed to the NodePool in a shuffled order
(a fixed seed here). The NodePool is applied as a manifest and adapted as the provisioner
adapts it (`nodepool_template`); ExpectProvisioned is a solve on `karpenter_fake.Cluster`,
which launches each planned NodeClaim as a node. Karpenter's `supportedInstanceTypes(
cloudProvider.CreateCalls[0])` is the first planned NodeClaim's instance types (all of
them, not only the 60 cheapest Karpenter's suite sends). The truncation It runs the
provisioner in the in-memory cluster, where the NodeClaim's instance types are cut."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from nodewright.api import NodePool
from nodewright.controllers.provisioning import nodeclaims
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate, nodepool_template
from nodewright.scheduling.pods import ExistingNode, Pod
from nodewright.scheduling.solver import SchedulingResult
from tests.harness import NODE_CLASS, World, node_pool
from tests.scheduling.karpenter_fake import Cluster
from tests.scheduling.karpenter_scheduling import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    OS,
    ZONE,
    expression,
    fake_it,
    not_scheduled,
    pod,
    scheduled,
)

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
NUMERICAL = "karpenter/numerical-value"
SMALL_POD = {"cpu": "0.9", "memory": "0.9Gi"}


def price_of(cpu: float, memory_gi: float) -> float:
    """fake.PriceFromResources: 0.1 a cpu and 0.1 a GB of memory."""
    return 0.1 * cpu + 0.1 * memory_gi * 2**30 / 1e9


def assorted() -> list[InstanceType]:
    """fake.InstanceTypesAssorted(), shuffled as the suite's BeforeEach shuffles it."""
    found: list[InstanceType] = []
    for cpu in (1, 2, 4, 8, 16, 32, 64):
        for memory in (1, 2, 4, 8, 16, 32, 64, 128):
            for zone in ZONES:
                for capacity_type in ("spot", "on-demand"):
                    for os in ("linux", "windows"):
                        for arch in ("amd64", "arm64"):
                            it = fake_it(
                                f"{cpu}-cpu-{memory}-mem-{arch}-{os}-{zone}-{capacity_type}",
                                cpu=cpu, memory_gi=memory, arch=arch,
                                offerings=[Offering(zone, None, capacity_type,
                                                    price_of(cpu, memory))])
                            found.append(replace(it, labels={**it.labels, OS: os}))
    random.Random(1).shuffle(found)
    return found


CATALOG = assorted()
MIN_PRICE = min(o.price for it in CATALOG for o in it.offerings)
BY_NAME = {it.name: it for it in CATALOG}


def entry(key: str, operator: str, *values: str, min_values: int | None = None
          ) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    if min_values is not None:
        found["minValues"] = min_values
    return found


# The suite's NodePool: capacity type In [spot, on-demand], arch In [arm64, amd64].
DEFAULT_REQUIREMENTS = [entry(CAPACITY_TYPE, "In", "spot", "on-demand"),
                        entry(ARCH, "In", "arm64", "amd64")]


def applied(requirements: Sequence[Mapping[str, Any]] | None = None,
            catalog: Sequence[InstanceType] = CATALOG) -> NodePoolTemplate:
    """ExpectApplied(nodePool): the suite's NodePool, or one whose requirements a test
    replaced, as the provisioner adapts it."""
    listed = DEFAULT_REQUIREMENTS if requirements is None else requirements
    model = NodePool.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"},
            "requirements": [dict(r) for r in listed]}}}})
    return nodepool_template(model, list(catalog))


def provision(pool: NodePoolTemplate, *pods: Pod) -> tuple[Cluster, SchedulingResult]:
    cluster = Cluster()
    return cluster, cluster.provision([pool], *pods)


def node_price(node: ExistingNode) -> float:
    """The price of the node's offering: its type's offering in its zone and capacity type."""
    it = BY_NAME[node.labels[INSTANCE_TYPE]]
    return min(o.price for o in it.offerings
               if o.zone == node.labels[ZONE] and o.capacity_type == node.labels[CAPACITY_TYPE])


def first_claim_types(result: SchedulingResult,
                      catalog: Sequence[InstanceType] = CATALOG) -> list[InstanceType]:
    """supportedInstanceTypes(cloudProvider.CreateCalls[0])."""
    assert result.nodeclaims, "no NodeClaim was planned"
    names = {name for name, _ in result.nodeclaims[0].instance_types}
    return [it for it in catalog if it.name in names]


def offered(it: InstanceType, key: str, value: str) -> bool:
    """ExpectInstancesWithLabel: a type's label, or for zone and capacity type one of its
    offerings'."""
    if key == ZONE:
        return any(o.zone == value for o in it.offerings)
    if key == CAPACITY_TYPE:
        return any(o.capacity_type == value for o in it.offerings)
    return it.labels.get(key) == value


def with_offering(it: InstanceType, capacity_type: str, zone: str) -> bool:
    """ExpectInstancesWithOffering."""
    return any(o.capacity_type == capacity_type and o.zone == zone for o in it.offerings)


# -- "should schedule on one of the cheapest instances (...)" ----------------------------

SPOT_ZONE_2 = [(CAPACITY_TYPE, "spot"), (ZONE, "test-zone-2")]

# (NodePool requirements, or None for the suite's; the pod's required node affinity;
#  the label every type of the first NodeClaim has.) Each id is the It's parenthesis.
CHEAPEST = [
    # It("should schedule on one of the cheapest instances")
    pytest.param(None, [], [], id="no constraints"),
    # It("should schedule on one of the cheapest instances (pod arch = amd64)")
    pytest.param(None, [(ARCH, "amd64")], [(ARCH, "amd64")], id="pod arch = amd64"),
    # It("should schedule on one of the cheapest instances (pod arch = arm64)")
    pytest.param(None, [(ARCH, "arm64")], [(ARCH, "arm64")], id="pod arch = arm64"),
    # It("should schedule on one of the cheapest instances (prov arch = amd64)")
    pytest.param([(ARCH, "amd64")], [], [(ARCH, "amd64")], id="prov arch = amd64"),
    # It("should schedule on one of the cheapest instances (prov arch = arm64)")
    pytest.param([(ARCH, "arm64")], [], [(ARCH, "arm64")], id="prov arch = arm64"),
    # It("should schedule on one of the cheapest instances (prov os = windows)"), the
    # first of the two Its of that name
    pytest.param([(OS, "windows")], [], [(OS, "windows")], id="prov os = windows"),
    # It("should schedule on one of the cheapest instances (pod os = windows)")
    pytest.param(None, [(OS, "windows")], [(OS, "windows")], id="pod os = windows"),
    # It("should schedule on one of the cheapest instances (prov os = windows)"), the second
    pytest.param([(OS, "windows")], [], [(OS, "windows")], id="prov os = windows (repeated)"),
    # It("should schedule on one of the cheapest instances (pod os = linux)"), the first of
    # the two Its of that name
    pytest.param(None, [(OS, "linux")], [(OS, "linux")], id="pod os = linux"),
    # It("should schedule on one of the cheapest instances (pod os = linux)"), the second
    pytest.param(None, [(OS, "linux")], [(OS, "linux")], id="pod os = linux (repeated)"),
    # It("should schedule on one of the cheapest instances (prov zone = test-zone-2)")
    pytest.param([(ZONE, "test-zone-2")], [], [(ZONE, "test-zone-2")],
                 id="prov zone = test-zone-2"),
    # It("should schedule on one of the cheapest instances (pod zone = test-zone-2)")
    pytest.param(None, [(ZONE, "test-zone-2")], [(ZONE, "test-zone-2")],
                 id="pod zone = test-zone-2"),
    # It("should schedule on one of the cheapest instances (prov ct = spot)")
    pytest.param([(CAPACITY_TYPE, "spot")], [], [(CAPACITY_TYPE, "spot")], id="prov ct = spot"),
    # It("should schedule on one of the cheapest instances (pod ct = spot)")
    pytest.param(None, [(CAPACITY_TYPE, "spot")], [(CAPACITY_TYPE, "spot")],
                 id="pod ct = spot"),
]


@pytest.mark.parametrize(("pool_requirements", "pod_requirements", "labelled"), CHEAPEST)
def test_the_cheapest_type_is_chosen_and_every_type_offered_fits(
        pool_requirements: list[tuple[str, str]] | None,
        pod_requirements: list[tuple[str, str]], labelled: list[tuple[str, str]]) -> None:
    """Karpenter instance_selection_test.go: the Its "should schedule on one of the cheapest
    instances (...)" named in each row: the node is of the cheapest price there is, and
    every instance type the NodeClaim offers the cloud has the constrained label."""
    pool = applied(None if pool_requirements is None else
                   [entry(key, "In", value) for key, value in pool_requirements])
    p = pod(requirements=[expression(key, "In", value) for key, value in pod_requirements])
    cluster, result = provision(pool, p)
    assert node_price(scheduled(cluster, p)) == MIN_PRICE
    types = first_claim_types(result)
    for key, value in labelled:
        assert all(offered(it, key, value) for it in types), (key, value)


# (NodePool requirements, pod requirements, the offering every type has, labels every
#  type has.) Each id is the It's parenthesis.
CHEAPEST_COMBINED = [
    # It("should schedule on one of the cheapest instances (prov ct = ondemand, prov zone =
    # test-zone-1)")
    pytest.param([(CAPACITY_TYPE, "on-demand"), (ZONE, "test-zone-1")], [],
                 ("on-demand", "test-zone-1"), [],
                 id="prov ct = ondemand, prov zone = test-zone-1"),
    # It("should schedule on one of the cheapest instances (pod ct = spot, pod zone =
    # test-zone-1)")
    pytest.param(None, [(CAPACITY_TYPE, "spot"), (ZONE, "test-zone-1")],
                 ("spot", "test-zone-1"), [], id="pod ct = spot, pod zone = test-zone-1"),
    # It("should schedule on one of the cheapest instances (prov ct = spot, pod zone =
    # test-zone-2)")
    pytest.param([(CAPACITY_TYPE, "spot")], [(ZONE, "test-zone-2")], ("spot", "test-zone-2"),
                 [], id="prov ct = spot, pod zone = test-zone-2"),
    # It("should schedule on one of the cheapest instances (prov ct =
    # ondemand/test-zone-1/arm64/windows)")
    pytest.param([(ARCH, "arm64"), (OS, "windows"), (CAPACITY_TYPE, "on-demand"),
                  (ZONE, "test-zone-1")], [], ("on-demand", "test-zone-1"),
                 [(OS, "windows"), (ARCH, "arm64")],
                 id="prov ct = ondemand/test-zone-1/arm64/windows"),
    # It("should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod =
    # amd64/linux)"): as in Karpenter, the NodePool is amd64/linux and the pod spot in
    # test-zone-2 (the title has them the other way round)
    pytest.param([(ARCH, "amd64"), (OS, "linux")], SPOT_ZONE_2, ("spot", "test-zone-2"),
                 [(OS, "linux"), (ARCH, "amd64")],
                 id="prov = spot/test-zone-2, pod = amd64/linux"),
    # It("should schedule on one of the cheapest instances (pod ct =
    # spot/test-zone-2/amd64/linux)")
    pytest.param(None, [(ARCH, "amd64"), (OS, "linux"), *SPOT_ZONE_2],
                 ("spot", "test-zone-2"), [(OS, "linux"), (ARCH, "amd64")],
                 id="pod ct = spot/test-zone-2/amd64/linux"),
]


@pytest.mark.parametrize(("pool_requirements", "pod_requirements", "offering", "labelled"),
                         CHEAPEST_COMBINED)
def test_the_cheapest_type_is_chosen_within_a_zone_and_capacity_type(
        pool_requirements: list[tuple[str, str]] | None,
        pod_requirements: list[tuple[str, str]], offering: tuple[str, str],
        labelled: list[tuple[str, str]]) -> None:
    """Karpenter instance_selection_test.go: the Its "should schedule on one of the cheapest
    instances (...)" named in each row, where NodePool and pod constrain the offering
    (capacity type and zone together) and maybe the OS and arch."""
    pool = applied(None if pool_requirements is None else
                   [entry(key, "In", value) for key, value in pool_requirements])
    p = pod(requirements=[expression(key, "In", value) for key, value in pod_requirements])
    cluster, result = provision(pool, p)
    assert node_price(scheduled(cluster, p)) == MIN_PRICE
    types = first_claim_types(result)
    capacity_type, zone = offering
    assert all(with_offering(it, capacity_type, zone) for it in types)
    for key, value in labelled:
        assert all(offered(it, key, value) for it in types), (key, value)


# -- "should not schedule if no instance type matches selector (...)" --------------------


def _without_arm(in_zone: str | None = None) -> list[InstanceType]:
    """The catalog without arm64 types (only those offered in `in_zone`, when given)."""
    return [it for it in CATALOG
            if it.labels[ARCH] == "amd64"
            or (in_zone is not None and all(o.zone != in_zone for o in it.offerings))]


def test_no_arm_type_leaves_an_arm_pod_pending() -> None:
    """Karpenter instance_selection_test.go It("should not schedule if no instance type
    matches selector (pod arch = arm)")."""
    catalog = _without_arm()
    assert catalog
    p = pod(requirements=[expression(ARCH, "In", "arm64")])
    cluster, result = provision(applied(catalog=catalog), p)
    not_scheduled(cluster, p)
    assert result.nodeclaims == ()


def test_no_arm_type_in_the_pods_zone_leaves_it_pending() -> None:
    """Karpenter instance_selection_test.go It("should not schedule if no instance type
    matches selector (pod arch = arm zone=test-zone-2)"): arm64 types remain in the other
    zones."""
    catalog = _without_arm(in_zone="test-zone-2")
    assert any(it.labels[ARCH] == "arm64" for it in catalog)
    p = pod(requirements=[expression(ARCH, "In", "arm64"), expression(ZONE, "In", "test-zone-2")])
    cluster, result = provision(applied(catalog=catalog), p)
    not_scheduled(cluster, p)
    assert result.nodeclaims == ()


def test_an_arm_nodepool_without_arm_in_the_pods_zone_leaves_it_pending() -> None:
    """Karpenter instance_selection_test.go It("should not schedule if no instance type
    matches selector (prov arch = arm / pod zone=test-zone-2)")."""
    catalog = _without_arm(in_zone="test-zone-2")
    p = pod(requirements=[expression(ZONE, "In", "test-zone-2")])
    cluster, result = provision(applied([entry(ARCH, "In", "arm64")], catalog), p)
    not_scheduled(cluster, p)
    assert result.nodeclaims == ()


# -- resources and prices ----------------------------------------------------------------

CPUS = ("0.1", "1.0", "2.0", "2.5", "4.0", "8.0", "16.0")
MEMORIES = ("0.1", "1.0", "2.0", "4.0", "8.0", "16.0", "32.0")


def test_pods_land_on_a_type_with_room_for_them_and_its_overhead() -> None:
    """Karpenter instance_selection_test.go It("should schedule on an instance with enough
    resources"): for each of 49 sizes, three pods of that size go onto one node, and every
    type the NodeClaim offers has more cpu and memory than the pods and its overhead
    together. Scheduling leaves each type's capacity and overhead as they were."""
    before = {it.name: copy.deepcopy((it.capacity, it.overhead)) for it in CATALOG}
    pool = applied()
    for cpu in CPUS:
        for memory in MEMORIES:
            pods = [pod(requests={"cpu": cpu, "memory": f"{memory}Gi"}) for _ in range(3)]
            cluster, result = provision(pool, *pods)
            assert len({scheduled(cluster, p).name for p in pods}) == 1, (cpu, memory)
            total_cpu = sum(p.requests["cpu"] for p in pods)
            total_memory = sum(p.requests["memory"] for p in pods)
            for it in first_claim_types(result):
                overhead = it.overhead.total
                assert total_cpu + overhead.get("cpu", 0) < it.capacity["cpu"], it.name
                assert total_memory + overhead.get("memory", 0) < it.capacity["memory"], it.name
    assert {it.name: (it.capacity, it.overhead) for it in CATALOG} == before


def _on_demand_and_spot(name: str, on_demand: float, spot: float) -> InstanceType:
    it = fake_it(name, cpu=1, memory_gi=1, offerings=[
        Offering("test-zone-1a", None, "on-demand", on_demand),
        Offering("test-zone-1a", None, "spot", spot)])
    return replace(it, labels={**it.labels, OS: "linux"})


def test_the_cheaper_on_demand_type_wins_whatever_the_spot_prices() -> None:
    """Karpenter instance_selection_test.go It("should schedule on cheaper on-demand instance
    even when spot price ordering would place other instance types first"): by spot price
    test-instance2 comes first; by the on-demand price the NodePool allows, test-instance1."""
    catalog = [_on_demand_and_spot("test-instance1", 1.0, 0.2),
               _on_demand_and_spot("test-instance2", 1.3, 0.1)]
    p = pod()
    cluster, _ = provision(applied([entry(CAPACITY_TYPE, "In", "on-demand")], catalog), p)
    assert scheduled(cluster, p).labels[INSTANCE_TYPE] == "test-instance1"


# -- Context("MinValues") ----------------------------------------------------------------


def min_values_type(name: str, cpu: int, price: float, numerical: str | None = None,
                    arch: str = "arm64") -> InstanceType:
    """The Context's fake.NewInstanceType: linux, `cpu` cpus and as many Gi, one spot
    offering in test-zone-1-spot; `numerical` is its karpenter/numerical-value."""
    it = fake_it(name, cpu=cpu, memory_gi=cpu, arch=arch,
                 offerings=[Offering("test-zone-1-spot", None, "spot", price)])
    labels = {**it.labels, OS: "linux"}
    if numerical is not None:
        labels[NUMERICAL] = numerical
    return replace(it, labels=labels)


def small_pods(*requirements: dict[str, Any]) -> list[Pod]:
    """Two pods of 0.9 cpu and 0.9Gi: both fit together only on a type above 1 cpu."""
    return [pod(requests=SMALL_POD, requirements=list(requirements)) for _ in range(2)]


def expect_two_nodes_of_two_types(pool: NodePoolTemplate, catalog: Sequence[InstanceType]
                                  ) -> None:
    """The pods are on different nodes, and the first NodeClaim offers at least two types
    (one NodeClaim for both would have only the type that fits both)."""
    pods = small_pods()
    cluster, result = provision(pool, *pods)
    first, second = (scheduled(cluster, p) for p in pods)
    assert first.name != second.name
    assert len(first_claim_types(result, catalog)) >= 2


def test_instance_type_min_values_split_the_pods() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule
    respecting the minValues from instance-type requirements")."""
    catalog = [min_values_type("instance-type-1", 1, 0.52),
               min_values_type("instance-type-2", 4, 1.0)]
    pool = applied([entry(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2",
                          min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_gt_min_values_split_the_pods() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule
    respecting the minValues in Gt operator"): values 3 and 4 are above 2."""
    catalog = [min_values_type("instance-type-1", 1, 0.52, "2"),
               min_values_type("instance-type-2", 1, 1.0, "3"),
               min_values_type("instance-type-3", 4, 1.2, "4")]
    pool = applied([entry(NUMERICAL, "Gt", "2", min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_a_pods_gt_that_leaves_one_value_is_not_scheduled() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("scheduler should fail if
    the minValues in Gt operator is not satisfied"): the NodePool wants 2 values of the key
    (Exists), the pods' Gt 2 leaves one; the reason names the label."""
    catalog = [min_values_type("instance-type-1", 1, 0.52, "2"),
               min_values_type("instance-type-2", 4, 1.0, "3")]
    pool = applied([entry(NUMERICAL, "Exists", min_values=2)], catalog)
    pods = small_pods(expression(NUMERICAL, "Gt", "2"))
    cluster, result = provision(pool, *pods)
    for p in pods:
        not_scheduled(cluster, p)
    reasons = dict(result.unschedulable)
    assert set(reasons) == {p.key for p in pods}
    for reason in reasons.values():
        assert "minValues" in reason and NUMERICAL in reason, reason


def test_lt_min_values_split_the_pods() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule
    respecting the minValues in Lt operator"): values 2 and 3 are below 4."""
    catalog = [min_values_type("instance-type-1", 1, 0.52, "2"),
               min_values_type("instance-type-2", 2, 1.0, "3"),
               min_values_type("instance-type-3", 4, 1.2, "4")]
    pool = applied([entry(NUMERICAL, "Lt", "4", min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_an_lt_that_leaves_one_value_schedules_nothing() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("scheduler should fail if
    the minValues in Lt operator is not satisfied"): only value 2 is below 4."""
    catalog = [min_values_type("instance-type-1", 2, 0.52, "2"),
               min_values_type("instance-type-2", 4, 1.2, "4")]
    pool = applied([entry(NUMERICAL, "Lt", "4", min_values=2)], catalog)
    pods = small_pods()
    cluster, _ = provision(pool, *pods)
    for p in pods:
        not_scheduled(cluster, p)


def test_in_and_not_in_min_values_take_the_larger() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule
    considering the max of the minValues of In and NotIn operators in the instance-type
    requirements"): In [1, 2, 3] minValues 1 and NotIn [3] minValues 2 ask for 2 of
    types 1 and 2."""
    catalog = [min_values_type("instance-type-1", 1, 0.52),
               min_values_type("instance-type-2", 2, 1.0),
               min_values_type("instance-type-3", 4, 1.2)]
    pool = applied([
        entry(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2", "instance-type-3",
              min_values=1),
        entry(INSTANCE_TYPE, "NotIn", "instance-type-3", min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_gt_and_lt_min_values_take_the_larger() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule
    considering the max of the minValues of Gt and Lt operators."): Gt 2 minValues 1 and
    Lt 5 minValues 2 ask for 2 of values 3 and 4."""
    catalog = [min_values_type("instance-type-1", 1, 0.52, "2"),
               min_values_type("instance-type-2", 1, 1.0, "3"),
               min_values_type("instance-type-3", 4, 1.2, "4"),
               min_values_type("instance-type-4", 4, 1.2, "5")]
    pool = applied([entry(NUMERICAL, "Gt", "2", min_values=1),
                    entry(NUMERICAL, "Lt", "5", min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_min_values_above_the_types_there_are_schedule_nothing() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("schedule should fail if
    minimum number of InstanceTypes is not met as per the minValues in the requirement"):
    ten types, minValues 11."""
    catalog = CATALOG[:10]
    p = pod()
    cluster, result = provision(
        applied([entry(INSTANCE_TYPE, "Exists", min_values=11)], catalog), p)
    not_scheduled(cluster, p)
    assert result.nodeclaims == ()


def test_exists_and_in_min_values_take_the_larger() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule and pick
    the max of minValues of InstanceTypes if multiple operators are used for the same
    requirement.")."""
    catalog = [min_values_type("instance-type-1", 1, 0.52),
               min_values_type("instance-type-2", 4, 1.0)]
    pool = applied([entry(INSTANCE_TYPE, "Exists", min_values=1),
                    entry(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2",
                          min_values=2)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_min_values_on_two_keys_are_both_kept() -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("should schedule and
    respect multiple requirement keys with minValues"): two archs (one type each) and at
    least one type."""
    catalog = [min_values_type("instance-type-1", 1, 0.52),
               min_values_type("instance-type-2", 4, 1.0, arch="amd64")]
    pool = applied([entry(ARCH, "Exists", min_values=2),
                    entry(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2",
                          min_values=1)], catalog)
    expect_two_nodes_of_two_types(pool, catalog)


def test_min_values_broken_by_truncation_create_no_nodeclaim(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Karpenter instance_selection_test.go Context("MinValues") It("schedule should fail if
    minimum number of InstanceTypes is not met as per the minValues in the requirement after
    truncation"): the provisioner sends at most one instance type (Karpenter's
    scheduling.MaxInstanceTypes = 1, our `nodeclaims.MAX_INSTANCE_TYPES`), so a NodeClaim
    that needs two types is not created and its pods are not scheduled, with why."""
    monkeypatch.setattr(nodeclaims, "MAX_INSTANCE_TYPES", 1)
    world = World()
    world.apply(NODE_CLASS, node_pool(requirements=[
        entry(INSTANCE_TYPE, "In", "m5.large", "m5.xlarge", min_values=2)]))
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "c", "resources": {
                 "requests": {"cpu": "900m", "memory": "900Mi"}}}]}} for i in (1, 2)]
    world.apply(*pods)
    world.advance(60)
    assert world.nodeclaims() == []
    assert len(world.pending_pods()) == 2
    # The provisioner's events (kube-scheduler's say no node is there).
    told = {str(e["regarding"]["name"]) for e in world.events(reason="FailedScheduling")
            if "couldn't meet minValues requirements" in str(e.get("note"))}
    assert told == {"p1", "p2"}
    outcome = world.controllers.provisioner.outcomes[-1]
    assert set(outcome.unschedulable) == {"default/p1", "default/p2"}


def test_without_truncation_the_same_pods_are_launched() -> None:
    """The counterpart of the truncation story (not a Karpenter It): with the provisioner's
    usual limit, the same NodePool and pods get a NodeClaim offering both types."""
    world = World()
    world.apply(NODE_CLASS, node_pool(requirements=[
        entry(INSTANCE_TYPE, "In", "m5.large", "m5.xlarge", min_values=2)]))
    world.apply(*[{"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"p{i}", "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "c", "resources": {
                       "requests": {"cpu": "900m", "memory": "900Mi"}}}]}} for i in (1, 2)])
    world.advance(60)
    claims = world.nodeclaims()
    assert claims
    for claim in claims:
        [types] = [r["values"] for r in claim["spec"]["requirements"]
                   if r["key"] == INSTANCE_TYPE]
        assert sorted(types) == ["m5.large", "m5.xlarge"]
