"""Instance status health checks, as Karpenter's interruption suite tells them (its
instance status cases, one story each): EC2 reports one of our instances impaired, and the
NodeClaim is replaced through the interruption handler.

The simulated EC2 answers DescribeInstanceStatus for the instances a story impairs
(`cloud.impair`), read by the same code as EC2's answers; a failed check counts after 2
minutes and the checks run every minute, so each story gives them a few virtual minutes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from nodewright.cloud.aws.instance_statuses import InstanceStatusProvider
from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.interruption.instance_status import InstanceStatusChecks
from nodewright.state.wellknown import TERMINATION_TIMESTAMP_ANNOTATION
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.controllers.metric_samples import samples
from tests.disruption.helpers import decisions
from tests.harness import World

UNHEALTHY = "karpenter_interruption_instance_status_unhealthy_total"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"
HOLD = "testing/finalizer"
CHECKS_SECONDS = 4 * 60  # the 2-minute threshold and a poll after it, with room


def total(metric: str, /, **labels: str) -> float:
    """The sum of the metric's samples that carry these labels."""
    return sum(s.value for s in samples(metric)
               if all(s.labels.get(k) == v for k, v in labels.items()))


class Counts:
    """Metric values from the start of a story (the registry is the process's)."""

    def __init__(self) -> None:
        self.start = {(name, category): total(name, **labels)
                      for name, category, labels in self._series()}

    @staticmethod
    def _series() -> list[tuple[str, str, dict[str, str]]]:
        found = []
        for category in ("InstanceStatus", "SystemStatus", "EventStatus"):
            found.append((UNHEALTHY, category, {"category": category}))
        for reason in ("instance_status", "system_status", "event_status"):
            found.append((DISRUPTED, reason, {"reason": reason, "nodepool": "default"}))
        return found

    def unhealthy(self, category: str) -> float:
        return total(UNHEALTHY, category=category) - self.start[(UNHEALTHY, category)]

    def disrupted(self, reason: str) -> float:
        return (total(DISRUPTED, reason=reason, nodepool="default")
                - self.start[(DISRUPTED, reason)])


@pytest.fixture
def counts() -> Counts:
    return Counts()


def checks(world: World) -> InstanceStatusChecks:
    assert world.controllers.get("interruption.instancestatus", InstanceStatusChecks) is not None
    return world.controllers.get("interruption.instancestatus", InstanceStatusChecks)


def workshop(world: World, nodes: int = 1) -> list[Any]:
    """The workshop's pods on `nodes` nodes, settled; the instances, oldest first."""
    world.apply(WORKSHOP)
    world.scale("inflate", 5 * nodes)
    assert world.settle()
    instances = sorted(world.live_instances(), key=lambda i: i.instance_id)
    assert len(instances) >= nodes
    return instances


def claim_of(world: World, instance: Any) -> dict[str, Any] | None:
    for claim in world.nodeclaims():
        if (claim.get("status") or {}).get("providerID") == instance.provider_id:
            return claim
    return None


def hold(world: World, instance: Any) -> str:
    """Another finalizer on the instance's NodeClaim, so it stays to be looked at."""
    claim = claim_of(world, instance)
    assert claim is not None
    name = objects.name(claim)
    finalizers = [*(claim["metadata"].get("finalizers") or []), HOLD]
    world.cluster.patch("NodeClaim", name, {"metadata": {"finalizers": finalizers}})
    world.deliver()
    return name


def deleting(world: World, name: str) -> bool:
    return any(objects.name(c) == name and objects.is_deleting(c) for c in world.nodeclaims())


def annotation(world: World, name: str) -> str | None:
    claim = world.cluster.get("NodeClaim", name)
    return objects.annotations(claim).get(TERMINATION_TIMESTAMP_ANNOTATION)


@pytest.mark.parametrize(("impairment", "category", "reason"), [
    ("system", "SystemStatus", "system_status"),
    ("instance", "InstanceStatus", "instance_status"),
])
def test_a_failed_status_check_replaces_the_node_and_its_pods_move(
    world: World, counts: Counts, impairment: str, category: str, reason: str,
) -> None:
    [broken] = workshop(world)

    world.cloud.impair(broken.instance_id, impairment)

    assert world.run_until(lambda: claim_of(world, broken) is None, timeout=CHECKS_SECONDS * 2)
    assert counts.disrupted(reason) == 1
    assert counts.unhealthy(category) == 1
    assert world.events("InstanceUnhealthy", kind="NodeClaim")
    assert world.events("TerminatingOnInterruption", kind="NodeClaim")
    [decision] = [d for d in decisions(world) if d.method == ex.INTERRUPTION]
    assert (decision.outcome, decision.cause) == (ex.DISRUPTED, category)
    assert world.settle()
    assert broken.instance_id not in [i.instance_id for i in world.live_instances()]
    expect_running(world, 5)
    expect_no_controller_errors(world)


def test_a_failed_check_terminates_now_with_the_termination_timestamp(world: World) -> None:
    [broken] = workshop(world)
    name = hold(world, broken)

    world.cloud.impair(broken.instance_id, "system")

    assert world.run_until(lambda: deleting(world, name), timeout=CHECKS_SECONDS)
    assert annotation(world, name) is not None


def test_a_scheduled_event_drains_the_node_without_a_termination_timestamp(
    world: World, counts: Counts,
) -> None:
    [retiring] = workshop(world)
    name = hold(world, retiring)

    world.cloud.impair(retiring.instance_id, "event")

    assert world.run_until(lambda: deleting(world, name), timeout=CHECKS_SECONDS)
    assert annotation(world, name) is None
    assert counts.disrupted("event_status") == 1
    assert counts.unhealthy("EventStatus") == 1
    assert world.events("InstanceUnhealthy", kind="NodeClaim")


def test_a_broken_instance_with_maintenance_scheduled_too_is_terminated_now(
    world: World, counts: Counts,
) -> None:
    [broken] = workshop(world)
    name = hold(world, broken)

    # The host's check has failed for an hour when the retirement is scheduled.
    world.cloud.impair(broken.instance_id, "system", since=world.clock.now() - timedelta(hours=1))
    world.cloud.impair(broken.instance_id, "event")

    assert world.run_until(lambda: annotation(world, name) is not None, timeout=CHECKS_SECONDS)
    assert deleting(world, name)
    # Deleted once, by the forceful kind; both failures are counted.
    assert counts.disrupted("system_status") == 1
    assert counts.disrupted("event_status") == 0
    assert (counts.unhealthy("SystemStatus"), counts.unhealthy("EventStatus")) == (1, 1)


def test_later_checks_leave_the_termination_timestamp_as_it_was(
    world: World, counts: Counts,
) -> None:
    [broken] = workshop(world)
    name = hold(world, broken)
    world.cloud.impair(broken.instance_id, "system")
    assert world.run_until(lambda: annotation(world, name) is not None, timeout=CHECKS_SECONDS)
    first = annotation(world, name)

    world.advance(5 * 60)  # five more checks of a still impaired, still running instance

    assert annotation(world, name) == first
    assert counts.disrupted("system_status") == 1
    assert counts.unhealthy("SystemStatus") == 1


def test_a_failed_ebs_check_alone_leaves_the_node_alone(world: World, counts: Counts) -> None:
    [instance] = workshop(world)

    world.cloud.impair(instance.instance_id, "ebs", since=world.clock.now() - timedelta(hours=1))
    world.advance(CHECKS_SECONDS)

    claim = claim_of(world, instance)
    assert claim is not None and not objects.is_deleting(claim)
    assert not world.events("InstanceUnhealthy")
    assert total(UNHEALTHY, category="EBSStatus") == 0


def test_in_dry_run_the_unhealthy_instance_is_counted_and_left_alone(
    world: World, counts: Counts,
) -> None:
    checks(world).dry_run = True
    [broken] = workshop(world)

    world.cloud.impair(broken.instance_id, "instance")

    assert world.run_until(lambda: counts.unhealthy("InstanceStatus") == 1,
                           timeout=CHECKS_SECONDS)
    world.advance(5 * 60)
    assert counts.unhealthy("InstanceStatus") == 1  # once, however many checks see it
    claim = claim_of(world, broken)
    assert claim is not None and not objects.is_deleting(claim)
    assert not world.events("InstanceUnhealthy")
    assert counts.disrupted("instance_status") == 0


def test_each_unhealthy_instance_is_counted_once(world: World, counts: Counts) -> None:
    checks(world).dry_run = True
    first, second = workshop(world, nodes=2)[:2]

    world.cloud.impair(first.instance_id, "instance")
    world.cloud.impair(second.instance_id, "instance")

    assert world.run_until(lambda: counts.unhealthy("InstanceStatus") == 2,
                           timeout=CHECKS_SECONDS)
    world.advance(3 * 60)
    assert counts.unhealthy("InstanceStatus") == 2


def test_an_instance_that_recovers_and_fails_again_is_counted_again(
    world: World, counts: Counts,
) -> None:
    checks(world).dry_run = True
    [flaky] = workshop(world)
    world.cloud.impair(flaky.instance_id, "instance")
    assert world.run_until(lambda: counts.unhealthy("InstanceStatus") == 1,
                           timeout=CHECKS_SECONDS)

    world.cloud.instance_statuses.recover(flaky.instance_id)
    world.advance(2 * 60)
    assert counts.unhealthy("InstanceStatus") == 1
    world.cloud.impair(flaky.instance_id, "instance")

    assert world.run_until(lambda: counts.unhealthy("InstanceStatus") == 2,
                           timeout=CHECKS_SECONDS)


@pytest.fixture
def denied_ec2() -> Iterator[Any]:
    """An EC2 client whose DescribeInstanceStatus is denied, once; any further call fails
    the story (Stubber has nothing more to answer)."""
    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    with Stubber(ec2) as stubber:
        stubber.add_client_error("describe_instance_status", "UnauthorizedOperation",
                                 "You are not authorized to perform this operation.")
        yield ec2
        stubber.assert_no_pending_responses()


def test_without_the_permission_one_error_says_so_and_the_rest_keeps_working(
    world: World, denied_ec2: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    world.cloud.instance_statuses = InstanceStatusProvider(  # type: ignore[assignment]
        denied_ec2, lambda: world.clock.now())
    caplog.set_level(logging.ERROR, logger="nodewright.controllers.interruption.instance_status")
    world.restart_controllers()

    workshop(world)
    world.advance(10 * 60)

    denied = [r for r in caplog.records if "ec2:DescribeInstanceStatus" in r.getMessage()]
    assert len(denied) == 1
    assert "IAM policy" in denied[0].getMessage()
    expect_running(world, 5)
    expect_no_controller_errors(world)
