"""Expiration as Karpenter v1.14.1's nodeclaim.expiration controller does it, in the cases
its ported suite does not pin (pkg/controllers/nodeclaim/expiration/controller.go
Reconcile 57-89): every managed NodeClaim expires, a NodePool label or not (48-53 check
IsManaged and the deletion timestamp only), and karpenter_nodeclaims_disrupted_total
takes the NodeClaim's capacity-type label as it is, "" when it has none (77-81).
"""

from __future__ import annotations

from tests.controllers.nodeclaim_bench import (
    bench,
    counter,
    create,
    exists,
    get,
    nodeclaim,
    refuse_launches,
    status_of,
)

DISRUPTED = "karpenter_nodeclaims_disrupted_total"


def test_a_nodeclaim_without_a_nodepool_label_expires() -> None:
    """A NodeClaim made by hand, of no NodePool: its expireAfter still holds."""
    world = bench()
    (claim,) = create(world, nodeclaim(pool=None, expireAfter="30s"))
    name = str(claim["metadata"]["name"])

    world.advance(60)

    assert not exists(world, name)


def test_a_nodeclaim_that_never_launched_counts_with_no_capacity_type() -> None:
    """Its launch keeps failing, so it never got a capacity-type label: the expiry is
    counted with capacity_type="" (Karpenter reads the missing label as "")."""
    world = bench()
    refuse_launches(world)
    before = counter(DISRUPTED, reason="expired", nodepool="default", capacity_type="")
    (claim,) = create(world, nodeclaim(expireAfter="30s"))
    name = str(claim["metadata"]["name"])
    world.advance(5)
    assert status_of(get(world, name), "Launched") != "True"
    assert "karpenter.sh/capacity-type" not in (get(world, name) or {})["metadata"]["labels"]

    world.advance(60)

    assert not exists(world, name)
    assert counter(DISRUPTED, reason="expired", nodepool="default",
                   capacity_type="") == before + 1
