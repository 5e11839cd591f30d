"""Stories of launches that go wrong: capacity errors, nodes that never register, and
instances that vanish."""

from __future__ import annotations

import dataclasses
from typing import Any

from nodewright.cloud.provider import CloudProviderError
from nodewright.cloud.sim import CapacityRule, SimSettings
from nodewright.cluster.api import ConflictError
from nodewright.controllers.nodeclaim.garbagecollection import InstanceGarbageCollection
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    claim_names,
    condition,
    expect_consistent,
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.harness import World, node_pool

CHEAP_POOL = node_pool("cheap", types=["m5.large"], labels={"type": "karpenter"}, weight=100)


def test_capacity_errors_on_the_cheapest_zone_launch_the_next_offering() -> None:
    world = World(zones=["us-east-1a", "us-east-1b"],
                  capacity=[CapacityRule("m5.large", 0, zone="us-east-1a")])
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (claim,) = world.nodeclaims()
    assert claim["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-east-1b"
    expect_instance_types(world, "m5.large")
    expect_running(world, 5)
    expect_no_controller_errors(world)


def test_a_nodeclaim_whose_every_offering_is_out_of_capacity_is_replaced() -> None:
    # The heavier pool only offers m5.large, which has no capacity at all: its NodeClaim
    # is deleted and the pods are solved again, landing on the workshop pool.
    world = World(capacity=[CapacityRule("m5.large", 0)])
    world.apply(WORKSHOP, CHEAP_POOL)
    world.scale("inflate", 5)
    assert world.settle()
    ice = world.events("InsufficientCapacityError")
    assert ice and ice[0]["regarding"]["kind"] == "NodeClaim"
    assert ice[0]["regarding"]["name"].startswith("cheap-")
    claims = world.nodeclaims()
    assert claims and {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in claims} == {
        "default"}
    assert "m5.large" not in world.instance_types()
    expect_running(world, 5)
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_nodeclaim_that_never_registers_is_deleted_after_fifteen_minutes() -> None:
    world = World(sim=SimSettings(registration_delay=24 * 3600.0))
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(60)
    (first,) = claim_names(world)
    claim = world.cluster.get("NodeClaim", first)
    assert condition(claim, "Launched") == "True"
    assert condition(claim, "Registered") == "Unknown"
    lost_instance = claim["status"]["providerID"]

    # Nodes register again from now on; the stuck one stays stuck.
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=30.0)
    world.advance(13 * 60)
    assert first in claim_names(world), "deleted before the registration timeout"
    world.advance(3 * 60)
    assert first not in claim_names(world), "still there after the registration timeout"
    assert lost_instance not in {i.provider_id for i in world.live_instances()}

    assert world.settle()
    (replacement,) = claim_names(world)
    assert replacement != first
    expect_running(world, 5)
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_nodeclaim_whose_instance_vanished_is_garbage_collected() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (claim,) = world.nodeclaims()
    provider_id = claim["status"]["providerID"]
    # The instance is terminated behind Karpenter's back and its kubelet stops.
    world.cloud.interrupt(provider_id, "terminate")
    assert world.run_until(lambda: claim["metadata"]["name"] not in claim_names(world),
                           timeout=600)
    assert world.settle()
    expect_running(world, 5)
    expect_consistent(world)


def test_an_instance_without_a_nodeclaim_is_terminated() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (claim,) = world.nodeclaims()
    # The NodeClaim disappears without its finalizer running (as if force-removed).
    name = claim["metadata"]["name"]
    world.cluster.patch("NodeClaim", name, {"metadata": {"finalizers": None}})
    world.cluster.delete("NodeClaim", name)
    orphan = claim["status"]["providerID"]
    assert world.run_until(
        lambda: orphan not in {i.provider_id for i in world.live_instances()}, timeout=300)
    instance_gc = world.controllers.get("instance.garbagecollection", InstanceGarbageCollection)
    assert instance_gc is not None
    assert orphan in instance_gc.collected
    assert world.settle()
    expect_running(world, 5)
    expect_consistent(world)


def test_a_launch_that_keeps_failing_is_retried_then_given_up_after_five_minutes() -> None:
    world = World()

    def refuses(nodeclaim: Any, node_class: Any) -> Any:
        raise CloudProviderError("ec2:CreateFleet: UnauthorizedOperation: not allowed",
                                 call="ec2:CreateFleet", code="UnauthorizedOperation")

    world.cloud.create = refuses  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(30)
    (first,) = claim_names(world)
    launched = next(c for c in world.cluster.get("NodeClaim", first)["status"]["conditions"]
                if c["type"] == "Launched")
    assert (launched["status"], launched["reason"]) == ("Unknown", "LaunchFailed")
    assert "UnauthorizedOperation" in launched["message"]
    world.advance(4 * 60)
    assert first in claim_names(world), "given up before the launch timeout"
    world.advance(60)
    assert first not in claim_names(world), "still there after the launch timeout"
    assert world.live_instances() == []


def test_a_launch_whose_status_write_failed_reuses_its_instance() -> None:
    """The instance was created but the Launched status did not reach the API server (a
    conflict): the next reconcile reads the NodeClaim without it and must not ask the cloud
    for a second instance."""
    world = World()
    creates: list[str] = []
    create = world.cloud.create

    def counting(nodeclaim: Any, node_class: Any) -> Any:
        creates.append(nodeclaim.metadata.name)
        return create(nodeclaim, node_class)

    world.cloud.create = counting  # type: ignore[method-assign]
    patch = world.cluster.patch
    refused: list[str] = []

    def refuse_first_launched_status(kind: str, name: str, body: Any, *args: Any,
                                     **options: Any) -> Any:
        launched = any(c.get("type") == "Launched" and c.get("status") == "True"
                       for c in ((body.get("status") or {}).get("conditions") or []))
        if kind == "NodeClaim" and options.get("subresource") == "status" and launched and (
                not refused):
            refused.append(name)
            raise ConflictError("the object has been modified")
        return patch(kind, name, body, *args, **options)

    world.cluster.patch = refuse_first_launched_status  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()

    expect_running(world, 5)
    assert refused, "the story needs the Launched status write to have been refused once"
    assert creates == refused
    assert len(world.live_instances()) == 1


class RefusesToTerminate:
    """The cloud, except that terminating one instance fails (throttled, say)."""

    def __init__(self, cloud: Any, refused: str) -> None:
        self.cloud = cloud
        self.refused = refused

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cloud, name)

    def delete(self, provider_id: str) -> None:
        if provider_id == self.refused:
            raise CloudProviderError("Request limit exceeded.", code="RequestLimitExceeded")
        self.cloud.delete(provider_id)


def test_orphans_are_terminated_together_and_one_refusal_holds_up_none_of_the_others() -> None:
    """Karpenter's instance GC terminates every orphan in parallel and returns the errors
    combined: the instance whose termination fails is tried again next pass; the others
    are gone."""
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 12)
    assert world.settle()
    claims = world.nodeclaims()
    assert len(claims) == 2
    for claim in claims:  # both disappear without their finalizers (as if force-removed)
        world.cluster.patch("NodeClaim", claim["metadata"]["name"],
                            {"metadata": {"finalizers": None}})
        world.cluster.delete("NodeClaim", claim["metadata"]["name"])
    world.deliver()
    refused, collected = (claim["status"]["providerID"] for claim in claims)
    cloud = RefusesToTerminate(world.cloud, refused)
    world.controllers.state.lock.concurrent = True  # as the operator runs it
    gc = InstanceGarbageCollection(world.cluster, cloud, world.clock, world.controllers.state)

    try:
        gc.reconcile("")
    except CloudProviderError as error:
        assert error.code == "RequestLimitExceeded"
    else:
        raise AssertionError("the refused termination was not reported")
    finally:
        world.controllers.state.lock.concurrent = False
    live = {i.provider_id for i in world.live_instances()}
    assert gc.collected == [collected] and collected not in live and refused in live
    cloud.refused = ""  # the next pass
    world.deliver()
    gc.reconcile("")
    assert refused not in {i.provider_id for i in world.live_instances()}
    assert gc.collected == [collected, refused]
