"""What the interruption Its leave open, checked against Karpenter v1.14.1's controller
(pkg/controllers/interruption/{controller.go,parser.go,utils.go,metrics.go} and
messages/*): how messages are counted, which ones are no-ops, what the disruption metric
and the unavailable-offerings cache are told. The world (moto's SQS, the in-memory cluster,
Nodewright's `Interruption`) is the ported suite's, from test_interruption_karpenter.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodewright.cloud.aws.interruption_events import InterruptionEvent, parse_message
from nodewright.runtime.reconciler import WatchEvent
from tests.aws.test_interruption_karpenter import (
    DISRUPTED,
    ZONE,
    World,
    metadata,
    scheduled_change,
    spot_interruption,
    state_change,
)
from tests.aws.test_interruption_karpenter import world as world  # the fixture
from tests.controllers.metric_samples import total

RECEIVED = "karpenter_interruption_received_messages_total"
DELETED = "karpenter_interruption_deleted_messages_total"
QUEUE_DURATION = "karpenter_interruption_message_queue_duration_seconds_count"


def received(message_type: str) -> float:
    return total(RECEIVED, message_type=message_type)


def test_a_message_is_received_once_whatever_instances_it_names(world: World) -> None:
    """Controller.Reconcile counts ReceivedMessages once per parsed message with its Kind():
    an AWS Health event naming two of our instances is one scheduled_change message, and
    both NodeClaims are deleted."""
    first, second = world.claim("first"), world.claim("second")
    event = scheduled_change(first)
    event["detail"]["affectedEntities"].append({"entityValue": second})
    before = received("scheduled_change")
    world.send(event)

    world.controller.reconcile("")

    assert received("scheduled_change") - before == 1
    assert not world.exists("first") and not world.exists("second")


def other_version(instance_id: str) -> dict[str, Any]:
    return {**spot_interruption(instance_id), "version": "1"}


def unknown_detail_type(instance_id: str) -> dict[str, Any]:
    return {**metadata("EC2 Fast Snapshot Restore Event", "aws.ec2", instance_id),
            "detail": {"instance-id": instance_id}}


def other_service(instance_id: str) -> dict[str, Any]:
    event = scheduled_change(instance_id)
    event["detail"]["service"] = "RDS"
    return event


@pytest.mark.parametrize("build", [
    pytest.param(lambda i: state_change(i, "running"), id="a state change to running"),
    pytest.param(other_service, id="a health event of another service"),
    pytest.param(unknown_detail_type, id="an unknown detail-type"),
    pytest.param(other_version, id="a spot warning of version 1 (parsers key on version 0)"),
    pytest.param(lambda _: "", id="an empty body"),
])
def test_a_message_with_nothing_to_act_on_is_a_received_no_op(world: World, build: Any) -> None:
    """EventParser.Parse answers noop.Message, without an error, for an empty body, for a
    (version, source, detail-type) no parser has and for what a parser declines (a state
    outside stopping/stopped/shutting-down/terminated, a health event not of EC2's
    scheduledChange); the controller counts it as received with message_type no_op and
    deletes it. Nothing happens to the NodeClaim."""
    message = build(world.claim("kept"))
    before, deleted_before = received("no_op"), total(DELETED)
    world.send(message if isinstance(message, str) else json.dumps(message))

    world.controller.reconcile("")

    assert world.exists("kept")
    assert world.waiting() == 0
    assert received("no_op") - before == 1
    assert total(DELETED) - deleted_before == 1


def test_a_message_that_fails_to_parse_is_deleted_uncounted(world: World) -> None:
    """A body that is not JSON fails EventParser.Parse: logged, deleted (and counted as
    deleted), never counted as received."""
    before = total(RECEIVED)
    deleted_before = total(DELETED)
    world.send("{not json")

    world.controller.reconcile("")

    assert world.waiting() == 0
    assert total(RECEIVED) == before
    assert total(DELETED) - deleted_before == 1


def test_the_queue_duration_is_observed_once_the_message_is_handled(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """MessageLatency is observed after handleMessage returned without an error: a message
    whose NodeClaim could not be deleted (left for redelivery) is not observed; once
    handled, it is, once."""
    instance_id = world.claim("interrupted")
    world.send(spot_interruption(instance_id))
    before = total(QUEUE_DURATION)
    delete = world.cluster.delete

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the API server is away")

    monkeypatch.setattr(world.cluster, "delete", refuse)
    world.controller.reconcile("")
    assert world.exists("interrupted")
    assert total(QUEUE_DURATION) == before

    monkeypatch.setattr(world.cluster, "delete", delete)
    world.controller.handle(_events(instance_id))
    assert not world.exists("interrupted")
    assert total(QUEUE_DURATION) - before == 1


def _events(instance_id: str) -> list[InterruptionEvent]:
    parsed = parse_message(json.dumps(spot_interruption(instance_id)))
    assert isinstance(parsed, list)
    return parsed


def test_the_disruption_is_counted_with_the_nodeclaims_capacity_type(world: World) -> None:
    """deleteNodeClaim counts NodeClaimsDisruptedTotal with the NodeClaim's own
    karpenter.sh/capacity-type label: empty when it has none (not a made-up value)."""
    before = total(DISRUPTED, reason="instance_terminated", capacity_type="")
    world.send(state_change(world.claim("unlabelled"), "terminated"))

    world.controller.reconcile("")

    assert not world.exists("unlabelled")
    assert total(DISRUPTED, reason="instance_terminated", capacity_type="") - before == 1
    assert total(DISRUPTED, reason="instance_terminated", capacity_type="unknown") == 0


def test_a_spot_interruption_marks_the_offering_with_the_message_kind(world: World) -> None:
    """markUnavailableOfferings marks the NodeClaim's instance type and zone unavailable for
    spot with reason spot_interrupted (the message Kind())."""
    instance_id = world.claim("spot", {"topology.kubernetes.io/zone": ZONE,
                                       "node.kubernetes.io/instance-type": "c5.xlarge",
                                       "karpenter.sh/capacity-type": "spot"})
    world.send(spot_interruption(instance_id))

    world.controller.reconcile("")

    assert world.unavailable.reason("c5.xlarge", ZONE, "spot") == "spot_interrupted"
    assert not world.unavailable.is_unavailable("c5.xlarge", ZONE, "on-demand")


def test_a_deleting_nodeclaim_is_told_but_not_deleted_again(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """deleteNodeClaim returns at once for a NodeClaim with a deletion timestamp: the
    SpotInterrupted event is still published, no TerminatingOnInterruption, no disruption
    counted, and the message is deleted."""
    instance_id = world.claim("going")
    claim = world.cluster.get("NodeClaim", "going")
    world.cluster.update({**claim, "metadata": {**claim["metadata"],
                                                "finalizers": ["karpenter.sh/termination"]}})
    world.cluster.delete("NodeClaim", "going")
    world.state.observe(WatchEvent("MODIFIED", world.cluster.get("NodeClaim", "going")))
    before = total(DISRUPTED, reason="spot_interrupted")
    calls: list[str] = []
    delete = world.cluster.delete

    def counted(kind: str, name: str, **kwargs: Any) -> None:
        calls.append(name)
        delete(kind, name, **kwargs)

    monkeypatch.setattr(world.cluster, "delete", counted)
    world.send(spot_interruption(instance_id))

    world.controller.reconcile("")

    assert calls == []
    assert total(DISRUPTED, reason="spot_interrupted") == before
    reasons = [e.get("reason") for e in world.cluster.list("Event")]
    assert "SpotInterrupted" in reasons
    assert "TerminatingOnInterruption" not in reasons
    assert world.waiting() == 0
