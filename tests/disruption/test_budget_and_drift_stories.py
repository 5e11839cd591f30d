"""Budgets and drift: a scheduled budget of zero holds consolidation until its window
closes; a percentage budget caps how many drifted nodes are replaced at once; an AMI or
NodePool template change drifts every node and they roll a budget at a time."""

from __future__ import annotations

import math
from datetime import timedelta

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    expect_consistent,
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import BIG, decisions, nodepool_with, started
from tests.harness import World


def two_nodes_then_five_replicas(world: World) -> None:
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    expect_instance_types(world, "m5.large", "m5.large")
    world.scale("inflate", 5)


def test_a_zero_budget_holds_consolidation_until_its_window_closes(world: World) -> None:
    closed_night = {"budgets": [{"nodes": "0", "schedule": "0 0 * * *", "duration": "1h"}]}
    world.apply(WORKSHOP, nodepool_with(disruption=closed_night))
    two_nodes_then_five_replicas(world)
    world.run_until(lambda: world.clock.now().hour == 0 and world.clock.now().minute >= 50)

    expect_instance_types(world, "m5.large", "m5.large")
    held = [d for d in decisions(world) if d.cause == ex.CAUSE_BUDGET]
    assert held, "no decision names the budget"
    assert 'budget[0] nodes "0" allows 0' in held[-1].message
    assert "2026-01-05T00:00:00Z to 2026-01-05T01:00:00Z" in held[-1].message
    blocked_pool = [e for e in world.events(ex.DISRUPTION_BLOCKED, kind="NodePool")]
    assert blocked_pool and "blocking budget" in blocked_pool[0]["note"]

    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=1800)
    assert world.clock.now().hour == 1
    assert started(world)[0].time >= world.clock.now().replace(minute=0, second=0)
    expect_running(world, 5)
    expect_no_controller_errors(world)


def initialized_nodes(world: World) -> list[str]:
    return [objects.name(n) for n in world.nodes()
            if objects.labels(n).get("karpenter.sh/initialized") == "true"]


def originals_disrupting(world: World, originals: set[str]) -> int:
    """Original NodeClaims being disrupted and still draining (as budgets count them: a
    NodeClaim whose instance is already terminating has no pods left to disrupt)."""
    count = 0
    for claim in world.nodeclaims():
        if objects.name(claim) not in originals:
            continue
        if objects.condition_is_true(claim, "InstanceTerminating"):
            continue
        if objects.is_deleting(claim) or objects.condition_is_true(claim, "DisruptionReason"):
            count += 1
    return count


def test_a_percentage_budget_caps_how_many_drifted_nodes_are_replaced_at_once(
    world: World,
) -> None:
    budget = {"budgets": [{"nodes": "25%", "reasons": ["Drifted"]}]}
    world.apply(WORKSHOP, nodepool_with(disruption=budget), BIG % 8)
    assert world.settle()
    originals = {objects.name(c) for c in world.nodeclaims()}
    assert len(originals) == 8

    world.apply(nodepool_with(disruption=budget,
                              labels={"type": "karpenter", "team": "payments"}))
    most = 0
    for _ in range(240):
        world.advance(5)
        disrupting = originals_disrupting(world, originals)
        # 25% of the pool's nodes at the time (replacements included), rounded up.
        allowed = math.ceil(len(initialized_nodes(world)) / 4)
        assert disrupting <= allowed, f"{disrupting} disrupting, the budget allows {allowed}"
        most = max(most, disrupting)
        if not originals & {objects.name(c) for c in world.nodeclaims()}:
            break

    assert most >= 2, "drifted nodes were never replaced in parallel"
    assert not originals & {objects.name(c) for c in world.nodeclaims()}
    assert world.settle()
    assert all(objects.labels(n).get("team") == "payments" for n in world.nodes())
    expect_running(world, 8, {"app": "big"})
    drifted = [d for d in started(world) if d.method == ex.DRIFT]
    assert len(drifted) == 8
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_new_ami_drifts_every_node_and_they_roll_one_at_a_time(world: World) -> None:
    world.apply(WORKSHOP, BIG % 3)
    assert world.settle()
    old_images = {i.image_id for i in world.live_instances()}
    originals = {objects.name(c) for c in world.nodeclaims()}

    world.cloud.set_image("al2023@latest", "amd64", "ami-0123456789abcdef0")
    most = 0
    for _ in range(360):
        world.advance(5)
        most = max(most, originals_disrupting(world, originals))
        if not originals & {objects.name(c) for c in world.nodeclaims()}:
            break

    assert most == 1  # the default budget: 10% of three nodes, rounded up
    assert world.settle()
    assert {i.image_id for i in world.live_instances()} == {"ami-0123456789abcdef0"}
    assert not old_images & {i.image_id for i in world.live_instances()}
    drifted = [d for d in started(world) if d.method == ex.DRIFT]
    assert {d.nodeclaim for d in drifted} == originals
    terminating = world.events(ex.DISRUPTION_TERMINATING, kind="NodeClaim")
    assert {e["regarding"]["name"] for e in terminating} == originals
    expect_running(world, 3, {"app": "big"})
    expect_no_controller_errors(world)


def test_expire_after_an_hour_replaces_every_node_within_the_hour_after(world: World) -> None:
    hourly = {"expireAfter": "1h"}
    world.apply(WORKSHOP, nodepool_with(template=hourly), BIG % 3)
    assert world.settle()
    first = {objects.name(c): objects.creation_time(c) for c in world.nodeclaims()}
    launched = max(t for t in first.values() if t is not None)

    assert world.run_until(lambda: not set(first) & {objects.name(c)
                                                     for c in world.nodeclaims()},
                           timeout=2 * 3600)
    assert world.clock.now() <= launched + timedelta(hours=2)
    expired = [d for d in decisions(world) if d.method == ex.EXPIRATION]
    assert {d.nodeclaim for d in expired} == set(first)
    assert all(d.time - first[d.nodeclaim] >= timedelta(hours=1)  # type: ignore[operator]
               for d in expired)
    assert all(d.time - first[d.nodeclaim] < timedelta(hours=1, minutes=1)  # type: ignore[operator]
               for d in expired)
    world.advance(300)
    expect_running(world, 3, {"app": "big"})
    expect_no_controller_errors(world)




def test_a_schedule_that_cannot_be_read_fails_closed_with_an_event(world: World) -> None:
    unreadable = {"budgets": [{"nodes": "100%", "schedule": "every day at nine am",
                               "duration": "1h"}]}
    world.apply(WORKSHOP, nodepool_with(disruption=unreadable))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()

    expect_instance_types(world, "m5.large")
    notes = [e["note"] for e in world.events(ex.DISRUPTION_BLOCKED, kind="NodePool")]
    assert any('fails closed: schedule "every day at nine am"' in note for note in notes), notes
