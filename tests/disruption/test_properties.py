"""Properties of disruption over random stories (hypothesis, a handful of examples): random
scale changes, NodePool template changes, instance interruptions and controller crashes
on the workshop. Whatever happens:

- consolidation never raises the hourly cost (every command saves money);
- no eviction takes a PodDisruptionBudget's workload below what it allows;
- no voluntary disruption starts beyond its NodePool's budget;
- no node is drained before its replacement initialized;
- every schedulable pod ends up bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.budget_room import count_nodes
from nodewright.controllers.disruption.budgets import allowed_disruptions
from nodewright.controllers.disruption.commands import Command
from nodewright.runtime.clock import parse_time
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers: [{name: app, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
"""
R5_ALLOWED = {"karpenter.k8s.aws/instance-category": ["c", "m", "r"],
              "karpenter.k8s.aws/instance-family": ["c5", "m5", "r5"]}
TERMINATING_REASONS = ("Underutilized", "Empty", "Drifted")


@dataclass
class Checker:
    """Watches a World and keeps what the properties are checked against."""

    world: World
    initialized_at: dict[str, datetime] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    budget_violations: list[str] = field(default_factory=list)
    pdb_violations: list[str] = field(default_factory=list)
    # Web pods whose machine EC2 stopped or terminated under them: lost involuntarily (a
    # PodDisruptionBudget cannot hold those back; it only limits evictions).
    lost: set[str] = field(default_factory=set)

    def attach(self) -> None:
        self.world.driver.listen(self.on_event)
        disruption = self.world.controllers.disruption
        assert disruption is not None
        disruption.decisions.subscribe(self.on_decision)

    def collect(self) -> None:
        """Keep the commands of the controller process before it dies."""
        disruption = self.world.controllers.disruption
        assert disruption is not None
        self.commands.extend(disruption.disruption.commands)

    def on_event(self, event: WatchEvent) -> None:
        if event.kind == "NodeClaim" and objects.condition_is_true(event.object, "Initialized"):
            self.initialized_at.setdefault(objects.name(event.object), self.world.clock.now())

    def on_decision(self, decision: ex.Decision) -> None:
        if decision.outcome != ex.DISRUPTED or decision.method not in (
                ex.EMPTINESS, ex.DRIFT, ex.MULTI_NODE, ex.SINGLE_NODE):
            return
        state = self.world.controllers.state
        parsed = state.nodepool_model(decision.nodepool)
        assert parsed is not None and parsed.model is not None
        reason = {ex.EMPTINESS: "Empty", ex.DRIFT: "Drifted"}.get(decision.method,
                                                                  "Underutilized")
        nodes, disrupting = count_nodes(state.nodes()).get(decision.nodepool, (0, 0))
        limit = allowed_disruptions(parsed.model.spec.disruption.budgets, reason, nodes,
                                    decision.time)
        if disrupting > limit.allowed:
            self.budget_violations.append(
                f"{decision.time}: {disrupting} disrupting of {nodes}, {limit.describe()}")

    def lose_machine(self, provider_id: str) -> None:
        nodes = {objects.name(n) for n in self.world.cluster.list("Node")
                 if (n.get("spec") or {}).get("providerID") == provider_id}
        self.lost.update(objects.name(p) for p in self.world.running_pods()
                         if objects.labels(p).get("app") == "web"
                         and (p.get("spec") or {}).get("nodeName") in nodes)

    def check_pdb(self) -> None:
        ready = {objects.name(p) for p in self.world.running_pods()
                 if objects.labels(p).get("app") == "web"
                 and objects.condition_is_true(p, "Ready")}
        gone_involuntarily = self.lost - ready
        if len(ready) + len(gone_involuntarily) < 2:
            self.pdb_violations.append(f"{self.world.clock.now()}: {len(ready)} web pods ready")


Action = tuple[str, int]
actions = st.lists(
    st.one_of(
        st.tuples(st.just("scale"), st.integers(min_value=0, max_value=16)),
        st.tuples(st.just("interrupt"), st.integers(min_value=0, max_value=5)),
        st.tuples(st.just("drift"), st.integers(min_value=0, max_value=3)),
        st.tuples(st.just("crash"), st.just(0)),
    ),
    min_size=2,
    max_size=4,
)
INTERRUPTIONS = ("scheduled", "stop", "terminate")


def act(world: World, checker: Checker, action: Action) -> None:
    kind, value = action
    if kind == "scale":
        world.scale("inflate", value)
    elif kind == "interrupt":
        instances = world.live_instances()
        if instances:
            victim = instances[value % len(instances)]
            kind = INTERRUPTIONS[value % 3]
            if kind != "scheduled":
                checker.lose_machine(victim.provider_id)
            world.cloud.interrupt(victim.instance_id, kind)
    elif kind == "drift":
        world.apply(nodepool_with(requirements=R5_ALLOWED,
                                  labels={"type": "karpenter", "generation": str(value)}))
    else:
        checker.collect()
        world.restart_controllers()
        checker.attach()


def run_story(world: World, checker: Checker, story: list[Action]) -> None:
    for action in story:
        act(world, checker, action)
        for _ in range(120):  # ten minutes at most between two actions
            world.advance(5)
            checker.check_pdb()
    world.settle(timeout=3600)
    checker.collect()


# Each example is a few minutes of virtual cluster life; shrinking would replay dozens.
@settings(max_examples=4, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(story=actions)
def test_disruption_keeps_its_promises_whatever_happens(story: list[Action]) -> None:
    world = World(seed=len(story))
    checker = Checker(world)
    checker.attach()
    world.apply(WORKSHOP, WEB, nodepool_with(requirements=R5_ALLOWED))
    world.scale("inflate", 6)
    assert world.settle()
    run_story(world, checker, story)

    assert world.pending_pods() == [], "schedulable pods left pending"
    assert checker.pdb_violations == []
    assert checker.budget_violations == []
    for command in checker.commands:
        if command.reason == "Underutilized":
            assert command.savings > 0, f"consolidation raised the cost: {command.describe()}"
        deleted = _deleted_by_disruption(world, command)
        if not deleted:
            continue
        ready = [checker.initialized_at.get(name) for name in command.replacement_names]
        assert all(t is not None for t in ready), (
            f"{command.describe()}: a candidate was drained but a replacement never "
            "initialized")
        assert all(t <= min(deleted) for t in ready if t is not None), (
            f"{command.describe()}: drained before its replacement initialized")


def _deleted_by_disruption(world: World, command: Command) -> list[datetime]:
    """When the disruption loop deleted the command's candidates (its Terminating events)."""
    names = {c.nodeclaim_name for c in command.candidates}
    found: list[datetime] = []
    for event in world.events(ex.DISRUPTION_TERMINATING, kind="NodeClaim"):
        regarding: dict[str, Any] = event["regarding"]
        if regarding["name"] in names and event["note"].endswith(TERMINATING_REASONS):
            found.append(parse_time(event["eventTime"]))
    return found
