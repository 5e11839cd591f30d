"""Which machines are disruption candidates, as Karpenter v1.14.1 decides it, where the
ported suites did not pin it.

Karpenter's `StateNode.ValidateNodeDisruptable` (pkg/controllers/state/statenode.go,
lines 212-237) blocks a machine for its own `karpenter.sh/do-not-disrupt` annotation only
when the value is exactly "true", and reads it from `StateNode.Annotations()` (lines
281-294): the Node's once registered. The duration form belongs to pods
(pkg/utils/pod/scheduling.go IsDoNotDisruptActive reads `pod.Status.StartTime`); on a node
it means nothing.
"""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.disruption.test_suite_karpenter import m5_large_with_one_pod
from tests.disruption.test_suite_karpenter_candidates import (
    DND_TEXT,
    expect_blocked,
    expect_candidate,
)
from tests.harness import World


def test_a_duration_on_a_node_does_not_protect_it(world: World) -> None:
    """An operator copies a pod's `karpenter.sh/do-not-disrupt: 1h` onto a freshly made
    node, hoping for an hour of peace. Karpenter compares the node's value with "true"
    (statenode.go:229) and goes on: the node stays a candidate."""
    node = m5_large_with_one_pod(world)
    world.cluster.patch("Node", node, {"metadata": {"annotations": {DND_TEXT: "1h"}}})
    expect_candidate(world, node)


def test_only_the_registered_nodes_annotation_counts(world: World) -> None:
    """Registration copied the NodeClaim's annotations to the Node; afterwards Karpenter
    reads the Node's (statenode.go:281-294). A do-not-disrupt written on the NodeClaim
    later blocks nothing; written on the Node it blocks, with Karpenter's sentence."""
    node = m5_large_with_one_pod(world)
    claim = objects.name(world.nodeclaims()[0])
    world.cluster.patch("NodeClaim", claim, {"metadata": {"annotations": {DND_TEXT: "true"}}})
    expect_candidate(world, node)

    world.cluster.patch("Node", node, {"metadata": {"annotations": {DND_TEXT: "true"}}})
    expect_blocked(
        world,
        node,
        ex.CAUSE_DO_NOT_DISRUPT,
        'disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation',
    )


def test_a_nodepool_that_disables_consolidation_says_so_before_its_policy(
    world: World,
) -> None:
    """Karpenter's consolidation.ShouldDisrupt (pkg/controllers/disruption/consolidation.go
    lines 96-133) tells a NodePool with `consolidateAfter: Never` before it looks at
    `consolidationPolicy: WhenEmpty`, and Emptiness tells it of every candidate
    (emptiness.go lines 46-49). A busy node of such a NodePool is told that consolidation
    is disabled; Unconsolidatable is deduplicated per node for 15 minutes, so the first
    sentence is the one users see."""
    world.apply(
        WORKSHOP,
        nodepool_with(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}),
    )
    world.scale("inflate", 1)
    assert world.settle()
    [node] = [objects.name(n) for n in world.nodes()]
    world.advance(30)

    notes = [
        str(e.get("note"))
        for e in world.events(ex.UNCONSOLIDATABLE, kind="Node")
        if (e.get("regarding") or {}).get("name") == node
    ]
    assert notes == ['NodePool "default" has consolidation disabled'], notes
