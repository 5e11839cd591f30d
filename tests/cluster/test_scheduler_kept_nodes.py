"""kube-scheduler keeps each node's NodeInfo from one pass to the next while its Node
object and its bound pod objects are the same, and keeps per-node verdicts and scores by
node version across passes. Whatever the cluster does in between, every pass starts from
exactly the nodes a fresh build would make, and every kept verdict and score is the one
worked out afresh."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.cluster.memory.kube_scheduler import snapshot
from nodewright.cluster.memory.kube_scheduler.parsing import PodParser
from nodewright.cluster.memory.kube_scheduler.scheduler import SchedulingPass, _Shape
from nodewright.cluster.memory.kube_scheduler.scoring import fit_score
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo, NodeSnapshots
from nodewright.scheduling.pods import Pod
from tests.cluster.world import World, node, pod

NODE_NAMES = ["n0", "n1"]
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pod"), st.sampled_from(["250m", "500m", "1", "3"]),
                  st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 30)),
        st.tuples(st.just("finish"), st.integers(0, 30)),
        st.tuples(st.just("cordon"), st.sampled_from(NODE_NAMES), st.booleans()),
        st.tuples(st.just("relabel"), st.sampled_from(NODE_NAMES), st.sampled_from("ab")),
    ),
    min_size=1, max_size=25,
)


def fresh_parse(obj: Mapping[str, Any]) -> Pod | None:
    return PodParser().parse(obj).pod


def described(infos: Mapping[str, NodeInfo]) -> list[tuple[Any, ...]]:
    """Everything a pass reads of its nodes (not the version, which is per build)."""
    return [(info.name, dict(info.labels), info.taints, info.unschedulable,
             dict(info.allocatable), info.requested, info.scored_cpu, info.scored_memory,
             info.ports,
             # Replicas' models carry the node of the first one parsed; no filter reads it.
             [(replace(placed.pod, node_name=None), placed.deleting) for placed in info.pods])
            for info in infos.values()]


class Checked:
    """Patches the scheduler so that each pass's kept nodes are compared with a fresh
    build, and each kept verdict or score with the one worked out again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.passes = 0
        self.kept_nodes = 0
        self.kept_answers = 0
        build, refused, fit = NodeSnapshots.build, SchedulingPass._refused, SchedulingPass._fit
        admitted = SchedulingPass._admitted
        parse = PodParser.parse

        def fresh_parse(obj: Mapping[str, Any]) -> Pod | None:
            return parse(PodParser(), obj).pod

        def checked_build(keeper: NodeSnapshots, nodes: Any,
                          bound: Mapping[str, Sequence[Mapping[str, Any]]],
                          parse: Callable[[Mapping[str, Any]], Pod | None],
                          read: Any = None) -> dict[str, NodeInfo]:
            nodes = list(nodes)
            before = {name: kept.info for name, kept in keeper._kept.items()}
            infos = build(keeper, nodes, bound, parse, read)
            fresh = build(NodeSnapshots(), nodes, bound, fresh_parse)
            assert described(infos) == described(fresh)
            self.passes += 1
            self.kept_nodes += sum(keeper._kept[name].info is before.get(name)
                                   for name in infos)
            return infos

        def checked_refused(shape: _Shape, node: NodeInfo) -> bool:
            known = shape.resources.get(node.name)
            answer = refused(shape, node)
            assert answer == bool(shape.filters.resource_reasons(node))
            self.kept_answers += known is not None and known >> 1 == node.version
            return answer

        def checked_admitted(scheduling: SchedulingPass, shape: _Shape) -> list[NodeInfo]:
            kept = [node for node in shape.candidates
                    if shape.resources.get(node.name, -2) >> 1 == node.version]
            answer = admitted(scheduling, shape)
            assert answer == [node for node in shape.candidates
                              if not shape.filters.dynamic_reasons(node)]
            self.kept_answers += len(kept)
            return answer

        def checked_fit(shape: _Shape, pod: Pod, node: NodeInfo) -> int:
            answer = fit(shape, pod, node)
            assert answer == fit_score(pod, node)
            return answer

        monkeypatch.setattr(NodeSnapshots, "build", checked_build)
        monkeypatch.setattr(SchedulingPass, "_refused", staticmethod(checked_refused))
        monkeypatch.setattr(SchedulingPass, "_fit", staticmethod(checked_fit))
        monkeypatch.setattr(SchedulingPass, "_admitted", checked_admitted)


@pytest.fixture
def checked() -> Iterator[Checked]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield Checked(monkeypatch)


@settings(max_examples=40, deadline=None)
@given(STEPS)
def test_every_pass_starts_from_the_nodes_a_fresh_build_makes(
        steps: list[tuple[Any, ...]]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = Checked(monkeypatch)
        world = World()
        world.apply(*(node(name, cpu="4", labels={"pool": "a"}) for name in NODE_NAMES))
        world.apply(pod("first", cpu="1", labels={"app": "s"}))
        made = 0
        for step in steps:
            # Pods bound to a node, not finished: those whose going changes a node.
            names = sorted(p["metadata"]["name"] for p in world.pods()
                           if p["spec"].get("nodeName")
                           and (p.get("status") or {}).get("phase") != "Succeeded")
            if step[0] == "pod":
                spread = {"topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "pool", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "s"}}}]} if step[2] else {}
                world.apply(pod(f"p{made}", cpu=step[1], labels={"app": "s"}, **spread))
                made += 1
            elif step[0] in ("delete", "finish") and names:
                name = names[step[1] % len(names)]
                if step[0] == "delete":
                    world.cluster.delete("Pod", name, "default")
                else:
                    world.cluster.set_status("Pod", name, "default", {"phase": "Succeeded"})
            elif step[0] == "cordon":
                world.cluster.patch("Node", step[1], {"spec": {"unschedulable": step[2]}})
            elif step[0] == "relabel":
                world.cluster.patch("Node", step[1],
                                    {"metadata": {"labels": {"pool": step[2]}}})
            world.run(1)
        assert checked.passes >= 1


def test_a_pass_reads_again_only_the_nodes_whose_pods_changed(
        checked: Checked, monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    world.apply(node("n1", cpu="4"), node("n2", cpu="4"))
    world.apply(pod("first", cpu="3"))
    world.apply(pod("second", cpu="3"))
    assert world.placements() == {"first": "n1", "second": "n2"}
    world.run(10)  # both run: the kubelet wrote their status
    world.apply(pod("too-big", cpu="2"))  # a pass that starts from both as they are now
    assert world.placements()["too-big"] is None

    parsed: list[str] = []
    parse = PodParser.parse

    def counted(parser: PodParser, obj: Mapping[str, Any]) -> Any:
        parsed.append(obj["metadata"]["name"])
        return parse(parser, obj)

    monkeypatch.setattr(PodParser, "parse", counted)
    world.cluster.set_status("Pod", "first", "default", {"phase": "Succeeded"})
    world.apply(pod("third", cpu="2"))

    assert world.placements() == {"first": "n1", "second": "n2", "third": "n1",
                                  "too-big": "n1"}
    # Only the pending pods were read: n2 and its pod are as they were (the pass took its
    # NodeInfo as kept), and n1, made again, has no unfinished pod left.
    assert parsed == ["third", "too-big"]
    # And what the pass before worked out for n2 at its version (its resources, its
    # score) was taken as it was, and was what working it out again gives.
    assert checked.kept_nodes >= 1 and checked.kept_answers >= 1


def test_a_pod_gone_while_another_took_its_place_is_seen(checked: Checked) -> None:
    world = World()
    world.apply(node("n1", cpu="4"))
    world.apply(pod("first", cpu="1"))
    world.apply(pod("second", cpu="2"))  # the pass starts from n1 with `first`
    world.cluster.set_status("Pod", "first", "default", {"phase": "Succeeded"})
    # n1 holds one pod again, another one: the next pass must not take n1 as kept.
    world.apply(pod("third", cpu="2"))
    world.apply(pod("fourth", cpu="1"))

    assert world.placements() == {"first": "n1", "second": "n1", "third": "n1",
                                  "fourth": None}
    assert checked.passes == 4


def test_a_kept_node_is_copied_for_each_pass() -> None:
    manifest = node("n1", cpu="4")
    keeper = NodeSnapshots()
    bound = pod("first", cpu="1")
    bound["metadata"]["uid"] = "u1"
    bound["spec"]["nodeName"] = "n1"
    first = keeper.build([manifest], {"n1": [bound]}, fresh_parse)
    first["n1"].add(first["n1"].pods[0].pod)
    second = keeper.build([manifest], {"n1": [bound]}, fresh_parse)

    assert len(first["n1"].pods) == 2 and len(second["n1"].pods) == 1
    assert second["n1"].version != first["n1"].version
    assert second["n1"].requested["cpu"] == 1000


def test_node_versions_are_never_reused() -> None:
    info = snapshot.node_info(node("n1"))
    assert info is not None
    copy = info.copy()
    versions = {info.version, info.empty().version}
    info.add(Pod("default", "p", {}, {"cpu": 100}))
    copy.add(Pod("default", "q", {}, {"cpu": 100}))
    versions |= {info.version, copy.version}
    assert len(versions) == 4
