"""Karpenter's provisioning suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/suite_test.go, the Its about the provisioner itself (its
batching window, what it creates and from which NodePools): the batcher on a virtual
clock, and stories in the in-memory cluster on the workshop's EC2NodeClass. Each names
its It."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from nodewright import metrics
from nodewright.api.hashes import nodepool_hash_annotations
from nodewright.controllers.options import ControllerOptions
from nodewright.controllers.provisioning.batcher import Batcher
from nodewright.controllers.provisioning.nodeclaims import nodeclaim_manifest
from nodewright.controllers.provisioning.problem import scheduling_problem
from nodewright.runtime import VirtualClock
from nodewright.scheduling.solver import solve
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names
from tests.harness import World, node_pool

DECISIONS = "karpenter_pods_scheduling_decision_duration_seconds_count"
NODE_CLASS = WORKSHOP / "ec2nodeclass.yaml"


def _samples(metric: str) -> Iterator[Any]:
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        yield from (sample for sample in family.samples if sample.name == metric)


def value(metric: str) -> float:
    return sum(s.value for s in _samples(metric))


def a_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "c", **spec.pop("container", {})}],
                     **spec}}


# -- Context("Batcher") ------------------------------------------------------------------


def test_a_lone_pod_is_provisioned_once_the_idle_window_passes() -> None:
    # It("should provision single pod if no other pod is received within the batch idle
    # duration")
    clock = VirtualClock(datetime(2026, 1, 5, tzinfo=UTC))
    batcher = Batcher(clock)
    batcher.trigger("pod")
    assert batcher.seconds_left() == 1.0
    clock.advance(11)
    assert batcher.seconds_left() == 0.0


def test_the_same_pod_again_does_not_extend_the_window() -> None:
    # It("should not extend the timeout if we receive the same pod within the batch idle
    # duration"): idle 5 s, maximum 10 s.
    clock = VirtualClock(datetime(2026, 1, 5, tzinfo=UTC))
    batcher = Batcher(clock, idle_seconds=5, max_seconds=10)
    batcher.trigger("pod")
    clock.advance(3)
    batcher.trigger("pod")
    clock.advance(3)
    assert batcher.seconds_left() == 0.0


def test_a_new_pod_extends_the_window() -> None:
    # It("should extend the timeout if we receive a new pod within the batch idle
    # duration")
    clock = VirtualClock(datetime(2026, 1, 5, tzinfo=UTC))
    batcher = Batcher(clock, idle_seconds=5, max_seconds=10)
    batcher.trigger("pod")
    clock.advance(3)
    batcher.trigger("pod2")
    clock.advance(3)
    assert batcher.seconds_left() == 2.0
    clock.advance(3)
    assert batcher.seconds_left() == 0.0


# -- the provisioner's Its ---------------------------------------------------------------


def test_a_pod_gets_a_node() -> None:
    # It("should provision nodes"): one node, the pod bound, one scheduling decision.
    world = World()
    world.apply(WORKSHOP)
    before = value(DECISIONS)
    world.apply(a_pod("app"))
    assert world.settle()
    assert len(world.nodes()) == 1
    assert world.cluster.get("Pod", "app", "default")["spec"].get("nodeName")
    assert value(DECISIONS) == before + 1


def test_many_pods_get_nodes() -> None:
    # It("Should provision nodes for multiple pods")
    world = World()
    world.apply(WORKSHOP)
    before = value(DECISIONS)
    world.apply(*[a_pod(f"p{i}") for i in range(100)])
    assert world.settle()
    assert world.nodes()
    assert not world.pending_pods()
    assert value(DECISIONS) == before + 100


def _only_claim(world: World) -> dict[str, Any]:
    assert world.settle()
    (claim,) = world.nodeclaims()
    return claim


def test_no_termination_grace_period_without_one_on_the_nodepool() -> None:
    # It("should expect nodeclaim terminationGracePeriod to be the nil when the nodepool
    # terminationGracePeriod and global terminationGracePeriod is not set")
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]), a_pod("app"))
    assert "terminationGracePeriod" not in _only_claim(world)["spec"]


def test_the_nodepools_termination_grace_period_is_the_nodeclaims() -> None:
    # It("should respect terminationGracePeriod value set on the nodePool over global
    # terminationGracePeriod"): the AWS provider sets no global value.
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"], terminationGracePeriod="223h"),
                a_pod("app"))
    assert _only_claim(world)["spec"]["terminationGracePeriod"] == "223h"


def _deleting_pool(world: World) -> None:
    pool = node_pool(families=["m5"])
    pool["metadata"]["finalizers"] = ["test.karpenter.sh/keep"]
    world.apply(NODE_CLASS, pool)
    world.delete("NodePool", "default")


def test_a_deleting_nodepool_is_ignored() -> None:
    # It("should ignore NodePools that are deleting")
    world = World()
    _deleting_pool(world)
    world.apply(a_pod("app"))
    world.advance(60)
    assert world.nodes() == [] and claim_names(world) == []
    assert not world.cluster.get("Pod", "app", "default")["spec"].get("nodeName")


def test_a_pod_without_a_valid_nodepool_gets_a_decision() -> None:
    # It("should mark pod as unschedulable if there are no valid nodepools"): not
    # scheduled, yet its scheduling decision is observed.
    world = World()
    _deleting_pool(world)
    before = value(DECISIONS)
    world.apply(a_pod("app"))
    world.advance(60)
    assert claim_names(world) == []
    assert value(DECISIONS) == before + 1


def test_the_nodepools_annotations_are_on_the_node() -> None:
    # Context("Annotations") It("should annotate nodes")
    pool = node_pool(families=["m5"])
    pool["spec"]["template"]["metadata"] = {
        "annotations": {"karpenter.sh/do-not-disrupt": "true"}}
    world = World()
    world.apply(NODE_CLASS, pool, a_pod("app"))
    assert world.settle()
    (node,) = world.nodes()
    assert node["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"


def test_a_nodeclaim_is_owned_by_its_nodepool() -> None:
    # Context("NodeClaim Creation") It("should create a nodeclaim request with the correct
    # owner reference")
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]), a_pod("app"))
    claim = _only_claim(world)
    pool = world.cluster.get("NodePool", "default")
    assert {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default",
            "uid": pool["metadata"]["uid"], "blockOwnerDeletion": True} in [
        {k: v for k, v in ref.items() if k != "controller"}
        for ref in claim["metadata"]["ownerReferences"]]


def test_a_nodeclaim_carries_the_nodepools_node_class_reference() -> None:
    # Context("NodeClaim Creation") It("should create a nodeclaim request propagating the
    # nodeClass reference")
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]), a_pod("app"))
    assert _only_claim(world)["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def test_a_nodeclaim_requests_its_pods_resources() -> None:
    # Context("NodeClaim Creation") It("should create a nodeclaim with resource requests"):
    # cpu, memory, the GPU and one pod slot.
    resources = {"requests": {"cpu": "1", "memory": "1Mi", "nvidia.com/gpu": "1"},
                 "limits": {"nvidia.com/gpu": "1"}}
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["g4dn"]),
                a_pod("app", container={"resources": resources}))
    requests = _only_claim(world)["spec"]["resources"]["requests"]
    assert requests == {"cpu": "1", "memory": "1Mi", "nvidia.com/gpu": "1", "pods": "1"}


def _static_pool(name: str, replicas: int) -> dict[str, Any]:
    pool = node_pool(name, families=["m5"])
    pool["spec"]["replicas"] = replicas
    return pool


def test_a_static_nodepool_is_not_provisioned_for_pods() -> None:
    # Context("StaticNodePool") It("should not create NodeClaims for StaticNodePool"): the
    # pod does not fit the static nodes (it asks for more than an m5 has), and nothing is
    # launched for it. (The StaticCapacity feature gate is on, as in Karpenter's test.)
    world = World(options=ControllerOptions(static_capacity=True))
    world.apply(NODE_CLASS, _static_pool("static", 2),
                a_pod("app", container={"resources": {"requests": {"cpu": "200"}}}))
    world.advance(120)
    assert len(claim_names(world)) == 2
    assert world.cluster.get("Pod", "app", "default")["spec"].get("nodeName") is None


def test_a_dynamic_nodepool_is_provisioned_beside_a_static_one() -> None:
    # Context("StaticNodePool") It("should still provision dynamic NodeClaims when there
    # are both Static and Dynamic NodePools"): the pod does not fit the static node (an
    # m5.large), so it is the dynamic pool's to serve.
    world = World(options=ControllerOptions(static_capacity=True))
    world.apply(NODE_CLASS, _static_pool("static", 1), node_pool("dynamic", families=["c5"]),
                a_pod("app", container={"resources": {"requests": {"cpu": "3"}}}))
    assert world.settle()
    pod = world.cluster.get("Pod", "app", "default")
    node = world.cluster.get("Node", pod["spec"]["nodeName"])
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "dynamic"


def test_pods_do_not_go_to_a_node_being_deleted() -> None:
    # It("should schedule all pods on one inflight node when node is in deleting state"):
    # a node of the NodePool with three pods is being deleted (its finalizer holds it);
    # two new pods get one new node between them, not the deleting one.
    world = World()
    world.apply(WORKSHOP)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "old", "finalizers": ["karpenter.sh/termination"],
                         "labels": {"karpenter.sh/nodepool": "default",
                                    "karpenter.k8s.aws/ec2nodeclass": "default",
                                    "node.kubernetes.io/instance-type": "m5.large",
                                    "kubernetes.io/hostname": "old"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                       "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"}}}
    world.apply(node, *[a_pod(f"bound-{i}", nodeName="old") for i in range(3)])
    world.delete("Node", "old")
    world.apply(a_pod("new-0"), a_pod("new-1"))
    assert world.run_until(lambda: all(
        world.cluster.get("Pod", f"new-{i}", "default")["spec"].get("nodeName")
        for i in range(2)), timeout=600)
    hosts = {world.cluster.get("Pod", f"new-{i}", "default")["spec"]["nodeName"]
             for i in range(2)}
    assert "old" not in hosts and len(hosts) == 1


def test_a_nodeclaim_keeps_the_hash_of_the_nodepool_it_was_planned_from() -> None:
    # It("should not use a different NodePool hash on the NodeClaim if the NodePool changes
    # during scheduling"): the NodePool gets a new label between the solve and the
    # NodeClaim's creation; the NodeClaim carries the hash of the NodePool it was planned
    # from.
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]))
    assert world.settle()
    world.apply(a_pod("app"))
    world.deliver()
    state = world.controllers.state
    planned = scheduling_problem(state, world.cloud, [state.pod_model("default/app")])
    result = solve(planned.problem)
    (claim,) = result.nodeclaims
    context = planned.pools["default"]
    hash_key = "karpenter.sh/nodepool-hash"
    before = nodepool_hash_annotations(context.model)[hash_key]

    changed = node_pool(families=["m5"], labels={"new-label": "new-value"})
    world.apply(changed)
    world.deliver()
    parsed = state.nodepool_model("default")
    assert parsed is not None and parsed.model is not None
    assert nodepool_hash_annotations(parsed.model)[hash_key] != before

    manifest = nodeclaim_manifest(claim, context, {p.key: p for p in planned.problem.pods})
    assert manifest["metadata"]["annotations"][hash_key] == before


# -- Context("Labels") -------------------------------------------------------------------


def test_the_nodepools_labels_and_requirements_label_the_node() -> None:
    # It("should label nodes"): a template label, and one requirement of each operator on
    # keys of the user's own; Karpenter's resolveCustomLabelsFromRequirements gives In its
    # value, NotIn/Exists/Gt/Lt an integer the requirement allows, DoesNotExist nothing.
    pool = node_pool(families=["m5"], labels={"test-key-1": "test-value-1"}, requirements=[
        {"key": "test-key-2", "operator": "In", "values": ["test-value-2"]},
        {"key": "test-key-3", "operator": "NotIn", "values": ["test-value-3"]},
        {"key": "test-key-4", "operator": "Lt", "values": ["4"]},
        {"key": "test-key-5", "operator": "Gt", "values": ["5"]},
        {"key": "test-key-6", "operator": "Exists"},
        {"key": "test-key-7", "operator": "DoesNotExist"},
    ])
    world = World()
    world.apply(NODE_CLASS, pool, a_pod("app"))
    assert world.settle()
    (node,) = world.nodes()
    labels = node["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["test-key-1"] == "test-value-1"
    assert labels["test-key-2"] == "test-value-2"
    assert labels["test-key-3"] != "test-value-3"
    assert 0 <= int(labels["test-key-4"]) < 4
    assert int(labels["test-key-5"]) > 5
    assert "test-key-6" in labels
    assert "test-key-7" not in labels
