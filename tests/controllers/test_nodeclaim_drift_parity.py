"""Drift as Karpenter v1.14.1's nodeclaim.disruption controller judges it, in the cases its
ported suite does not pin: which labels the requirements are compared with, the order of
the checks, and what happens to `Drifted` when a check cannot be made.

Karpenter: pkg/controllers/nodeclaim/disruption/drift.go (Reconcile 51-83, isDrifted
86-114, areRequirementsDrifted 170-180) and aws/karpenter-provider-aws
pkg/cloudprovider/cloudprovider.go (GetInstanceTypes 207-223, IsDrifted 267-294,
resolveNodeClassFromNodePool 362-373).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProviderError, NodeClaimNotFoundError
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.drift import (
    INSTANCE_TYPE_NOT_FOUND,
    NODECLASS_DRIFTED,
    REQUIREMENTS_DRIFTED,
)
from tests.controllers.nodeclaim_bench import (
    QUIET_POOL,
    bench,
    condition_of,
    get,
    launched,
    linked_node,
    set_status,
    status_of,
)
from tests.harness import World

TEAM = "example.com/team"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
EBS_ZONE = "topology.ebs.csi.aws.com/zone"
CONDITIONS_LOGGER = "nodewright.controllers.nodeclaim.disruption_conditions"


class ScriptedCloud:
    """The bench's cloud, whose drift answer a story sets: a reason, None, or an error."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.answer: str | Exception | None = None

    def drift_reason(self, *args: Any) -> str | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Later:
    """The world's clock, `hours` ahead: the NodeClaim is old enough for the offering
    check (Karpenter's 1 h after creation)."""

    def __init__(self, world: World, hours: float) -> None:
        self._world = world
        self._ahead = timedelta(hours=hours)

    def now(self) -> datetime:
        return self._world.clock.now() + self._ahead

    def call_at(self, when: datetime, callback: Callable[[], None]) -> None:
        self._world.clock.call_at(when - self._ahead, callback)

    def call_later(self, seconds: float, callback: Callable[[], None]) -> None:
        self._world.clock.call_later(seconds, callback)


def controller_of(world: World) -> tuple[NodeClaimConditions, ScriptedCloud]:
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    cloud = ScriptedCloud(controller.provider)
    controller.provider = cloud
    return controller, cloud


def pool_requiring(key: str, *values: str) -> dict[str, Any]:
    body: dict[str, Any] = {**QUIET_POOL, "spec": dict(QUIET_POOL["spec"])}
    body["spec"]["template"] = {**body["spec"]["template"], "spec": {
        **body["spec"]["template"]["spec"],
        "requirements": [{"key": key, "operator": "In", "values": list(values)}]}}
    return body


def judge(world: World, controller: NodeClaimConditions, name: str) -> None:
    """One reconcile, its write delivered to the state cache (as the informer would)."""
    controller.reconcile(name)
    world.deliver()


def registered(world: World, name: str, **labels: str) -> str:
    """The NodeClaim's Node joins with these labels (the registration controller then
    puts the NodeClaim's labels on it); its name."""
    node = linked_node(world, get(world, name) or {}, labels=labels, taints=[
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    world.advance(5)
    assert status_of(get(world, name), "Registered") == "True"
    return str(node["metadata"]["name"])


def drifted(world: World, name: str) -> tuple[str, str] | None:
    return condition_of(get(world, name), "Drifted")


# -- which labels: the NodeClaim's -------------------------------------------------------


def test_a_node_relabelled_by_hand_does_not_drift_its_nodeclaim() -> None:
    """areRequirementsDrifted builds its label requirements from nodeClaim.Labels alone.
    The NodeClaim still says team=a, which the NodePool requires; someone relabelled the
    Node team=b. Karpenter does not drift it."""
    world = bench(pool=pool_requiring(TEAM, "a"))
    controller, _ = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    node = registered(world, name)
    world.cluster.patch("Node", node, {"metadata": {"labels": {TEAM: "b"}}})
    world.deliver()
    assert controller.state.node_for_nodeclaim(name).labels[TEAM] == "b"  # type: ignore[union-attr]

    judge(world, controller, name)

    assert drifted(world, name) is None


def test_a_label_only_the_node_carries_does_not_satisfy_a_requirement() -> None:
    """The other way round: the NodePool now requires team=a; the NodeClaim has no team
    label (a label the kubelet's --node-labels put on the Node only). Karpenter's
    Compatible denies a custom key the NodeClaim does not define: RequirementsDrifted."""
    world = bench()
    controller, _ = controller_of(world)
    name = launched(world)
    registered(world, name, **{TEAM: "a"})
    world.apply(pool_requiring(TEAM, "a"))

    judge(world, controller, name)

    assert drifted(world, name) == ("True", REQUIREMENTS_DRIFTED)


def test_a_requirement_on_a_deprecated_zone_key_reads_the_zone_label() -> None:
    """NewRequirement reads topology.ebs.csi.aws.com/zone as topology.kubernetes.io/zone
    (the AWS provider adds it to NormalizedLabels), on the NodePool's side and the
    NodeClaim's: a NodeClaim in the zone the NodePool names has not drifted, though it
    carries no label under the CSI driver's key."""
    world = bench()
    controller, _ = controller_of(world)
    name = launched(world)
    zone = (get(world, name) or {})["metadata"]["labels"][ZONE]
    world.apply(pool_requiring(EBS_ZONE, zone))

    judge(world, controller, name)
    assert drifted(world, name) is None

    world.apply(pool_requiring(EBS_ZONE, "elsewhere-1z"))
    judge(world, controller, name)
    assert drifted(world, name) == ("True", REQUIREMENTS_DRIFTED)


# -- when no verdict can be made: the condition stays ----------------------------------


def test_a_cloud_error_leaves_drifted_as_it_was() -> None:
    """Reconcile 64-67: an IsDrifted error returns before the condition is touched, so a
    Drifted NodeClaim stays Drifted (it is not cleared, then set again, with a new
    lastTransitionTime) while the cloud cannot be read."""
    world = bench()
    controller, cloud = controller_of(world)
    name = launched(world)
    cloud.answer = "AMIDrift"
    judge(world, controller, name)
    before = get(world, name) or {}
    assert drifted(world, name) == ("True", "AMIDrift")

    cloud.answer = CloudProviderError("ec2:DescribeInstances: RequestLimitExceeded",
                                      call="ec2:DescribeInstances")
    judge(world, controller, name)
    cloud.answer = NodeClaimNotFoundError("instance i-0123 not found")
    judge(world, controller, name)

    after = get(world, name) or {}
    assert drifted(world, name) == ("True", "AMIDrift")
    assert after["status"]["conditions"] == before["status"]["conditions"]


def test_unreadable_instance_types_leave_drifted_as_it_was() -> None:
    """isDrifted 95-100: once the offering check is due, a GetInstanceTypes error (its
    instance type provider's List refuses a node class with no subnets in status) is the
    reconcile's error: the condition stays, though the cloud would now say not drifted."""
    world = bench()
    controller, cloud = controller_of(world)
    name = launched(world)
    cloud.answer = "AMIDrift"
    judge(world, controller, name)
    assert drifted(world, name) == ("True", "AMIDrift")

    set_status(world, "EC2NodeClass", "default", {"subnets": []})
    cloud.answer = None
    controller.clock = Later(world, hours=2)
    judge(world, controller, name)

    assert drifted(world, name) == ("True", "AMIDrift")


# -- the order of the checks and a node class that is going ----------------------------


def test_the_offering_check_comes_before_the_node_class_hash() -> None:
    """isDrifted checks the instance type (an hour after creation) before it asks the
    cloud provider, whose IsDrifted holds the EC2NodeClass hash: a NodeClaim whose type is
    gone from the catalog and whose node class changed is InstanceTypeNotFound."""
    world = bench()
    controller, _ = controller_of(world)
    node_class = EC2NodeClass.model_validate(world.cluster.get("EC2NodeClass", "default"))
    stale = {**hashes.node_class_hash_annotations(node_class),
             hashes.NODECLASS_HASH: "0000000000000000"}
    name = launched(world, annotations=stale)
    world.cluster.patch("NodeClaim", name, {"metadata": {
        "labels": {INSTANCE_TYPE: "x9.nonexistent"},
        "annotations": {hashes.NODECLASS_HASH: "0000000000000000"}}})
    world.deliver()

    judge(world, controller, name)
    assert drifted(world, name) == ("True", NODECLASS_DRIFTED)  # not due yet

    controller.clock = Later(world, hours=2)
    judge(world, controller, name)
    assert drifted(world, name) == ("True", INSTANCE_TYPE_NOT_FOUND)


def test_a_terminating_node_class_offers_no_instance_types() -> None:
    """resolveNodeClassFromNodePool treats a terminating EC2NodeClass as not found, and
    GetInstanceTypes then returns none (nil, nil): an hour after creation its NodeClaims
    are InstanceTypeNotFound, which is how Karpenter rolls them while the node class's
    finalizer waits for them."""
    world = bench()
    controller, _ = controller_of(world)
    name = launched(world)
    world.cluster.delete("EC2NodeClass", "default")
    world.deliver()
    current = world.cluster.get("EC2NodeClass", "default")
    assert current["metadata"].get("deletionTimestamp")

    judge(world, controller, name)
    assert drifted(world, name) is None

    controller.clock = Later(world, hours=2)
    judge(world, controller, name)
    assert drifted(world, name) == ("True", INSTANCE_TYPE_NOT_FOUND)



def test_marking_and_clearing_drift_are_debug_lines_written_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """Reconcile 69-80: "marking drifted" (with the reason) when the condition is added,
    "removing drifted status condition, not drifted" when it goes, both at V(1) (debug),
    and nothing while it stays."""
    world = bench()
    controller, cloud = controller_of(world)
    name = launched(world)
    cloud.answer = "AMIDrift"
    with caplog.at_level(logging.DEBUG, logger=CONDITIONS_LOGGER):
        judge(world, controller, name)
        judge(world, controller, name)
        cloud.answer = None
        judge(world, controller, name)

    lines = [(r.levelno, r.getMessage(), getattr(r, "reason", None))
             for r in caplog.records if r.name == CONDITIONS_LOGGER]
    assert lines == [(logging.DEBUG, "marking drifted", "AMIDrift"),
                     (logging.DEBUG, "removing drifted status condition, not drifted", None)]
