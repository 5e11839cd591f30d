"""A node's lifetime (karpenter_nodes_current_lifetime_seconds) is the seconds from its
creation to the node metrics' last pass, as Karpenter sets it every 5 seconds: read when
scraped, it is what setting it at each pass would have left, to the microsecond, and a
series another controller took out of the shared gauge is published again at the next
pass."""

from __future__ import annotations

from datetime import timedelta

from nodewright import metrics
from nodewright.controllers.metrics.nodes import NodeMetrics
from nodewright.runtime.clock import parse_time
from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import samples
from tests.harness import World


def lifetime(node_name: str) -> list[float]:
    return [s.value for s in samples("karpenter_nodes_current_lifetime_seconds")
            if s.labels.get("node_name") == node_name]


def test_a_nodes_lifetime_is_its_age_at_the_last_pass_and_comes_back_when_taken_out(
        world: World) -> None:
    # The gauge is process-wide: an earlier test's world may have left a series for a
    # node of the same (seeded) name.
    metrics.NODES_CURRENT_LIFETIME.clear()
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    assert world.settle()
    (node,) = world.nodes()
    name = node["metadata"]["name"]
    created = parse_time(node["metadata"]["creationTimestamp"])
    controller = world.controllers.get("metrics.node", NodeMetrics)
    assert controller is not None

    for step in (0.25, 1.000001, 4.999999, 12345.678901):
        world.clock.run_until(world.clock.now() + timedelta(seconds=step))
        controller.reconcile("")
        assert lifetime(name) == [(world.clock.now() - created).total_seconds()]
        at_the_pass = lifetime(name)
        world.clock.run_until(world.clock.now() + timedelta(microseconds=1))
        assert lifetime(name) == at_the_pass, "it moves on at a pass, not when scraped"

    # Another operator in the process forgets the node: it takes the series out.
    (held,) = [key for key in metrics.NODES_CURRENT_LIFETIME._metrics if name in key]
    metrics.remove_series(metrics.NODES_CURRENT_LIFETIME, held)
    assert lifetime(name) == []
    world.clock.run_until(world.clock.now() + timedelta(seconds=5))
    controller.reconcile("")
    assert lifetime(name) == [(world.clock.now() - created).total_seconds()]
