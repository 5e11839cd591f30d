"""Karpenter's EC2NodeClass status controller tests for subnets, security groups and placement
groups (pkg/controllers/nodeclass/subnet_test.go, securitygroup_test.go and
placementgroup_test.go, v1.14.1), ported: each test names its It.

Karpenter's reconcile of the node class is `resolve_node_class` here, and the status it writes
`Resolution.to_status()` (the node class status controller writes exactly that). Karpenter's
fake EC2 data is `tests.aws.test_discovery_karpenter.KarpenterData` in moto; its default
terms (`"*": "*"`) are `foo: bar` here, which the same three subnets and groups carry (moto
has no local zone for Karpenter's fourth subnet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import Resolution, resolve_node_class
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_discovery_karpenter import KarpenterData, data
from tests.aws.test_placement_groups import PlacementGroups
from tests.aws.world import CLUSTER, K8S_VERSION, World, node_class

__all__ = ["data"]  # the fixture, used by name

DEFAULT_TERMS = [{"tags": {"foo": "bar"}}]


def reconcile(clients: AwsClients, **spec: Any) -> Resolution:
    spec.setdefault("subnetSelectorTerms", DEFAULT_TERMS)
    spec.setdefault("securityGroupSelectorTerms", DEFAULT_TERMS)
    return resolve_node_class(clients, node_class(**spec), cluster=CLUSTER,
                              kubernetes_version=K8S_VERSION, with_instance_profile=False)


def condition(resolution: Resolution, kind: str) -> tuple[str, str, str]:
    found = next(c for c in resolution.conditions() if c.type == kind)
    return found.status, found.reason, found.message or ""


def subnets(resolution: Resolution, data: KarpenterData) -> list[tuple[str, str]]:
    """The status subnets as (Karpenter's name, zone)."""
    names = {moto_id: name for name, moto_id in data.subnets.items()}
    status = resolution.to_status().subnets or []
    return [(names.get(s.id, s.id), s.zone) for s in status]


def groups(resolution: Resolution, data: KarpenterData) -> list[tuple[str, str]]:
    names = {moto_id: name for name, moto_id in data.groups.items()}
    status = resolution.to_status().security_groups or []
    return [(names.get(g.id, g.id), g.name or "") for g in status]


ALL_SUBNETS = [("subnet-test1", "us-west-2a"), ("subnet-test2", "us-west-2b"),
               ("subnet-test3", "us-west-2c")]
ALL_GROUPS = [(f"sg-test{i}", f"securityGroup-test{i}") for i in (1, 2, 3)]


def ordered_by_id(pairs: list[tuple[str, str]], data: KarpenterData,
                  ids: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(pairs, key=lambda pair: ids[pair[0]])


# --- subnet_test.go -------------------------------------------------------------------------


def test_the_status_lists_the_subnets(clients: AwsClients, world: World,
                                      data: KarpenterData) -> None:
    """It("Should update EC2NodeClass status for Subnets"): with their zones and zone ids
    (equal free IPs: by id)."""
    resolution = reconcile(clients)
    assert subnets(resolution, data) == ordered_by_id(ALL_SUBNETS, data, data.subnets)
    assert all(s.zone_id for s in resolution.to_status().subnets or [])
    assert condition(resolution, "SubnetsReady")[0] == "True"


def test_the_status_lists_subnets_with_the_most_free_ips_first(
    clients: AwsClients, world: World, data: KarpenterData
) -> None:
    """It("Should have the correct ordering for the Subnets")"""
    ec2 = FakeEC2.attach(clients.ec2)
    try:
        ec2.respond("DescribeSubnets", {"Subnets": [
            {"SubnetId": "subnet-test1", "AvailabilityZone": "us-west-2a",
             "AvailabilityZoneId": "usw2-az1", "AvailableIpAddressCount": 20},
            {"SubnetId": "subnet-test2", "AvailabilityZone": "us-west-2b",
             "AvailabilityZoneId": "usw2-az2", "AvailableIpAddressCount": 100},
            {"SubnetId": "subnet-test3", "AvailabilityZone": "us-west-2c",
             "AvailabilityZoneId": "usw2-az3", "AvailableIpAddressCount": 50}]})
        resolution = reconcile(clients)
    finally:
        ec2.detach()
    assert [(s.id, s.zone_id) for s in resolution.to_status().subnets or []] == [
        ("subnet-test2", "usw2-az2"), ("subnet-test3", "usw2-az3"),
        ("subnet-test1", "usw2-az1")]


def test_subnets_by_tags(clients: AwsClients, world: World, data: KarpenterData) -> None:
    """It("Should resolve a valid selectors for Subnet by tags")"""
    resolution = reconcile(clients, subnetSelectorTerms=[{"tags": {"Name": "test-subnet-1"}},
                                                         {"tags": {"Name": "test-subnet-2"}}])
    assert sorted(subnets(resolution, data)) == ALL_SUBNETS[:2]
    assert condition(resolution, "SubnetsReady")[0] == "True"


def test_subnets_by_id(clients: AwsClients, world: World, data: KarpenterData) -> None:
    """It("Should resolve a valid selectors for Subnet by ids")"""
    resolution = reconcile(clients, subnetSelectorTerms=[{"id": data.subnets["subnet-test1"]}])
    assert subnets(resolution, data) == ALL_SUBNETS[:1]
    assert condition(resolution, "SubnetsReady")[0] == "True"


def test_new_subnet_tags_change_the_status(clients: AwsClients, world: World,
                                           data: KarpenterData) -> None:
    """It("Should update Subnet status when the Subnet selector gets updated by tags")"""
    assert sorted(subnets(reconcile(clients), data)) == ALL_SUBNETS
    resolution = reconcile(clients, subnetSelectorTerms=[{"tags": {"Name": "test-subnet-1"}},
                                                         {"tags": {"Name": "test-subnet-2"}}])
    assert sorted(subnets(resolution, data)) == ALL_SUBNETS[:2]
    assert condition(resolution, "SubnetsReady")[0] == "True"


def test_new_subnet_ids_change_the_status(clients: AwsClients, world: World,
                                          data: KarpenterData) -> None:
    """It("Should update Subnet status when the Subnet selector gets updated by ids")"""
    assert sorted(subnets(reconcile(clients), data)) == ALL_SUBNETS
    resolution = reconcile(clients, subnetSelectorTerms=[{"id": data.subnets["subnet-test1"]}])
    assert subnets(resolution, data) == ALL_SUBNETS[:1]


def test_subnet_terms_matching_nothing(clients: AwsClients, world: World,
                                       data: KarpenterData) -> None:
    """It("Should not resolve a invalid selectors for Subnet")"""
    resolution = reconcile(clients, subnetSelectorTerms=[{"tags": {"foo": "invalid"}}])
    assert resolution.to_status().subnets is None  # Karpenter: BeNil()
    assert condition(resolution, "SubnetsReady")[:2] == ("False", "SubnetsNotFound")


def test_updated_subnet_terms_matching_nothing(clients: AwsClients, world: World,
                                               data: KarpenterData) -> None:
    """It("Should not resolve a invalid selectors for an updated subnet selector")"""
    assert sorted(subnets(reconcile(clients), data)) == ALL_SUBNETS
    resolution = reconcile(clients, subnetSelectorTerms=[{"tags": {"foo": "invalid"}}])
    assert resolution.to_status().subnets is None  # Karpenter: BeNil()
    assert condition(resolution, "SubnetsReady")[0] == "False"


# --- securitygroup_test.go ------------------------------------------------------------------


def test_the_status_lists_the_security_groups(clients: AwsClients, world: World,
                                              data: KarpenterData) -> None:
    """It("Should update EC2NodeClass status for Security Groups"): by id."""
    resolution = reconcile(clients)
    assert groups(resolution, data) == ordered_by_id(ALL_GROUPS, data, data.groups)
    assert condition(resolution, "SecurityGroupsReady")[0] == "True"


def test_security_groups_by_tags(clients: AwsClients, world: World,
                                 data: KarpenterData) -> None:
    """It("Should resolve a valid selectors for Security Groups by tags")"""
    resolution = reconcile(clients, securityGroupSelectorTerms=[
        {"tags": {"Name": "test-security-group-1"}}, {"tags": {"Name": "test-security-group-2"}}])
    assert sorted(groups(resolution, data)) == ALL_GROUPS[:2]


def test_security_groups_by_id(clients: AwsClients, world: World, data: KarpenterData) -> None:
    """It("Should resolve a valid selectors for Security Groups by ids")"""
    resolution = reconcile(clients, securityGroupSelectorTerms=[{"id": data.groups["sg-test1"]}])
    assert groups(resolution, data) == ALL_GROUPS[:1]
    assert condition(resolution, "SecurityGroupsReady")[0] == "True"


def test_new_security_group_tags_change_the_status(clients: AwsClients, world: World,
                                                   data: KarpenterData) -> None:
    """It("Should update Security Groups status when the Security Groups selector gets updated
    by tags")"""
    assert sorted(groups(reconcile(clients), data)) == ALL_GROUPS
    resolution = reconcile(clients, securityGroupSelectorTerms=[
        {"tags": {"Name": "test-security-group-1"}}, {"tags": {"Name": "test-security-group-2"}}])
    assert sorted(groups(resolution, data)) == ALL_GROUPS[:2]


def test_new_security_group_ids_change_the_status(clients: AwsClients, world: World,
                                                  data: KarpenterData) -> None:
    """It("Should update Security Groups status when the Security Groups selector gets updated
    by ids")"""
    assert sorted(groups(reconcile(clients), data)) == ALL_GROUPS
    resolution = reconcile(clients, securityGroupSelectorTerms=[{"id": data.groups["sg-test1"]}])
    assert groups(resolution, data) == ALL_GROUPS[:1]


def test_security_group_terms_matching_nothing(clients: AwsClients, world: World,
                                               data: KarpenterData) -> None:
    """It("Should not resolve a invalid selectors for Security Groups")"""
    resolution = reconcile(clients, securityGroupSelectorTerms=[{"tags": {"foo": "invalid"}}])
    assert resolution.to_status().security_groups is None  # Karpenter: BeNil()
    assert condition(resolution, "SecurityGroupsReady")[:2] == (
        "False", "SecurityGroupsNotFound")


def test_updated_security_group_terms_matching_nothing(clients: AwsClients, world: World,
                                                       data: KarpenterData) -> None:
    """It("Should not resolve a invalid selectors for an updated Security Groups selector")"""
    assert sorted(groups(reconcile(clients), data)) == ALL_GROUPS
    resolution = reconcile(clients, securityGroupSelectorTerms=[{"tags": {"foo": "invalid"}}])
    assert resolution.to_status().security_groups is None  # Karpenter: BeNil()
    assert condition(resolution, "SecurityGroupsReady")[0] == "False"


# --- placementgroup_test.go -----------------------------------------------------------------


@pytest.fixture
def placement(clients: AwsClients) -> Iterator[PlacementGroups]:
    served = PlacementGroups()
    served.add("my-cluster-pg", "pg-cluster123", "cluster")
    served.add("my-partition-pg", "pg-partition456", "partition", PartitionCount=7)
    served.add("my-spread-pg", "pg-spread789", "spread", SpreadLevel="rack")
    served.add("my-pending-pg", "pg-pending000", "cluster")
    served.groups[-1]["State"] = "pending"
    events = clients.ec2.meta.events
    events.register("provide-client-params.ec2.DescribePlacementGroups", served.remember)
    events.register("before-call.ec2.DescribePlacementGroups", served)
    yield served
    events.unregister("provide-client-params.ec2.DescribePlacementGroups", served.remember)
    events.unregister("before-call.ec2.DescribePlacementGroups", served)


def placed(clients: AwsClients, **selector: str) -> Resolution:
    return reconcile(clients, placementGroupSelector=selector) if selector else reconcile(
        clients)


def test_no_selector_is_a_ready_placement_group_condition(
    clients: AwsClients, world: World, data: KarpenterData, placement: PlacementGroups
) -> None:
    """It("should have PlacementGroupReady condition set to true when no placement group
    selector is specified")"""
    resolution = placed(clients)
    assert condition(resolution, "PlacementGroupReady")[0] == "True"
    assert resolution.placement_group is None


def test_a_cluster_group_by_name(clients: AwsClients, world: World, data: KarpenterData,
                                 placement: PlacementGroups) -> None:
    """It("should resolve a cluster placement group by name")"""
    resolution = placed(clients, name="my-cluster-pg")
    assert condition(resolution, "PlacementGroupReady")[0] == "True"
    group = resolution.placement_group
    assert group is not None
    assert (group.id, group.name, group.strategy) == ("pg-cluster123", "my-cluster-pg",
                                                      "cluster")


def test_a_group_by_id(clients: AwsClients, world: World, data: KarpenterData,
                       placement: PlacementGroups) -> None:
    """It("should resolve a placement group by ID")"""
    resolution = placed(clients, id="pg-cluster123")
    assert condition(resolution, "PlacementGroupReady")[0] == "True"
    group = resolution.placement_group
    assert group is not None and (group.id, group.name) == ("pg-cluster123", "my-cluster-pg")


def test_a_partition_group_with_its_partition_count(
    clients: AwsClients, world: World, data: KarpenterData, placement: PlacementGroups
) -> None:
    """It("should resolve a partition placement group with partition count")"""
    group = placed(clients, name="my-partition-pg").placement_group
    assert group is not None
    assert (group.id, group.strategy, group.partition_count) == ("pg-partition456",
                                                                 "partition", 7)


def test_a_spread_group_with_its_spread_level(
    clients: AwsClients, world: World, data: KarpenterData, placement: PlacementGroups
) -> None:
    """It("should resolve a spread placement group with spread level")"""
    group = placed(clients, name="my-spread-pg").placement_group
    assert group is not None
    assert (group.id, group.strategy, group.spread_level) == ("pg-spread789", "spread", "rack")


@pytest.mark.parametrize("name", [
    pytest.param("nonexistent-pg",
                 id="should set condition false when placement group is not found"),
    pytest.param("my-pending-pg",
                 id="should set condition false when placement group is not in available state"),
])
def test_a_group_not_found_or_not_available(clients: AwsClients, world: World,
                                            data: KarpenterData, placement: PlacementGroups,
                                            name: str) -> None:
    """One It per test id: PlacementGroupNotFound, naming the group."""
    resolution = placed(clients, name=name)
    status, reason, message = condition(resolution, "PlacementGroupReady")
    assert (status, reason) == ("False", "PlacementGroupNotFound") and name in message
    assert resolution.placement_group is None


def test_removing_the_selector_clears_the_group_and_readies_the_condition(
    clients: AwsClients, world: World, data: KarpenterData, placement: PlacementGroups
) -> None:
    """It("should clear in-memory state and condition when placement group selector is
    removed")"""
    assert placed(clients, name="my-cluster-pg").placement_group is not None
    resolution = placed(clients)
    assert condition(resolution, "PlacementGroupReady")[0] == "True"
    assert resolution.placement_group is None


def test_a_changed_selector_changes_the_group(clients: AwsClients, world: World,
                                              data: KarpenterData,
                                              placement: PlacementGroups) -> None:
    """It("should update in-memory state when placement group selector changes")"""
    first = placed(clients, name="my-cluster-pg").placement_group
    assert first is not None and first.id == "pg-cluster123"
    second = placed(clients, name="my-spread-pg").placement_group
    assert second is not None and (second.id, second.strategy) == ("pg-spread789", "spread")
