"""What a disruption pass reads of each machine's pods, kept while the pods are the
same objects: the state replaces a pod's object on every update (it never edits one in
place), so the same objects always read the same. Each kept answer is compared with the
one worked out afresh, after the pods changed in every way a pass can meet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.cluster import objects
from nodewright.controllers.common.podrules import (
    DO_NOT_DISRUPT,
    POD_DELETION_COST,
    eviction_cost,
)
from nodewright.controllers.disruption.candidates import (
    PER_NODE_DISRUPTION_COST,
    PodFacts,
    PodsSummary,
)
from nodewright.state import podutil
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World

Obj = Mapping[str, Any]


def afresh(pods: Sequence[Obj]) -> PodsSummary:
    """Every pod read again, as a pass did before it kept anything."""
    moving = tuple(pod for pod in pods if podutil.is_reschedulable(pod))
    costs = [eviction_cost(pod) for pod in moving]
    return PodsSummary(
        annotated=tuple(pod for pod in pods
                        if podutil.is_active(pod) and DO_NOT_DISRUPT in objects.annotations(pod)),
        moving=moving,
        eviction_cost=sum(costs),
        reschedule_cost=PER_NODE_DISRUPTION_COST + sum(max(0.0, cost) for cost in costs),
    )


def a_pod(name: str, version: int, *, cost: int | None, priority: int | None,
          annotated: bool, daemon: bool, terminating: bool) -> dict[str, Any]:
    annotations = {} if cost is None else {POD_DELETION_COST: str(cost)}
    if annotated:
        annotations[DO_NOT_DISRUPT] = "true"
    metadata: dict[str, Any] = {"name": name, "namespace": "default",
                                "annotations": annotations,
                                "labels": {"version": str(version)}}
    if daemon:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                        "name": "agent", "controller": True}]
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-05T00:00:00Z"
    spec: dict[str, Any] = {"nodeName": "n1"}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Running"}}


pod_shapes = st.fixed_dictionaries({
    "cost": st.none() | st.integers(-2**31, 2**31),
    "priority": st.none() | st.integers(-2**31, 2**30),
    "annotated": st.booleans(),
    "daemon": st.booleans(),
    "terminating": st.booleans(),
})


@given(first=st.lists(pod_shapes, min_size=0, max_size=6),
       passes=st.lists(st.lists(st.tuples(st.integers(0, 5), pod_shapes), max_size=3),
                       max_size=4))
def test_a_summary_kept_from_pass_to_pass_is_the_one_worked_out_afresh(
    first: list[dict[str, Any]], passes: list[list[tuple[int, dict[str, Any]]]],
) -> None:
    """Each pass replaces some pods with new objects (another cost, priority, annotation,
    owner or deletion): the machine's summary, kept or partly read again, is the summary
    of its pods read afresh, both as the state's kept tuple and as a plain list."""
    facts = PodFacts()
    pods = [a_pod(f"p{i}", 0, **shape) for i, shape in enumerate(first)]
    for version, changes in enumerate([[], *passes], start=1):
        for index, shape in changes:
            if index < len(pods):
                pods[index] = a_pod(f"p{index}", version, **shape)
        facts.begin_pass({objects.name(pod): pod for pod in pods})
        kept = tuple(pods)
        assert facts.of(kept) == afresh(pods)
        assert facts.of(kept) is facts.of(kept)
        assert facts.of(list(pods)) == afresh(pods)


def test_a_pod_read_once_is_not_read_again_while_its_object_lives() -> None:
    """A machine one of whose pods changed reads that pod again, not the others, however
    many passes found the machine unchanged before."""
    facts = PodFacts()
    shape = {"cost": None, "priority": None, "annotated": False, "daemon": False,
             "terminating": False}
    pods = [a_pod(f"p{i}", 0, **shape) for i in range(3)]
    facts.of(tuple(pods))
    for _ in range(3):  # passes that find the machine as it was
        facts.begin_pass({objects.name(pod): pod for pod in pods})
        facts.of(tuple(pods))
    pods[1] = a_pod("p1", 1, **{**shape, "cost": 2**27})
    facts.begin_pass({objects.name(pod): pod for pod in pods})
    read: list[Obj] = []
    original = podutil.is_reschedulable
    try:
        podutil.is_reschedulable = lambda pod: read.append(pod) or original(pod)  # type: ignore[assignment]
        summary = facts.of(tuple(pods))
    finally:
        podutil.is_reschedulable = original  # type: ignore[assignment]
    assert read == [pods[1]]
    assert summary.eviction_cost == 4.0


def test_a_nodes_pods_are_the_same_tuple_until_one_of_them_changes() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(
        requirements={"node.kubernetes.io/instance-type": ["m5.large"]}))
    world.scale("inflate", 12)
    assert world.settle()
    assert world.controllers.disruption is not None
    state = world.controllers.disruption.disruption.state
    nodes = sorted({str(p["spec"]["nodeName"]) for p in state.pods.objects.values()
                    if p.get("spec", {}).get("nodeName")})
    assert len(nodes) >= 2
    before = {name: state.kept_pods_on(name) for name in nodes}
    assert all(state.kept_pods_on(name) is kept for name, kept in before.items())
    snapshot = state.copy()
    assert all(snapshot.kept_pods_on(name) == kept for name, kept in before.items())

    changed = before[nodes[0]][0]
    world.cluster.patch("Pod", objects.name(changed), {"metadata": {"labels": {"x": "y"}}},
                        objects.namespace(changed))
    world.deliver()
    after = state.kept_pods_on(nodes[0])
    assert after is not before[nodes[0]]
    assert list(after) == state.pods_on(nodes[0]) == [
        state.pods.objects[key] for key in state.pods.by_node[nodes[0]].requests]
    assert objects.labels(after[-1]).get("x") == "y"
    assert all(state.kept_pods_on(name) is before[name] for name in nodes[1:])
    # The snapshot taken before keeps the pods it saw.
    assert snapshot.kept_pods_on(nodes[0]) == before[nodes[0]]
