"""An instance's life on the virtual clock: pending, running, shutting-down, terminated."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.cloud.provider import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim


def test_an_instance_runs_after_the_launch_delay(ec2: SimulatedEC2, clock: VirtualClock) -> None:
    instance = ec2.create(nodeclaim(types=("m5.large",)), node_class())

    clock.advance(19)
    before = ec2.get(instance.provider_id).state
    clock.advance(1)

    assert (instance.state, before) == ("pending", "pending")
    assert ec2.get(instance.provider_id).state == "running"


def test_delete_terminates_after_the_termination_delay(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    instance = ec2.create(nodeclaim(types=("m5.large",)), node_class())
    clock.advance(60)

    ec2.delete(instance.provider_id)
    ec2.delete(instance.provider_id)  # idempotent
    shutting_down = ec2.get(instance.provider_id).state
    listed = [i.instance_id for i in ec2.list()]
    clock.advance(30)

    assert shutting_down == "shutting-down"
    assert listed == [instance.instance_id]
    assert ec2.list() == []
    with pytest.raises(NodeClaimNotFoundError, match=instance.instance_id):
        ec2.get(instance.provider_id)
    ec2.delete(instance.provider_id)  # gone counts as done


def test_an_instance_deleted_while_pending_never_runs(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    instance = ec2.create(nodeclaim(types=("m5.large",)), node_class())
    clock.advance(5)
    ec2.delete(instance.provider_id)
    clock.advance(20)

    assert ec2.get(instance.provider_id).state == "shutting-down"
    assert ec2.ledger().entries[0].running_at is None


def test_unknown_and_malformed_provider_ids(ec2: SimulatedEC2) -> None:
    with pytest.raises(NodeClaimNotFoundError):
        ec2.get("aws:///us-east-1a/i-0123456789abcdef0")
    ec2.delete("aws:///us-east-1a/i-0123456789abcdef0")
    with pytest.raises(CloudProviderError, match="providerID of the form"):
        ec2.get("kind://node-1")


def test_delays_come_from_the_settings(clock: VirtualClock) -> None:
    ec2 = SimulatedEC2(clock, settings=SimSettings(launch_delay=5, termination_delay=10))
    instance = ec2.create(nodeclaim(types=("m5.large",)), node_class())

    clock.advance(5)
    running = ec2.get(instance.provider_id).state
    ec2.delete(instance.provider_id)
    clock.advance(10)

    assert running == "running"
    assert ec2.list() == []


def test_instances_carry_the_tags_and_labels_karpenter_writes(ec2: SimulatedEC2) -> None:
    instance = ec2.create(
        nodeclaim("team-a-4f7kq", types=("m5.large",), nodepool="team-a"),
        node_class(tags={"team": "a"}),
    )

    assert instance.tags == {
        "team": "a",
        "kubernetes.io/cluster/nodewright-sim": "owned",
        "eks:eks-cluster-name": "nodewright-sim",
        "karpenter.sh/nodepool": "team-a",
        "karpenter.sh/nodeclaim": "team-a-4f7kq",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "Name": "team-a/team-a-4f7kq",
    }
    assert instance.provider_id == f"aws:///{instance.zone}/{instance.instance_id}"
    assert len(instance.instance_id) == 19 and instance.instance_id.startswith("i-")
    assert instance.labels["topology.kubernetes.io/zone"] == instance.zone
    assert instance.labels["topology.k8s.aws/zone-id"].startswith("use1-az")
    assert instance.labels["karpenter.k8s.aws/instance-family"] == "m5"
    assert (instance.nodeclaim_name, instance.nodepool_name) == ("team-a-4f7kq", "team-a")


def test_the_ledger_bills_running_time_with_a_one_minute_minimum(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    short = ec2.create(nodeclaim("short", types=("m5.large",)), node_class())
    ec2.create(nodeclaim("long", types=("m5.large",)), node_class())
    clock.advance(20)  # both running
    clock.advance(30)
    ec2.delete(short.provider_id)
    clock.advance(3600 - 30)

    entries = {e.nodeclaim: e for e in ec2.ledger().entries}
    now = clock.now()
    assert entries["short"].running_seconds(now) == 30
    assert entries["short"].cost(now) == pytest.approx(0.096 / 60)
    assert entries["long"].cost(now) == pytest.approx(0.096)
    assert ec2.ledger().hourly_cost(now) == pytest.approx(0.096)
    assert ec2.hourly_cost(now) == ec2.ledger().hourly_cost(now)  # what the recorder reads
    before_running = now - timedelta(seconds=3620)
    assert ec2.hourly_cost(before_running) == ec2.ledger().hourly_cost(before_running) == 0
    assert ec2.ledger().instance_hours(now) == pytest.approx(1 + 30 / 3600)
    assert ec2.counters.launched == 2 and ec2.counters.terminated == 1


def test_it_is_a_cloud_provider_with_the_aws_repair_policies(ec2: SimulatedEC2) -> None:
    from nodewright.cloud.aws.provider import REPAIR_POLICIES

    provider: CloudProvider = ec2

    assert isinstance(provider, CloudProvider)
    assert tuple(provider.repair_policies()) == REPAIR_POLICIES
