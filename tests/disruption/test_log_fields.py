"""The disruptions a user most often greps logs for carry Karpenter's fields (NodeClaim,
NodePool, Node, provider-id), which the operator's JSON logs nest as Karpenter does."""

from __future__ import annotations

import logging

import pytest

from nodewright.cluster import objects
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World


def fields_of(caplog: pytest.LogCaptureFixture, logger: str) -> list[dict[str, str]]:
    return [{key: str(getattr(record, key)) for key in
             ("controller", "NodeClaim", "NodePool", "Node", "provider-id")
             if hasattr(record, key)}
            for record in caplog.records if record.name == logger]


def test_an_interruption_is_logged_with_the_nodeclaim_and_its_instance(
    world: World, caplog: pytest.LogCaptureFixture,
) -> None:
    world.apply(WORKSHOP, nodepool_with(requirements={"karpenter.sh/capacity-type": ["spot"]}))
    world.scale("inflate", 5)
    assert world.settle()
    [instance] = world.live_instances()
    [claim] = world.nodeclaims()
    caplog.set_level(logging.INFO, "nodewright.controllers.interruption.controller")

    world.cloud.interrupt(instance.instance_id, "spot")
    world.advance(5)

    [fields] = fields_of(caplog, "nodewright.controllers.interruption.controller")
    assert fields["NodeClaim"] == objects.name(claim)
    assert fields["NodePool"] == "default"
    assert fields["provider-id"] == instance.provider_id
    assert fields["Node"] and fields["controller"] == "interruption"


def test_an_expiration_is_logged_with_the_nodeclaim(
    world: World, caplog: pytest.LogCaptureFixture,
) -> None:
    world.apply(WORKSHOP, nodepool_with(template={"expireAfter": "1h"}))
    world.scale("inflate", 5)
    assert world.settle()
    [claim] = world.nodeclaims()
    # Karpenter logs "deleting expired nodeclaim" at V(1): debug.
    caplog.set_level(logging.DEBUG, "nodewright.controllers.nodeclaim.expiration")

    world.advance(3600 + 60)

    first = fields_of(caplog, "nodewright.controllers.nodeclaim.expiration")[0]
    assert first["NodeClaim"] == objects.name(claim)
    assert first["NodePool"] == "default" and first["controller"] == "nodeclaim.expiration"
    assert first["provider-id"].startswith("aws:///")
