"""`karpenter_voluntary_disruption_queue_failures_total` as Karpenter v1.14.1's disruption
queue writes it (pkg/controllers/disruption/queue.go, Reconcile): a command that fails adds
the number of its replacements that never initialized, and its `consolidation_type` label
carries the command's decision (`replace`), as Karpenter labels it. Told as the queue
suite's timeout story: a drifted node's replacement never registers."""

from __future__ import annotations

import dataclasses

from tests.controllers.metric_samples import sample_value
from tests.disruption.test_drift_karpenter import drift, fleet, node_of
from tests.disruption.test_queue_karpenter import commands, tainted
from tests.harness import World

FAILED_REPLACE = {"decision": "replace", "reason": "drifted", "consolidation_type": "replace"}


def failures() -> float:
    return sample_value("karpenter_voluntary_disruption_queue_failures_total",
                        FAILED_REPLACE) or 0.0


def test_a_timed_out_replace_counts_its_replacement_that_never_came_up(world: World) -> None:
    originals = fleet(world, 1)
    node = node_of(world, next(iter(originals)))
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=3600)
    before = failures()
    drift(world)
    assert world.run_until(lambda: tainted(world, node), timeout=600)
    assert world.run_until(lambda: commands(world) == 0, timeout=1800)
    assert failures() == before + 1
