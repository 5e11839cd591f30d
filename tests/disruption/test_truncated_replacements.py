"""A replacement whose instance types, cut to the most a NodeClaim lists, no longer meet a
minValues is no replacement (Karpenter's disruption simulation truncates its results as the
provisioner does, helpers.go SimulateScheduling): a drifted node stays until one can be made.
The limit is lowered to one type here (Karpenter's tests set scheduling.MaxInstanceTypes)."""

from __future__ import annotations

import pytest

from nodewright.cluster import objects
from nodewright.controllers.provisioning import nodeclaims
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World, node_pool

TWO_TYPES = {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["m5.large", "m5.xlarge"], "minValues": 2}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "c", "resources": {
           "requests": {"cpu": "900m", "memory": "900Mi"}}}]}}


def a_node_then_drifted(world: World) -> str:
    world.apply(NODE_CLASS, node_pool(requirements=[TWO_TYPES]), POD)
    assert world.run_until(lambda: any(objects.labels(n).get("karpenter.sh/initialized")
                                       for n in world.nodes()))
    (claim,) = world.nodeclaims()
    world.apply(node_pool(requirements=[TWO_TYPES], labels={"team": "a"}))
    return objects.name(claim)


def test_a_drifted_node_is_kept_while_its_replacement_would_break_min_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    original = a_node_then_drifted(world)
    monkeypatch.setattr(nodeclaims, "MAX_INSTANCE_TYPES", 1)
    world.advance(1800)
    assert [objects.name(c) for c in world.nodeclaims()] == [original]
    assert not any(c["metadata"].get("deletionTimestamp")
                   for c in world.nodeclaims())
    # No replacement was tried (the API server would refuse it); the NodeClaim says why.
    expect_no_controller_errors(world)
    blocked = [str(e.get("note")) for e in world.events("DisruptionBlocked", kind="NodeClaim")]
    assert any("couldn't meet minValues requirements, truncating to 1 instance type(s)" in note
               for note in blocked), blocked

    monkeypatch.setattr(nodeclaims, "MAX_INSTANCE_TYPES", 600)
    assert world.run_until(lambda: original not in {objects.name(c)
                                                    for c in world.nodeclaims()},
                           timeout=1800)
    (replacement,) = world.nodeclaims()
    assert objects.labels(replacement).get("team") == "a"
