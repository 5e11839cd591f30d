"""placementGroupSelector: the group is resolved (PlacementGroupReady), keeps the catalog to
the types its strategy takes, is launched into and labels the nodes, and a NodeClaim
launched elsewhere drifts. moto has no placement groups: EC2's answers are served here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from nodewright.api.nodeclaim import NodeClaimStatus
from nodewright.cloud.aws.actions import AWS_ACTIONS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import resolve_node_class
from nodewright.cloud.aws.provider import PLACEMENT_GROUP_DRIFT, AwsCloudProvider
from nodewright.cloud.provider import InsufficientCapacityError, NodeClassNotReadyError

from .conftest import CallRecorder
from .fleet_injector import FleetInjector, fake_response
from .test_launch import fleet_overrides
from .world import CLUSTER, K8S_VERSION, World, node_class, nodeclaim

GROUP_ID_LABEL = "karpenter.k8s.aws/placement-group-id"


class PlacementGroups:
    """EC2's DescribePlacementGroups over a few groups (state filter, ids or names)."""

    def __init__(self) -> None:
        self.groups: list[dict[str, Any]] = []
        self.asked: dict[str, Any] = {}

    def remember(self, params: dict[str, Any], **_: Any) -> None:
        self.asked = dict(params)

    def add(self, name: str, group_id: str, strategy: str, **extra: Any) -> None:
        self.groups.append({"GroupName": name, "GroupId": group_id, "Strategy": strategy,
                            "State": "available", **extra})

    def __call__(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        params = self.asked
        states = {value for f in params.get("Filters", []) if f["Name"] == "state"
                  for value in f["Values"]}
        ids, names = params.get("GroupIds"), params.get("GroupNames")
        found = [g for g in self.groups if (not states or g["State"] in states)
                 and (ids is None or g["GroupId"] in ids)
                 and (names is None or g["GroupName"] in names)]
        if names and not found:
            return fake_response(400, {"Error": {"Code": "InvalidPlacementGroup.Unknown",
                                              "Message": f"The Placement Group '{names[0]}' "
                                                         "is unknown."}})
        return fake_response(200, {"PlacementGroups": found})


@pytest.fixture
def groups(clients: AwsClients) -> Iterator[PlacementGroups]:
    served = PlacementGroups()
    served.add("training", "pg-0a1b2c3d", "cluster")
    served.add("racks", "pg-0f0e0d0c", "partition", PartitionCount=3)
    served.add("draining", "pg-0dead000", "spread", SpreadLevel="rack")
    served.groups[-1]["State"] = "deleting"
    clients.ec2.meta.events.register("provide-client-params.ec2.DescribePlacementGroups",
                                     served.remember)
    clients.ec2.meta.events.register("before-call.ec2.DescribePlacementGroups", served)
    yield served
    clients.ec2.meta.events.unregister("provide-client-params.ec2.DescribePlacementGroups",
                                       served.remember)
    clients.ec2.meta.events.unregister("before-call.ec2.DescribePlacementGroups", served)


def resolve(clients: AwsClients, **spec: Any) -> Any:
    return resolve_node_class(clients, node_class(**spec), cluster=CLUSTER,
                              kubernetes_version=K8S_VERSION)


def test_a_group_named_by_name_or_id_resolves_and_the_node_class_is_ready(
    clients: AwsClients, world: World, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    recorder.actions.clear()
    by_name = resolve(clients, placementGroupSelector={"name": "training"})
    by_id = resolve(clients, placementGroupSelector={"id": "pg-0f0e0d0c"})

    assert by_name.placement_group is not None and by_name.placement_group.id == "pg-0a1b2c3d"
    assert by_id.placement_group is not None
    assert (by_id.placement_group.strategy, by_id.placement_group.partition_count) == (
        "partition", 3)
    assert by_name.ready and by_id.ready
    conditions = {c.type: c.status for c in by_name.conditions()}
    assert conditions["PlacementGroupReady"] == "True" and conditions["Ready"] == "True"
    first, second = recorder.calls_of("ec2:DescribePlacementGroups")
    assert first == {"Filters": [{"Name": "state", "Values": ["available"]}],
                     "GroupNames": ["training"]}
    assert second["GroupIds"] == ["pg-0f0e0d0c"]
    assert set(recorder.actions) <= {use.action for use in AWS_ACTIONS}


@pytest.mark.parametrize("selector", [{"name": "nowhere"}, {"id": "pg-0000ffff"},
                                      {"name": "draining"}])
def test_a_group_ec2_does_not_have_available_leaves_the_node_class_not_ready(
    clients: AwsClients, world: World, groups: PlacementGroups, selector: dict[str, str],
) -> None:
    resolution = resolve(clients, placementGroupSelector=selector)

    assert resolution.placement_group is None and not resolution.ready
    (condition,) = [c for c in resolution.conditions() if c.type == "PlacementGroupReady"]
    assert (condition.status, condition.reason) == ("False", "PlacementGroupNotFound")
    assert condition.message == (
        f"Placement group {selector.get('name') or selector.get('id')!r} not found")
    ready = next(c for c in resolution.conditions() if c.type == "Ready")
    assert ready.status == "False" and "PlacementGroupReady" in (ready.message or "")


def test_without_a_selector_no_group_is_looked_up_and_the_condition_is_true(
    clients: AwsClients, world: World, recorder: CallRecorder,
) -> None:
    resolution = resolve(clients)

    assert recorder.calls_of("ec2:DescribePlacementGroups") == []
    assert {c.type: c.status for c in resolution.conditions()}["PlacementGroupReady"] == "True"


def test_a_cluster_group_keeps_the_types_that_support_it_and_labels_them(
    provider: AwsCloudProvider, groups: PlacementGroups,
) -> None:
    plain = {t.name for t in provider.get_instance_types(node_class())}
    clustered = {t.name: t for t in provider.get_instance_types(
        node_class(placementGroupSelector={"name": "training"}))}
    spread = {t.name for t in provider.get_instance_types(
        node_class(placementGroupSelector={"id": "pg-0f0e0d0c"}))}

    # t3.medium and t2.micro support partition and spread groups only.
    assert {"t3.medium", "t2.micro"} <= plain and {"t3.medium", "t2.micro"} <= spread
    assert "t3.medium" not in clustered and "t2.micro" not in clustered
    assert "m5.large" in clustered
    assert {t.labels[GROUP_ID_LABEL] for t in clustered.values()} == {"pg-0a1b2c3d"}


def test_launches_go_into_the_group_and_the_instance_carries_its_label(
    provider: AwsCloudProvider, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector={"name": "training"}))

    templates = recorder.calls_of("ec2:CreateLaunchTemplate")
    assert templates and all(call["LaunchTemplateData"]["Placement"] == {
        "GroupId": "pg-0a1b2c3d", "Tenancy": "default"} for call in templates)
    # t3.medium cannot join a cluster group, so the fleet never offers it.
    overrides = {o["InstanceType"] for c in recorder.calls_of("ec2:CreateFleet")[0][
        "LaunchTemplateConfigs"] for o in c["Overrides"]}
    assert "t3.medium" not in overrides and overrides
    assert instance.labels[GROUP_ID_LABEL] == "pg-0a1b2c3d"


def test_without_a_group_the_launch_template_places_by_tenancy_only(
    provider: AwsCloudProvider, recorder: CallRecorder,
) -> None:
    provider.create(nodeclaim(), node_class())

    assert all(call["LaunchTemplateData"]["Placement"] == {"Tenancy": "default"}
               for call in recorder.calls_of("ec2:CreateLaunchTemplate"))


def test_a_node_class_whose_group_is_gone_launches_nothing(
    provider: AwsCloudProvider, groups: PlacementGroups,
) -> None:
    with pytest.raises(NodeClassNotReadyError, match="Placement group 'nowhere' not found"):
        provider.create(nodeclaim(), node_class(placementGroupSelector={"name": "nowhere"}))
    assert provider.list() == []


def test_a_nodeclaim_outside_the_node_classs_group_drifts(
    provider: AwsCloudProvider, groups: PlacementGroups, world: World, clients: AwsClients,
) -> None:
    instance = provider.create(nodeclaim(), node_class())
    clients.ec2.modify_instance_attribute(
        InstanceId=instance.instance_id, Groups=[world.security_group])

    def claim(labels: dict[str, str]) -> Any:
        built = nodeclaim()
        built.metadata.labels = {**(built.metadata.labels or {}), **labels}
        built.status = NodeClaimStatus(provider_id=instance.provider_id)
        return built

    grouped = node_class(placementGroupSelector={"name": "training"})
    assert provider.drift_reason(claim({}), grouped) == PLACEMENT_GROUP_DRIFT  # added
    assert provider.drift_reason(claim({GROUP_ID_LABEL: "pg-0a1b2c3d"}), grouped) is None
    moved = node_class(placementGroupSelector={"id": "pg-0f0e0d0c"})
    assert provider.drift_reason(claim({GROUP_ID_LABEL: "pg-0a1b2c3d"}), moved) == (
        PLACEMENT_GROUP_DRIFT)
    removed = node_class()
    assert provider.drift_reason(claim({GROUP_ID_LABEL: "pg-0a1b2c3d"}), removed) == (
        PLACEMENT_GROUP_DRIFT)
    assert provider.drift_reason(claim({}), removed) is None


def no_capacity(message: str) -> Any:
    """A fleet answer: the request's first override has no capacity, nothing launched."""

    def answer(request: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
        override = request["LaunchTemplateConfigs"][0]["Overrides"][0]
        return fake_response(200, {"Instances": [], "Errors": [{
            "LaunchTemplateAndOverrides": {"Overrides": override},
            "Lifecycle": "on-demand", "ErrorCode": "InsufficientInstanceCapacity",
            "ErrorMessage": message}]})

    return answer


def available(provider: AwsCloudProvider, node_class_: Any, name: str, zone: str) -> bool:
    (instance_type,) = [t for t in provider.get_instance_types(node_class_) if t.name == name]
    return next(o.available for o in instance_type.offerings
                if (o.zone, o.capacity_type) == (zone, "on-demand"))


def test_no_capacity_inside_a_group_keeps_the_offering_for_launches_outside_it(
    provider: AwsCloudProvider, groups: PlacementGroups, injector: FleetInjector,
    recorder: CallRecorder,
) -> None:
    grouped = node_class(placementGroupSelector={"name": "training"})
    injector.pending.append(no_capacity("We currently do not have sufficient capacity."))
    with pytest.raises(InsufficientCapacityError):
        provider.create(nodeclaim(), grouped)
    name, zone = fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])[0]

    assert not available(provider, grouped, name, zone)
    assert available(provider, node_class(), name, zone)  # Karpenter scopes it by group


def test_a_full_spread_group_zone_is_unavailable_to_every_type_of_the_launch(
    provider: AwsCloudProvider, groups: PlacementGroups, injector: FleetInjector,
    recorder: CallRecorder, clients: AwsClients,
) -> None:
    groups.add("spread", "pg-05eed000", "spread", SpreadLevel="rack")
    spread = node_class(placementGroupSelector={"name": "spread"})
    injector.pending.append(no_capacity(
        "You've reached the limit of instances in this spread placement group. A spread "
        "placement group can have up to seven instances per Availability Zone."))
    with pytest.raises(InsufficientCapacityError, match="spread placement group pg-05eed000"):
        provider.create(nodeclaim(), spread)
    overrides = fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])
    _, full = overrides[0]

    assert {name for name, zone in overrides if zone == full} == {
        "m5.large", "c5.large", "m5.xlarge", "t3.medium"}
    for name in ("m5.large", "c5.large", "m5.xlarge", "t3.medium"):
        assert not available(provider, spread, name, full)
        assert available(provider, spread, name, next(z for _, z in overrides if z != full))
        assert available(provider, node_class(), name, full)


# --- partition groups --------------------------------------------------------------------

PARTITION_LABEL = "karpenter.k8s.aws/placement-group-partition"
RACKS = {"name": "racks"}  # a partition group of three partitions


def partition_in(*partitions: str) -> list[dict[str, Any]]:
    return [{"key": PARTITION_LABEL, "operator": "In", "values": list(partitions)}]


def test_a_partition_group_offers_every_offering_once_per_partition(
    provider: AwsCloudProvider, groups: PlacementGroups,
) -> None:
    plain = {t.name: t for t in provider.get_instance_types(node_class())}
    racked = {t.name: t for t in provider.get_instance_types(node_class(
        placementGroupSelector=RACKS))}

    for name, instance_type in racked.items():
        offered = [(o.zone, o.capacity_type, o.price) for o in plain[name].offerings]
        assert sorted((o.zone, o.capacity_type, o.price, o.partition)
                      for o in instance_type.offerings) == sorted(
            (*key, partition) for key in offered for partition in ("1", "2", "3"))
        assert PARTITION_LABEL not in instance_type.labels
    assert {o.partition for t in plain.values() for o in t.offerings} == {None}


@pytest.mark.parametrize("selector", [{"name": "training"}, {"id": "pg-05eed000"}])
def test_cluster_and_spread_groups_have_no_partition_offerings(
    provider: AwsCloudProvider, groups: PlacementGroups, selector: dict[str, str],
) -> None:
    groups.add("spread", "pg-05eed000", "spread", SpreadLevel="rack")
    catalog = provider.get_instance_types(node_class(placementGroupSelector=selector))

    assert catalog and {o.partition for t in catalog for o in t.offerings} == {None}


def test_a_nodeclaim_asking_for_a_partition_launches_into_it_and_carries_its_label(
    provider: AwsCloudProvider, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    instance = provider.create(nodeclaim(requirements=partition_in("2")),
                               node_class(placementGroupSelector=RACKS))

    templates = recorder.calls_of("ec2:CreateLaunchTemplate")
    assert templates and all(call["LaunchTemplateData"]["Placement"] == {
        "GroupId": "pg-0f0e0d0c", "PartitionNumber": 2, "Tenancy": "default"} for call in templates)
    assert instance.labels[PARTITION_LABEL] == "2"
    assert instance.labels[GROUP_ID_LABEL] == "pg-0f0e0d0c"


def test_several_allowed_partitions_launch_into_the_lowest_with_one_override_per_type(
    provider: AwsCloudProvider, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    instance = provider.create(nodeclaim(requirements=partition_in("3", "2")),
                               node_class(placementGroupSelector=RACKS))

    assert {call["LaunchTemplateData"]["Placement"]["PartitionNumber"]
            for call in recorder.calls_of("ec2:CreateLaunchTemplate")} == {2}
    assert instance.labels[PARTITION_LABEL] == "2"
    overrides = fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])
    assert overrides and len(overrides) == len(set(overrides))


def test_without_a_partition_asked_ec2_picks_one_and_each_type_is_offered_once(
    provider: AwsCloudProvider, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))

    assert all(call["LaunchTemplateData"]["Placement"] == {"GroupId": "pg-0f0e0d0c",
                                                           "Tenancy": "default"}
               for call in recorder.calls_of("ec2:CreateLaunchTemplate"))
    overrides = fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])
    assert overrides and len(overrides) == len(set(overrides))
    assert instance.labels[PARTITION_LABEL] == ""  # for the registration hook to fill in


def test_a_partition_the_group_does_not_have_has_no_offering(
    provider: AwsCloudProvider, groups: PlacementGroups, recorder: CallRecorder,
) -> None:
    with pytest.raises(InsufficientCapacityError):
        provider.create(nodeclaim(requirements=partition_in("4")),
                        node_class(placementGroupSelector=RACKS))
    assert recorder.calls_of("ec2:CreateFleet") == []


def test_no_capacity_in_one_partition_keeps_the_others_and_the_group(
    provider: AwsCloudProvider, groups: PlacementGroups, injector: FleetInjector,
    recorder: CallRecorder,
) -> None:
    racks = node_class(placementGroupSelector=RACKS)
    injector.pending.append(no_capacity("We currently do not have sufficient capacity."))
    with pytest.raises(InsufficientCapacityError):
        provider.create(nodeclaim(requirements=partition_in("1")), racks)
    asked = recorder.calls_of("ec2:CreateFleet")[0]
    name, zone = fleet_overrides(asked)[0]
    capacity_type = asked["TargetCapacitySpecification"]["DefaultTargetCapacityType"]

    def by_partition(node_class_: Any) -> dict[str | None, bool]:
        (instance_type,) = [t for t in provider.get_instance_types(node_class_)
                            if t.name == name]
        return {o.partition: o.available for o in instance_type.offerings
                if (o.zone, o.capacity_type) == (zone, capacity_type)}

    assert by_partition(racks) == {"1": False, "2": True, "3": True}
    assert by_partition(node_class()) == {None: True}
