"""The AWS provider's EC2 calls go through Karpenter's batchers (moto behind them): a burst of
NodeClaims asking for the same capacity is one CreateFleet, each NodeClaim still gets its own
instance tagged with its name, and deleting an instance that is already shutting down costs
no TerminateInstances call (pkg/providers/instance/instance.go Delete)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from nodewright.cloud.aws.batcher import Window
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.ec2_batcher import BatchWindows
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import Instance
from nodewright.scheduling.pricing import OfflinePriceSource

from .conftest import CallRecorder
from .failing_calls import answer, failing
from .world import CLUSTER, FakeClock, World, node_class, nodeclaim

BURST = 5


def burst_provider(clients: AwsClients, clock: FakeClock, items: int) -> AwsCloudProvider:
    """A provider whose fleet window closes once `items` launches are in (not on a timer)."""
    fleets = Window(idle_seconds=30.0, max_seconds=30.0, max_items=items)
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            batch_windows=BatchWindows(create_fleet=fleets))


def instance_tags(clients: AwsClients, instance_id: str) -> dict[str, str]:
    raw = clients.ec2.describe_instances(InstanceIds=[instance_id])
    (instance,) = [i for r in raw["Reservations"] for i in r["Instances"]]
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


def test_a_burst_of_nodeclaims_asking_the_same_launches_through_one_fleet(
        clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder) -> None:
    provider = burst_provider(clients, clock, BURST)
    provider.get_instance_types(node_class())  # resolved before the burst
    claims = [nodeclaim(f"default-{n}", uid=f"6f1c1b7e-1111-4a4a-9c9c-00000000000{n}")
              for n in range(BURST)]

    with ThreadPoolExecutor(max_workers=BURST) as pool:
        launched: list[Instance] = list(pool.map(
            lambda claim: provider.create(claim, node_class()), claims))

    (fleet,) = recorder.calls_of("ec2:CreateFleet")
    assert fleet["TargetCapacitySpecification"]["TotalTargetCapacity"] == BURST
    assert len({instance.instance_id for instance in launched}) == BURST
    for claim, instance in zip(claims, launched, strict=True):
        tags = instance_tags(clients, instance.instance_id)
        assert tags["karpenter.sh/nodeclaim"] == claim.name
        assert "Name" not in tags  # the tagging controller's, once the Node registers
        assert tags["karpenter.sh/nodepool"] == "default"
    listed = {i.instance_id: i.nodeclaim_name for i in provider.list()}
    assert listed == {i.instance_id: c.name for c, i in zip(claims, launched, strict=True)}


def test_a_lone_launch_keeps_its_client_token_and_its_nodeclaims_tags(
        clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder) -> None:
    provider = burst_provider(clients, clock, 1)

    instance = provider.create(nodeclaim(), node_class())

    (fleet,) = recorder.calls_of("ec2:CreateFleet")
    assert fleet["ClientToken"].startswith(nodeclaim().metadata.uid or "")
    sent = {t["Key"]: t["Value"] for t in fleet["TagSpecifications"][0]["Tags"]}
    assert sent["karpenter.sh/nodeclaim"] == nodeclaim().name
    assert recorder.calls_of("ec2:CreateTags") == []
    assert instance_tags(clients, instance.instance_id)["karpenter.sh/nodeclaim"] == (
        nodeclaim().name)


def shutting_down(clients: AwsClients, instance_id: str) -> dict[str, Any]:
    raw = clients.ec2.describe_instances(InstanceIds=[instance_id])
    (instance,) = [i for r in raw["Reservations"] for i in r["Instances"]]
    instance["State"] = {"Code": 32, "Name": "shutting-down"}
    # As EC2 would send it (failing_calls serializes the answer as JSON).
    return json.loads(json.dumps(
        {"Reservations": [{"ReservationId": "r-1", "Instances": [instance]}]}, default=str))


def test_deleting_an_instance_already_shutting_down_sends_no_terminate(
        provider: AwsCloudProvider, clients: AwsClients, world: World,
        recorder: CallRecorder) -> None:
    instance = provider.create(nodeclaim(), node_class())
    output = shutting_down(clients, instance.instance_id)

    with failing(clients.ec2) as calls:
        calls.queue("DescribeInstances", answer(output))
        provider.delete(instance.provider_id)

    assert recorder.calls_of("ec2:TerminateInstances") == []


def test_deleting_a_running_instance_terminates_it_and_a_second_delete_sends_nothing(
        provider: AwsCloudProvider, world: World, recorder: CallRecorder) -> None:
    instance = provider.create(nodeclaim(), node_class())

    provider.delete(instance.provider_id)
    provider.delete(instance.provider_id)  # gone (or shutting down) by now

    assert recorder.calls_of("ec2:TerminateInstances") == [
        {"InstanceIds": [instance.instance_id]}]
