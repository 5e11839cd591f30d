"""Karpenter's interruption controller suite (pkg/controllers/interruption/suite_test.go,
v1.14.1), its queue tests, ported: each test names its It/Entry. The queue is moto's SQS;
the messages are Karpenter's (the same EventBridge JSON its builders marshal); the controller
is Nodewright's `Interruption` over the in-memory cluster, one reconcile per Karpenter
`ExpectSingletonReconciled` (Karpenter's fake SQS answers every message in one receive,
SQS at most ten: more messages take more receives).

The EC2 instance-status Its of the same file (system and instance status checks, scheduled
maintenance, dry run) are the instance status controller's, counted as not yet.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.interruption.controller import Interruption
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.aws.world import FakeClock
from tests.controllers.metric_samples import samples
from tests.controllers.test_state import nodeclaim

REGION = "us-west-2"
ZONE = "us-west-2a"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"


def metadata(detail_type: str, source: str, instance_id: str) -> dict[str, Any]:
    return {"version": "0", "account": "000000000000", "detail-type": detail_type,
            "id": str(uuid.uuid4()), "region": REGION, "source": source,
            "resources": [f"arn:aws:ec2:{REGION}:instance/{instance_id}"],
            "time": "2026-11-28T07:00:00Z"}


def spot_interruption(instance_id: str) -> dict[str, Any]:
    return {**metadata("EC2 Spot Instance Interruption Warning", "aws.ec2", instance_id),
            "detail": {"instance-id": instance_id, "instance-action": "terminate"}}


def reservation_interruption(instance_id: str) -> dict[str, Any]:
    return {**metadata("EC2 Capacity Reservation Instance Interruption Warning", "aws.ec2",
                       instance_id),
            "detail": {"instance-id": instance_id, "instance-action": "terminate"}}


def state_change(instance_id: str, state: str) -> dict[str, Any]:
    return {**metadata("EC2 Instance State-change Notification", "aws.ec2", instance_id),
            "detail": {"instance-id": instance_id, "state": state}}


def scheduled_change(instance_id: str) -> dict[str, Any]:
    return {**metadata("AWS Health Event", "aws.health", instance_id),
            "detail": {"service": "EC2", "eventTypeCategory": "scheduledChange",
                       "affectedEntities": [{"entityValue": instance_id}]}}


@dataclass
class World:
    clients: AwsClients
    queue: InterruptionQueue
    cluster: InMemoryCluster
    state: ClusterState
    controller: Interruption
    unavailable: UnavailableOfferings

    def claim(self, name: str, labels: dict[str, str] | None = None) -> str:
        """A launched NodeClaim of NodePool default; its instance id."""
        instance_id = f"i-{uuid.uuid4().hex[:17]}"
        body = nodeclaim(name, f"aws:///{ZONE}/{instance_id}")
        body["metadata"]["labels"].update(labels or {})
        created = self.cluster.create(body)
        stored = self.cluster.update({**created, "status": body["status"]},
                                     subresource="status")
        self.state.observe(WatchEvent("ADDED", stored))
        return instance_id

    def send(self, *messages: dict[str, Any] | str) -> None:
        for message in messages:
            body = message if isinstance(message, str) else json.dumps(message)
            self.clients.sqs.send_message(QueueUrl=self.queue.queue_url, MessageBody=body)

    def reconcile_until_empty(self) -> int:
        """Reconciles until the queue is empty; how many receives it took."""
        receives = 0
        while self.waiting() and receives < 50:
            self.controller.reconcile("")
            receives += 1
        return receives

    def waiting(self) -> int:
        attributes = self.clients.sqs.get_queue_attributes(
            QueueUrl=self.queue.queue_url,
            AttributeNames=["ApproximateNumberOfMessages",
                            "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return (int(attributes["ApproximateNumberOfMessages"])
                + int(attributes["ApproximateNumberOfMessagesNotVisible"]))

    def exists(self, name: str) -> bool:
        return any(c["metadata"]["name"] == name for c in self.cluster.list("NodeClaim"))


@pytest.fixture
def world(clients: AwsClients) -> Iterator[World]:
    url = clients.sqs.create_queue(QueueName="test-cluster")["QueueUrl"]
    queue = InterruptionQueue(clients.sqs, url, wait_seconds=0)
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    unavailable = UnavailableOfferings(FakeClock())
    controller = Interruption(cluster, clock, state, EventRecorder(cluster, clock), queue,
                              unavailable)
    yield World(clients, queue, cluster, state, controller, unavailable)


def disrupted(reason: str) -> float:
    """karpenter_nodeclaims_disrupted_total of NodePool default for `reason`, whatever the
    other labels."""
    return sum(sample.value for sample in samples(DISRUPTED)
               if sample.labels.get("reason") == reason
               and sample.labels.get("nodepool") == "default")


@pytest.mark.parametrize(("build", "reason", "labels"), [
    pytest.param(spot_interruption, "spot_interrupted", {},
                 id="should delete the NodeClaim when receiving a spot interruption warning"),
    pytest.param(reservation_interruption, "capacity_reservation_interrupted",
                 {"karpenter.k8s.aws/capacity-reservation-id": "cr-56fac701cc1951b03",
                  "karpenter.k8s.aws/capacity-reservation-type": "default"},
                 id="should delete the NodeClaim when receiving a capacity reservation "
                    "interruption warning"),
    pytest.param(scheduled_change, "scheduled_change", {},
                 id="should delete the NodeClaim when receiving a scheduled change message"),
])
def test_an_interruption_message_deletes_the_nodeclaim(world: World, build: Any, reason: str,
                                                       labels: dict[str, str]) -> None:
    """Context("Processing Messages"): one It per test id; the disruption is counted and
    the message deleted."""
    before = disrupted(reason)
    world.send(build(world.claim("interrupted", labels)))

    world.controller.reconcile("")

    assert not world.exists("interrupted")
    assert disrupted(reason) - before == 1
    assert world.waiting() == 0


def test_state_changes_delete_their_nodeclaims(world: World) -> None:
    """Context("Processing Messages") It("should delete the NodeClaim when receiving a state
    change message"): terminated and shutting-down count as instance_terminated, stopped and
    stopping as instance_stopped."""
    terminated, stopped = disrupted("instance_terminated"), disrupted("instance_stopped")
    states = ("terminated", "stopped", "stopping", "shutting-down")
    world.send(*(state_change(world.claim(f"claim-{state}"), state) for state in states))

    world.controller.reconcile("")

    assert not any(world.exists(f"claim-{state}") for state in states)
    assert disrupted("instance_terminated") - terminated == 2
    assert disrupted("instance_stopped") - stopped == 2
    assert world.waiting() == 0


@pytest.mark.parametrize("build", [
    pytest.param(spot_interruption, id="with spot interruption messages"),
    pytest.param(reservation_interruption, id="with capacity reservation interruption messages"),
])
def test_many_messages_delete_their_nodeclaims(world: World, build: Any) -> None:
    """DescribeTable("should handle multiple messages that cause nodeClaim deletion"), one
    test per Entry: 30 NodeClaims (Karpenter's 100 cost moto a minute)."""
    names = [f"claim-{n}" for n in range(30)]
    world.send(*(build(world.claim(name)) for name in names))

    world.reconcile_until_empty()

    assert not any(world.exists(name) for name in names)
    assert world.waiting() == 0


def test_a_message_that_cannot_be_parsed_is_deleted(world: World) -> None:
    """Context("Processing Messages") It("should delete a message when the message can't be
    parsed")"""
    world.send(json.dumps({"field1": "value1", "field2": "value2"}))

    world.controller.reconcile("")

    assert world.waiting() == 0


def test_a_state_change_to_another_state_is_deleted_and_ignored(world: World) -> None:
    """Context("Processing Messages") It("should delete a state change message when the state
    isn't in accepted states")"""
    world.send(state_change(world.claim("running"), "creating"))

    world.controller.reconcile("")

    assert world.exists("running")
    assert world.waiting() == 0


def test_a_spot_interruption_marks_the_offering_unavailable(world: World) -> None:
    """Context("Processing Messages") It("should mark the ICE cache for the offering when
    getting a spot interruption warning")"""
    instance_id = world.claim("spot", {"topology.kubernetes.io/zone": ZONE,
                                       "node.kubernetes.io/instance-type": "t3.large",
                                       "karpenter.sh/capacity-type": "spot"})
    world.send(spot_interruption(instance_id))

    world.controller.reconcile("")

    assert not world.exists("spot")
    assert world.waiting() == 0
    assert world.unavailable.is_unavailable("t3.large", ZONE, "spot")


@pytest.mark.parametrize("code", [
    pytest.param("QueueDoesNotExist",
                 id="should send an error on polling when QueueNotExists"),
    pytest.param("AccessDenied", id="should send an error on polling when AccessDenied"),
])
def test_a_failed_receive_fails_the_reconcile(world: World, code: str) -> None:
    """Describe("Error Handling"), one It per test id."""
    def refuse(**_: Any) -> None:
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": code, "Message": "error"}}, "ReceiveMessage")

    world.clients.sqs.meta.events.register("before-call.sqs.ReceiveMessage", refuse)
    with pytest.raises(Exception, match=code):
        world.controller.reconcile("")


@pytest.mark.parametrize("build", [
    pytest.param(spot_interruption, id="with spot interruption messages"),
    pytest.param(reservation_interruption, id="with capacity reservation interruption messages"),
])
def test_a_message_for_an_unknown_instance_is_no_error(world: World, build: Any) -> None:
    """Describe("Error Handling") DescribeTable("should not return an error when deleting a
    nodeClaim that is already deleted"), one test per Entry."""
    world.send(build("i-0123456789abcdef0"))

    world.controller.reconcile("")

    assert world.waiting() == 0
