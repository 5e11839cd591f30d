"""The consistency check logs what it finds.

Karpenter v1.14.1 pkg/controllers/nodeclaim/consistency/controller.go lines 132-142:
each issue a check finds is logged at info level, "failed consistency check" with the
issue as `issue` (the NodeClaim's Node in the context), besides the FailedConsistencyCheck
event, so `kubectl logs` shows the small node as `kubectl get events` does.
"""

from __future__ import annotations

import logging

import pytest

from nodewright.cluster.copying import deep_copy
from nodewright.controllers.nodeclaim.consistency import SCAN_PERIOD_SECONDS
from tests.controllers.test_consistency_story import launched
from tests.harness import World


def test_a_node_with_half_the_memory_is_logged(world: World,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nodewright.controllers.nodeclaim.consistency")
    claim, node = launched(world)
    expected = claim["status"]["capacity"]["memory"]
    smaller = deep_copy(node)
    smaller["status"]["capacity"]["memory"] = "1894Mi"
    world.cluster.update(smaller, subresource="status")
    world.advance(SCAN_PERIOD_SECONDS + 1)

    (record,) = [r for r in caplog.records if r.getMessage() == "failed consistency check"]
    assert record.levelno == logging.INFO
    assert record.__dict__["issue"] == (f"expected {expected} of resource memory, but found "
                                        "1894Mi (50.0% of expected)")
    assert record.__dict__["Node"] == {"name": node["metadata"]["name"]}
