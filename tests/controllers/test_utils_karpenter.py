"""Karpenter's small helper suites, ported where their behaviour lives in Nodewright
(kubernetes-sigs/karpenter v1.14.1). Each test names its file and It.

- pkg/utils/node (GetNodeClaims: a Node's NodeClaims by provider ID): the cluster state's
  `nodeclaim_names_for_provider_id`, as node hydration asks it; here node hydration
  itself, which labels a Node after the NodeClaim it finds;
- pkg/utils/nodeclaim: UpdateNodeOwnerReferences is registration's `sync_node`;
  ListManaged's filters are what the cluster state keeps (only this provider's
  NodeClaims), finds by provider ID, and `static.counts.pool_claims` by NodePool;
- pkg/utils/nodepool OrderByWeight is the solver's `pool_order`; pkg/apis/v1alpha1's
  NodeOverlayList.OrderByWeight is `scheduling.overlays.ordered`;
- pkg/utils/daemonset PodForDaemonSet is `daemonset_from_manifest` (the pod the solver
  counts on every node a DaemonSet runs on);
- pkg/utils/pretty ToSnakeCase is the `_snake` of the two metrics that label with it
  (node repair's condition, disruption's consolidation policy).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.api.quantity import parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.disruption import orchestration
from nodewright.controllers.node import health
from nodewright.controllers.node.hydration import NodeHydration
from nodewright.controllers.nodeclaim.registration import sync_node
from nodewright.controllers.static.counts import pool_claims
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.scheduling.nodepools import nodepool_template
from nodewright.scheduling.overlays import ordered
from nodewright.scheduling.pods import daemonset_from_manifest
from nodewright.scheduling.solver.pools import pool_order
from nodewright.state import ClusterState
from tests.harness import node_pool

NODE_CLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
PROVIDER_ID = "aws:///us-east-1a/i-0123456789abcdef0"
OURS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def a_nodeclaim(name: str, provider_id: str = "", *, pool: str = "default",
                node_class: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"karpenter.sh/nodepool": pool}},
            "spec": {"nodeClassRef": dict(node_class or OURS), "requirements": []},
            "status": {"providerID": provider_id} if provider_id else {}}


def a_node(name: str, provider_id: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
            "spec": {"providerID": provider_id} if provider_id else {}}


def observed(*bodies: dict[str, Any]) -> ClusterState:
    state = ClusterState(VirtualClock())
    for body in bodies:
        state.observe(WatchEvent("ADDED", body))  # type: ignore[arg-type]
    return state


# -- pkg/utils/node/suite_test.go, Describe("NodeUtils") -----------------------------------


def hydrated_label(node: dict[str, Any]) -> str | None:
    """The node class label node hydration gives the Node after finding its NodeClaim."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    claim = cluster.create(a_nodeclaim("claim"))
    claim = cluster.patch("NodeClaim", "claim", {"status": {"providerID": PROVIDER_ID}},
                          subresource="status")
    created = cluster.create(node)
    for obj in (claim, created):
        state.observe(WatchEvent("ADDED", obj))
    NodeHydration(cluster, state).reconcile(node["metadata"]["name"])
    return objects.labels(cluster.get("Node", node["metadata"]["name"])).get(NODE_CLASS_LABEL)


def test_a_node_finds_the_nodeclaim_with_its_provider_id() -> None:
    """pkg/utils/node It("should return nodeClaim for node which has the same provider
    ID")."""
    state = observed(a_nodeclaim("claim", PROVIDER_ID), a_node("node", PROVIDER_ID))
    assert state.nodeclaim_names_for_provider_id(PROVIDER_ID) == ["claim"]
    assert hydrated_label(a_node("node", PROVIDER_ID)) == "default"


def test_a_node_with_another_provider_id_finds_no_nodeclaim() -> None:
    """pkg/utils/node It("should not return nodeClaim for node since the node supplied here
    has different provider ID")."""
    state = observed(a_nodeclaim("claim", PROVIDER_ID), a_node("node", "testID"))
    assert state.nodeclaim_names_for_provider_id("testID") == []
    assert hydrated_label(a_node("node", "testID")) is None


def test_a_node_without_a_provider_id_finds_no_nodeclaim() -> None:
    """pkg/utils/node It("should not return nodeClaim for node since the node supplied here
    has no provider ID")."""
    assert hydrated_label(a_node("node")) is None


# -- pkg/utils/nodeclaim/suite_test.go, Describe("NodeClaimUtils") --------------------------


def test_registration_makes_the_nodeclaim_the_owner_of_its_node() -> None:
    """pkg/utils/nodeclaim It("should update the owner for a Node to a NodeClaim")."""
    claim = a_nodeclaim("claim", PROVIDER_ID)
    node = a_node("node", PROVIDER_ID)
    sync_node(claim, node)
    assert {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "claim",
            "uid": "uid-claim", "blockOwnerDeletion": True} in node["metadata"]["ownerReferences"]


def test_nodeclaims_are_found_by_provider_id() -> None:
    """pkg/utils/nodeclaim Context("List") It("should filter by provider ID")."""
    state = observed(a_nodeclaim("claim-0", "aws:///us-east-1a/i-0"),
                     a_nodeclaim("claim-1", "aws:///us-east-1a/i-1"))
    assert state.nodeclaim_names_for_provider_id("aws:///us-east-1a/i-0") == ["claim-0"]


def test_nodeclaims_are_found_by_nodepool() -> None:
    """pkg/utils/nodeclaim Context("List") It("should filter by NodePool")."""
    state = observed(a_nodeclaim("claim-0", pool="nodepool-0"),
                     a_nodeclaim("claim-1", pool="nodepool-1"))
    assert [objects.name(c) for c in pool_claims(state, "nodepool-0")] == ["claim-0"]


def test_only_this_providers_nodeclaims_are_kept() -> None:
    """pkg/utils/nodeclaim Context("List") It("should filter managed NodeClaims")."""
    state = observed(
        a_nodeclaim("managed"),
        a_nodeclaim("unmanaged-by-group", node_class={**OURS, "group": "karpenter.unmanaged.sh"}),
        a_nodeclaim("unmanaged-by-kind", node_class={**OURS, "kind": "UnmanagedNodeClass"}),
        a_nodeclaim("unmanaged", node_class={"group": "karpenter.test.sh",
                                             "kind": "UnmanagedNodeClass", "name": "default"}))
    assert [objects.name(c) for c in state.nodeclaims()] == ["managed"]


# -- pkg/utils/nodepool/suite_test.go and pkg/apis/v1alpha1/suite_test.go ------------------


def pools_in_solver_order(weights: list[int], names: list[str]) -> list[tuple[int, str]]:
    templates = [nodepool_template(NodePool.model_validate(node_pool(name, weight=weight)), [])
                 for weight, name in zip(weights, names, strict=True)]
    random.Random(7).shuffle(templates)
    return [(t.weight, t.name) for t in sorted(templates, key=pool_order, reverse=True)]


def test_nodepools_are_tried_heaviest_first() -> None:
    """pkg/utils/nodepool Context("OrderByWeight") It("should order the NodePools by
    weight")."""
    rng = random.Random(1)
    weights = [rng.randint(1, 100) for _ in range(10)]
    tried = pools_in_solver_order(weights, [f"pool-{i}" for i in range(10)])
    tried_weights = [weight for weight, _ in tried]
    assert tried_weights == sorted(weights, reverse=True)


def test_nodepools_of_equal_weight_are_tried_in_reverse_name_order() -> None:
    """pkg/utils/nodepool Context("OrderByWeight") It("should order the NodePools by name
    when the weights are the same")."""
    names = [f"pool-{chr(ord('a') + i)}" for i in range(10)]
    tried = pools_in_solver_order([10] * 10, names)
    assert [name for _, name in tried] == sorted(names, reverse=True)


def overlays_in_store_order(weights: list[int]) -> list[NodeOverlay]:
    cluster = InMemoryCluster(VirtualClock())
    rng = random.Random(3)
    for i, weight in enumerate(weights):
        cluster.create({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                        "metadata": {"name": f"overlay-{rng.randrange(10**6):06d}-{i}"},
                        "spec": {"weight": weight,
                                 "requirements": [{"key": "test", "operator": "Exists"}]}})
    return ordered(NodeOverlay.model_validate(body) for body in cluster.list("NodeOverlay"))


def test_node_overlays_are_applied_heaviest_first() -> None:
    """pkg/apis/v1alpha1/suite_test.go Context("OrderByWeight") It("should order the
    NodeOverlay by weight")."""
    rng = random.Random(2)
    weights = [rng.randint(1, 100) for _ in range(10)]
    applied = overlays_in_store_order(weights)
    assert [o.spec.weight for o in applied] == sorted(weights, reverse=True)


def test_node_overlays_of_equal_weight_are_applied_in_reverse_name_order() -> None:
    """pkg/apis/v1alpha1/suite_test.go Context("OrderByWeight") It("should order the
    NodeOverlay by name when the weights are the same")."""
    applied = overlays_in_store_order([10] * 10)
    names = [o.name for o in applied]
    assert len(names) == 10
    assert names == sorted(names, reverse=True)


# -- pkg/utils/daemonset/suite_test.go, Describe("DaemonSetUtils") -------------------------


def a_daemonset(name: str, resources: dict[str, Any], *,
                init_resources: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app",
                                            "resources": resources}]}
    if init_resources is not None:
        spec["initContainers"] = [{"name": "init", "image": "init",
                                   "resources": init_resources}]
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def test_each_daemonsets_pod_is_named_after_it() -> None:
    """pkg/utils/daemonset It("should set unique Name and Namespace from the DaemonSet")."""
    first = daemonset_from_manifest(a_daemonset("ds-1", {"requests": {"cpu": "1"}}))
    second = daemonset_from_manifest(a_daemonset("ds-2", {"requests": {"cpu": "2"}}))
    assert (first.pod.name, first.pod.namespace) == ("ds-1", "kube-system")
    assert (second.pod.name, second.pod.namespace) == ("ds-2", "kube-system")
    assert first.pod.key != second.pod.key


def test_a_limit_without_a_request_counts_as_the_request() -> None:
    """pkg/utils/daemonset It("should merge resource limits into requests if no requests
    exists for the given container"): the container and the init container ask 750m of cpu
    and limit memory to 1000Mi without requesting it; the pod counts 1000Mi of memory."""
    resources = {"limits": {"cpu": "1", "memory": "1000Mi"}, "requests": {"cpu": "750m"}}
    daemonset = daemonset_from_manifest(
        a_daemonset("ds", resources, init_resources=resources))
    assert daemonset.pod.requests["cpu"] == parse_quantity("750m")
    assert daemonset.pod.requests["memory"] == parse_quantity("1000Mi")


# -- pkg/utils/pretty/suite_test.go, Describe("Pretty") -------------------------------------


@pytest.mark.parametrize("snake", [health._snake, orchestration._snake],
                         ids=["node repair condition", "consolidation policy"])
def test_camel_case_becomes_snake_case(snake: Any) -> None:
    """pkg/utils/pretty It("should convert camel case to snake case")."""
    assert snake("testKeyValue") == "test_key_value"
