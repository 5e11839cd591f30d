"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go Context("Buffer Pods") and
emptiness_test.go Context("Buffer pod protection"), told as stories with the CapacityBuffer
gate on: a node that holds only a buffer's headroom (virtual pods) is not empty and is
kept, by emptiness and by consolidation alike, until the buffer goes; other empty nodes
go as before; a node with real pods and headroom may still be replaced by a cheaper one
that holds both."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.buffer.helpers import buffer, conditions, pod_template, world
from tests.disruption.helpers import decisions, started
from tests.harness import World
from tests.static.helpers import workload


def headroom_node(replicas: int = 1) -> tuple[World, str]:
    """An m5.large launched only for a buffer of 1-CPU chunks; its name."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"},
                                                 replicas=replicas))
    assert w.settle()
    nodes = [objects.name(n) for n in w.nodes()]
    assert len(nodes) == 1
    return w, nodes[0]


def buffer_kept(w: World, node: str) -> bool:
    return any(d.cause == ex.CAUSE_BUFFER_PODS for d in decisions(w, node))


def test_a_node_holding_only_headroom_is_not_emptied() -> None:
    """consolidation_test.go Buffer Pods: It("should not empty-consolidate a node with only
    buffer pods") and emptiness_test.go Buffer pod protection: It("should not disrupt a node
    that hosts virtual buffer pods")."""
    w, node = headroom_node()
    w.advance(600)
    assert [objects.name(n) for n in w.nodes()] == [node]
    assert started(w) == []
    assert buffer_kept(w, node)


def test_a_headroom_node_goes_once_the_buffer_is_cleared() -> None:
    """consolidation_test.go Buffer Pods: It("should consolidate a buffer node once buffer pods
    are cleared") and emptiness_test.go Buffer pod protection: It("should disrupt a node once
    buffer pods are cleared")."""
    w, node = headroom_node()
    w.advance(120)
    w.delete("CapacityBuffer", "headroom", "default")
    assert w.run_until(lambda: not w.nodes(), timeout=600)
    assert [(d.node, d.method) for d in started(w)] == [(node, ex.EMPTINESS)]


def test_only_the_node_with_headroom_is_protected() -> None:
    """emptiness_test.go Buffer pod protection: It("should only protect the specific node with
    buffer pods, not others"): a second node, emptied by its workload, goes."""
    w, node = headroom_node()
    w.apply(workload("app", 1, "1500m"))
    assert w.settle()
    [other] = [objects.name(n) for n in w.nodes() if objects.name(n) != node]
    w.scale("app", 0)
    assert w.run_until(lambda: len(w.nodes()) == 1, timeout=600)
    assert [objects.name(n) for n in w.nodes()] == [node]
    assert [d.node for d in started(w)] == [other]


def test_every_node_with_headroom_is_protected() -> None:
    """emptiness_test.go Buffer pod protection: It("should protect multiple nodes that each
    host buffer pods") and consolidation_test.go Buffer Pods: It("should skip buffer-only nodes
    in single-node consolidation but protect via emptiness"): headroom of two chunks too big to
    share a node."""
    w = world(pod_template("chunk", "1500m"), buffer(podTemplateRef={"name": "chunk"},
                                                     replicas=2))
    assert w.settle()
    nodes = sorted(objects.name(n) for n in w.nodes())
    assert len(nodes) == 2
    w.advance(600)
    assert sorted(objects.name(n) for n in w.nodes()) == nodes
    assert started(w) == []
    assert all(buffer_kept(w, node) for node in nodes)
    assert not [d for d in decisions(w) if d.node in nodes and d.cause == "Candidate"]


def test_a_buffer_of_no_replicas_protects_nothing() -> None:
    """emptiness_test.go Buffer pod protection: It("should not protect a node with zero buffer
    pod count"): the buffer is scaled to zero and its node goes."""
    w, node = headroom_node()
    w.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=0))
    assert w.run_until(lambda: not w.nodes(), timeout=600)
    assert [d.node for d in started(w)] == [node]


def test_a_node_with_real_pods_and_headroom_is_not_empty() -> None:
    """emptiness_test.go Buffer pod protection: It("should not consider a node with real pods
    AND buffer pods as empty")."""
    w = world(pod_template("chunk", "500m"), buffer(podTemplateRef={"name": "chunk"},
                                                    replicas=1), workload("app", 1, "100m"))
    assert w.settle()
    [node] = [objects.name(n) for n in w.nodes()]
    w.advance(600)
    assert [objects.name(n) for n in w.nodes()] == [node]
    assert [d for d in started(w) if d.method == ex.EMPTINESS] == []


def test_a_node_with_real_pods_and_headroom_is_replaced_by_a_cheaper_one() -> None:
    """consolidation_test.go Buffer Pods: It("should allow consolidation of a node with real
    pods and buffer pods to a cheaper instance"): an m5.2xlarge left with a small pod and a
    500m chunk of headroom becomes an m5.large that holds both."""
    w = world(pod_template("chunk", "500m"), buffer(podTemplateRef={"name": "chunk"},
                                                    replicas=1),
              workload("app", 1, "100m"), workload("hog", 1, "6"))
    assert w.settle()
    assert w.instance_types() == ["m5.2xlarge"]
    w.scale("hog", 0)
    assert w.run_until(lambda: bool(started(w)), timeout=900)
    assert [d.decision for d in started(w)] == ["replace"]
    assert w.settle()
    assert w.instance_types() == ["m5.large"]
    assert conditions(w)["Provisioning"] == ("True", "FitsExistingCapacity")
