"""Karpenter's placement group provider suite (pkg/providers/placementgroup/suite_test.go,
v1.14.1), ported: each test names its It. Karpenter's PlacementGroupProvider.Get is
`placement_groups.describe` (one DescribePlacementGroups call), and its cache the provider's
resolution cache (a node class spec is resolved once a minute). EC2's answers are queued on
FakeEC2, as the Go suite sets DescribePlacementGroupsOutput.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.ec2nodeclass import PlacementGroupSelector
from nodewright.cloud.aws import placement_groups
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import PLACEMENT_GROUP, resolve_node_class
from nodewright.cloud.aws.provider import AwsCloudProvider
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import CLUSTER, K8S_VERSION, World, node_class

CLUSTER_PG = {"GroupId": "pg-cluster123", "GroupName": "my-cluster-pg", "State": "available",
              "Strategy": "cluster"}


def selector(**field: str) -> PlacementGroupSelector:
    return PlacementGroupSelector.model_validate(field)


def answer(ec2: FakeEC2, *groups: dict[str, Any]) -> None:
    ec2.respond("DescribePlacementGroups", {"PlacementGroups": list(groups)})


# --- Describe("Query") ----------------------------------------------------------------------


def test_a_name_is_asked_by_group_name() -> None:
    """It("should use GroupNames when query specifies Name")"""
    assert placement_groups.describe_request(selector(name="my-placement-group")) == {
        "GroupNames": ["my-placement-group"],
        "Filters": [{"Name": "state", "Values": ["available"]}]}


def test_an_id_is_asked_by_group_id() -> None:
    """It("should use GroupIds when query specifies ID")"""
    assert placement_groups.describe_request(selector(id="pg-0123456789abcdef0")) == {
        "GroupIds": ["pg-0123456789abcdef0"],
        "Filters": [{"Name": "state", "Values": ["available"]}]}


def test_a_name_that_looks_like_an_id_is_still_a_name() -> None:
    """It("should use GroupNames even when name has pg- prefix")"""
    request = placement_groups.describe_request(selector(name="pg-mygroup"))
    assert request["GroupNames"] == ["pg-mygroup"] and "GroupIds" not in request


# --- Describe("Placement Group Provider") ---------------------------------------------------


def test_a_group_by_name(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return a placement group by name from the EC2 API")"""
    answer(ec2, CLUSTER_PG)
    group = placement_groups.describe(clients.ec2, selector(name="my-cluster-pg"))
    assert group is not None
    assert (group.id, group.name, group.strategy) == ("pg-cluster123", "my-cluster-pg",
                                                      "cluster")


def test_a_group_by_id(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return a placement group by ID from the EC2 API")"""
    answer(ec2, CLUSTER_PG)
    group = placement_groups.describe(clients.ec2, selector(id="pg-cluster123"))
    assert group is not None and group.id == "pg-cluster123"
    assert ec2.last("DescribePlacementGroups")["GroupIds"] == ["pg-cluster123"]


def test_no_group_found_is_none(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return nil when placement group is not found")"""
    answer(ec2)
    assert placement_groups.describe(clients.ec2, selector(name="nonexistent")) is None


def test_no_group_of_that_name_is_none(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return nil when no matching placement group is found by name"): EC2
    answers an unknown name with InvalidPlacementGroup.Unknown, which is not an error."""
    ec2.fail("DescribePlacementGroups", "InvalidPlacementGroup.Unknown",
             "The Placement Group 'does-not-exist' is unknown.")
    assert placement_groups.describe(clients.ec2, selector(name="does-not-exist")) is None


def test_an_empty_answer_is_none(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return nil when the output has no placement groups")"""
    answer(ec2)
    assert placement_groups.describe(clients.ec2, selector(name="empty")) is None


def test_the_first_group_of_several_is_taken(clients: AwsClients, ec2: FakeEC2) -> None:
    """It("should return the first placement group when multiple are returned")"""
    answer(ec2, {"GroupId": "pg-first", "GroupName": "first-pg", "State": "available",
                 "Strategy": "cluster"},
           {"GroupId": "pg-second", "GroupName": "second-pg", "State": "available",
            "Strategy": "spread"})
    group = placement_groups.describe(clients.ec2, selector(name="first-pg"))
    assert group is not None and group.id == "pg-first"


def test_without_a_selector_there_is_no_group(provider: AwsCloudProvider, world: World,
                                              ec2: FakeEC2) -> None:
    """It("should return nil when no placement group selector is set"): nothing is asked."""
    resolution = provider.resolve(node_class())
    assert resolution.placement_group is None and PLACEMENT_GROUP not in resolution.problems
    assert not ec2.calls("DescribePlacementGroups")


def test_a_resolved_group_is_kept_while_ec2_answers_otherwise(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """It("should cache results and return from cache on subsequent calls"), It("should
    return cached placement group on subsequent Get calls")"""
    grouped = node_class(placementGroupSelector={"name": "my-cluster-pg"})
    answer(ec2, CLUSTER_PG)
    answer(ec2)  # what EC2 would say next: no such group

    first = provider.resolve(grouped).placement_group
    again = provider.resolve(grouped).placement_group

    assert first is not None and again is not None and again.id == "pg-cluster123"
    assert len(ec2.calls("DescribePlacementGroups")) == 1


def test_another_selector_is_not_answered_from_the_cache(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """It("should not return a cached entry for a different selector")"""
    answer(ec2, CLUSTER_PG)
    assert provider.resolve(
        node_class(placementGroupSelector={"name": "my-cluster-pg"})).placement_group
    answer(ec2)
    other = provider.resolve(node_class(placementGroupSelector={"name": "other-pg"}))
    assert other.placement_group is None
    assert len(ec2.calls("DescribePlacementGroups")) == 2


def test_removing_the_selector_clears_the_group(provider: AwsCloudProvider, world: World,
                                                ec2: FakeEC2) -> None:
    """It("should clear resolved placement group when selector is removed")"""
    answer(ec2, CLUSTER_PG)
    grouped = node_class(placementGroupSelector={"name": "my-cluster-pg"})
    assert provider.resolve(grouped).placement_group is not None
    assert provider.resolve(grouped).placement_group is not None

    assert provider.resolve(node_class()).placement_group is None


def test_a_failed_lookup_is_an_error_the_status_names(
    clients: AwsClients, world: World, ec2: FakeEC2,
) -> None:
    """It("should return an error and stale data when EC2 API returns an error"), its error:
    PlacementGroupReady is False with Karpenter's reason PlacementGroupResolutionFailed.
    Karpenter also hands its launch and drift paths the group it saw last; ours judge no
    placement group drift while the lookup fails and launch nothing while the node class is
    not ready, which is what the stale group is for there."""
    ec2.fail("DescribePlacementGroups", "InternalError", "something went wrong")
    resolution = resolve_node_class(clients, node_class(placementGroupSelector={
        "name": "my-cluster-pg"}), cluster=CLUSTER, kubernetes_version=K8S_VERSION,
        with_instance_profile=False)

    (condition,) = [c for c in resolution.conditions() if c.type == PLACEMENT_GROUP]
    assert (condition.status, condition.reason) == ("False", "PlacementGroupResolutionFailed")
    assert "something went wrong" in (condition.message or "")
