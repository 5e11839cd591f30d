"""Karpenter test/suites/interruption/suite_test.go (v1.14.1), on the moto account with the
interruption queue (SQS in moto): one replica of a deployment on one node; something
happens to the instance; the node is deleted and the pod runs on a new one.

What AWS does between the instance and the queue, moto does not: EventBridge's rules put
EC2's spot interruption warnings, reserved-capacity interruption warnings, instance state
changes and AWS Health's scheduled changes on the queue. The stories put the message
EventBridge would deliver (the shapes of `tests/aws/test_interruption_karpenter.py`), after
doing to the instance in moto what the event reports (stopping it, terminating it). An
instance failing its status checks is reported by DescribeInstanceStatus's answer
(`ImpairedInstance`), as EC2 reports a kernel panic."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.test_interruption_karpenter import (
    reservation_interruption,
    scheduled_change,
    spot_interruption,
    state_change,
)
from tests.aws.world import World
from tests.aws_e2e.moto_world import (
    InstanceReservations,
    MotoCluster,
    deployment,
    node_class,
    node_pool,
)

APP = {"app": "my-app"}


@pytest.fixture
def queue_url(clients: AwsClients) -> str:
    return str(clients.sqs.create_queue(QueueName="interruptions")["QueueUrl"])


@pytest.fixture
def env(clients: AwsClients, world: World, queue_url: str) -> MotoCluster:
    return MotoCluster(clients, queue_url=queue_url)


def pool(*capacity_types: str) -> dict[str, Any]:
    return node_pool(requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In",
         "values": list(capacity_types)},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]}])


def one_node(env: MotoCluster, *docs: dict[str, Any]) -> tuple[str, str]:
    """The app runs on its one node: (the node, its instance id)."""
    env.apply(*docs, deployment("my-app", 1, labels=APP, terminationGracePeriodSeconds=0))
    assert env.run_until(lambda: len(env.running_pods(APP)) == 1), env.errors
    (node,) = env.nodes()
    provider_id = str(node["spec"]["providerID"])
    return str(node["metadata"]["name"]), provider_id.rsplit("/", 1)[-1]


def deleted_and_replaced(env: MotoCluster, node: str) -> None:
    """The node is being deleted within a minute, then gone, and the app runs again."""
    def deleting() -> bool:
        names = {n["metadata"]["name"]: n for n in env.nodes()}
        return node not in names or bool(names[node]["metadata"].get("deletionTimestamp"))

    assert env.run_until(deleting, timeout=60)

    def replaced() -> bool:
        running = env.running_pods(APP)
        return (node not in {n["metadata"]["name"] for n in env.nodes()} and len(running) == 1
                and running[0]["spec"]["nodeName"] != node)

    assert env.run_until(replaced, timeout=900), (env.errors, env.nodes())


def send(env: MotoCluster, queue_url: str, message: dict[str, Any]) -> None:
    env.clients.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(message))


def test_a_spot_interruption_warning_replaces_the_node(
        env: MotoCluster, queue_url: str) -> None:
    """Karpenter test/suites/interruption/suite_test.go It("should terminate the spot
    instance and spin-up a new node on spot interruption warning") (there an AWS FIS
    experiment sends the warning)."""
    node, instance_id = one_node(env, node_class(), pool("spot"))
    assert env.get("Node", node)["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"

    send(env, queue_url, spot_interruption(instance_id))

    deleted_and_replaced(env, node)
    assert env.instance(instance_id)["State"]["Name"] in ("shutting-down", "terminated")


def test_a_reserved_capacity_interruption_warning_replaces_the_node(
        env: MotoCluster, clients: AwsClients, world: World, queue_url: str) -> None:
    """Karpenter test/suites/interruption/suite_test.go It("should terminate the
    interruptible reserved capacity instance and spin-up a new node on reserved capacity
    interruption warning"): the node launches into the interruptible reservation (moto
    has no capacity reservations: DescribeCapacityReservations is answered by
    `FakeCapacityReservations`), then its source reclaims the capacity."""
    zone = sorted(world.subnets)[0]
    FakeCapacityReservations(clients).add(
        FakeReservation("cr-source", "m5.large", zone, available=0),
        FakeReservation("cr-interruptible", "m5.large", zone, interruptible=True))
    terms = [{"id": "cr-source"}, {"id": "cr-interruptible"}]
    asked: list[str] = []

    def as_on_demand(params: dict[str, Any], **_: Any) -> None:
        """moto launches on-demand and spot capacity only: EC2's reserved-capacity target
        of an interruptible reservation is launched by moto as on-demand."""
        target = params["TargetCapacitySpecification"]
        asked.append(target["DefaultTargetCapacityType"])
        if target["DefaultTargetCapacityType"] == "reserved-capacity":
            target["DefaultTargetCapacityType"] = "on-demand"
    clients.ec2.meta.events.register("provide-client-params.ec2.CreateFleet", as_on_demand)
    InstanceReservations(clients)

    node, instance_id = one_node(env, node_class(capacityReservationSelectorTerms=terms),
                                 pool("on-demand", "reserved"))
    labels = env.get("Node", node)["metadata"]["labels"]
    assert labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == "true"
    assert labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-interruptible"
    assert asked == ["reserved-capacity"]

    send(env, queue_url, reservation_interruption(instance_id))

    deleted_and_replaced(env, node)


@pytest.mark.parametrize(("state", "text"), [
    ("stopped", 'It("should terminate the node at the API server when the EC2 instance is '
                'stopped")'),
    ("terminated", 'It("should terminate the node at the API server when the EC2 instance '
                   'is terminated")'),
])
def test_an_instance_stopped_or_terminated_behind_the_cluster_s_back_loses_its_node(
        env: MotoCluster, queue_url: str, state: str, text: str) -> None:
    """Karpenter test/suites/interruption/suite_test.go It("should terminate the node at the
    API server when the EC2 instance is stopped") and It("... is terminated")."""
    node, instance_id = one_node(env, node_class(), pool("on-demand"))

    if state == "stopped":
        env.clients.ec2.stop_instances(InstanceIds=[instance_id])
    else:
        env.clients.ec2.terminate_instances(InstanceIds=[instance_id])
    send(env, queue_url, state_change(instance_id, state))

    deleted_and_replaced(env, node)


def test_a_scheduled_change_health_event_replaces_the_node(
        env: MotoCluster, queue_url: str) -> None:
    """Karpenter test/suites/interruption/suite_test.go It("should terminate the node when
    receiving a scheduled change health event")."""
    node, instance_id = one_node(env, node_class(), pool("on-demand"))

    send(env, queue_url, scheduled_change(instance_id))

    deleted_and_replaced(env, node)


class ImpairedInstance:
    """DescribeInstanceStatus reports the instance's own status check failed since `since`,
    as EC2 does for an instance whose kernel panicked. EC2 answers the filters the health
    checks send (an impaired instance check, an impaired system check, scheduled events)
    with the instances that match: this one for the first, none for the others (moto
    ignores these filters and lists every instance as healthy)."""

    def __init__(self, clients: AwsClients, instance_id: str, since: datetime) -> None:
        self.entry = {
            "InstanceId": instance_id, "InstanceState": {"Code": 16, "Name": "running"},
            "InstanceStatus": {"Status": "impaired", "Details": [
                {"Name": "reachability", "Status": "failed", "ImpairedSince": since}]},
            "SystemStatus": {"Status": "ok", "Details": [
                {"Name": "reachability", "Status": "passed"}]}}
        self.filters: list[Any] = []
        clients.ec2.meta.events.register("provide-client-params.ec2.DescribeInstanceStatus",
                                         self._asked)
        clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceStatus",
                                         self._answer)

    def _asked(self, params: dict[str, Any], **_: Any) -> None:
        self.filters.append(params.get("Filters") or [])

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        asked = {f["Name"]: f["Values"] for f in self.filters[-1]}
        impaired = "impaired" in asked.get("instance-status.status", [])
        parsed["InstanceStatuses"] = [self.entry] if impaired else []


def test_an_instance_failing_its_status_checks_is_replaced_without_a_queue(
        clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/interruption/suite_test.go It("should terminate the node when
    receiving an instance status failure"): no interruption queue; the instance status
    health checks find the impaired instance."""
    env = MotoCluster(clients)
    node, instance_id = one_node(env, node_class(), pool("on-demand"))

    ImpairedInstance(clients, instance_id, env.clock.now() - timedelta(seconds=5))

    def deleting() -> bool:
        names = {n["metadata"]["name"]: n for n in env.nodes()}
        return node not in names or bool(names[node]["metadata"].get("deletionTimestamp"))

    assert env.run_until(deleting, timeout=30 * 60)
    deleted_and_replaced(env, node)
