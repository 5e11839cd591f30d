"""What one disruption pass works out once and shares between its methods, and what it
keeps for the next pass: each must follow the cluster when it changes.

Karpenter v1.14.1 pkg/controllers/disruption/controller.go computes the candidates once
per pass (`GetCandidates`) and hands the same list to every method; each method then
filters and sorts them (consolidation.go `sortCandidates`, by savings ratio over
`RescheduleDisruptionCost`) and takes from a budget mapping of its own. Ours screens and
orders consolidation's candidates once per pass for multi-node and single-node
consolidation, each still explaining, under its own name, why it leaves a node alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.podrules import POD_DELETION_COST
from nodewright.controllers.disruption.budgets import UNDERUTILIZED
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Rejection
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.disruption.methods import (
    consolidation,
    multi_node_consolidation,
    single_node_consolidation,
)
from nodewright.controllers.disruption.methods.multi_node_consolidation import multi_node
from nodewright.controllers.disruption.methods.single_node_consolidation import single_node
from nodewright.controllers.disruption.simulation import _SETTLING_OK, PodModels, SimulationBase
from nodewright.scheduling.pods import Pod
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World
from tests.scheduling.test_solver import pod


def _world(consolidate_after: str) -> World:
    world = World()
    world.apply(WORKSHOP, nodepool_with(
        requirements={"node.kubernetes.io/instance-type": ["m5.large"]},
        disruption={"consolidateAfter": consolidate_after}))
    world.scale("inflate", 12)
    assert world.settle()
    return world


def _controller(world: World) -> DisruptionController:
    assert world.controllers.disruption is not None
    return world.controllers.disruption.disruption


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The candidates each consolidation simulates; none can be consolidated."""
    seen: list[list[str]] = []

    def never(base: SimulationBase, candidates: Sequence[Candidate], **_: object) -> Rejection:
        base.simulations += 1
        seen.append([c.name for c in candidates])
        return Rejection(ex.CAUSE_PODS_DO_NOT_FIT, "the test keeps every node")

    monkeypatch.setattr(multi_node_consolidation, "decide_consolidation", never)
    monkeypatch.setattr(single_node_consolidation, "decide_consolidation", never)
    return seen


def test_both_consolidations_screen_the_candidates_once_and_each_explains_in_its_name(
        simulated: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    world = _world("1h")
    screened: list[str] = []
    screen = consolidation.unconsolidatable

    def counted(p: object, candidate: Candidate) -> tuple[str, str] | None:
        screened.append(candidate.name)
        return screen(p, candidate)  # type: ignore[arg-type]

    monkeypatch.setattr(consolidation, "unconsolidatable", counted)
    current = _controller(world).new_pass(world.clock.now())
    nodes = sorted(c.name for c in current.candidates() if not c.empty)
    assert len(nodes) >= 2, "the story needs several machines with pods"

    assert multi_node(current) is None
    assert {v.decision.method for v in current.verdicts.by_node.values()} == {ex.MULTI_NODE}
    assert single_node(current) is None
    # Within consolidateAfter: nothing simulated, each machine screened once, and the
    # verdict that stands is single-node consolidation's own.
    assert simulated == []
    assert sorted(screened) == nodes
    for name in nodes:
        decision = current.verdicts.by_node[name].decision
        assert (decision.method, decision.cause) == (ex.SINGLE_NODE, ex.CAUSE_CONSOLIDATE_AFTER)


def test_the_next_pass_screens_the_cluster_again(simulated: list[list[str]]) -> None:
    world = _world("1h")
    controller = _controller(world)
    first = controller.new_pass(world.clock.now())
    assert multi_node(first) is None and single_node(first) is None
    assert simulated == []

    # An hour on, the same machines are past consolidateAfter: a screening kept from the
    # first pass would still keep them.
    later = controller.new_pass(world.clock.now() + timedelta(hours=1, seconds=1))
    assert single_node(later) is None
    assert simulated, "the later pass simulated nothing"
    assert all(v.decision.cause != ex.CAUSE_CONSOLIDATE_AFTER
               for v in later.verdicts.by_node.values())


def test_a_candidates_rescheduling_cost_follows_its_pods() -> None:
    world = _world("30s")
    controller = _controller(world)
    before = {c.name: c.reschedule_disruption_cost
              for c in controller.new_pass(world.clock.now()).candidates()}
    pod = next(p for p in world.running_pods() if (p.get("spec") or {}).get("nodeName"))
    # A deletion cost of 2^27 adds 1 to the pod's eviction cost (Karpenter's
    # EvictionCost); the pass after sees it, the pass before did not.
    world.cluster.patch("Pod", objects.name(pod), {"metadata": {"annotations": {
        POD_DELETION_COST: str(2**27)}}}, "default")
    world.deliver()
    later = controller.new_pass(world.clock.now()).candidates()
    holder = next(c for c in later
                  if objects.name(pod) in {objects.name(p) for p in c.pods})
    after = {c.name: c.reschedule_disruption_cost for c in later}
    assert after[holder.name] == pytest.approx(before[holder.name] + 1.0)
    assert {n: c for n, c in after.items() if n != holder.name} == {
        n: c for n, c in before.items() if n != holder.name}


def test_each_method_takes_from_rooms_of_its_own_in_one_pass() -> None:
    world = _world("30s")
    current = _controller(world).new_pass(world.clock.now())
    first = current.rooms(UNDERUTILIZED)
    pool = next(iter(first))
    left = first[pool].left
    assert left >= 1
    assert first[pool].take()
    # Counted once per pass, handed out fresh: another method starts from the budget.
    assert current.rooms(UNDERUTILIZED)[pool].left == left
    assert first[pool].left == left - 1


def test_a_pod_exempt_from_the_settling_taint_is_the_same_copy_while_its_model_is() -> None:
    """The deleting machines' pods tolerate the settling taint (Karpenter lets pods
    already being moved land on a machine within consolidateAfter); the copy is kept from
    pass to pass, so what the solver works out about it is kept with it."""
    kept, changed = pod("web-1"), pod("web-2")
    models = PodModels()
    first = models.exempt([kept, changed])
    assert all(_SETTLING_OK in p.tolerations and _SETTLING_OK not in q.tolerations
               for p, q in zip(first, (kept, changed), strict=True))
    models.begin_pass({})
    remade = replace(changed, labels={"app": "api"})
    second = models.exempt([kept, remade])
    assert second[0] is first[0]
    assert second[1] is not first[1] and second[1].labels == {"app": "api"}
    models.begin_pass({})
    models.begin_pass({})
    # Two passes without it: worked out again.
    assert models.exempt([kept])[0] is not first[0]


def test_a_pod_model_is_kept_while_its_object_is_the_states_and_read_again_once_replaced(
) -> None:
    """A pass reads the models of the pods it looks at (a validation pass, one command's);
    a model that depends on the pod object alone is kept across passes that do not look
    at it, for as long as the object is one of the state's pods, and read again once the
    state has replaced it."""
    world = _world("0s")
    state = _controller(world).state
    models = PodModels()
    [first, *others] = sorted(state.pods.objects.values(), key=objects.key)
    read = models.of(first, state)
    for _ in range(3):  # passes that look only at the other pods
        models.begin_pass(state.pods.objects)
        for other in others:
            models.of(other, state)
    assert models.of(first, state) is read

    world.cluster.patch("Pod", objects.name(first), {"metadata": {"labels": {"touched": "yes"}}},
                        objects.namespace(first))
    world.advance(1)
    replaced = state.pods.objects[objects.key(first)]
    assert replaced is not first
    models.begin_pass(state.pods.objects)
    again = models.of(replaced, state)
    assert again is not read and isinstance(again.model, Pod)
    assert again.model.labels.get("touched") == "yes"
