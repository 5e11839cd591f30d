"""Registration of a Node that joined without the karpenter.sh/unregistered taint.

Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/registration.go lines 77-88: a Node
not yet labelled registered and without the taint is logged at error level ("node claim
registration error", with the taint's key and the error "missing taint prevents
registration-related race conditions on Karpenter-managed nodes") and gets
UnregisteredTaintMissingEvent, whose DedupeValues are the NodeClaim's UID
(lifecycle/events.go lines 48-56). A NodeClaim recreated under the same name (a static
NodeClaim applied again, a GitOps tool) is a new object and is told about again.
"""

from __future__ import annotations

import logging

import pytest

from nodewright.cluster import objects
from tests.controllers.nodeclaim_bench import bench as nodeclaim_bench
from tests.controllers.nodeclaim_bench import create, exists, get, linked_node, nodeclaim
from tests.controllers.test_nodeclaim_registration_karpenter import launched
from tests.harness import World

MESSAGE = "node claim registration error"


def joined_untainted(world: World, claim_name: str, node_name: str) -> None:
    """Its Node joins without the karpenter.sh/unregistered taint."""
    linked_node(world, get(world, claim_name) or {}, taints=[], name=node_name)
    world.advance(5)


def test_a_nodeclaim_recreated_under_the_same_name_is_warned_again() -> None:
    world = nodeclaim_bench()
    name = launched(world, nodeclaim("pinned"))
    first_uid = objects.uid(get(world, name) or {})
    joined_untainted(world, name, "node-a")
    assert len(world.events("UnregisteredTaintMissing")) == 1

    # The NodeClaim goes and is applied again at once, under the same name.
    world.cluster.delete("NodeClaim", name)
    assert world.run_until(lambda: not exists(world, name), timeout=90)
    create(world, nodeclaim("pinned"))
    world.advance(5)
    assert objects.uid(get(world, name) or {}) != first_uid
    joined_untainted(world, name, "node-b")

    warned = world.events("UnregisteredTaintMissing")
    assert len(warned) == 2
    assert {e["regarding"]["uid"] for e in warned} == {
        first_uid, objects.uid(get(world, name) or {})}


def test_the_missing_taint_is_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nodewright.controllers.nodeclaim")
    world = nodeclaim_bench()
    name = launched(world, nodeclaim())
    joined_untainted(world, name, "node-c")
    (record,) = [r for r in caplog.records if r.getMessage() == MESSAGE]
    assert record.levelno == logging.ERROR
    assert record.__dict__["taint"] == "karpenter.sh/unregistered"
    assert record.__dict__["error"] == ("missing taint prevents registration-related race "
                                        "conditions on Karpenter-managed nodes")
    assert record.__dict__["NodeClaim"] == name
