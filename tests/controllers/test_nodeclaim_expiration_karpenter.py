"""Expiration: a NodeClaim older than its expireAfter is deleted (forcefully, not
budgeted), once, whatever its Node says.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/expiration/suite_test.go
(Describe "Expiration")."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.nodeclaim.expiration import Expiration
from tests.controllers.nodeclaim_bench import (
    bench,
    counter,
    create,
    exists,
    get,
    linked_node,
    nodeclaim,
)
from tests.harness import World

DISRUPTED = "karpenter_nodeclaims_disrupted_total"


def expired_count() -> float:
    return counter(DISRUPTED, reason="expired", nodepool="default")


def applied(world: World, expire_after: str, **options: Any) -> str:
    (claim,) = create(world, nodeclaim(expireAfter=expire_after, **options))
    return str(claim["metadata"]["name"])


@pytest.mark.parametrize("capacity_type", [None, "spot"], ids=["any", "spot"])
def test_an_expiry_counts_as_an_expired_disruption(capacity_type: str | None) -> None:
    """Both Its "should fire a karpenter_nodeclaims_disrupted_total metric when expired"
    (the second with a spot NodeClaim)."""
    world = bench()
    before = expired_count()
    labels = {"karpenter.sh/capacity-type": capacity_type} if capacity_type else None
    name = applied(world, "30s", labels=labels)
    world.advance(60)
    assert not exists(world, name)
    assert expired_count() == before + 1


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_expired_nodeclaims_are_removed(managed: bool) -> None:
    """Entries "should remove nodeclaims that are expired" and "should ignore expired
    NodeClaims that are not managed by this Karpenter instance"."""
    world = bench()
    name = applied(world, "30s", managed=managed)
    world.advance(60)
    assert exists(world, name) is not managed


def test_expire_after_never_keeps_the_nodeclaim() -> None:
    """It "should not remove the NodeClaims when expiration is disabled"."""
    world = bench()
    name = applied(world, "Never")
    world.advance(5)
    linked_node(world, get(world, name) or {})
    world.advance(3600)
    assert exists(world, name)


def test_a_nodeclaim_not_yet_expired_is_kept() -> None:
    """It "should not remove non-expired NodeClaims"."""
    world = bench()
    name = applied(world, "200s")
    world.advance(60)
    assert exists(world, name)


def test_an_expired_nodeclaim_goes_whatever_its_node() -> None:
    """It "should delete NodeClaims if the nodeClaim is expired but the node isn't"."""
    world = bench()
    name = applied(world, "30s")
    world.advance(5)
    linked_node(world, get(world, name) or {})
    world.advance(60)
    assert not exists(world, name)


def test_the_expiry_is_looked_at_again_when_it_is_due() -> None:
    """It "should return the requeue interval for the time between now and when the
    nodeClaim expires"."""
    world = bench()
    name = applied(world, "200s")
    world.advance(100)
    expiration = world.controllers.get("nodeclaim.expiration", Expiration)
    assert expiration is not None
    result = expiration.reconcile(name)
    assert result.requeue_after == pytest.approx(100, abs=1)


def test_a_nodeclaim_expires_once() -> None:
    """It "shouldn't expire the same NodeClaim multiple times" (a finalizer keeps it)."""
    world = bench()
    before = expired_count()
    (claim,) = create(world, {**nodeclaim(expireAfter="30s")})
    name = claim["metadata"]["name"]
    world.cluster.patch("NodeClaim", name, {"metadata": {"finalizers": ["test-finalizer"]}})
    world.advance(60)
    assert exists(world, name)
    assert expired_count() == before + 1
    expiration = world.controllers.get("nodeclaim.expiration", Expiration)
    assert expiration is not None
    expiration.reconcile(name)
    world.advance(60)
    assert expired_count() == before + 1
