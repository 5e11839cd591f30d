"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Replace"), told
as stories: a pod asking 6 CPU brings up a 2xlarge (on-demand from the workshop's c5/m5, or
spot from eighteen families with SpotToSpotConsolidation on) next to a 1Gi pod; the big pod
goes and the node is replaced by a cheaper one, unless a PodDisruptionBudget or a
do-not-disrupt annotation holds it; spot-to-spot replacement needs 15 cheaper types, keeps
the 15 cheapest (or as many as minValues needs) and never breaks minValues."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.cloud.sim import PriceOverride
from nodewright.cluster import objects
from nodewright.cluster.memory.actors import ActorSettings
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import BIG, decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import FILLER
from tests.disruption.test_policy_stories import SPOT_M5
from tests.harness import World

HOG = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: hog, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: hog}}
  template:
    metadata: {labels: {app: hog}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers: [{name: app, resources: {requests: {cpu: "6"}}}]
"""
PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: %s}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: inflate}}
"""
OTHER_NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata: {name: other}
"""
CAPACITY = ["on-demand", "spot"]
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SPOT_GATE = ControllerOptions(disruption=DisruptionOptions(
    methods=MethodOptions(spot_to_spot=True)))


def oversized(make_world: Callable[..., World], capacity: str, *extra: Any,
              requirements: dict[str, list[str]] | None = None,
              template: dict[str, Any] | None = None) -> World:
    """One 2xlarge of `capacity` left running a single 1Gi pod (not yet consolidated:
    consolidateAfter is 5 minutes)."""
    world = make_world(options=SPOT_GATE)
    wanted = dict(SPOT_M5) if capacity == "spot" else {}
    wanted.update(requirements or {})
    world.apply(WORKSHOP, nodepool_with(requirements=wanted, template=template,
                                        disruption={"consolidateAfter": "5m"}), HOG, *extra)
    world.scale("inflate", 1)
    assert world.settle()
    [node] = world.nodes()
    assert objects.labels(node)["node.kubernetes.io/instance-type"].endswith(".2xlarge")
    assert objects.labels(node)["karpenter.sh/capacity-type"] == capacity
    world.scale("hog", 0)
    return world


def replaced(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method == ex.SINGLE_NODE and d.decision == "replace"]


def expect_replaced(world: World, capacity: str) -> None:
    [original] = world.nodeclaims()
    assert world.run_until(lambda: bool(replaced(world)), timeout=900)
    assert world.settle()
    [claim] = world.nodeclaims()
    assert objects.name(claim) != objects.name(original)
    types = instance_types_of(claim)
    assert not any(t.endswith(".2xlarge") for t in types)
    assert objects.labels(claim)["karpenter.sh/capacity-type"] == capacity
    expect_running(world, 1)
    expect_no_controller_errors(world)


def expect_kept(world: World, cause: str) -> None:
    [original] = world.nodeclaims()
    world.advance(900)
    assert replaced(world) == []
    assert [objects.name(c) for c in world.nodeclaims()] == [objects.name(original)]
    assert any(d.cause == cause for d in decisions(world)), {d.cause for d in decisions(world)}


def instance_types_of(claim: dict[str, Any]) -> list[str]:
    return next(r["values"] for r in claim["spec"]["requirements"]
                if r["key"] == "node.kubernetes.io/instance-type")


def test_a_spot_node_is_replaced_by_a_cheaper_spot_node(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace node") Entry("if the candidate
    is spot node")."""
    world = oversized(make_world, "spot")
    expect_replaced(world, "spot")


EMPTY_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: nothing-fits}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [no-such-type]}
"""


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_nodepool_without_instance_types_does_not_stop_a_replace(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes if another nodePool
    returns no instance types"), Entry("if the candidate is on-demand node"), Entry("if the
    candidate is spot node")."""
    world = oversized(make_world, capacity, EMPTY_POOL)
    expect_replaced(world, capacity)


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_pdb_that_allows_nothing_stops_a_replace(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes, considers PDB"),
    Entry("if the candidate is on-demand node"), Entry("if the candidate is spot node")."""
    world = oversized(make_world, capacity, PDB % "default")
    expect_kept(world, ex.CAUSE_PDB)


ALWAYS_ALLOW_UNHEALTHY = (PDB % "default").replace(
    "  maxUnavailable: 0\n", "  maxUnavailable: 0\n  unhealthyPodEvictionPolicy: AlwaysAllow\n")


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_pdb_that_always_allows_unhealthy_pods_out_does_not_stop_a_replace(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes, considers PDB
    policy"), Entry("if the candidate is on-demand node"), Entry("if the candidate is spot
    node"): three pods that are not Ready (here they never start: the world's kubelet takes
    forever) under a PDB that allows nothing but always lets unhealthy pods go; the
    2xlarge is replaced by a cheaper node all the same."""
    world = make_world(options=SPOT_GATE,
                       actor_settings=ActorSettings(pod_start_delay=10.0**6))
    wanted = dict(SPOT_M5) if capacity == "spot" else {}
    world.apply(WORKSHOP, nodepool_with(requirements=wanted,
                                        disruption={"consolidateAfter": "5m"}),
                HOG, ALWAYS_ALLOW_UNHEALTHY)
    world.scale("inflate", 3)
    assert world.settle()
    [original] = world.nodeclaims()
    [node] = world.nodes()
    assert objects.labels(node)["node.kubernetes.io/instance-type"].endswith(".2xlarge")
    assert not any(objects.condition_is_true(p, "Ready") for p in world.pods())
    world.scale("hog", 0)
    assert world.run_until(lambda: bool(replaced(world)), timeout=900)
    assert world.run_until(lambda: objects.name(original) not in {
        objects.name(c) for c in world.nodeclaims()}, timeout=900)
    [claim] = world.nodeclaims()
    assert not any(t.endswith(".2xlarge") for t in instance_types_of(claim))
    assert objects.labels(claim)["karpenter.sh/capacity-type"] == capacity


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_pdb_of_another_namespace_does_not_stop_a_replace(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes, PDB namespace must
    match"), Entry("if the candidate is on-demand node"), Entry("if the candidate is spot
    node")."""
    world = oversized(make_world, capacity, OTHER_NAMESPACE, PDB % "other")
    expect_replaced(world, capacity)


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_do_not_disrupt_node_is_not_replaced(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes, considers
    karpenter.sh/do-not-disrupt set to true on nodes"), Entry("if the candidate is on-demand
    node"), Entry("if the candidate is spot node")."""
    world = oversized(make_world, capacity)
    [node] = world.nodes()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}})
    expect_kept(world, ex.CAUSE_DO_NOT_DISRUPT)


@pytest.mark.parametrize("capacity", CAPACITY)
def test_a_do_not_disrupt_pod_keeps_its_node_from_a_replace(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace nodes, considers
    karpenter.sh/do-not-disrupt set to true on pods"), Entry("if the candidate is on-demand
    node"), Entry("if the candidate is spot node")."""
    world = oversized(make_world, capacity)
    [pod] = world.pods(labels={"app": "inflate"})
    world.cluster.patch("Pod", objects.name(pod), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}}, "default")
    expect_kept(world, ex.CAUSE_DO_NOT_DISRUPT)


def unconsolidatable(world: World) -> list[str]:
    return [e["note"] for e in world.events(ex.UNCONSOLIDATABLE)]


def test_spot_is_not_replaced_by_spot_with_the_gate_off(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: It("cannot replace spot with spot if the
    spotToSpotConsolidation is disabled")."""
    world = make_world()
    world.apply(WORKSHOP, nodepool_with(requirements=SPOT_M5,
                                        disruption={"consolidateAfter": "0s"}), HOG)
    world.scale("inflate", 1)
    assert world.settle()
    world.scale("hog", 0)
    # Unconsolidatable is deduplicated per node for 15 minutes whatever the cause (as
    # Karpenter's, retold at the next 5-minute re-evaluation after that): the node was
    # told another one while the hog ran.
    world.advance(20 * 60)
    assert replaced(world) == []
    assert len(world.nodeclaims()) == 1
    assert ("SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
            in unconsolidatable(world))


def test_spot_is_not_replaced_by_spot_with_fewer_than_fifteen_cheaper_types(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: It("cannot replace spot with spot if less than minimum
    InstanceTypes flexibility"): spot from c5 and m5 only, where a handful of types are
    cheaper than the 2xlarge."""
    world = oversized(make_world, "spot", requirements={
        "karpenter.sh/capacity-type": ["spot"],
        "karpenter.k8s.aws/instance-category": ["c", "m"],
        "karpenter.k8s.aws/instance-family": ["c5", "m5"]})
    world.advance(900)
    assert replaced(world) == []
    notes = [n for n in unconsolidatable(world) if "SpotToSpotConsolidation requires" in n]
    assert notes and notes[-1].startswith(
        "SpotToSpotConsolidation requires 15 cheaper instance type options than the current "
        "candidate to consolidate, got "), notes


def test_a_spot_node_among_the_cheapest_is_not_replaced(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: It("cannot replace spot with spot if it is part of the 15
    cheapest instance types.")."""
    world = make_world(options=SPOT_GATE)
    world.apply(WORKSHOP, nodepool_with(requirements=SPOT_M5,
                                        disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 1)
    assert world.settle()
    [original] = world.nodeclaims()
    world.advance(900)
    assert replaced(world) == []
    assert [objects.name(c) for c in world.nodeclaims()] == [objects.name(original)]


def test_spot_to_spot_keeps_the_fifteen_cheapest_types(make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: It("spot to spot consolidation should order the instance
    types by price before enforcing minimum flexibility."): the replacement may launch only
    the 15 cheapest of the cheaper types, and every cheaper type left out costs at least as
    much as the dearest kept."""
    world = oversized(make_world, "spot")
    expect_replaced(world, "spot")
    [claim] = world.nodeclaims()
    kept = instance_types_of(claim)
    assert len(kept) == 15
    [command] = replaced(world)
    assert "and 12 more" in command.message


def min_values(count: int) -> dict[str, Any]:
    return {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
         "values": SPOT_M5["karpenter.k8s.aws/instance-family"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": count},
    ]}


@pytest.mark.parametrize(("wanted", "kept"), [(20, 20), (10, 15)])
def test_spot_to_spot_keeps_as_many_types_as_min_values_needs(
        make_world: Callable[..., World], wanted: int, kept: int) -> None:
    """consolidation_test.go Replace: It("spot to spot consolidation should consider the max of
    default and minimum number of instanceTypeOptions from minValues in requirement for
    truncation if minimum number of instanceTypeOptions from minValues in requirement is
    greater than 15.") and It("... should consider the default for truncation if minimum number
    of instanceTypeOptions from minValues in requirement is less than 15.")."""
    world = oversized(make_world, "spot", template=min_values(wanted))
    expect_replaced(world, "spot")
    [claim] = world.nodeclaims()
    assert len(instance_types_of(claim)) == kept


@pytest.mark.parametrize("capacity", CAPACITY)
def test_no_replace_when_filtering_by_price_breaks_min_values(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Replace: DescribeTable("Consolidation should fail if filterByPrice
    breaks the minimum requirement from the NodePools."), Entry("if the candidate is on-demand
    node"), Entry("if the candidate is spot node"): more types than minValues asks fit, but
    too few of them are cheaper than the node."""
    # Cheaper than the 2xlarge: the large and xlarge of each family (4, or 12 for spot).
    families = ["c5", "m5"] if capacity == "on-demand" else [
        "c5", "m5", "c5a", "m5a", "c6i", "m6i"]
    template = {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": families},
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists",
         "minValues": 8 if capacity == "on-demand" else 14},
    ]}
    world = oversized(make_world, capacity, template=template)
    world.advance(900)
    assert replaced(world) == []
    assert len(world.nodeclaims()) == 1
    assert any(n.startswith("Filtering by price: ") for n in unconsolidatable(world)), \
        set(unconsolidatable(world))


def test_no_replace_when_a_spot_replacement_may_cost_more(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Replace: It("won't replace node if any spot replacement is more
    expensive"): an on-demand m5.large (its spot offerings priced out) whose pod would fit a
    c5.large; the NodePool allows spot too, and c5.large spot is cheaper than the node in two
    zones but dearer in the third. Karpenter prices a replacement at its worst launch price."""
    prices = [PriceOverride("m5.large", "spot", 5.0, zone) for zone in ZONES] + [
        PriceOverride("c5.large", "spot", 0.03, zone) for zone in ZONES[1:]] + [
        PriceOverride("c5.large", "spot", 1.0, ZONES[0])]
    world = make_world(prices=prices, zones=ZONES)

    def allowing(types: list[str], capacity: list[str]) -> dict[str, Any]:
        return nodepool_with(disruption={"consolidateAfter": "0s"}, template={"requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}]})

    world.apply(WORKSHOP, allowing(["m5.large"], ["on-demand"]))
    world.scale("inflate", 5)
    assert world.settle()
    # Widened: the node still meets the requirements (no drift).
    world.apply(allowing(["m5.large", "c5.large"], ["on-demand", "spot"]))
    [node] = world.nodes()
    assert objects.labels(node)["karpenter.sh/capacity-type"] == "on-demand"
    assert objects.labels(node)["node.kubernetes.io/instance-type"] == "m5.large"
    world.scale("inflate", 1)
    world.advance(600)
    assert replaced(world) == []
    assert [objects.name(n) for n in world.nodes()] == [objects.name(node)]
    assert any(d.cause == ex.CAUSE_NO_CHEAPER for d in decisions(world, objects.name(node)))


def pool_of_types(types: list[str], min_values: int) -> dict[str, Any]:
    body = nodepool_with(disruption={"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]})
    body["spec"]["template"]["spec"]["requirements"].append({
        "key": "node.kubernetes.io/instance-type", "operator": "In", "values": types,
        "minValues": min_values})
    return body


def test_a_merge_whose_only_cheaper_type_breaks_min_values_falls_back_to_a_delete(
        world: World) -> None:
    """consolidation_test.go Replace: It("should handle failing filterOutSameInstanceType
    correctly (without a panic) when minValues isn't satisfied"): three m5.large running
    one, one and two 800m pods; the NodePool allows m5.large and c5.large with minValues 2.
    Merging the two one-pod nodes would fit either type, but the candidates' own type is
    filtered out, leaving c5.large alone, short of minValues: no merge. One of them is
    deleted instead (its pod joins the other), and two m5.large stay."""
    world.apply(WORKSHOP, pool_of_types(["m5.large"], 1), BIG % 3)
    assert world.settle()
    world.apply(pool_of_types(["m5.large", "c5.large"], 2), FILLER % (4, 0))
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "filler"})]
    assert sorted(hosts.count(h) for h in set(hosts)) == [1, 1, 2]
    world.scale("big", 0)
    assert world.run_until(lambda: len(world.nodes()) == 2, timeout=900)
    assert world.settle()
    assert [objects.labels(n)["node.kubernetes.io/instance-type"]
            for n in world.nodes()] == ["m5.large", "m5.large"]
    assert {d.decision for d in started(world)} == {"delete"}
    expect_running(world, 4, {"app": "filler"})
    expect_no_controller_errors(world)
