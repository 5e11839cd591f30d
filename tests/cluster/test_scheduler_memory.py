"""A scheduling pass keeps one view of the nodes per placement constraint, not one per
pod shape (pods that differ only in their requests share it), and its score heaps do not
grow with every pod bound."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings

from nodewright.cluster.memory.kube_scheduler import scheduler
from nodewright.cluster.memory.kube_scheduler.scheduler import SchedulingPass
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo, node_info
from nodewright.scheduling.pods import Pod, parse_pod_spec
from tests.cluster.test_scheduler_choice import NODES, PODS, choose_alike, parsed, snapshot
from tests.cluster.world import node, pod_spec

ON_SSD = {"nodeSelector": {"disk": "ssd"}}


def nodes() -> dict[str, NodeInfo]:
    infos = {}
    for i, disk in enumerate(["ssd", "hdd", "ssd"]):
        info = node_info(node(f"n{i}", cpu="4", memory="8Gi", labels={"disk": disk}))
        assert info is not None
        infos[info.name] = info
    return infos


def pod(name: str, cpu: str, **extra: object) -> Pod:
    return parse_pod_spec("default", name, {}, pod_spec(cpu=cpu, memory="1Gi", **extra), "spec")


def test_shapes_that_differ_only_in_requests_share_the_nodes_view() -> None:
    scheduling = SchedulingPass(nodes(), {})
    small, large, on_ssd = pod("a", "500m"), pod("b", "2"), pod("c", "500m", **ON_SSD)

    for signature, each in (("small", small), ("large", large), ("ssd", on_ssd)):
        chosen, _ = scheduling.choose(each, signature)
        assert chosen is not None
        scheduling.placed(each, chosen)

    shapes = scheduling._shapes
    assert shapes["small"].static is shapes["large"].static
    assert shapes["ssd"].static is not shapes["small"].static
    assert [n.name for n in shapes["ssd"].candidates] == ["n0", "n2"]
    assert [n.name for n in shapes["large"].candidates] == ["n0", "n1", "n2"]


@settings(max_examples=60, deadline=None)
@given(NODES, PODS)
def test_score_heaps_drop_stale_entries_and_still_choose_as_a_plain_scan(
    nodes: list[tuple[str, str, bool]], pods: list[tuple[str, str, bool, bool]]
) -> None:
    with patch.object(scheduler, "_HEAP_SLACK", 0):
        fast, plain = SchedulingPass(snapshot(nodes), {}), SchedulingPass(snapshot(nodes), {})
        choose_alike(fast, plain, [parsed(i, *shape) for i, shape in enumerate(pods)])
    for shape in fast._shapes.values():
        assert shape.heap is None or len(shape.heap) <= 2 * len(shape.candidates)
