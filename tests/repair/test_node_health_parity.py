"""Node repair of a node that is already on its way out.

Karpenter v1.14.1 pkg/controllers/node/health/controller.go, Reconcile (lines 157-161):
once a node has been unhealthy past its toleration and the 20 % guard lets it through,
`annotateTerminationGracePeriod` brings `karpenter.sh/nodeclaim-termination-timestamp`
forward to now *before* `deleteNodeClaim` looks at the deletion timestamp (lines 166-168).
A NodeClaim already being deleted is therefore not skipped: its drain, held up by a
PodDisruptionBudget and with no termination grace period (or one hours away), is forced
at once, as it would be had the node gone unhealthy before the deletion.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from nodewright.cluster import objects
from nodewright.runtime.clock import parse_time
from tests.repair.test_karpenter_node_health import ANNOTATION, BAD, claim_of
from tests.repair.test_node_repair_stories import _set_condition, _world


def test_a_node_stuck_draining_that_turns_unhealthy_is_forced_out() -> None:
    # Two nodes, each running a do-not-disrupt pod a PodDisruptionBudget (maxUnavailable 0)
    # protects, in a NodePool without a termination grace period.
    world = _world(2)
    victim = sorted(objects.name(n) for n in world.nodes())[0]
    claim_name = objects.name(claim_of(world, victim))

    # Someone deletes the NodeClaim: the drain cannot evict the protected pod, and with no
    # grace period nothing will ever force it.
    world.cluster.delete("NodeClaim", claim_name)
    world.advance(120)
    claim = claim_of(world, victim)
    assert objects.is_deleting(claim)
    assert ANNOTATION not in objects.annotations(claim)
    assert victim in {objects.name(n) for n in world.nodes()}

    # Its node has been unhealthy for an hour (StorageReady=False tolerates 30 minutes):
    # the health controller forces the termination by setting the deadline to now.
    _set_condition(world, victim, BAD, "False", ago=3600)
    world.advance(5)
    claim = claim_of(world, victim)
    stamp = parse_time(str(objects.annotations(claim)[ANNOTATION]))
    assert abs((stamp - world.clock.now()).total_seconds()) <= 5

    # The drain gives up on the PodDisruptionBudget and the node goes.
    world.advance(300)
    assert victim not in {objects.name(n) for n in world.nodes()}
    assert claim_name not in {objects.name(c) for c in world.nodeclaims()}


def test_a_deleting_nodeclaims_grace_period_is_brought_forward() -> None:
    """The same for a NodeClaim whose own deadline is two hours away: repair does not
    wait for it (It("should not respect termination grace period if set on the
    nodepool"), for a NodeClaim already being deleted)."""
    world = _world(2)
    victim = sorted(objects.name(n) for n in world.nodes())[0]
    claim_name = objects.name(claim_of(world, victim))
    later = world.clock.now() + timedelta(hours=2)
    world.cluster.patch("NodeClaim", claim_name, {"metadata": {"annotations": {
        ANNOTATION: later.strftime("%Y-%m-%dT%H:%M:%SZ")}}})
    world.cluster.delete("NodeClaim", claim_name)
    world.advance(60)
    assert objects.is_deleting(claim_of(world, victim))

    _set_condition(world, victim, BAD, "False", ago=3600)
    world.advance(5)
    stamp = parse_time(str(objects.annotations(claim_of(world, victim))[ANNOTATION]))
    assert stamp < later - timedelta(minutes=110)


def test_forcing_the_termination_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """controller.go lines 208-226, annotateTerminationGracePeriod: the annotation
    written is logged (line 223), "annotated nodeclaim" with the new timestamp under the
    annotation's key."""
    caplog.set_level(logging.INFO, logger="nodewright.controllers.node.health")
    world = _world(1)
    (victim,) = [objects.name(n) for n in world.nodes()]
    _set_condition(world, victim, BAD, "False", ago=3600)
    world.advance(5)
    stamp = objects.annotations(claim_of(world, victim))[ANNOTATION]
    (record,) = [r for r in caplog.records if r.getMessage() == "annotated nodeclaim"]
    assert record.levelno == logging.INFO
    assert record.__dict__[ANNOTATION] == stamp
