"""The scheduler's caches, score heap and per-domain spread verdicts choose exactly what a
plain scan of every node would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.cluster.memory.kube_scheduler.filters import PodFilters
from nodewright.cluster.memory.kube_scheduler.scheduler import SchedulingPass
from nodewright.cluster.memory.kube_scheduler.scoring import (
    best_node,
    fit_score,
    intolerable_preferences,
    preferred_affinity,
)
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo, node_info
from nodewright.scheduling.pods import Pod, parse_pod_spec
from tests.cluster.world import node, pod_spec

CPUS = ["1", "2", "4"]
MEMORIES = ["2Gi", "4Gi", "8Gi"]
NODES = st.lists(st.tuples(st.sampled_from(CPUS), st.sampled_from(MEMORIES), st.booleans()),
                 min_size=1, max_size=6)
PODS = st.lists(
    st.tuples(st.sampled_from(["100m", "250m", "1"]), st.sampled_from(["128Mi", "1Gi"]),
              st.booleans(), st.booleans()),
    min_size=1, max_size=40,
)
SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
           "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "s"}}}]
PREFER_SSD = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "preference": {"matchExpressions": [
        {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}


def snapshot(shapes: list[tuple[str, str, bool]]) -> dict[str, NodeInfo]:
    infos = {}
    for i, (cpu, memory, ssd) in enumerate(shapes):
        manifest = node(f"n{i}", cpu=cpu, memory=memory, zone="abc"[i % 3],
                        labels={"disk": "ssd" if ssd else "hdd"})
        info = node_info(manifest)
        assert info is not None
        infos[info.name] = info
    return infos


def parsed(i: int, cpu: str, memory: str, prefers_ssd: bool, spreads: bool
           ) -> tuple[Pod, str]:
    extra: dict[str, Any] = {"affinity": PREFER_SSD} if prefers_ssd else {}
    if spreads:
        extra["topologySpreadConstraints"] = SPREAD
    labels = {"app": "s"} if spreads else {}
    spec = pod_spec(cpu=cpu, memory=memory, **extra)
    pod = parse_pod_spec("default", f"p{i}", labels, spec, "spec")
    return pod, repr((cpu, memory, prefers_ssd, spreads))


def plain_choice(scan: SchedulingPass, pod: Pod) -> NodeInfo | None:
    filters = PodFilters(pod, scan.topology)
    feasible = [(n, fit_score(pod, n)) for n in scan.nodes.values() if not filters.reasons(n)]
    if not feasible:
        return None
    affinity = {n.name: preferred_affinity(pod, n) for n, _ in feasible}
    intolerable = {n.name: intolerable_preferences(pod, n) for n, _ in feasible}
    return best_node(feasible, affinity, intolerable)


@settings(max_examples=150, deadline=None)
@given(NODES, PODS)
def test_cached_choices_match_a_plain_scan(
    nodes: list[tuple[str, str, bool]], pods: list[tuple[str, str, bool, bool]]
) -> None:
    fast, plain = SchedulingPass(snapshot(nodes), {}), SchedulingPass(snapshot(nodes), {})
    choose_alike(fast, plain, [parsed(i, *shape) for i, shape in enumerate(pods)])


def choose_alike(fast: SchedulingPass, plain: SchedulingPass,
                 pods: list[tuple[Pod, str]]) -> None:
    """Each pod (with its signature) placed by the pass's cached choice and by a plain
    scan: the same node."""
    for i, (pod, signature) in enumerate(pods):
        chosen, _ = fast.choose(pod, signature)
        expected = plain_choice(plain, pod)
        assert (chosen and chosen.name) == (expected and expected.name), f"pod {i}"
        if chosen is not None and expected is not None:
            fast.placed(pod, chosen)
            plain.placed(pod, expected)
