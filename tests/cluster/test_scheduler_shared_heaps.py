"""Pod shapes that differ only in what none of their filters reads (replicas of different
Deployments with the same requests and no topology terms) start from one heap of node
scores per pass instead of each scoring every node, and each still chooses exactly what
a plain scan of every node would, also once a placed pod's anti-affinity keeps some of
them off some nodes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.cluster.memory.kube_scheduler.scheduler import SchedulingPass
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo
from nodewright.scheduling.pods import Pod, parse_pod_spec
from tests.cluster.test_scheduler_choice import NODES, choose_alike, snapshot
from tests.cluster.world import HOSTNAME, pod_spec

# (app label, cpu request, keeps app=a pods off its node)
PODS = st.lists(
    st.tuples(st.sampled_from("abc"), st.sampled_from(["250m", "1"]), st.booleans()),
    min_size=1, max_size=40,
)
AWAY_FROM_A = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": HOSTNAME}]}}


def parsed(i: int, app: str, cpu: str, keeps_a_away: bool) -> tuple[Pod, str]:
    extra: dict[str, Any] = {"affinity": AWAY_FROM_A} if keeps_a_away else {}
    spec = pod_spec(cpu=cpu, memory="512Mi", **extra)
    pod = parse_pod_spec("default", f"p{i}", {"app": app}, spec, "spec")
    return pod, repr((app, cpu, keeps_a_away))


@pytest.fixture
def heaps_built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The signature of each shape whose heap was built by scoring every node."""
    built: list[str] = []
    admitted = SchedulingPass._admitted

    def counted(scheduling: SchedulingPass, shape: Any) -> list[NodeInfo]:
        built.append(next(signature for signature, each in scheduling._shapes.items()
                          if each is shape))
        return admitted(scheduling, shape)

    monkeypatch.setattr(SchedulingPass, "_admitted", counted)
    return built


def test_replicas_of_three_deployments_alike_score_the_nodes_once(
        heaps_built: list[str]) -> None:
    scheduling = SchedulingPass(snapshot([("4", "8Gi", False)] * 3), {})
    for i, app in enumerate("abcabc"):
        pod, signature = parsed(i, app, "250m", keeps_a_away=False)
        chosen, _ = scheduling.choose(pod, signature)
        assert chosen is not None
        scheduling.placed(pod, chosen)

    assert heaps_built == [repr(("a", "250m", False))]


def test_a_shape_kept_off_some_nodes_scores_them_itself(heaps_built: list[str]) -> None:
    scheduling = SchedulingPass(snapshot([("4", "8Gi", False)] * 3), {})
    for i, (app, away) in enumerate([("b", False), ("c", True), ("a", False), ("b", False)]):
        pod, signature = parsed(i, app, "250m", away)
        chosen, _ = scheduling.choose(pod, signature)
        assert chosen is not None
        scheduling.placed(pod, chosen)

    # app=a is kept off one node: its heap is its own. app=b's serves nobody else here.
    assert heaps_built == [repr(("b", "250m", False)), repr(("a", "250m", False))]


@settings(max_examples=150, deadline=None)
@given(NODES, PODS)
def test_shapes_starting_from_another_shapes_heap_choose_as_a_plain_scan(
    nodes: list[tuple[str, str, bool]], pods: list[tuple[str, str, bool]]
) -> None:
    fast, plain = SchedulingPass(snapshot(nodes), {}), SchedulingPass(snapshot(nodes), {})
    choose_alike(fast, plain, [parsed(i, *shape) for i, shape in enumerate(pods)])


def test_a_heap_that_drops_a_node_for_its_own_shape_serves_no_other() -> None:
    # app=a's heap is offered while nothing keeps app=a anywhere; then a placed pod's
    # anti-affinity keeps app=a off n1, and app=a's next pod drops n1 from that heap.
    # app=b, alike but for its label, must still see n1 (the emptier node).
    nodes = [("1", "2Gi", False), ("1", "2Gi", False)]
    pods = [("a", "250m", False), ("a", "250m", True), ("a", "250m", False),
            ("b", "250m", False)]
    fast, plain = SchedulingPass(snapshot(nodes), {}), SchedulingPass(snapshot(nodes), {})
    choose_alike(fast, plain, [parsed(i, *shape) for i, shape in enumerate(pods)])
