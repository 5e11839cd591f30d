"""Fencing (issue #28): an SQS message that a long poll returns after the replica lost the
Lease is not acted on by that replica, and stays in the queue for the next leader."""

from __future__ import annotations

import threading

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruption_queue import EventHandler, InterruptionQueue, PollResult
from nodewright.cluster import objects
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.interruption.controller import Interruption
from nodewright.operator.fencing import fenced
from nodewright.operator.leader import LeaderElector
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.test_state import nodeclaim
from tests.kube.waiting import eventually
from tests.operator.test_fencing import Partition
from tests.operator.world import FAST_LEASE, LockedCluster

from .test_interruption import RULES, interruption_queue_with_rules, put_event


class LongPollAcrossTheStepDown:
    """The receive is in flight when the replica loses the Lease; its answer comes after."""

    def __init__(self, queue: InterruptionQueue, lose_the_lease: threading.Event,
                 stepped_down: threading.Event) -> None:
        self.queue = queue
        self.wait_seconds = queue.wait_seconds
        self._lose = lose_the_lease
        self._stepped_down = stepped_down
        self.results: list[PollResult] = []

    def poll_once(self, handle: EventHandler) -> PollResult:
        self._lose.set()
        eventually(self._stepped_down.is_set, "the replica to step down")
        result = self.queue.poll_once(handle)
        self.results.append(result)
        return result


def in_flight(clients: AwsClients, queue: InterruptionQueue) -> int:
    attributes = clients.sqs.get_queue_attributes(
        QueueUrl=queue.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible",
                                                  "ApproximateNumberOfMessages"])["Attributes"]
    return (int(attributes["ApproximateNumberOfMessagesNotVisible"])
            + int(attributes["ApproximateNumberOfMessages"]))


def test_an_sqs_message_received_after_the_lease_was_lost_is_left_for_the_next_leader(
        clients: AwsClients) -> None:
    queue = interruption_queue_with_rules(clients)
    queue.wait_seconds = 1  # a long poll: handled outside the state lock, as in production
    put_event(clients, *RULES["spot"], {"instance-id": "i-spot", "instance-action": "terminate"})

    clock = SystemClock()
    cluster = LockedCluster(InMemoryCluster(clock), threading.RLock())
    launched = nodeclaim("spot-claim", "aws:///us-east-1a/i-spot")
    created = cluster.create(launched)
    claim = cluster.update({**created, "status": launched["status"]}, subresource="status")
    state = ClusterState(clock)
    state.observe(WatchEvent("ADDED", claim))

    link = Partition(cluster)
    stepped_down = threading.Event()
    elector = LeaderElector(link, name="lease", namespace="default", identity="first",
                            timing=FAST_LEASE, on_stopped_leading=stepped_down.set)
    writer = fenced(cluster, elector)
    source = LongPollAcrossTheStepDown(queue, link.cut_off, stepped_down)
    controller = Interruption(writer, clock, state, EventRecorder(writer, clock), source)
    elector.start()
    try:
        eventually(elector.is_leader, "the replica to lead")
        controller.reconcile("")  # taken while leading; the receive returns after step-down
    finally:
        elector.stop(release=False, timeout=5)

    (result,) = source.results
    assert (result.received, result.failed, result.deleted) == (1, 1, 0)
    stored = cluster.get("NodeClaim", "spot-claim")
    assert not objects.is_deleting(stored)
    assert in_flight(clients, queue) == 1  # redelivered once its visibility timeout ends
