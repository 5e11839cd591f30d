"""Karpenter's node termination suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/node/termination/suite_test.go. Each story names its It.

Karpenter reconciles its controller and its eviction queue by hand; here the whole
in-memory cluster runs (kubelet, attach-detach controller, Nodewright's controllers) and
a story deletes a launched Node and watches. Pods a story places carry a finalizer, so an
evicted pod stays terminating until the story lets it go (Karpenter's ExpectDeleted); a
pod is "stuck" a minute past its deletion, so the stories look before then. The three
VolumeAttachment Its are told in tests/controllers/test_volumes_story.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.cluster.api import NotFoundError
from nodewright.runtime.clock import parse_time
from tests.controllers.expectations import claim_names, condition, expect_no_controller_errors
from tests.harness import NODE_CLASS, World, node_pool

KEEP = "test.karpenter.sh/keep"
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "owner", "uid": "rs-uid",
         "controller": True, "blockOwnerDeletion": True}


def pool(**template_spec: Any) -> dict[str, Any]:
    return node_pool(labels={"type": "karpenter"}, disruption={"consolidateAfter": "Never"},
                     **template_spec)


def launched(world: World, count: int = 1, **template_spec: Any) -> list[tuple[str, str]]:
    """`count` empty nodes of the pool, each launched for a seed pod since deleted:
    (NodeClaim name, Node name) each."""
    seeds = [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": f"seed-{i}", "namespace": "default"},
              "spec": {"nodeSelector": {"type": "karpenter"},
                       "containers": [{"name": "a", "image": "a",
                                       "ports": [{"containerPort": 80, "hostPort": 80}],
                                       "resources": {"requests": {"cpu": "100m"}}}]}}
             for i in range(count)]
    world.apply(NODE_CLASS, pool(**template_spec), *seeds)
    assert world.settle()
    for i in range(count):
        world.delete("Pod", f"seed-{i}", "default")
    world.advance(30)
    claims = world.nodeclaims()
    assert len(claims) == count
    return [(c["metadata"]["name"], c["status"]["nodeName"]) for c in claims]


def bound(node_name: str, name: str, *, owner: dict[str, Any] | None = OWNER,
          annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod bound to the node (Karpenter's test.Pod with NodeName), held by a finalizer."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "finalizers": [KEEP],
                                "labels": {"app": name}}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "a", "image": "a",
                                     "resources": {"requests": {"cpu": "10m"}}}],
                     **spec}}


def exists(world: World, kind: str, name: str, namespace: str | None = None) -> bool:
    try:
        world.cluster.get(kind, name, namespace)
    except NotFoundError:
        return False
    return True


def terminating(world: World, name: str) -> bool:
    pod = world.cluster.get("Pod", name, "default")
    return bool(pod["metadata"].get("deletionTimestamp"))


def release(world: World, *names: str) -> None:
    """ExpectDeleted: the pod's finalizer comes off (deleting it first if need be)."""
    for name in names:
        if not terminating(world, name):
            world.cluster.delete("Pod", name, "default")
        world.cluster.patch("Pod", name, {"metadata": {"finalizers": []}}, "default")
    world.deliver()


def finalized(world: World, node_name: str, timeout: float = 120) -> bool:
    return world.run_until(lambda: not exists(world, "Node", node_name), timeout=timeout,
                           step=1)


def draining(world: World, claim_name: str) -> bool:
    """ExpectNodeWithNodeClaimDraining: the NodeClaim's Drained is Unknown (Draining)."""
    return condition(world.cluster.get("NodeClaim", claim_name), "Drained") == "Unknown"


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


# -- Reconciliation -------------------------------------------------------------------------


def test_a_deleted_node_is_drained_terminated_and_released(world: World) -> None:
    """It("should delete nodes")."""
    ((_claim, node),) = launched(world)
    world.delete("Node", node)
    assert finalized(world, node)
    assert world.live_instances() == []
    expect_no_controller_errors(world)


def test_a_node_without_a_nodeclaim_is_released(world: World) -> None:
    """It("should delete nodes without nodeclaims"): a Node of ours (its node class label,
    the termination finalizer) that no NodeClaim owns."""
    launched(world)
    world.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "stray", "finalizers": ["karpenter.sh/termination"],
        "labels": {"karpenter.sh/nodepool": "default",
                   "karpenter.k8s.aws/ec2nodeclass": "default"}}})
    world.delete("Node", "stray")
    assert finalized(world, "stray")
    expect_no_controller_errors(world)


def test_a_node_of_another_provider_is_left_alone(world: World) -> None:
    """It("should ignore nodes not managed by this Karpenter instance"): a Node with the
    termination finalizer and a NodePool label but another provider's node class label is
    not ours to finalize (Karpenter's IsManaged reads the node class label)."""
    launched(world)
    world.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "foreign", "finalizers": ["karpenter.sh/termination"],
        "labels": {"karpenter.sh/nodepool": "default",
                   "karpenter.test.sh/unmanagednodeclass": "default"}}})
    world.delete("Node", "foreign")
    world.advance(30)
    node = world.cluster.get("Node", "foreign")
    assert node["metadata"]["finalizers"] == ["karpenter.sh/termination"]
    assert not any(t.get("key") == "karpenter.sh/disrupted"
                   for t in node.get("spec", {}).get("taints") or [])


def test_deleting_a_node_deletes_its_nodeclaim_which_goes_with_it(world: World) -> None:
    """It("should delete nodeclaims associated with nodes")."""
    ((claim, node),) = launched(world)
    world.delete("Node", node)
    world.advance(1)
    assert world.cluster.get("NodeClaim", claim)["metadata"].get("deletionTimestamp")
    seen_terminating: list[bool] = []

    def instance_terminating() -> bool:
        if exists(world, "NodeClaim", claim):
            current = world.cluster.get("NodeClaim", claim)
            seen_terminating.append(condition(current, "InstanceTerminating") == "True")
        return not exists(world, "Node", node)

    assert world.run_until(instance_terminating, timeout=120, step=1)
    assert any(seen_terminating), "InstanceTerminating was never True"
    assert world.run_until(lambda: claim not in claim_names(world), timeout=60)


def test_nodes_deleted_together_all_go(world: World) -> None:
    """It("should not race if deleting nodes in parallel") (three nodes here)."""
    nodes = [node for _, node in launched(world, 3)]
    for node in nodes:
        world.cluster.delete("Node", node)
    world.deliver()
    assert world.run_until(lambda: not any(exists(world, "Node", n) for n in nodes),
                           timeout=180, step=1)
    assert world.nodeclaims() == []
    expect_no_controller_errors(world)


def test_a_terminating_node_is_excluded_from_load_balancers(world: World) -> None:
    """It("should exclude nodes from load balancers when terminating"): a fully blocking
    budget holds the node while the label is looked at."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "held"), {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "block", "namespace": "default"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "held"}}}})
    world.advance(5)
    world.delete("Node", node)
    world.advance(2)
    assert world.cluster.get("Node", node)["metadata"]["labels"][EXCLUDE_LB] == "karpenter"


@pytest.mark.parametrize("toleration", [
    pytest.param({"key": "karpenter.sh/disrupted", "operator": "Equal",
                  "effect": "NoSchedule"}, id="equal"),
    pytest.param({"key": "karpenter.sh/disrupted", "operator": "Exists",
                  "effect": "NoSchedule"}, id="exists"),
])
def test_pods_tolerating_the_disrupted_taint_are_not_evicted(
        world: World, toleration: dict[str, str]) -> None:
    """It("should not evict pods that tolerate karpenter disruption taint with equal
    operator") and It("... with exists operator")."""
    ((claim, node),) = launched(world)
    world.apply(bound(node, "evict"), bound(node, "skip", tolerations=[toleration]))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "evict"), timeout=30, step=1)
    assert draining(world, claim)
    assert not terminating(world, "skip")
    release(world, "evict")
    assert finalized(world, node)
    assert world.events("Evicted") and all(
        e["regarding"]["name"] != "skip" for e in world.events("Evicted"))


def test_pods_tolerating_unschedulable_are_evicted(world: World) -> None:
    """It("should evict pods that tolerate the node.kubernetes.io/unschedulable taint")."""
    ((claim, node),) = launched(world)
    world.apply(bound(node, "evict", tolerations=[{
        "key": "node.kubernetes.io/unschedulable", "operator": "Exists",
        "effect": "NoSchedule"}]))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "evict"), timeout=30, step=1)
    assert draining(world, claim)
    release(world, "evict")
    assert finalized(world, node)


def test_pods_without_an_owner_are_evicted(world: World) -> None:
    """It("should delete nodes that have pods without an ownerRef")."""
    ((claim, node),) = launched(world)
    world.apply(bound(node, "orphan", owner=None))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "orphan"), timeout=30, step=1)
    assert draining(world, claim)
    release(world, "orphan")
    assert finalized(world, node)


def test_terminal_pods_do_not_hold_the_node(world: World) -> None:
    """It("should delete nodes with terminal pods")."""
    ((_claim, node),) = launched(world)
    for name, phase in (("succeeded", "Succeeded"), ("failed", "Failed")):
        world.apply(bound(node, name, restartPolicy="Never"))
        world.cluster.patch("Pod", name, {"status": {"phase": phase}}, "default",
                            subresource="status")
    world.advance(5)
    world.delete("Node", node)
    assert finalized(world, node, timeout=40)
    assert world.events("Evicted") == []


def test_a_budget_blocking_the_eviction_holds_the_node(world: World) -> None:
    """It("should fail to evict pods that violate a PDB")."""
    ((claim, node),) = launched(world)
    world.apply(bound(node, "guarded"), {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "block", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    world.advance(5)
    world.delete("Node", node)
    world.advance(30)
    assert draining(world, claim)
    assert not terminating(world, "guarded")
    assert any("violates a PDB" in e["note"] for e in world.events("FailedDraining"))
    release(world, "guarded")
    assert finalized(world, node)


def daemon_owner(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "uid": f"{name}-uid",
            "controller": True, "blockOwnerDeletion": True}


def test_pods_are_evicted_group_by_group_each_once_the_last_is_gone(world: World) -> None:
    """It("should evict pods in order and wait until pods are fully deleted"): non-critical
    pods, then DaemonSet pods, then critical pods, then critical DaemonSet pods."""
    ((claim, node),) = launched(world)
    groups = [
        [bound(node, "app")],
        [bound(node, "daemon", owner=daemon_owner("d"))],
        [bound(node, "node-critical", priorityClassName="system-node-critical"),
         bound(node, "cluster-critical", priorityClassName="system-cluster-critical")],
        [bound(node, "daemon-node-critical", owner=daemon_owner("dn"),
               priorityClassName="system-node-critical"),
         bound(node, "daemon-cluster-critical", owner=daemon_owner("dc"),
               priorityClassName="system-cluster-critical")],
    ]
    world.apply(*[p for group in groups for p in group])
    world.advance(5)
    world.delete("Node", node)
    for i, group in enumerate(groups):
        names = [p["metadata"]["name"] for p in group]
        assert world.run_until(lambda names=names: all(terminating(world, n) for n in names),
                               timeout=30, step=1), f"group {i} was not evicted"
        assert draining(world, claim)
        for later in groups[i + 1:]:
            for pod in later:
                assert not terminating(world, pod["metadata"]["name"]), (
                    f"{pod['metadata']['name']} evicted before group {i} was gone")
        release(world, *names)
    assert finalized(world, node)


def test_non_critical_pods_are_evicted_before_critical_ones(world: World) -> None:
    """It("should evict non-critical pods first")."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "app"),
                bound(node, "node-critical", priorityClassName="system-node-critical"),
                bound(node, "cluster-critical", priorityClassName="system-cluster-critical"))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "app"), timeout=30, step=1)
    world.advance(10)
    assert not terminating(world, "node-critical")
    assert not terminating(world, "cluster-critical")
    release(world, "app")
    assert world.run_until(lambda: terminating(world, "node-critical")
                           and terminating(world, "cluster-critical"), timeout=30, step=1)
    release(world, "node-critical", "cluster-critical")
    assert finalized(world, node)


def test_static_pods_are_not_evicted(world: World) -> None:
    """It("should not evict static pods"): a mirror pod (owned by its Node) stays."""
    ((claim, node),) = launched(world)
    uid = world.cluster.get("Node", node)["metadata"]["uid"]
    mirror = bound(node, "static", owner={"apiVersion": "v1", "kind": "Node", "name": node,
                                          "uid": uid})
    world.apply(bound(node, "evict"), mirror)
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "evict"), timeout=30, step=1)
    assert draining(world, claim)
    assert not terminating(world, "static")
    release(world, "evict")
    assert finalized(world, node)
    assert all(e["regarding"]["name"] != "static" for e in world.events("Evicted"))


def test_the_node_waits_until_every_pod_is_gone(world: World) -> None:
    """It("should not delete nodes until all pods are deleted"): Drained stays Unknown
    (Draining) while one pod is left, and is True once none is."""
    ((claim, node),) = launched(world)
    world.apply(bound(node, "first"), bound(node, "second"))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "first") and terminating(world, "second"),
                           timeout=30, step=1)
    world.advance(10)
    drained = [c for c in world.cluster.get("NodeClaim", claim)["status"]["conditions"]
               if c["type"] == "Drained"]
    assert [(c["status"], c["reason"]) for c in drained] == [("Unknown", "Draining")]
    release(world, "second")
    world.advance(10)
    assert exists(world, "Node", node)
    assert draining(world, claim)
    release(world, "first")
    assert world.run_until(lambda: condition(world.cluster.get("NodeClaim", claim),
                                             "Drained") == "True", timeout=30, step=0.5)
    assert finalized(world, node)


def test_a_not_ready_node_whose_instance_is_gone_is_released_undrained(world: World) -> None:
    """It("should delete nodes with no underlying instance even if not fully drained"):
    the instance is terminated outside Nodewright, the kubelet stops and the Node goes
    NotReady; the pod still being evicted no longer holds it."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "first"), bound(node, "second"))
    world.advance(5)
    provider_id = world.cluster.get("Node", node)["spec"]["providerID"]
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "first"), timeout=30, step=1)
    release(world, "second")
    world.cloud.interrupt(provider_id, "terminate")
    assert finalized(world, node, timeout=300)
    assert exists(world, "Pod", "first", "default")  # never released: not drained


def test_a_ready_node_whose_instance_is_gone_still_drains(world: World) -> None:
    """It("should not delete nodes with no underlying instance if the node is still
    Ready"): while the Node is Ready its kubelet runs, so the drain goes on."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "first"), bound(node, "second"))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "first"), timeout=30, step=1)
    release(world, "second")
    instance = world.live_instances()[0]
    world.cloud.interrupt(instance.instance_id, "terminate")
    world.advance(10)
    ready = [c["status"] for c in world.cluster.get("Node", node)["status"]["conditions"]
             if c["type"] == "Ready"]
    assert ready == ["True"]
    assert exists(world, "Node", node)


def test_a_pod_stuck_terminating_is_passed_over(world: World) -> None:
    """It("should bypass pods which are stuck terminating past their grace period"): a
    minute past its deletion the pod no longer holds the node."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "stuck"))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "stuck"), timeout=30, step=1)
    world.advance(30)
    assert exists(world, "Node", node)
    assert finalized(world, node, timeout=120)
    assert terminating(world, "stuck")


def test_a_new_pod_with_an_evicted_pods_name_is_not_evicted(world: World) -> None:
    """It("should not evict a new pod with the same name using the old pod's eviction
    queue key"): the pod is deleted by someone else while its node drains; a new pod of
    the same name (another UID) on a new node runs undisturbed."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "test-pod"))
    world.advance(5)
    world.delete("Node", node)
    world.advance(1)
    release(world, "test-pod")
    assert finalized(world, node)
    world.apply({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "test-pod", "namespace": "default"},
                 "spec": {"nodeSelector": {"type": "karpenter"},
                          "containers": [{"name": "a", "image": "a",
                                          "resources": {"requests": {"cpu": "10m"}}}]}})
    assert world.settle()
    pod = world.cluster.get("Pod", "test-pod", "default")
    assert pod["status"]["phase"] == "Running"
    assert not pod["metadata"].get("deletionTimestamp")


def guarded(node: str, grace: int) -> dict[str, Any]:
    return bound(node, "guarded", annotations={"karpenter.sh/do-not-disrupt": "true"},
                 terminationGracePeriodSeconds=grace)


def test_a_pod_whose_grace_fills_the_nodes_is_deleted_at_once(world: World) -> None:
    """It("should preemptively delete pods to satisfy their terminationGracePeriodSeconds"):
    a do-not-disrupt pod with 300 s of grace on a node with 300 s left."""
    ((_claim, node),) = launched(world, terminationGracePeriod="300s")
    world.apply(guarded(node, 300))
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "guarded"), timeout=15, step=1)
    assert exists(world, "Node", node)


def test_a_pod_is_deleted_only_once_its_grace_would_outlast_the_node(world: World) -> None:
    """It("should only delete pods when their terminationGracePeriodSeconds is less than
    the the node's remaining terminationGracePeriod"): 60 s of grace, 300 s for the node:
    untouched at 90 s, deleted by 265 s."""
    ((claim, node),) = launched(world, terminationGracePeriod="300s")
    world.apply(guarded(node, 60))
    world.advance(5)
    world.delete("Node", node)
    world.advance(90)
    assert draining(world, claim)
    assert not terminating(world, "guarded")
    world.advance(175)
    assert terminating(world, "guarded")


def test_a_terminating_pod_past_the_deadline_is_deleted_again_sooner(world: World) -> None:
    """It("should update deletion timestamp for terminating pods when it is after node
    deletion timestamp"): a pod deleted with 6000 s of grace on a node with 300 s is
    deleted again with a grace ending at the node's deadline. (Karpenter reconciles first
    90 s in and sees 210 s; the controllers here run from the start, so the pod is
    re-deleted at once with 300 s: either way its deletion ends at the deadline.)"""
    ((claim, node),) = launched(world, terminationGracePeriod="300s")
    world.apply(guarded(node, 6000))
    world.advance(5)
    world.cluster.delete("Pod", "guarded", "default")
    world.delete("Node", node)
    world.advance(90)
    assert draining(world, claim)
    pod = world.cluster.get("Pod", "guarded", "default")
    annotations = world.cluster.get("NodeClaim", claim)["metadata"]["annotations"]
    deadline = parse_time(annotations["karpenter.sh/nodeclaim-termination-timestamp"])
    ends = parse_time(pod["metadata"]["deletionTimestamp"])
    assert abs((ends - deadline).total_seconds()) <= 1
    assert pod["metadata"]["deletionGracePeriodSeconds"] < 6000


def test_draining_takes_at_least_the_minimum_drain_time(world: World) -> None:
    """It("should not finish draining until minDrainTime has passed"): Drained goes
    Unknown when the node is tainted and True no sooner than 5 s later."""
    ((claim, node),) = launched(world)
    world.delete("Node", node)
    world.advance(1)
    taints = world.cluster.get("Node", node)["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints
    assert draining(world, claim)
    started = world.clock.now()
    assert world.run_until(lambda: condition(world.cluster.get("NodeClaim", claim),
                                             "Drained") == "True", timeout=30, step=0.5)
    assert (world.clock.now() - started).total_seconds() >= 3.5
    assert finalized(world, node)


# -- Metrics --------------------------------------------------------------------------------


def sample(metric: str, **labels: str) -> float:
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        for s in family.samples:
            if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


@pytest.fixture
def fresh_metrics() -> None:
    for metric in (metrics.NODES_TERMINATED, metrics.NODES_TERMINATION_DURATION,
                   metrics.NODES_LIFETIME_DURATION, metrics.NODES_DRAINED):
        metric.clear()


def test_termination_metrics_fire_once_per_node(world: World, fresh_metrics: None) -> None:
    """It("should fire the terminationSummary metric when deleting nodes"), It("should fire
    the nodesTerminated counter metric when deleting nodes") (with the drained counter)
    and It("should fire the lifetime duration histogram metric when deleting nodes")."""
    ((_claim, node),) = launched(world)
    world.delete("Node", node)
    assert finalized(world, node)
    assert sample("karpenter_nodes_termination_duration_seconds_count",
                  nodepool="default") == 1
    assert sample("karpenter_nodes_terminated_total", nodepool="default") == 1
    assert sample("karpenter_nodes_drained_total", nodepool="default") == 1
    assert sample("karpenter_nodes_lifetime_duration_seconds_count", nodepool="default") == 1


def test_a_node_two_nodeclaims_claim_is_released_as_if_it_had_none(world: World) -> None:
    """It("should delete nodes with duplicate nodeclaims"): with no single source of truth
    the Node is finalized as one without a NodeClaim."""
    ((claim, node),) = launched(world)
    original = world.cluster.get("NodeClaim", claim)
    copy = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"{claim}-2", "labels": original["metadata"]["labels"],
                         "finalizers": ["karpenter.sh/termination"]},
            "spec": original["spec"]}
    world.cluster.create(copy)
    world.cluster.patch("NodeClaim", f"{claim}-2", {"status": {
        "providerID": original["status"]["providerID"], "nodeName": node,
        "conditions": original["status"]["conditions"]}}, subresource="status")
    world.delete("Node", node)
    assert finalized(world, node)
    for name in (claim, f"{claim}-2"):  # neither is the Node's: none is deleted
        assert not world.cluster.get("NodeClaim", name)["metadata"].get("deletionTimestamp")
