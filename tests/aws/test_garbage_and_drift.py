"""Garbage collection and AWS drift, on instances launched into moto."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    node_class_hash_annotations,
)
from nodewright.api.nodeclaim import NodeClaimStatus
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.drift import (
    AMI_DRIFT,
    NODECLASS_DRIFT,
    SECURITY_GROUP_DRIFT,
    SUBNET_DRIFT,
    static_drift,
)
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import NodeClaimNotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim.garbagecollection import InstanceGarbageCollection
from nodewright.runtime import VirtualClock
from nodewright.scheduling.pricing import OfflinePriceSource
from nodewright.state import ClusterState
from tests.aws.world import FakeClock

from .conftest import CallRecorder
from .world import CLUSTER, World, node_class, nodeclaim, store_nodeclaims


def _collector(provider: AwsCloudProvider, now: datetime,
               *nodeclaims: tuple[str, str | None]) -> InstanceGarbageCollection:
    """The instance garbage collector at `now`, over an API server holding these
    NodeClaims (name, providerID or None while launching)."""
    clock = VirtualClock(now)
    cluster = InMemoryCluster(clock)
    store_nodeclaims(cluster, nodeclaims)
    return InstanceGarbageCollection(cluster, provider, clock, ClusterState(clock))


def test_instances_without_a_nodeclaim_are_terminated_once_older_than_30s(
    provider: AwsCloudProvider,
) -> None:
    kept = provider.create(nodeclaim("kept-1", uid="uid-kept"), node_class())
    orphan = provider.create(nodeclaim("gone-1", uid="uid-gone"), node_class())
    launched = provider.get(orphan.provider_id).launch_time

    too_young = _collector(provider, launched + timedelta(seconds=10),
                           ("kept-1", kept.provider_id))
    too_young.reconcile("")
    assert too_young.collected == []

    old_enough = _collector(provider, launched + timedelta(seconds=31),
                            ("kept-1", kept.provider_id))
    old_enough.reconcile("")
    assert old_enough.collected == [orphan.provider_id]
    with pytest.raises(NodeClaimNotFoundError):
        provider.get(orphan.provider_id)
    assert provider.get(kept.provider_id).instance_id == kept.instance_id


def test_a_controller_that_just_took_over_terminates_only_what_no_nodeclaim_claims(
    provider: AwsCloudProvider,
) -> None:
    """Its state has seen nothing yet (the watch is still listing); the NodeClaims the API
    server lists protect their instances all the same."""
    kept = provider.create(nodeclaim("kept-1", uid="uid-kept"), node_class())
    orphan = provider.create(nodeclaim("gone-1", uid="uid-gone"), node_class())
    clock = VirtualClock(provider.get(orphan.provider_id).launch_time + timedelta(minutes=10))
    cluster = InMemoryCluster(clock)
    cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": "kept-1"},
                    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                              "kind": "EC2NodeClass", "name": "default"},
                             "requirements": []}})
    cluster.patch("NodeClaim", "kept-1", {"status": {"providerID": kept.provider_id}},
                  subresource="status")
    collector = InstanceGarbageCollection(cluster, provider, clock, ClusterState(clock))

    collector.reconcile("")

    assert collector.collected == [orphan.provider_id]
    assert provider.get(kept.provider_id).state in ("pending", "running")
    with pytest.raises(NodeClaimNotFoundError):
        provider.get(orphan.provider_id)


def test_a_nodeclaim_still_launching_protects_its_instance(
    provider: AwsCloudProvider,
) -> None:
    """A NodeClaim whose controller died between the launch and the providerID write:
    its instance is left for the lifecycle controller to adopt."""
    launching = provider.create(nodeclaim("launching-1", uid="uid-launching"), node_class())
    later = provider.get(launching.provider_id).launch_time + timedelta(days=1)

    kept = _collector(provider, later, ("launching-1", None))
    kept.reconcile("")
    assert kept.collected == []

    gone = _collector(provider, later)
    gone.reconcile("")
    assert gone.collected == [launching.provider_id]


def test_templates_and_profiles_of_a_deleted_node_class_are_removed(
    provider: AwsCloudProvider,
    clients: AwsClients,
    clock: FakeClock,
) -> None:
    instance = provider.create(nodeclaim(), node_class())
    provider.delete(instance.provider_id)
    profile = provider.resolve(node_class()).instance_profile
    # One template per distinct (image, max pods): t3.medium 17, c5/m5.large 29, m5.xlarge 58.
    templates = {
        t["LaunchTemplateName"] for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]
    }
    assert len(templates) == 3

    kept = provider.collect_cloud_garbage({"default"})
    assert kept.deleted_templates == () and kept.deleted_profiles == ()

    clock.advance(3601)  # the profile's protection after its creation is over
    report = provider.collect_cloud_garbage(set())
    assert set(report.deleted_templates) == templates
    assert report.deleted_profiles == (profile,)
    assert clients.ec2.describe_launch_templates()["LaunchTemplates"] == []


def with_provider_id(claim_name: str, provider_id: str):  # type: ignore[no-untyped-def]
    claim = nodeclaim(claim_name)
    claim.status = NodeClaimStatus(provider_id=provider_id)
    return claim


def test_drift_names_what_changed(
    provider: AwsCloudProvider, world: World, clients: AwsClients, clock: FakeClock
) -> None:
    instance = provider.create(nodeclaim(), node_class())
    # moto's CreateFleet does not apply the launch template's security groups (EC2 does).
    launched = clients.ec2.describe_instances(InstanceIds=[instance.instance_id])
    assert launched["Reservations"][0]["Instances"][0]["ImageId"] == instance.image_id
    clients.ec2.modify_instance_attribute(
        InstanceId=instance.instance_id, Groups=[world.security_group]
    )
    claim = with_provider_id("default-abcde", instance.provider_id)
    assert provider.drift_reason(claim, node_class()) is None

    other_image = node_class(
        amiFamily="AL2023", amiSelectorTerms=[{"id": world.arm_image}, {"id": "ami-760aaa0f"}]
    )
    assert provider.drift_reason(claim, other_image) == AMI_DRIFT

    elsewhere = node_class(subnetSelectorTerms=[{"id": world.other_subnet}])
    assert provider.drift_reason(claim, elsewhere) == SUBNET_DRIFT

    regrouped = node_class(securityGroupSelectorTerms=[{"id": world.other_security_group}])
    assert provider.drift_reason(claim, regrouped) == SECURITY_GROUP_DRIFT


def test_a_changed_ec2nodeclass_spec_is_node_class_drift_by_its_hash(
    provider: AwsCloudProvider, world: World, clients: AwsClients
) -> None:
    launched_from = node_class()
    instance = provider.create(nodeclaim(), launched_from)
    clients.ec2.modify_instance_attribute(
        InstanceId=instance.instance_id, Groups=[world.security_group]
    )
    claim = with_provider_id("default-abcde", instance.provider_id)
    # The provisioner stamps the hash of the spec it launched from.
    claim.metadata.annotations = node_class_hash_annotations(launched_from)
    assert provider.drift_reason(claim, node_class()) is None

    for changed in (
        node_class(tags={"team": "search"}),
        node_class(userData="#!/bin/bash\necho hello"),
        node_class(metadataOptions={"httpPutResponseHopLimit": 2}),
        node_class(blockDeviceMappings=[
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}, "rootVolume": True}
        ]),
        node_class(kubelet={"maxPods": 20}),
        node_class(detailedMonitoring=True),
    ):
        assert provider.drift_reason(claim, changed) == NODECLASS_DRIFT


def test_only_a_hash_of_the_same_version_drifts(
    provider: AwsCloudProvider, world: World, clients: AwsClients
) -> None:
    instance = provider.create(nodeclaim(), node_class())
    clients.ec2.modify_instance_attribute(
        InstanceId=instance.instance_id, Groups=[world.security_group]
    )
    claim = with_provider_id("default-abcde", instance.provider_id)
    claim.metadata.annotations = {
        NODECLASS_HASH: "12345", NODECLASS_HASH_VERSION: "v3",  # stamped by Karpenter
    }
    assert provider.drift_reason(claim, node_class(tags={"team": "search"})) is None
    claim.metadata.annotations = {}
    assert provider.drift_reason(claim, node_class(tags={"team": "search"})) is None


def test_selector_terms_are_not_hashed_their_resolved_values_are_checked() -> None:
    stamped = node_class_hash_annotations(node_class())
    moved = node_class(subnetSelectorTerms=[{"id": "subnet-0abc"}])
    assert static_drift(stamped, moved) is None
    assert static_drift(stamped, node_class(tags={"team": "search"})) is not None


def _template_names(clients: AwsClients) -> set[str]:
    listed = clients.ec2.describe_launch_templates(MaxResults=200)["LaunchTemplates"]
    return {t["LaunchTemplateName"] for t in listed}


def test_a_launch_template_no_launch_used_for_a_minute_is_deleted(
    provider: AwsCloudProvider, clients: AwsClients, clock: FakeClock, world: World,
) -> None:
    """Karpenter deletes a launch template its cache evicts (unused for a minute): an AMI
    change leaves nothing behind, and a launch that needs one again recreates it."""
    provider.create(nodeclaim(), node_class())
    first = _template_names(clients)
    clock.advance(30)
    assert provider.collect_cloud_garbage({"default"}).deleted_templates == ()

    new_image = node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": world.arm_image}])
    provider.create(nodeclaim("default-fghij", uid="uid-2", requirements=[
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]), new_image)
    second = _template_names(clients) - first
    assert second
    clock.advance(31)

    report = provider.collect_cloud_garbage({"default"})

    assert set(report.deleted_templates) == first
    assert _template_names(clients) == second
    provider.create(nodeclaim("default-klmno", uid="uid-3"), node_class())
    assert first & _template_names(clients)  # recreated on demand


def test_templates_left_by_an_earlier_controller_get_a_minute_before_they_go(
    clients: AwsClients, world: World, clock: FakeClock,
) -> None:
    AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource()).create(
        nodeclaim(), node_class())
    left = _template_names(clients)
    successor = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())

    assert successor.collect_cloud_garbage({"default"}).deleted_templates == ()
    clock.advance(61)
    assert set(successor.collect_cloud_garbage({"default"}).deleted_templates) == left


def test_the_profile_created_for_a_role_goes_once_no_status_names_it_and_it_is_unprotected(
    provider: AwsCloudProvider, clients: AwsClients, clock: FakeClock,
) -> None:
    """Karpenter's instance profile garbage collection: a profile no node class's status
    names (the node class dropped its role) goes once its hour of protection is over."""
    created = provider.resolve(node_class()).instance_profile
    assert created is not None

    assert provider.collect_cloud_garbage({"default"}, current_profiles={created}) \
        .deleted_profiles == ()
    assert provider.collect_cloud_garbage({"default"}, current_profiles=set()) \
        .deleted_profiles == ()  # protected: just created
    clock.advance(3601)
    report = provider.collect_cloud_garbage({"default"}, current_profiles=set())

    assert report.deleted_profiles == (created,)
    names = [p["InstanceProfileName"]
             for p in clients.iam.list_instance_profiles()["InstanceProfiles"]]
    assert created not in names


def test_a_profile_an_instance_still_runs_with_is_kept(
    provider: AwsCloudProvider, clock: FakeClock,
) -> None:
    from dataclasses import replace

    created = provider.resolve(node_class()).instance_profile
    assert created is not None
    instance = provider.create(nodeclaim(), node_class())
    running = replace(instance, instance_profile=created)
    provider.list = lambda: [running]  # type: ignore[method-assign]
    clock.advance(3601)
    assert provider.collect_cloud_garbage({"default"}, current_profiles=set()) \
        .deleted_profiles == ()


def test_a_profile_a_nodeclaim_was_launched_with_is_kept(
    provider: AwsCloudProvider, clock: FakeClock,
) -> None:
    """Karpenter's getActiveProfiles: the NodeClaims' karpenter.k8s.aws/instance-profile-name
    keeps a profile, even before EC2 lists the instance."""
    created = provider.resolve(node_class()).instance_profile
    assert created is not None
    clock.advance(3601)
    assert provider.collect_cloud_garbage(
        {"default"}, current_profiles=set(), active_profiles={created}).deleted_profiles == ()


def test_a_deleted_node_class_takes_its_templates_and_profile_with_it(
    provider: AwsCloudProvider, clients: AwsClients,
) -> None:
    provider.create(nodeclaim(), node_class())
    provider.create(nodeclaim("other-1", uid="uid-o"), node_class("other"))
    created = provider.resolve(node_class()).instance_profile
    others = {t["LaunchTemplateName"] for t in clients.ec2.describe_launch_templates(
        Filters=[{"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": ["other"]}]
    )["LaunchTemplates"]}

    report = provider.delete_node_class_resources("default")

    assert report.deleted_profiles == (created,)
    assert _template_names(clients) == others


def test_an_isolated_vpc_leaves_instance_profiles_alone(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                isolated_vpc=True)
    provider.delete(provider.create(nodeclaim(), node_class()).provider_id)
    before = len([a for a in recorder.actions if a.startswith("iam:")])

    report = provider.collect_cloud_garbage(set())
    finalized = provider.delete_node_class_resources("default")

    assert report.deleted_templates and report.deleted_profiles == ()
    assert finalized.deleted_profiles == ()
    assert len([a for a in recorder.actions if a.startswith("iam:")]) == before
