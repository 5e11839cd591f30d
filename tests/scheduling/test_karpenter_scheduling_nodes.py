"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("In-Flight Nodes"),
Describe("Existing Nodes") and Describe("No Pre-Binding"): the nodes launched by an
earlier round (in flight: they are not initialized yet) and nodes Karpenter does not own
take pods before anything new launches. Each test names its It."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.scheduling.pods import ExistingNode
from nodewright.state.statenode import StateNode
from tests.scheduling.karpenter_fake import Cluster, match, spread
from tests.scheduling.karpenter_scheduling import (
    ARCH,
    GPU_A,
    HOSTNAME,
    ZONE,
    default_catalog,
    expression,
    fake_it,
    nodepool,
    not_scheduled,
    pod,
    provisioned,
    scheduled,
)

TINY = {"cpu": "10m"}


# -- Describe("In-Flight Nodes") ---------------------------------------------------------


def test_an_in_flight_node_that_fits_takes_the_next_pod() -> None:
    # It("should not launch a second node if there is an in-flight node that can support
    # the pod")
    first, second = pod(limits=TINY), pod(limits=TINY)
    cluster = provisioned(first)
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, first).name == scheduled(cluster, second).name


def test_an_in_flight_node_takes_pods_whose_selectors_allow_its_zone() -> None:
    # It("should not launch a second node if there is an in-flight node that can support
    # the pod (node selectors)")
    first = pod(limits=TINY, requirements=[expression(ZONE, "In", "test-zone-2")])
    cluster = provisioned(first)
    second = pod(limits=TINY, requirements=[expression(ZONE, "In", "test-zone-1", "test-zone-2")])
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name == scheduled(cluster, first).name
    third = pod(limits=TINY, requirements=[expression(ZONE, "In", "test-zone-1", "test-zone-3")])
    provisioned(third, cluster=cluster)
    assert scheduled(cluster, third).name != scheduled(cluster, first).name


def test_a_pod_that_does_not_fit_the_in_flight_node_gets_a_new_one() -> None:
    # It("should launch a second node if a pod won't fit on the existingNodes node"): the
    # first node is the 2-cpu type, 1001m and 1 cpu do not share it.
    first = pod(limits={"cpu": "1001m"})
    cluster = provisioned(first)
    second = pod(limits={"cpu": "1"})
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name != scheduled(cluster, first).name


def test_a_pod_the_in_flight_node_cannot_take_gets_a_new_one() -> None:
    # It("should launch a second node if a pod isn't compatible with the existingNodes
    # node (node selector)")
    first = pod(limits=TINY)
    cluster = provisioned(first)
    second = pod(node_selector={ARCH: "arm64"})
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name != scheduled(cluster, first).name


def test_pods_are_balanced_across_zones_with_in_flight_nodes() -> None:
    # Context("Topology") It("should balance pods across zones with in-flight nodes")
    labels = {"foo": "bar"}
    constraint = spread(ZONE, selector=match(labels))
    cluster = provisioned(*[pod(labels=labels, topologySpreadConstraints=constraint)
                            for _ in range(4)])
    assert cluster.skew(ZONE, labels) == [1, 1, 2]
    launched = len(cluster.nodes)
    provisioned(*[pod(labels=labels, topologySpreadConstraints=constraint) for _ in range(5)],
                cluster=cluster)
    assert cluster.skew(ZONE, labels) == [3, 3, 3]
    assert len(cluster.nodes) == launched


def test_pods_are_balanced_across_hostnames_with_in_flight_nodes() -> None:
    # Context("Topology") It("should balance pods across hostnames with in-flight nodes"):
    # new nodes launch for the spread rather than fill the in-flight ones.
    labels = {"foo": "bar"}
    constraint = spread(HOSTNAME, selector=match(labels))
    cluster = provisioned(*[pod(labels=labels, topologySpreadConstraints=constraint)
                            for _ in range(4)])
    assert cluster.skew(HOSTNAME, labels) == [1, 1, 1, 1]
    provisioned(*[pod(labels=labels, topologySpreadConstraints=constraint) for _ in range(5)],
                cluster=cluster)
    assert cluster.skew(HOSTNAME, labels) == [1] * 9


def test_in_flight_nodes_are_packed_before_new_ones_launch() -> None:
    # It("should pack in-flight nodes before launching new nodes"): ten rounds of up to
    # nine 1-cpu pods on a 4.25-cpu, 4-pod type leave at most one node with a cpu free.
    medium = fake_it("medium", cpu=4, memory_gi=4, pods=4)
    medium = type(medium)(medium.name, medium.labels, {**medium.capacity, "cpu": 4250},
                          medium.overhead, medium.offerings)
    pool = nodepool(catalog=[medium])
    cluster = Cluster()
    rng = random.Random(7)
    for _ in range(10):
        provisioned(*[pod(limits={"cpu": "1"}) for _ in range(rng.randrange(10))],
                    pools=[pool], cluster=cluster)
    used = {node.name: 0 for node in cluster.nodes}
    for p in cluster.bound:
        used[p.node_name or ""] += p.requests.get("cpu", 0)
    free = [node.name for node in cluster.nodes
            if (node.allocatable or {}).get("cpu", 0) - used[node.name] >= 1000]
    assert len(free) <= 1, free


def test_an_unbound_pod_retried_does_not_launch_a_second_node() -> None:
    # It("should not launch a second node if there is an in-flight node that can support
    # the pod (#2011)"): the pod was not bound; its second round finds the in-flight node.
    p = pod(limits=TINY)
    cluster = provisioned(p)
    cluster.bound.clear()
    provisioned(p, cluster=cluster)
    assert len(cluster.nodes) == 1


# -- Describe("Existing Nodes") ----------------------------------------------------------


def _unowned(allocatable: dict[str, int]) -> ExistingNode:
    return ExistingNode("unowned", {HOSTNAME: "unowned"}, (), allocatable)


def test_a_pod_goes_to_an_existing_node_karpenter_does_not_own() -> None:
    # It("should schedule a pod to an existing node unowned by Karpenter")
    cluster = Cluster(nodes=[_unowned({"cpu": 10_000, "memory": 10 * 2**30 * 1000,
                                       "pods": 110_000})])
    p = pod(requests=TINY, limits=TINY)
    provisioned(p, cluster=cluster)
    assert scheduled(cluster, p).name == "unowned"


def test_many_pods_go_to_an_existing_node_karpenter_does_not_own() -> None:
    # It("should schedule multiple pods to an existing node unowned by Karpenter")
    cluster = Cluster(nodes=[_unowned({"cpu": 10_000, "memory": 100 * 2**30 * 1000,
                                       "pods": 110_000})])
    pods = [pod(requests=TINY, limits=TINY) for _ in range(100)]
    provisioned(*pods, cluster=cluster)
    assert {scheduled(cluster, p).name for p in pods} == {"unowned"}


def test_a_pod_the_existing_node_cannot_take_waits_for_a_nodepool() -> None:
    # It("should consider a pod incompatible with an existing node but compatible with
    # NodePool"): the node has no zone label; with no NodePool the pod stays pending.
    cluster = Cluster(nodes=[_unowned({"cpu": 10_000, "memory": 10 * 2**30 * 1000,
                                       "pods": 110_000})])
    p = pod(requirements=[expression(ZONE, "In", "test-zone-1")])
    provisioned(p, pools=[], cluster=cluster)
    not_scheduled(cluster, p)
    provisioned(p, cluster=cluster)
    assert scheduled(cluster, p).labels[ZONE] == "test-zone-1"


# -- Describe("No Pre-Binding") ----------------------------------------------------------


def test_pods_are_not_bound_and_the_next_one_uses_the_in_flight_node() -> None:
    # It("should not bind pods to nodes"): ExpectProvisionedNoBinding launches the node
    # without binding; the second pod's round finds the in-flight node.
    cluster = provisioned(pod(limits=TINY))
    cluster.bound.clear()
    assert len(cluster.nodes) == 1
    provisioned(pod(limits=TINY), cluster=cluster)
    assert len(cluster.nodes) == 1


def test_self_zonal_affinity_follows_the_in_flight_nodes_zone() -> None:
    # It("should respect self pod affinity without pod binding (zone)"): the second pod
    # takes the in-flight node's zone as the domain of its self affinity.
    labels = {"security": "s2"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": ZONE}]}}
    first, second = (pod(labels=labels, affinity=affinity) for _ in range(2))
    cluster = provisioned(first)
    provisioned(second, cluster=cluster)
    assert len(cluster.nodes) == 1


# -- Context("Taints") and the state of a launched machine ---------------------------------
# Karpenter reconciles the launched NodeClaim and Node into its cluster state and the next
# round reads the node from there. So do these stories: the last node of the round becomes
# a NodeClaim and a Node in a StateNode, whose view (taints and resources that count
# before initialization) is what the next round sees.


def _quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    return {name: f"{value}m" for name, value in amounts.items()}


def _in_flight(cluster: Cluster, *, initialized: bool = False,
               node_taints: Sequence[Mapping[str, str]] = (),
               startup_taints: Sequence[Mapping[str, str]] = (),
               node_allocatable: Mapping[str, str] | None = None,
               node_capacity: Mapping[str, str] | None = None) -> str:
    """Replace the last launched node with what the cluster state makes of its NodeClaim
    (the instance type's resources, the NodePool's startup taints) and its registered
    Node (`node_taints`, initialized or not, the kubelet's resources when given)."""
    launched = cluster.nodes[-1]
    provider_id = f"fake://{launched.name}"
    resources = _quantities(launched.allocatable or {})
    claim = {"metadata": {"name": f"claim-{launched.name}", "labels": dict(launched.labels)},
             "spec": {"taints": [], "startupTaints": list(startup_taints)},
             "status": {"providerID": provider_id, "capacity": resources,
                        "allocatable": resources}}
    labels = {**launched.labels, "karpenter.sh/registered": "true"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    node = {"metadata": {"name": launched.name, "labels": labels},
            "spec": {"providerID": provider_id, "taints": list(node_taints)},
            "status": {"capacity": dict(node_capacity or {}),
                       "allocatable": dict(node_allocatable or {})}}
    state = StateNode(provider_id)
    state.nodeclaim, state.node = claim, node
    cluster.nodes[-1] = state.existing_node()
    return launched.name


NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
FOO_TAINT = {"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}


def _empty_node_after(first_limits: Mapping[str, str] | None = None,
                      pool: Any = None) -> tuple[Cluster, str]:
    """A first pod launches a node, then goes away (ExpectDeleted): the node is empty."""
    first = pod(limits=first_limits)
    cluster = provisioned(first, pools=[pool] if pool is not None else None)
    cluster.bound.clear()
    return cluster, cluster.nodes[-1].name


def test_an_in_flight_node_without_taints_takes_the_pod() -> None:
    # It("should assume pod will schedule to a tainted node with no taints")
    cluster, name = _empty_node_after({"cpu": "8"})
    _in_flight(cluster)
    second = pod()
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name == name


def test_not_ready_no_execute_is_ephemeral_only_before_initialization() -> None:
    # It("should assume pod will schedule to a node with ephemeral taint
    # node.kubernetes.io/not-ready:NoExecute when the node is uninitialized")
    cluster, name = _empty_node_after()
    _in_flight(cluster, node_taints=[NOT_READY])
    second = pod()
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name == name
    cluster.bound.clear()
    _in_flight(cluster, node_taints=[NOT_READY], initialized=True)
    third = pod()
    provisioned(third, cluster=cluster)
    assert scheduled(cluster, third).name != name


def test_an_initialized_node_with_a_taint_is_not_assumed() -> None:
    # It("should not assume pod will schedule to a tainted node")
    cluster, name = _empty_node_after({"cpu": "8"})
    _in_flight(cluster, initialized=True, node_taints=[FOO_TAINT])
    second = pod()
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name != name


def test_a_custom_startup_taint_is_expected_to_go() -> None:
    # It("should assume pod will schedule to a tainted node with a custom startup taint"):
    # the node carries the startup taint and the not-ready one.
    cluster, name = _empty_node_after({"cpu": "8"})
    _in_flight(cluster, startup_taints=[FOO_TAINT],
               node_taints=[FOO_TAINT, {"key": "node.kubernetes.io/not-ready",
                                        "effect": "NoSchedule"}])
    second = pod()
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name == name


def test_a_startup_taint_back_after_initialization_counts() -> None:
    # It("should not assume pod will schedule to a node with startup taints after
    # initialization")
    startup = {"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}
    cluster, name = _empty_node_after()
    _in_flight(cluster, initialized=True, startup_taints=[startup], node_taints=[startup],
               node_capacity={"pods": "10"}, node_allocatable={"pods": "10", "cpu": "3900m",
                                                               "memory": "4Gi"})
    second = pod()
    provisioned(second, cluster=cluster)
    assert scheduled(cluster, second).name != name


def test_an_extended_resource_the_kubelet_zeroed_is_still_expected() -> None:
    # Describe("No Pre-Binding") It("should handle resource zeroing of extended resources
    # by kubelet"): the Node reports the GPU as 0 at startup; until initialization the
    # NodeClaim's amount counts, so the second GPU pod uses the in-flight node.
    limits = {"cpu": "10m", GPU_A: "1"}
    cluster = provisioned(pod(limits=limits))
    cluster.bound.clear()
    _in_flight(cluster, node_capacity={GPU_A: "0"}, node_allocatable={GPU_A: "0"})
    provisioned(pod(limits=limits), cluster=cluster)
    assert len(cluster.nodes) == 1


# -- initialized nodes first ---------------------------------------------------------------


def _machine(index: int, *, with_node: bool, initialized: bool) -> ExistingNode:
    """A NodeClaim of the default type launched by the suite's NodePool, with its Node
    (registered, initialized or not) or without one yet, as the cluster state sees it."""
    it = default_catalog()[0]
    name = f"node-{index:03d}"
    provider_id = f"fake://{name}"
    resources = _quantities(dict(it.allocatable))
    labels = {**it.labels, "karpenter.sh/nodepool": "default", ZONE: "test-zone-1"}
    state = StateNode(provider_id)
    state.nodeclaim = {"metadata": {"name": f"claim-{index:03d}", "labels": labels},
                       "spec": {}, "status": {"providerID": provider_id,
                                              "capacity": resources, "allocatable": resources}}
    if with_node:
        node_labels = {**labels, HOSTNAME: name, "karpenter.sh/registered": "true"}
        if initialized:
            node_labels["karpenter.sh/initialized"] = "true"
        state.node = {"metadata": {"name": name, "labels": node_labels},
                      "spec": {"providerID": provider_id},
                      "status": {"capacity": resources, "allocatable": resources}}
    return state.existing_node()


READY = 57  # the one initialized, placed where name order would not find it first


def test_an_initialized_node_is_tried_before_uninitialized_ones() -> None:
    # Describe("Existing Nodes") It("should order initialized nodes for scheduling
    # uninitialized nodes")
    nodes = [_machine(i, with_node=True, initialized=i == READY) for i in range(100)]
    cluster = Cluster(nodes=nodes)
    p = pod()
    provisioned(p, cluster=cluster)
    assert scheduled(cluster, p).name == f"node-{READY:03d}"


def test_an_initialized_node_is_tried_before_in_flight_nodeclaims() -> None:
    # Describe("In-Flight Nodes") It("should order initialized nodes for scheduling
    # uninitialized nodes when all other nodes are inflight"): the others have no Node yet.
    nodes = [_machine(i, with_node=i == READY, initialized=i == READY) for i in range(100)]
    cluster = Cluster(nodes=nodes)
    p = pod()
    provisioned(p, cluster=cluster)
    assert scheduled(cluster, p).name == f"node-{READY:03d}"
