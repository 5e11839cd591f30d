"""Karpenter test/suites/consolidation/suite_test.go (v1.14.1). Consolidation does not
depend on the cloud: these run on the in-memory World of `tests.harness` (the simulated
EC2, the cluster's actors and Nodewright's controllers on a virtual clock), with the same
NodePools, deployments and expectations as Karpenter's suite on EKS.

Karpenter runs every story of its DescribeTableSubtree("Consolidation") under both
MIN_VALUES_POLICY settings (Entry("MinValuesPolicyBestEffort"),
Entry("MinValuesPolicyStrict")); here each of those stories is parametrized by the policy
(`policy`). The controllers run with the feature gates Karpenter's e2e installation turns
on (`E2E_GATES`: spot-to-spot consolidation among them). The NodeOverlay stories, outside
the subtree, run on the moto account (see their section)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.quantity import parse_quantity
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cluster import objects
from nodewright.controllers.options import ControllerOptions, with_gates
from tests.aws.world import build_world
from tests.aws_e2e.moto_world import DEFAULT_REQUIREMENTS, E2E_GATES, MotoCluster
from tests.aws_e2e.moto_world import node_class as moto_class
from tests.aws_e2e.moto_world import node_pool as moto_pool
from tests.harness import NODE_CLASS, World, node_pool

TESTING_FINALIZER = "testing/finalizer"
DISRUPTED = "karpenter.sh/disrupted"
POOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_SIZE = "karpenter.k8s.aws/instance-size"
NOT_BURSTABLE = {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn",
                 "values": ["t2", "t3", "c1", "t3a", "t4g", "a1"]}
REGULAR = {"app": "regular-app"}


@pytest.fixture(params=["BestEffort", "Strict"],
                ids=['Entry("MinValuesPolicyBestEffort")', 'Entry("MinValuesPolicyStrict")'])
def policy(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(policy: str) -> World:
    return World(options=with_gates(ControllerOptions(relax_min_values=policy == "BestEffort"),
                                    E2E_GATES))


def deployment(name: str, replicas: int, cpu: str, labels: Mapping[str, str],
               **pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": {
                         "containers": [{"name": "app", "image": "pause",
                                         "resources": {"requests": {"cpu": cpu}}}],
                         **pod_spec}}}}


def one_per_node(labels: Mapping[str, str]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(labels)},
         "topologyKey": "kubernetes.io/hostname"}]}}


def spread(labels: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
             "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": dict(labels)}}]


def pool(consolidate_after: str = "0s", budgets: Sequence[Mapping[str, Any]] | None = None,
         requirements: Sequence[Mapping[str, Any]] = DEFAULT_REQUIREMENTS,
         **kwargs: Any) -> dict[str, Any]:
    """A NodePool on the harness's EC2NodeClass: by default Karpenter's default NodePool
    (`DEFAULT_REQUIREMENTS`), consolidating after `consolidate_after`."""
    disruption: dict[str, Any] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "consolidateAfter": consolidate_after}
    if budgets is not None:
        disruption["budgets"] = list(budgets)
    return node_pool(disruption=disruption, capacity_types=(), requirements=requirements,
                     expireAfter="Never", **kwargs)


def running(world: World, labels: Mapping[str, str]) -> int:
    return sum(1 for p in world.pods(labels=labels) if p["spec"].get("nodeName")
               and (p.get("status") or {}).get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp"))


def tainted(world: World) -> list[dict[str, Any]]:
    return [n for n in world.nodes()
            if any(t.get("key") == DISRUPTED for t in (n.get("spec") or {}).get("taints") or [])]


def hold_with_finalizers(world: World) -> None:
    for node in world.nodes():
        world.cluster.patch("Node", objects.name(node), {"metadata": {
            "finalizers": [*(node["metadata"].get("finalizers") or []), TESTING_FINALIZER]}})
    world.deliver()


def disruptions_until_none_left(world: World, at_start: int, most: int, expected: int,
                                timeout: float = 600) -> None:
    """`env.ConsistentlyExpectDisruptionsUntilNoneLeft(at_start, most, ...)`: never more
    than `most` nodes disrupting at once, nor more than `at_start + most` NodeClaims or
    Nodes (not counting those whose instance is terminating), until `expected` of the
    original nodes were disrupted and none is disrupting any more."""
    originals = {objects.name(n) for n in world.nodes()}
    done: set[str] = set()

    def check() -> bool:
        terminating = {str((c.get("status") or {}).get("providerID"))
                       for c in world.nodeclaims()
                       if objects.condition_is_true(c, "InstanceTerminating")}
        claims = [c for c in world.nodeclaims()
                  if str((c.get("status") or {}).get("providerID")) not in terminating]
        nodes = [n for n in world.nodes() if n["spec"].get("providerID") not in terminating]
        assert len(claims) <= at_start + most, "too many nodeclaims"
        assert len(nodes) <= at_start + most, "too many nodes"
        disrupting = [n for n in tainted(world) if n["spec"].get("providerID") not in terminating]
        assert len(disrupting) <= most, "too many disruptions at once"
        done.update(objects.name(n) for n in world.nodes()
                    if n["spec"].get("providerID") in terminating
                    and objects.name(n) in originals)
        done.update(originals - {objects.name(n) for n in world.nodes()})
        return len(done) >= expected and not disrupting

    assert world.run_until(check, timeout=timeout), (len(done), expected)


def no_disruptions(world: World, count: int, seconds: float = 60) -> None:
    """`env.ConsistentlyExpectNoDisruptions(count, time.Minute)`."""
    end = world.clock.now() + timedelta(seconds=seconds)
    while world.clock.now() < end:
        assert len(world.nodeclaims()) == count and len(world.nodes()) == count
        assert tainted(world) == []
        world.advance(5)


def avg_cpu_utilization(world: World, pool_name: str = "default") -> float:
    """`Monitor.AvgUtilization(cpu)`: the mean over the NodePool's nodes of the CPU the
    pods bound there request, over the node's allocatable."""
    values = []
    for node in world.nodes():
        if objects.labels(node).get(POOL_LABEL) != pool_name:
            continue
        name = objects.name(node)
        requested = sum(
            parse_quantity(str(c.get("resources", {}).get("requests", {}).get("cpu", "0")))
            for p in world.pods(None) if p["spec"].get("nodeName") == name
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            for c in p["spec"]["containers"])
        values.append(float(requested) / float(parse_quantity(
            str(node["status"]["allocatable"]["cpu"]))))
    return sum(values) / len(values) if values else 0.0


# --- Context("LastPodEventTime") -------------------------------------------------------------


def last_pod_event(world: World) -> str:
    (claim,) = world.nodeclaims()
    return str((claim.get("status") or {}).get("lastPodEventTime"))


def test_last_pod_event_time_moves_as_pods_come_and_go(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should update lastPodEventTime
    when pods are scheduled and removed")."""
    world.apply(NODE_CLASS, pool("Never", budgets=[{"nodes": "0%"}]),
                deployment("regular", 5, "1", REGULAR))
    assert world.run_until(lambda: running(world, REGULAR) == 5)
    assert len(world.nodeclaims()) == 1 and len(world.nodes()) == 1
    first = last_pod_event(world)

    world.advance(10)
    world.scale("regular", 4)
    assert world.run_until(lambda: last_pod_event(world) != first, timeout=5)
    second = last_pod_event(world)

    world.advance(10)
    world.scale("regular", 5)
    assert world.run_until(lambda: last_pod_event(world) != second, timeout=5)


def test_last_pod_event_time_moves_when_a_pod_goes_terminal(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should update lastPodEventTime
    when pods go terminal"): a Job's pod that sleeps 30 s and succeeds."""
    job: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "sleeper", "namespace": "default"},
           "spec": {"template": {"metadata": {"labels": REGULAR}, "spec": {
               "restartPolicy": "Never",
               "containers": [{"name": "sleep", "image": "alpine:3.20.2",
                               "command": ["/bin/sh", "-c", "sleep 30"],
                               "resources": {"requests": {"cpu": "1"}}}]}}}}
    # The in-memory kubelet runs the container for as long as this says (its `sleep 30`).
    job["spec"]["template"]["metadata"]["annotations"] = {"nodewright.io/run-duration": "30s"}
    world.apply(NODE_CLASS, pool("Never", budgets=[{"nodes": "0%"}]), job)
    assert world.run_until(lambda: running(world, REGULAR) == 1)
    first = last_pod_event(world)

    def succeeded() -> bool:
        return any((p.get("status") or {}).get("phase") == "Succeeded"
                   for p in world.pods(labels=REGULAR))

    assert world.run_until(succeeded, timeout=60)
    assert last_pod_event(world) != first


# --- Context("Budgets") ----------------------------------------------------------------------


def five_nodes_one_pod_each(world: World, budgets: list[dict[str, Any]]) -> None:
    world.apply(NODE_CLASS, pool("0s", budgets=budgets),
                deployment("regular", 5, "1", REGULAR, affinity=one_per_node(REGULAR)))
    assert world.run_until(lambda: running(world, REGULAR) == 5)
    assert len(world.nodeclaims()) == 5 and len(world.nodes()) == 5


def test_budgets_cap_empty_node_deletion(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should respect budgets for empty
    delete consolidation"): 40% of five nodes, two at a time."""
    five_nodes_one_pod_each(world, [{"nodes": "40%"}])
    hold_with_finalizers(world)

    world.scale("regular", 1)

    disruptions_until_none_left(world, 5, 2, expected=4)


def test_budgets_cap_non_empty_node_deletion(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should respect budgets for
    non-empty delete consolidation"): three 2xlarge nodes of three 2100m pods, scaled to one
    pod a node; with 50% at most two are deleted at a time."""
    large = {"app": "large-app"}
    requirements = [*DEFAULT_REQUIREMENTS,
                    {"key": INSTANCE_SIZE, "operator": "In", "values": ["2xlarge"]}]
    world.apply(NODE_CLASS, pool("Never", budgets=[{"nodes": "50%"}],
                                 requirements=requirements),
                deployment("large", 9, "2100m", large))
    assert world.run_until(lambda: running(world, large) == 9)
    assert len(world.nodeclaims()) == 3 and len(world.nodes()) == 3

    world.scale("large", 3)
    assert world.run_until(lambda: running(world, large) == 3)
    spread_one_per_node(world, large)
    hold_with_finalizers(world)
    world.apply(pool("0s", budgets=[{"nodes": "50%"}], requirements=requirements))

    disruptions_until_none_left(world, 3, 2, expected=2)


def spread_one_per_node(world: World, labels: Mapping[str, str]) -> None:
    """`env.ForcePodsToSpread`: a node holding more than its share is cordoned and its extra
    pods deleted, until they reschedule on the others."""
    nodes = [objects.name(n) for n in world.nodes()]
    share = -(-running(world, labels) // len(nodes))
    for node in nodes:
        on_node = [p for p in world.pods(labels=labels) if p["spec"].get("nodeName") == node
                   and not p["metadata"].get("deletionTimestamp")]
        if len(on_node) <= share:
            continue
        world.cluster.patch("Node", node, {"spec": {"unschedulable": True}})
        for extra in on_node[share:]:
            world.delete("Pod", objects.name(extra), "default")
        assert world.run_until(lambda: running(world, labels) == len(nodes), timeout=60)
    for node in nodes:
        world.cluster.patch("Node", node, {"spec": {"unschedulable": False}})
    world.deliver()


def test_budgets_cap_non_empty_replacements(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should respect budgets for
    non-empty replace consolidation"): five nodes, each a 3-CPU pod of its own test
    partition and a 3-CPU daemon; the daemon gone, the nodes are replaced by smaller ones,
    three at a time (budget "3"), eight nodes at the height of it, five at the end."""
    app = {"app": "large-app"}
    requirements = [*DEFAULT_REQUIREMENTS,
                    {"key": INSTANCE_SIZE, "operator": "In", "values": ["xlarge", "2xlarge"]},
                    {"key": "test-partition", "operator": "Exists"}]
    daemon = {"apiVersion": "apps/v1", "kind": "DaemonSet",
              "metadata": {"name": "daemon", "namespace": "default"},
              "spec": {"selector": {"matchLabels": app}, "template": {
                  "metadata": {"labels": app}, "spec": {"containers": [
                      {"name": "d", "image": "pause", "resources": {"requests": {"cpu": "3"}}}]}}}}
    apps = [deployment(f"app-{i}", 1, "3", app, nodeSelector={"test-partition": str(i)})
            for i in range(5)]
    world.apply(daemon, NODE_CLASS, pool("Never", budgets=[{"nodes": "3"}],
                                         requirements=requirements), *apps)
    assert world.run_until(lambda: running(world, app) == 10)
    originals = {objects.name(n) for n in world.nodes()}
    original_claims = {objects.name(c) for c in world.nodeclaims()}
    assert len(originals) == 5 and len(original_claims) == 5
    hold_with_finalizers(world)
    world.delete("DaemonSet", "daemon", "default")
    assert world.run_until(lambda: running(world, app) == 5)

    world.apply(pool("0s", budgets=[{"nodes": "3"}], requirements=requirements))
    assert world.run_until(lambda: len(tainted(world)) == 3, timeout=600)
    assert world.run_until(lambda: len(world.nodes()) == 8, timeout=600)
    disruptions_until_none_left(world, 5, 3, expected=5)

    for node in originals:
        world.cluster.patch("Node", node, {"metadata": {"finalizers": [
            f for f in world.cluster.get("Node", node)["metadata"].get("finalizers") or []
            if f != TESTING_FINALIZER]}})
    world.deliver()
    assert world.run_until(lambda: not originals & {objects.name(n) for n in world.nodes()}
                           and not original_claims & {
                               objects.name(c) for c in world.nodeclaims()}, timeout=900)
    assert len(world.nodeclaims()) == 5 and len(world.nodes()) == 5


def test_a_zero_budget_blocks_consolidation(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should not allow consolidation
    if the budget is fully blocking")."""
    five_nodes_one_pod_each(world, [{"nodes": "0"}])

    world.scale("regular", 1)

    no_disruptions(world, 5)


def test_a_zero_budget_blocks_consolidation_in_its_scheduled_window(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should not allow consolidation
    if the budget is fully blocking during a scheduled time"): a 30-minute window that
    opened 15 minutes ago."""
    start = world.clock.now() - timedelta(minutes=15)
    five_nodes_one_pod_each(world, [{"nodes": "0", "schedule": f"{start.minute} {start.hour} * * *",
                                     "duration": "30m"}])

    world.scale("regular", 1)

    no_disruptions(world, 5)


# --- DescribeTable("should consolidate nodes (delete)" / "(replace)") ---------------------


@pytest.mark.parametrize("capacity", [
    pytest.param("on-demand", id='Entry("if the nodes are on-demand nodes")'),
    pytest.param("spot", id='Entry("if the nodes are spot nodes")'),
])
def test_underutilized_nodes_are_deleted(world: World, capacity: str) -> None:
    """Karpenter test/suites/consolidation/suite_test.go DescribeTable("should consolidate
    nodes (delete)"): 100 one-CPU pods, then 40; average CPU use under half, then, with
    consolidation on, over 60%."""
    large = {"app": "large-app"}
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
        {"key": INSTANCE_SIZE, "operator": "In", "values": ["medium", "large", "xlarge"]},
        NOT_BURSTABLE]
    world.apply(NODE_CLASS, pool("Never", requirements=requirements),
                deployment("large", 100, "1", large))
    assert world.run_until(lambda: running(world, large) == 100)

    world.scale("large", 40)
    assert world.run_until(lambda: avg_cpu_utilization(world) < 0.5, timeout=720)
    world.apply(pool("0s", requirements=requirements))

    assert world.run_until(lambda: avg_cpu_utilization(world) > 0.6, timeout=720)


@pytest.mark.parametrize("capacity", [
    pytest.param("on-demand", id='Entry("if the nodes are on-demand nodes")'),
    pytest.param("spot", id='Entry("if the nodes are spot nodes")'),
])
def test_underutilized_nodes_are_replaced_by_smaller_ones(world: World, capacity: str) -> None:
    """Karpenter test/suites/consolidation/suite_test.go DescribeTable("should consolidate
    nodes (replace)"): three 2xlarge nodes each with a 4-CPU and a small pod spread by
    hostname; the large pods gone, each node is replaced by a .large one."""
    large, small = {"app": "large-app"}, {"app": "small-app"}
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
        {"key": INSTANCE_SIZE, "operator": "In", "values": ["large", "2xlarge"]},
        NOT_BURSTABLE, {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    world.apply(NODE_CLASS, pool("Never", requirements=requirements),
                deployment("large", 3, "4", large, topologySpreadConstraints=spread(large)),
                deployment("small", 3, "1800m", small, topologySpreadConstraints=spread(small)))
    assert world.run_until(lambda: running(world, large) == 3 and running(world, small) == 3)
    assert len(world.nodes()) == 3

    world.scale("large", 0)
    assert world.run_until(lambda: avg_cpu_utilization(world) < 0.5, timeout=720)
    world.apply(pool("0s", requirements=requirements))

    assert world.run_until(lambda: avg_cpu_utilization(world) > 0.8, timeout=720)
    types = [objects.labels(n)["node.kubernetes.io/instance-type"] for n in world.nodes()
             if objects.labels(n).get(POOL_LABEL) == "default"]
    assert len(types) == 3 and all(t.endswith(".large") for t in types), types


def test_on_demand_nodes_are_replaced_by_spot_ones(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate on-demand
    nodes to spot (replace)")."""
    small = {"app": "small-app"}
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": INSTANCE_SIZE, "operator": "In", "values": ["large"]}, NOT_BURSTABLE]
    world.apply(NODE_CLASS, pool("Never", requirements=requirements),
                deployment("small", 2, "1800m", small, topologySpreadConstraints=spread(small)))
    assert world.run_until(lambda: running(world, small) == 2)
    assert len(world.nodes()) == 2

    world.apply(pool("0s", requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "Exists"},
        {"key": INSTANCE_SIZE, "operator": "In", "values": ["large"]}, NOT_BURSTABLE]))

    def all_spot() -> bool:
        capacity = [objects.labels(n).get("karpenter.sh/capacity-type") for n in world.nodes()
                    if objects.labels(n).get(POOL_LABEL) == "default"]
        return capacity == ["spot", "spot"]

    assert world.run_until(all_spot, timeout=600)


# --- Context("Capacity Reservations") --------------------------------------------------------


def reserving(world: World, *reservations: tuple[str, str]) -> None:
    from nodewright.cloud.sim.reservations import ReservationBook, SimReservation
    zone = "us-east-1a"
    world.cloud.reservations = ReservationBook([
        SimReservation(rid, instance_type, zone, 1) for rid, instance_type in reservations])


def node_class_selecting(*ids: str) -> str:
    return NODE_CLASS + "  capacityReservationSelectorTerms: [{}]\n".format(
        ", ".join(f"{{id: {rid}}}" for rid in ids)) if ids else NODE_CLASS


def reserved_labels(world: World) -> list[tuple[str, str, str | None]]:
    return [(objects.labels(n)["node.kubernetes.io/instance-type"],
             objects.labels(n)["karpenter.sh/capacity-type"],
             objects.labels(n).get("karpenter.k8s.aws/capacity-reservation-id"))
            for n in world.nodes()]


M5_LARGE_OR_XLARGE = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["m5.large", "m5.xlarge"]}]}]}}}
RESERVED_OR_ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In",
                          "values": ["on-demand", "reserved"]}]


def test_an_on_demand_node_consolidates_into_a_reservation(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate into a
    reserved offering"): an m5.large on-demand, then the m5.xlarge reservation selected."""
    reserving(world, ("cr-large", "m5.large"), ("cr-xlarge", "m5.xlarge"))
    world.apply(NODE_CLASS, pool("0s", requirements=RESERVED_OR_ON_DEMAND),
                deployment("app", 1, "100m", REGULAR, affinity=M5_LARGE_OR_XLARGE))
    assert world.run_until(lambda: running(world, REGULAR) == 1)
    assert reserved_labels(world) == [("m5.large", "on-demand", None)]

    world.apply(node_class_selecting("cr-xlarge"))

    assert world.run_until(
        lambda: reserved_labels(world) == [("m5.xlarge", "reserved", "cr-xlarge")], timeout=600)


def test_a_reserved_node_consolidates_into_a_cheaper_reservation(world: World) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate between
    reserved offerings")."""
    reserving(world, ("cr-large", "m5.large"), ("cr-xlarge", "m5.xlarge"))
    world.apply(node_class_selecting("cr-xlarge"), pool("0s", requirements=RESERVED_OR_ON_DEMAND),
                deployment("app", 1, "100m", REGULAR, affinity=M5_LARGE_OR_XLARGE))
    assert world.run_until(lambda: running(world, REGULAR) == 1)
    assert reserved_labels(world) == [("m5.xlarge", "reserved", "cr-xlarge")]

    world.apply(node_class_selecting("cr-xlarge", "cr-large"))

    assert world.run_until(
        lambda: reserved_labels(world) == [("m5.large", "reserved", "cr-large")], timeout=600)


# --- Describe("Node Overlay") ------------------------------------------------------------------
# These run on the moto account (`tests.aws_e2e.moto_world`): which of a NodeClaim's types EC2
# launches is the AWS provider's doing (a prioritized fleet when overlays change prices);
# the simulated EC2 launches the cheapest by its own prices.


@pytest.fixture
def env(clients: AwsClients) -> MotoCluster:
    build_world(clients)  # this module's `world` is the harness's
    return MotoCluster(clients)


def overlay(instance_type: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
            "metadata": {"name": "overlay"},
            "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type",
                                       "operator": "In", "values": [instance_type]}], **spec}}


def lone_pod(requests: Mapping[str, str], limits: Mapping[str, str] | None = None
             ) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(limits)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": REGULAR},
            "spec": {"containers": [{"name": "app", "image": "pause", "resources": resources}]}}


def initialized(env: MotoCluster) -> list[dict[str, Any]]:
    return [n for n in env.nodes()
            if objects.labels(n).get("karpenter.sh/initialized") == "true"]


def overlay_story(env: MotoCluster, first: str, second: str, pod: dict[str, Any],
                  node_class: dict[str, Any] | None = None, **spec: Any) -> None:
    """The overlay makes `first` the one to launch; moved to `second`, the node is
    replaced by a `second` (two initialized nodes, the untainted one a `second`)."""
    env.apply(moto_pool(disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                    "consolidateAfter": "0s"}),
              node_class or moto_class(), overlay(first, **spec), pod)
    assert env.run_until(lambda: env.healthy("p")), env.errors
    (node,) = initialized(env)
    assert objects.labels(node)["node.kubernetes.io/instance-type"] == first

    env.apply(overlay(second, **spec))

    assert env.run_until(lambda: len(initialized(env)) == 2, timeout=600)
    untainted = [n for n in initialized(env)
                 if not any(t.get("key") == DISRUPTED for t in n["spec"].get("taints") or [])]
    assert objects.labels(untainted[0])["node.kubernetes.io/instance-type"] == second


def test_a_price_adjustment_overlay_makes_its_type_the_cheapest(env: MotoCluster) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate a instance
    that is the cheepest based on a price adjustment node overlay applied")."""
    overlay_story(env, "m7a.8xlarge", "c7a.8xlarge", lone_pod({"cpu": "1", "memory": "1Gi"}),
                  priceAdjustment="-99.99999999999%")


def test_a_price_override_overlay_makes_its_type_the_cheapest(env: MotoCluster) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate a instance
    that is the cheepest based on a price override node overlay applied")."""
    overlay_story(env, "m7a.8xlarge", "c7a.8xlarge", lone_pod({"cpu": "1", "memory": "1Gi"}),
                  price="0.0000000232")


def test_a_capacity_overlay_places_and_consolidates_a_hugepages_pod(env: MotoCluster) -> None:
    """Karpenter test/suites/consolidation/suite_test.go It("should consolidate a node that
    matches hugepages resource requests"): only the overlaid type has 2Mi hugepages (the
    node class's user data reserves them on the node, whose kubelet then reports them); the
    overlay moved, the pod's node is replaced by one of the new type."""
    hugepages = moto_class(userData="#!/bin/bash\necho 2048 > /proc/sys/vm/nr_hugepages\n")
    overlay_story(env, "c7a.8xlarge", "c7a.2xlarge",
                  lone_pod({"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "100Mi"},
                           {"hugepages-2Mi": "100Mi"}),
                  node_class=hugepages, capacity={"hugepages-2Mi": "4Gi"})
