"""Karpenter's end-to-end regression suite, test/suites/regression/integration_test.go
(v1.14.1), as stories on the in-memory World.

Each story applies what the It creates (the suite's NodePool from `suite_pool`, the
EC2NodeClass `default`, Deployments and pods), moves virtual time, and expects what the
It expects. Karpenter runs it against kwok; here the simulated EC2 launches the instances
and the in-memory kube-scheduler and kubelet place and run the pods.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.cluster.api import InvalidError
from nodewright.controllers.options import ControllerOptions
from nodewright.runtime.clock import format_time, parse_time
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import (
    DO_NOT_DISRUPT,
    daemonset,
    deployment,
    exists,
    healthy,
    node_affinity,
    pod,
    suite_pool,
)

ARCH = "kubernetes.io/arch"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

# -- DaemonSet ------------------------------------------------------------------------------


def host_port(port: int) -> list[dict[str, Any]]:
    return [{"name": "app", "image": "registry.k8s.io/pause:3.9",
             "ports": [{"containerPort": port, "hostPort": port}],
             "resources": {"requests": {"cpu": "100m"}}}]


def test_host_ports_of_uncached_daemonset_pods_per_instance_type() -> None:
    """integration_test.go Describe("DaemonSet") It("should correctly account for host ports
    of uncached daemonset pods targeting different instance types").

    Two DaemonSets hold host ports 8000 (amd64 nodes) and 9000 (arm64 nodes) of the pool's
    nodes only, so no DaemonSet pod exists before the first launch: their overhead comes
    from the templates, per instance type. A pod wanting port 8000 and arm64, and one
    wanting 9000 and amd64, each fit beside the other architecture's DaemonSet pod."""
    world = World()
    marked = {"testing/karpenter-node": "true"}
    world.apply(
        NODE_CLASS,
        suite_pool(labels=marked, disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                              "consolidateAfter": "30s"}),
        daemonset("ds-amd64", nodeSelector=marked, affinity=node_affinity(ARCH, "amd64"),
                  containers=host_port(8000)),
        daemonset("ds-arm64", nodeSelector=marked, affinity=node_affinity(ARCH, "arm64"),
                  containers=host_port(9000)),
        deployment("ds-hostport-8000", affinity=node_affinity(ARCH, "arm64"),
                   containers=host_port(8000)),
        deployment("ds-hostport-9000", affinity=node_affinity(ARCH, "amd64"),
                   containers=host_port(9000)),
    )
    names = ("ds-amd64", "ds-arm64", "ds-hostport-8000", "ds-hostport-9000")
    assert world.run_until(lambda: all(len(healthy(world, {"app": n})) == 1 for n in names),
                           timeout=600)
    assert len(world.nodes()) == 2
    by_app = {objects.labels(p)["app"]: p["spec"]["nodeName"] for p in world.running_pods()}
    assert by_app["ds-hostport-8000"] == by_app["ds-arm64"]
    assert by_app["ds-hostport-9000"] == by_app["ds-amd64"]
    ours = {objects.name(p) for p in world.running_pods()}
    failed = [e["regarding"]["name"] for e in world.events("FailedScheduling")
              if e.get("reportingController") == "karpenter"
              and e["regarding"]["name"] in ours]
    assert failed == [], f"pods had FailedScheduling events from Karpenter: {failed}"
    expect_no_controller_errors(world)


# -- CRD Hash -------------------------------------------------------------------------------


def test_nodepool_has_its_hash() -> None:
    """integration_test.go Describe("CRD Hash") It("should have NodePool hash")."""
    world = World()
    world.apply(NODE_CLASS, suite_pool())
    world.advance(5)
    stored = world.cluster.get("NodePool", "default")
    found = objects.annotations(stored).get(hashes.NODEPOOL_HASH)
    assert found is not None
    assert found == hashes.nodepool_hash(NodePool.model_validate(stored))


# -- Utilization ----------------------------------------------------------------------------


def test_one_pod_per_node() -> None:
    """integration_test.go Describe("Utilization") It("should provision one pod per node").

    A hundred do-not-disrupt pods, each asking 1800m CPU less the DaemonSet overhead (none
    here) and refusing a node another of them holds: a hundred nodes."""
    world = World()
    label = {"app": "large-app"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": label}}]}}
    world.apply(NODE_CLASS, suite_pool(),
                deployment("large-app", 100, labels=label, annotations={DO_NOT_DISRUPT: "true"},
                           requests={"cpu": "1800m"}, affinity=anti))
    assert world.run_until(lambda: len(healthy(world, label)) == 100, timeout=600)
    assert len(world.nodes()) == 100
    assert len({p["spec"]["nodeName"] for p in healthy(world, label)}) == 100
    expect_no_controller_errors(world)


# -- Validation -----------------------------------------------------------------------------


def requirement(key: str, operator: str, values: list[str],
                min_values: int | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator, "values": values}
    if min_values is not None:
        found["minValues"] = min_values
    return found


def replaced_requirement(replacing: dict[str, Any]) -> dict[str, Any]:
    """Karpenter's test.ReplaceRequirements: the suite pool's requirement of that key is
    replaced (or the requirement added)."""
    body = suite_pool()
    listed = body["spec"]["template"]["spec"]["requirements"]
    kept = [r for r in listed if r["key"] != replacing["key"]]
    body["spec"]["template"]["spec"]["requirements"] = [*kept, replacing]
    return body


def labelled(labels: dict[str, str]) -> dict[str, Any]:
    return suite_pool(labels=labels)


def consolidating(policy: str, after: str) -> dict[str, Any]:
    return suite_pool(disruption={"consolidationPolicy": policy, "consolidateAfter": after})


TYPES = ["insance-type-1", "insance-type-2"]  # sic, as Karpenter spells them
VALIDATION = [
    pytest.param(labelled({"karpenter.sh/nodepool": "my-custom-nodepool"}), False,
                 id="should error when a restricted label is used in labels "
                    "(karpenter.sh/nodepool)"),
    pytest.param(labelled({"karpenter.sh/custom-label": "custom-value"}), False,
                 id="should error when a restricted label is used in labels "
                    "(karpenter.sh/custom-label)"),
    pytest.param(labelled({"node-restriction.kubernetes.io/custom-label": "custom-value"}),
                 True, id="should allow a restricted label exception to be used in labels "
                          "(node-restriction.kubernetes.io/custom-label)"),
    pytest.param(labelled({"subdomainnode-restriction.kubernetes.io/custom-label":
                           "custom-value"}),
                 True, id="should allow a restricted label exception to be used in labels "
                          "([*].node-restriction.kubernetes.io/custom-label)"),
    pytest.param(replaced_requirement(requirement("karpenter.sh/nodepool", "In", ["default"])),
                 False, id="should error when a requirement references a restricted label "
                           "(karpenter.sh/nodepool)"),
    pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, "In", [])), False,
                 id="should error when a requirement uses In but has no values"),
    pytest.param(replaced_requirement(requirement("karpenter.sh/capacity-type", "within",
                                                  ["spot"])),
                 False, id="should error when a requirement uses an unknown operator"),
    *(pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, op,
                                                    ["1000000", "2000000"])),
                   False, id=f"should error when {op} is used with multiple integer values")
      for op in ("Gt", "Lt", "Gte", "Lte")),
    pytest.param(consolidating("WhenEmpty", "-1s"), False,
                 id="should error when consolidateAfter is negative"),
    pytest.param(consolidating("WhenEmptyOrUnderutilized", "1m"), True,
                 id="should succeed when ConsolidationPolicy=WhenEmptyOrUnderutilized is used "
                    "with consolidateAfter"),
    pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, "In", TYPES, -1)), False,
                 id="should error when minValues for a requirement key is negative"),
    pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, "In", TYPES, 0)), False,
                 id="should error when minValues for a requirement key is zero"),
    pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, "In", TYPES, 51)), False,
                 id="should error when minValues for a requirement key is more than 50"),
    pytest.param(replaced_requirement(requirement(INSTANCE_TYPE, "In", TYPES, 3)), False,
                 id="should error when minValues for a requirement key is greater than the "
                    "values specified within In operator"),
]


@pytest.mark.parametrize(("body", "admitted"), VALIDATION)
def test_nodepool_validation(body: dict[str, Any], admitted: bool) -> None:
    """integration_test.go Describe("Validation") Context("NodePool"): each It creates the
    suite's NodePool with one change against the API server (the id is the It)."""
    world = World()
    if admitted:
        world.apply(body)
        assert exists(world, "NodePool", "default")
    else:
        with pytest.raises(InvalidError):
            world.apply(body)
        assert not exists(world, "NodePool", "default")


# -- Repair Policy --------------------------------------------------------------------------

REPAIRING = ControllerOptions(node_repair=True)
MY_APP = {"app": "my-app"}


def one_protected_pod(world: World, pool: dict[str, Any] | None = None
                      ) -> tuple[dict[str, Any], str]:
    """The Repair Policy BeforeEach: one do-not-disrupt pod on one initialized node."""
    world.apply(NODE_CLASS, pool or suite_pool(),
                deployment("my-app", annotations={DO_NOT_DISRUPT: "true"}, grace=0))
    assert world.run_until(lambda: len(healthy(world, MY_APP)) == 1, timeout=600)
    (node,) = world.nodes()
    assert world.run_until(
        lambda: objects.labels(world.nodes()[0]).get("karpenter.sh/initialized") == "true")
    return healthy(world, MY_APP)[0], objects.name(node)


def make_unhealthy(world: World, node_name: str, status: str, hours_ago: float) -> None:
    """Karpenter's ReplaceNodeConditions then a status update: Ready is `status` since
    `hours_ago`."""
    node = world.cluster.get("Node", node_name)
    since = format_time(world.clock.now() - timedelta(hours=hours_ago))
    kept = [c for c in objects.conditions(node) if c.get("type") != "Ready"]
    conditions = [*kept, {"type": "Ready", "status": status, "reason": "KubeletNotReady",
                          "lastTransitionTime": since, "lastHeartbeatTime": since}]
    world.cluster.patch("Node", node_name, {"status": {"conditions": conditions}},
                        subresource="status")
    world.deliver()


def expect_repaired(world: World, old_pod: dict[str, Any], node_name: str) -> None:
    """EventuallyExpectNotFound(pod, node) then EventuallyExpectHealthyPodCount(1)."""
    assert world.run_until(lambda: not exists(world, "Node", node_name)
                           and not exists(world, "Pod", objects.name(old_pod), "default"),
                           timeout=600)
    assert world.run_until(lambda: len(healthy(world, MY_APP)) == 1, timeout=600)
    assert healthy(world, MY_APP)[0]["spec"]["nodeName"] != node_name
    expect_no_controller_errors(world)


@pytest.mark.parametrize("status", [
    pytest.param("False", id="Node Ready False"),
    pytest.param("Unknown", id="Node Ready Unknown"),
])
def test_repair_conditions(status: str) -> None:
    """integration_test.go Describe("Repair Policy") DescribeTable("Conditions") Entries
    "Node Ready False" and "Node Ready Unknown" (unhealthy for 31 hours)."""
    world = World(options=REPAIRING)
    old_pod, node_name = one_protected_pod(world)
    make_unhealthy(world, node_name, status, hours_ago=31)
    expect_repaired(world, old_pod, node_name)


def test_repair_ignores_disruption_budgets() -> None:
    """integration_test.go Describe("Repair Policy") It("should ignore disruption
    budgets")."""
    world = World(options=REPAIRING)
    old_pod, node_name = one_protected_pod(
        world, suite_pool(disruption={"budgets": [{"nodes": "0"}]}))
    make_unhealthy(world, node_name, "False", hours_ago=31 / 60)
    expect_repaired(world, old_pod, node_name)


def test_repair_ignores_do_not_disrupt_on_the_node() -> None:
    """integration_test.go Describe("Repair Policy") It("should ignore do-not-disrupt
    annotation on node")."""
    world = World(options=REPAIRING)
    old_pod, node_name = one_protected_pod(world)
    world.cluster.patch("Node", node_name, {"metadata": {"annotations": {DO_NOT_DISRUPT: "true"}}})
    make_unhealthy(world, node_name, "False", hours_ago=31 / 60)
    expect_repaired(world, old_pod, node_name)


def test_repair_ignores_the_nodepool_termination_grace_period() -> None:
    """integration_test.go Describe("Repair Policy") It("should ignore terminationGracePeriod
    on the nodepool"): with an hour's terminationGracePeriod the do-not-disrupt pod is still
    gone (with its node) well before the hour."""
    world = World(options=REPAIRING)
    old_pod, node_name = one_protected_pod(world, suite_pool(terminationGracePeriod="1h"))
    make_unhealthy(world, node_name, "False", hours_ago=31 / 60)
    started = world.clock.now()
    expect_repaired(world, old_pod, node_name)
    assert world.clock.now() - started < timedelta(minutes=15)


# -- DoNotDisrupt ---------------------------------------------------------------------------


def active(world: World, name: str) -> bool:
    """The pod exists and is not being deleted (ConsistentlyExpectActivePods)."""
    found = [p for p in world.pods() if objects.name(p) == name]
    return bool(found) and not objects.is_deleting(found[0])


def test_do_not_disrupt_grace_periods_drain_in_turn() -> None:
    """integration_test.go Describe("DoNotDisrupt") Context("Grace Period") It("should drain
    pods according to their grace period durations and block indefinitely for 'true'")."""
    world = World()
    protected = {"short-grace": "1m", "long-grace": "2m", "indefinite-grace": "true"}
    world.apply(NODE_CLASS, suite_pool(), *(
        pod(name, annotations={DO_NOT_DISRUPT: value}, requests={"cpu": "10m"}, grace=0)
        for name, value in protected.items()))
    assert world.run_until(lambda: all(healthy(world, {"app": n}) for n in protected),
                           timeout=600)
    (claim,) = world.nodeclaims()
    assert len(world.nodes()) == 1
    # The grace periods count from each pod's start, as Karpenter reads it back.
    starts = {objects.name(p): parse_time(p["status"]["startTime"]) for p in world.pods()}
    short_expiry = starts["short-grace"] + timedelta(minutes=1)
    long_expiry = starts["long-grace"] + timedelta(minutes=2)

    world.delete("NodeClaim", objects.name(claim))
    # All three stay until the short grace period ends.
    assert world.clock.now() < short_expiry - timedelta(seconds=5)
    while world.clock.now() < short_expiry - timedelta(seconds=5):
        world.advance(5)
        assert all(active(world, name) for name in protected), world.clock.now()
    assert world.run_until(lambda: not exists(world, "Pod", "short-grace", "default"),
                           timeout=60)
    assert world.clock.now() < long_expiry - timedelta(seconds=5)
    while world.clock.now() < long_expiry - timedelta(seconds=5):
        world.advance(5)
        assert active(world, "long-grace") and active(world, "indefinite-grace")
    assert world.run_until(lambda: not exists(world, "Pod", "long-grace", "default"),
                           timeout=60)
    for _ in range(6):
        world.advance(5)
        assert active(world, "indefinite-grace")

    world.cluster.patch("Pod", "indefinite-grace",
                        {"metadata": {"annotations": {DO_NOT_DISRUPT: None}}}, "default")
    assert world.run_until(lambda: not exists(world, "Pod", "indefinite-grace", "default"),
                           timeout=120)
    assert world.run_until(lambda: not world.nodeclaims(), timeout=300)
    expect_no_controller_errors(world)
