"""Karpenter's subnet and security group provider suites (pkg/providers/subnet/suite_test.go
and pkg/providers/securitygroup/suite_test.go, v1.14.1), ported: each test names its It.

Karpenter's fake EC2 data (subnet-test1..3 in three zones, sg-test1..3, with their Name,
foo=bar and TestTag tags) is made in moto, whose ids are its own: `KarpenterData` maps
Karpenter's names to them. Where the Go suite sets DescribeSubnets/DescribeSecurityGroups
output pages, FakeEC2 answers the calls (`respond`), NextToken chaining the pages as EC2
does. Karpenter's provider caches (subnets and security groups by node class, one minute)
are the provider's resolution cache here: what a second resolution of the same spec asks
EC2 is counted.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import SecurityGroupSelectorTerm, SubnetSelectorTerm
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.discovery import discover_security_groups, discover_subnets
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import CLUSTER, FakeClock, build_world, node_class


@dataclass
class KarpenterData:
    subnets: dict[str, str] = field(default_factory=dict)  # subnet-test1 -> moto id
    zones: dict[str, str] = field(default_factory=dict)  # subnet-test1 -> zone
    groups: dict[str, str] = field(default_factory=dict)  # sg-test1 -> moto id


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in pairs.items()]


@pytest.fixture
def data(clients: AwsClients) -> KarpenterData:
    ec2 = clients.ec2
    found = KarpenterData()
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    for index, (letter, extra) in enumerate((("a", {}), ("b", {}), ("c", {"TestTag": ""}))):
        name = f"subnet-test{index + 1}"
        zone = f"{clients.region}{letter}"
        found.subnets[name] = ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.1.{index}.0/24", AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags(
                Name=f"test-subnet-{index + 1}", foo="bar", **extra)}],
        )["Subnet"]["SubnetId"]
        found.zones[name] = zone
        group = f"sg-test{index + 1}"
        found.groups[group] = ec2.create_security_group(
            GroupName=f"securityGroup-test{index + 1}", Description="test", VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": tags(
                Name=f"test-security-group-{index + 1}", foo="bar", **extra)}],
        )["GroupId"]
    return found


def subnet_terms(*terms: dict[str, Any]) -> list[SubnetSelectorTerm]:
    return [SubnetSelectorTerm.model_validate(term) for term in terms]


def group_terms(*terms: dict[str, Any]) -> list[SecurityGroupSelectorTerm]:
    return [SecurityGroupSelectorTerm.model_validate(term) for term in terms]


def subnets_of(clients: AwsClients, *terms: dict[str, Any]) -> set[str]:
    found, _ = discover_subnets(clients.ec2, subnet_terms(*terms))
    return {subnet.id for subnet in found}


def groups_of(clients: AwsClients, *terms: dict[str, Any]) -> set[tuple[str, str]]:
    found, _ = discover_security_groups(clients.ec2, group_terms(*terms))
    return {(group.id, group.name) for group in found}


# --- pkg/providers/subnet/suite_test.go: Context("List") ------------------------------------


def test_subnet_by_id(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnet by ID"): with its zone, zone id and free IPs."""
    found, _ = discover_subnets(clients.ec2, subnet_terms({"id": data.subnets["subnet-test1"]}))
    assert [(s.id, s.zone, s.free_ips) for s in found] == [
        (data.subnets["subnet-test1"], data.zones["subnet-test1"], 251)]
    assert found[0].zone_id.startswith("usw2-az")


def test_subnets_by_ids(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnets by IDs")"""
    assert subnets_of(clients, {"id": data.subnets["subnet-test1"]},
                      {"id": data.subnets["subnet-test2"]}) == {
        data.subnets["subnet-test1"], data.subnets["subnet-test2"]}


def test_subnets_by_ids_and_tags(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnets by IDs and tags")"""
    assert subnets_of(clients, {"id": data.subnets["subnet-test1"], "tags": {"foo": "bar"}},
                      {"id": data.subnets["subnet-test2"], "tags": {"foo": "bar"}}) == {
        data.subnets["subnet-test1"], data.subnets["subnet-test2"]}


def test_subnets_by_a_single_tag(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnets by a single tag")"""
    assert subnets_of(clients, {"tags": {"Name": "test-subnet-1"}}) == {
        data.subnets["subnet-test1"]}


def test_subnets_by_multiple_tag_values(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnets by multiple tag values")"""
    assert subnets_of(clients, {"tags": {"Name": "test-subnet-1"}},
                      {"tags": {"Name": "test-subnet-2"}}) == {
        data.subnets["subnet-test1"], data.subnets["subnet-test2"]}


def test_subnets_by_ids_intersected_with_tags(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover subnets by IDs intersected with tags")"""
    assert subnets_of(clients, {"id": data.subnets["subnet-test2"], "tags": {"foo": "bar"}}) == {
        data.subnets["subnet-test2"]}


def test_a_subnet_terms_id_wins_over_its_tags(clients: AwsClients, data: KarpenterData) -> None:
    """(ours) Karpenter's getFilterSets filters a term with an id by the id alone: tags that
    the subnet does not carry do not drop it (v1.14.1's CRD admits such a term beside a
    plain one)."""
    assert subnets_of(clients, {"id": data.subnets["subnet-test1"],
                                "tags": {"Name": "test-subnet-2"}}) == {
        data.subnets["subnet-test1"]}


def page(kind: str, items: list[dict[str, Any]], more: bool, token: str = "next") -> dict[str, Any]:
    return {kind: items, **({"NextToken": token} if more else {})}


def a_subnet(name: str) -> dict[str, Any]:
    return {"SubnetId": name, "AvailabilityZone": "us-west-2a", "AvailabilityZoneId": "usw2-az1",
            "AvailableIpAddressCount": 10, "VpcId": "vpc-test1", "State": "available",
            "Tags": tags(Name=name)}


def test_subnets_empty_pages_are_read_through(clients: AwsClients, data: KarpenterData,
                                              ec2: FakeEC2) -> None:
    """It("should handle empty pages when describing subnets")"""
    ec2.respond("DescribeSubnets", page("Subnets", [], more=True))
    ec2.respond("DescribeSubnets", page("Subnets", [a_subnet("test-subnet-1000")], more=False))

    found, _ = discover_subnets(clients.ec2, subnet_terms({"tags": {"*": "*"}}))

    assert [(s.id, s.free_ips) for s in found] == [("test-subnet-1000", 10)]
    assert len(ec2.calls("DescribeSubnets")) == 2


def test_subnets_of_every_page_are_kept(clients: AwsClients, data: KarpenterData,
                                        ec2: FakeEC2) -> None:
    """It("should not overwrite found values when handling multiple pages of subnets")"""
    for index in (1, 2, 3):
        ec2.respond("DescribeSubnets",
                    page("Subnets", [a_subnet(f"test-subnet-{index}")], more=index < 3,
                         token=f"page-{index}"))

    found, _ = discover_subnets(clients.ec2, subnet_terms({"tags": {"*": "*"}}))

    assert {s.id for s in found} == {"test-subnet-1", "test-subnet-2", "test-subnet-3"}
    assert len(ec2.calls("DescribeSubnets")) == 3


def test_listing_subnets_from_many_threads_gives_one_answer(clients: AwsClients,
                                                            data: KarpenterData) -> None:
    """It("should not cause data races when calling List() simultaneously"): 50 calls on 8
    threads (moto has no local zone: three subnets, not Karpenter's four)."""
    terms = subnet_terms({"tags": {"foo": "bar"}})

    def listed(_: int) -> list[tuple[str, str, int]]:
        found, _ = discover_subnets(clients.ec2, terms)
        return sorted((s.id, s.zone, s.free_ips) for s in found)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(listed, range(50)))
    assert answers[0] == sorted((data.subnets[n], data.zones[n], 251) for n in data.subnets)
    assert all(answer == answers[0] for answer in answers)


# --- the provider caches ---------------------------------------------------------------------


@pytest.fixture
def provider(clients: AwsClients, clock: FakeClock) -> AwsCloudProvider:
    build_world(clients)
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            dry_run=False)


def test_subnets_by_id_are_read_once_per_spec(provider: AwsCloudProvider, data: KarpenterData,
                                              ec2: FakeEC2) -> None:
    """subnet suite Context("Provider Cache") It("should resolve subnets from cache that are
    filtered by id")"""
    spec = node_class(subnetSelectorTerms=[{"id": data.subnets["subnet-test1"]}])
    first = provider.resolve(spec)
    again = provider.resolve(spec)

    assert [s.id for s in again.subnets] == [s.id for s in first.subnets] == [
        data.subnets["subnet-test1"]]
    assert len(ec2.calls("DescribeSubnets")) == 1


def test_subnets_by_tags_are_read_once_per_spec(provider: AwsCloudProvider, data: KarpenterData,
                                                ec2: FakeEC2) -> None:
    """subnet suite Context("Provider Cache") It("should resolve subnets from cache that are
    filtered by tags")"""
    spec = node_class(subnetSelectorTerms=[{"tags": {"Name": "test-subnet-1"}}])
    provider.resolve(spec)
    again = provider.resolve(spec)

    assert [s.id for s in again.subnets] == [data.subnets["subnet-test1"]]
    assert len(ec2.calls("DescribeSubnets")) == 1


def test_subnet_tags_in_one_term_and_across_terms(provider: AwsCloudProvider, clients: AwsClients,
                                                  data: KarpenterData, ec2: FakeEC2) -> None:
    """subnet suite Context("Provider Cache") It("should correctly disambiguate AND vs OR
    semantics for tags"): two keys in one term match only the subnet that has both; the
    same keys in two terms match either, and each spec keeps its own answer."""
    clients.ec2.create_tags(Resources=[data.subnets["subnet-test3"]],
                            Tags=tags(**{"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"}))
    clients.ec2.create_tags(Resources=[data.subnets["subnet-test1"]],
                            Tags=tags(**{"tag-key-1": "tag-value-1"}))
    clients.ec2.create_tags(Resources=[data.subnets["subnet-test2"]],
                            Tags=tags(**{"tag-key-2": "tag-value-2"}))
    both = node_class(subnetSelectorTerms=[
        {"tags": {"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"}}])
    either = node_class(subnetSelectorTerms=[{"tags": {"tag-key-1": "tag-value-1"}},
                                             {"tags": {"tag-key-2": "tag-value-2"}}])

    assert {s.id for s in provider.resolve(both).subnets} == {data.subnets["subnet-test3"]}
    assert {s.id for s in provider.resolve(either).subnets} == set(data.subnets.values())
    calls = len(ec2.calls("DescribeSubnets"))
    assert {s.id for s in provider.resolve(both).subnets} == {data.subnets["subnet-test3"]}
    assert len(ec2.calls("DescribeSubnets")) == calls


# --- pkg/providers/securitygroup/suite_test.go -----------------------------------------------


def test_security_groups_by_any_tag(clients: AwsClients, data: KarpenterData) -> None:
    """It("should default to the clusters security groups"): Karpenter's default terms
    (`"*": "*"`) select every tagged group (moto's VPC default groups have no tags)."""
    assert groups_of(clients, {"tags": {"*": "*"}}) == {
        (data.groups[f"sg-test{i}"], f"securityGroup-test{i}") for i in (1, 2, 3)}


def test_security_groups_by_tag(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover security groups by tag")"""
    ec2 = clients.ec2
    vpc = ec2.create_vpc(CidrBlock="10.2.0.0/16")["Vpc"]["VpcId"]
    made = {ec2.create_security_group(
        GroupName=f"test-sgName-{i}", Description="test", VpcId=vpc,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": tags(
            **{"kubernetes.io/cluster/test-cluster": f"test-sg-{i}"})}])["GroupId"]: i
        for i in (1, 2)}
    found = groups_of(clients, {"tags": {"kubernetes.io/cluster/test-cluster": "*"}})
    assert found == {(group, f"test-sgName-{i}") for group, i in made.items()}


def test_security_groups_by_multiple_tag_values(clients: AwsClients,
                                                data: KarpenterData) -> None:
    """It("should discover security groups by multiple tag values")"""
    assert groups_of(clients, {"tags": {"Name": "test-security-group-1"}},
                     {"tags": {"Name": "test-security-group-2"}}) == {
        (data.groups["sg-test1"], "securityGroup-test1"),
        (data.groups["sg-test2"], "securityGroup-test2")}


def test_security_group_by_id(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover security groups by ID")"""
    assert groups_of(clients, {"id": data.groups["sg-test1"]}) == {
        (data.groups["sg-test1"], "securityGroup-test1")}


def test_security_groups_by_ids(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover security groups by IDs")"""
    assert groups_of(clients, {"id": data.groups["sg-test1"]},
                     {"id": data.groups["sg-test2"]}) == {
        (data.groups["sg-test1"], "securityGroup-test1"),
        (data.groups["sg-test2"], "securityGroup-test2")}


def test_security_groups_by_ids_and_tags(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover security groups by IDs and tags")"""
    assert groups_of(clients, {"id": data.groups["sg-test1"], "tags": {"foo": "bar"}},
                     {"id": data.groups["sg-test2"], "tags": {"foo": "bar"}}) == {
        (data.groups["sg-test1"], "securityGroup-test1"),
        (data.groups["sg-test2"], "securityGroup-test2")}


def test_security_groups_by_ids_intersected_with_tags(clients: AwsClients,
                                                      data: KarpenterData) -> None:
    """It("should discover security groups by IDs intersected with tags")"""
    assert groups_of(clients, {"id": data.groups["sg-test2"], "tags": {"foo": "bar"}}) == {
        (data.groups["sg-test2"], "securityGroup-test2")}


def test_security_groups_by_names(clients: AwsClients, data: KarpenterData) -> None:
    """It("should discover security groups by names")"""
    assert groups_of(clients, {"name": "securityGroup-test2"},
                     {"name": "securityGroup-test3"}) == {
        (data.groups["sg-test2"], "securityGroup-test2"),
        (data.groups["sg-test3"], "securityGroup-test3")}


def test_security_groups_by_names_intersected_with_tags(clients: AwsClients,
                                                        data: KarpenterData) -> None:
    """It("should discover security groups by names intersected with tags")"""
    assert groups_of(clients, {"name": "securityGroup-test3", "tags": {"TestTag": "*"}}) == {
        (data.groups["sg-test3"], "securityGroup-test3")}


def test_a_security_group_terms_id_then_name_win_over_the_rest(clients: AwsClients,
                                                              data: KarpenterData) -> None:
    """(ours) Karpenter's getFilterSets: a term's id alone, else its name alone, else its tags."""
    assert groups_of(clients, {"id": data.groups["sg-test1"], "name": "securityGroup-test2",
                               "tags": {"Name": "test-security-group-3"}}) == {
        (data.groups["sg-test1"], "securityGroup-test1")}
    assert groups_of(clients, {"name": "securityGroup-test2",
                               "tags": {"Name": "test-security-group-3"}}) == {
        (data.groups["sg-test2"], "securityGroup-test2")}


@pytest.mark.parametrize("term", [
    pytest.param(lambda data: {"id": data.groups["sg-test1"]},
                 id="should resolve security groups from cache that are filtered by id"),
    pytest.param(lambda data: {"name": "securityGroup-test1"},
                 id="should resolve security groups from cache that are filtered by Name"),
    pytest.param(lambda data: {"tags": {"Name": "test-security-group-1"}},
                 id="should resolve security groups from cache that are filtered by tags"),
])
def test_security_groups_are_read_once_per_spec(provider: AwsCloudProvider, data: KarpenterData,
                                                ec2: FakeEC2, term: Any) -> None:
    """Context("Provider Cache"): one It per test id."""
    spec = node_class(securityGroupSelectorTerms=[term(data)])
    provider.resolve(spec)
    again = provider.resolve(spec)

    assert [g.id for g in again.security_groups] == [data.groups["sg-test1"]]
    assert len(ec2.calls("DescribeSecurityGroups")) == 1


def test_security_group_tags_in_one_term_and_across_terms(
    provider: AwsCloudProvider, clients: AwsClients, data: KarpenterData, ec2: FakeEC2
) -> None:
    """Context("Provider Cache") It("should correctly disambiguate AND vs OR semantics for
    tags")"""
    clients.ec2.create_tags(Resources=[data.groups["sg-test3"]],
                            Tags=tags(**{"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"}))
    clients.ec2.create_tags(Resources=[data.groups["sg-test1"]],
                            Tags=tags(**{"tag-key-1": "tag-value-1"}))
    clients.ec2.create_tags(Resources=[data.groups["sg-test2"]],
                            Tags=tags(**{"tag-key-2": "tag-value-2"}))
    both = node_class(securityGroupSelectorTerms=[
        {"tags": {"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"}}])
    either = node_class(securityGroupSelectorTerms=[{"tags": {"tag-key-1": "tag-value-1"}},
                                                    {"tags": {"tag-key-2": "tag-value-2"}}])

    assert {g.id for g in provider.resolve(both).security_groups} == {data.groups["sg-test3"]}
    assert {g.id for g in provider.resolve(either).security_groups} == set(data.groups.values())
    calls = len(ec2.calls("DescribeSecurityGroups"))
    assert {g.id for g in provider.resolve(either).security_groups} == set(data.groups.values())
    assert len(ec2.calls("DescribeSecurityGroups")) == calls


def test_listing_security_groups_from_many_threads_gives_one_answer(
    clients: AwsClients, data: KarpenterData
) -> None:
    """It("should not cause data races when calling List() simultaneously"): 50 calls on 8
    threads."""
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: sorted(groups_of(clients, {"tags": {"foo": "bar"}})),
                                range(50)))
    assert answers[0] == sorted((data.groups[f"sg-test{i}"], f"securityGroup-test{i}")
                                for i in (1, 2, 3))
    assert all(answer == answers[0] for answer in answers)


def a_group(index: int) -> dict[str, Any]:
    return {"GroupId": f"test-sg-{index}", "GroupName": f"test-sgName-{index}",
            "Tags": tags(Name=f"test-security-group-{index}")}


def test_security_groups_empty_pages_are_read_through(clients: AwsClients, data: KarpenterData,
                                                      ec2: FakeEC2) -> None:
    """It("should handle empty pages when describing security groups")"""
    ec2.respond("DescribeSecurityGroups", page("SecurityGroups", [], more=True))
    ec2.respond("DescribeSecurityGroups", page("SecurityGroups", [a_group(1000)], more=False))

    assert groups_of(clients, {"tags": {"*": "*"}}) == {("test-sg-1000", "test-sgName-1000")}
    assert len(ec2.calls("DescribeSecurityGroups")) == 2


def test_security_groups_of_every_page_are_kept(clients: AwsClients, data: KarpenterData,
                                                ec2: FakeEC2) -> None:
    """It("should not overwrite found values when handling multiple pages of security
    groups")"""
    for index in (1, 2, 3):
        ec2.respond("DescribeSecurityGroups",
                    page("SecurityGroups", [a_group(index)], more=index < 3,
                         token=f"page-{index}"))

    assert groups_of(clients, {"tags": {"*": "*"}}) == {
        (f"test-sg-{i}", f"test-sgName-{i}") for i in (1, 2, 3)}
    assert len(ec2.calls("DescribeSecurityGroups")) == 3
