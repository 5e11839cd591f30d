"""Disruption events as Karpenter v1.14.1 publishes and deduplicates them
(pkg/controllers/disruption/events/events.go, queue.go).

- The queue publishes DisruptionLaunching on a replacement each time it looks at one not
  yet known initialized (deduplicated by the NodeClaim's UID and the reason for two
  minutes), beside DisruptionWaitingReadiness: a replacement that takes minutes to come up
  is told so again every two minutes.
- DisruptionBlocked (two minutes) and Unconsolidatable (fifteen) are keyed by the reason
  and the object's UID alone: a node kept for one cause and then for another within the
  window gets one event. ConsolidationCandidate and ConsolidationRejected are keyed by
  the command, so each command is told.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.verdict_publishing import PassVerdicts, VerdictPublisher
from nodewright.runtime.clock import VirtualClock, parse_time
from nodewright.state.statenode import StateNode
from tests.disruption.test_drift_karpenter import drift, fleet, gone
from tests.harness import World

START = datetime(2026, 1, 5, tzinfo=UTC)


def test_a_slow_replacement_is_told_launching_again_while_it_comes_up(world: World) -> None:
    originals = fleet(world, 1)
    # The replacement's node takes five minutes to register (the command waits ten).
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=300)
    drift(world)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    launching = world.events(ex.DISRUPTION_LAUNCHING, kind="NodeClaim")
    assert len({e["regarding"]["name"] for e in launching}) == 1
    assert len(launching) >= 2
    times = sorted(parse_time(str(e["eventTime"])) for e in launching)
    assert all(later - earlier >= timedelta(minutes=2)
               for earlier, later in pairwise(times))
    assert {e["note"] for e in launching} == {"Launching NodeClaim: Drifted"}


class Publisher:
    """The verdict publisher on an API server holding one Node and its NodeClaim."""

    def __init__(self) -> None:
        self.clock = VirtualClock(START)
        self.cluster = InMemoryCluster(self.clock)
        self.recorder = EventRecorder(self.cluster, self.clock)
        self.publisher = VerdictPublisher(self.cluster, self.recorder, ex.DecisionLog())
        claim = self.cluster.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abc", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}})
        node = self.cluster.create({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc"}})
        self.node = StateNode("aws:///us-east-1a/i-0abc")
        self.node.node, self.node.nodeclaim = node, claim

    def verdict(self, outcome: str, cause: str, message: str, reason: str,
                decision: str = "") -> None:
        verdicts = PassVerdicts(self.clock.now())
        verdicts.add(self.node, ex.SINGLE_NODE, outcome, cause, message, reason,
                     decision=decision)
        self.publisher.publish(verdicts)

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.cluster.list("Event", namespace="default")
                if e["reason"] == reason]


def test_a_node_blocked_for_another_cause_within_two_minutes_is_not_told_again() -> None:
    bench = Publisher()
    bench.verdict(ex.BLOCKED, "DoNotDisrupt", 'pod "default/web" has "karpenter.sh/'
                  'do-not-disrupt" annotation', ex.DISRUPTION_BLOCKED)
    bench.clock.advance(30)
    bench.verdict(ex.BLOCKED, "PDB", 'pdb "default/web" prevents pod evictions',
                  ex.DISRUPTION_BLOCKED)
    assert sorted(e["regarding"]["kind"] for e in bench.events(ex.DISRUPTION_BLOCKED)) == [
        "Node", "NodeClaim"]
    bench.clock.advance(120)
    bench.verdict(ex.BLOCKED, "PDB", 'pdb "default/web" prevents pod evictions',
                  ex.DISRUPTION_BLOCKED)
    assert len(bench.events(ex.DISRUPTION_BLOCKED)) == 4


def test_a_node_kept_for_another_cause_within_fifteen_minutes_is_not_told_again() -> None:
    bench = Publisher()
    bench.verdict(ex.KEPT, "Price", "can't replace with a cheaper node", ex.UNCONSOLIDATABLE)
    bench.clock.advance(5 * 60)
    bench.verdict(ex.KEPT, "Scheduling", "not all pods would schedule", ex.UNCONSOLIDATABLE)
    assert len(bench.events(ex.UNCONSOLIDATABLE)) == 2
    bench.clock.advance(10 * 60)
    bench.verdict(ex.KEPT, "Scheduling", "not all pods would schedule", ex.UNCONSOLIDATABLE)
    assert len(bench.events(ex.UNCONSOLIDATABLE)) == 4


def test_each_consolidation_candidate_command_is_told() -> None:
    # Replace commands: Karpenter tells no ConsolidationCandidate of a delete command
    # (tests/disruption/test_validation_parity.py).
    bench = Publisher()
    for command in ("replace [node-a] -> 1 replacement(s) (t3.medium) (savings: $0.0200/h)",
                    "replace [node-a] -> 1 replacement(s) (t3.small) (savings: $0.0500/h)"):
        bench.verdict(ex.KEPT, "Candidate", f"consolidation candidate, validating for 15s: "
                      f"{command}", ex.CONSOLIDATION_CANDIDATE, decision="replace")
        bench.clock.advance(20)
    assert len(bench.events(ex.CONSOLIDATION_CANDIDATE)) == 4
