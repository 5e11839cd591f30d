"""kube-scheduler reads each Node object once: a pass takes the nodes its queue bookkeeping
already read (empty, its own pods added again), and reads a Node again only when it was
written since."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nodewright.cluster.memory.kube_scheduler import snapshot
from tests.cluster.world import World, node, pod


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Nodes each pass's snapshot reads (parses) itself."""
    names: list[str] = []
    read = snapshot.node_info

    def counted(obj: Mapping[str, Any]) -> snapshot.NodeInfo | None:
        names.append(obj["metadata"]["name"])
        return read(obj)

    monkeypatch.setattr(snapshot, "node_info", counted)
    return names


def test_a_pass_starts_from_the_nodes_as_read_without_the_pods_of_the_pass_before(
        reads: list[str]) -> None:
    world = World()
    world.apply(node("n1", cpu="4"))
    world.apply(pod("first", cpu="2"))
    world.apply(pod("second", cpu="2"))
    world.apply(pod("third", cpu="1"))

    assert reads == []
    # The first two passes each counted only the pods bound then: the node fills exactly.
    assert world.placements() == {"first": "n1", "second": "n1", "third": None}
    assert world.pending_message("third") == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_node_written_since_the_last_pass_is_read_again(reads: list[str]) -> None:
    world = World()
    world.apply(node("n1", cpu="4"), node("n2", cpu="4"))
    world.apply(pod("first", cpu="1"))
    assert world.placements() == {"first": "n1"}

    gpu_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    for name in ("n1", "n2"):
        world.cluster.patch("Node", name, {"spec": {"taints": [gpu_taint]}})
    world.apply(pod("second", cpu="1"))

    assert world.pending_message("second") == (
        "0/2 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: true}.")
    assert reads == []
