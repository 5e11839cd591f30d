"""Drift end to end, ported from Karpenter's regression suite
(test/suites/regression/drift_test.go): a NodePool template change drifts its NodeClaims
and they are rolled within the pool's budget (empty ones deleted, busy ones deleted or
replaced), never while a budget is zero, and a replacement that never registers or never
initializes leaves the drifted node in place, untainted. As in the suite, nodes carry a
testing finalizer where a story counts nodes that are already terminating."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.api.nodepool import NodePool
from nodewright.cloud.sim import SimSettings
from nodewright.cluster import objects
from tests.harness import CAPACITY_TYPE, NODE_CLASS, World
from tests.regression_b.helpers import (
    DO_NOT_DISRUPT,
    add_testing_finalizer,
    annotate_template,
    claim_names,
    consistently,
    deployment,
    drifted,
    eventually,
    expect_disruptions_until_none_left,
    expect_no_disruptions,
    healthy_pods,
    node_of,
    remove_testing_finalizer,
    suite_pool,
    tainted_nodes,
)

LARGE_APP = {"app": "large-app"}
INFLATE = {"app": "inflate"}
TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge")


def large_app(replicas: int = 1, *, do_not_disrupt: bool = True, **options: Any
              ) -> dict[str, Any]:
    """The Describe's Deployment: pods with do-not-disrupt (so that a story looks at its
    node before it is disrupted) and no termination grace."""
    return deployment("large-app", replicas, labels=LARGE_APP, grace_seconds=0,
                      annotations={DO_NOT_DISRUPT: "true"} if do_not_disrupt else None,
                      **options)


def start(*manifests: Any, world: World | None = None) -> World:
    world = world or World()
    world.apply(NODE_CLASS, *manifests)
    return world


def fleet_of(world: World, count: int) -> set[str]:
    """EventuallyExpectCreatedNodeClaimCount and EventuallyExpectCreatedNodeCount."""
    eventually(world, lambda: len(world.nodeclaims()) == count
               and len(world.nodes()) == count)
    return claim_names(world)


def finalize_nodes(world: World) -> list[str]:
    nodes = [objects.name(n) for n in world.nodes()]
    for node in nodes:
        add_testing_finalizer(world, "Node", node)
    return nodes


def drift_annotation(world: World) -> None:
    annotate_template(world, {"test": "annotation"})


def originals_disrupted(world: World, originals: set[str]) -> bool:
    """Every original NodeClaim is gone or its instance terminating."""
    return all(objects.condition_is_true(c, "InstanceTerminating")
               for c in world.nodeclaims() if objects.name(c) in originals)


def without_do_not_disrupt(world: World, pod: dict[str, Any]) -> None:
    world.cluster.patch("Pod", objects.name(pod), {"metadata": {"annotations": {
        DO_NOT_DISRUPT: None}}}, "default")
    world.deliver()


# -- Budgets ----------------------------------------------------------------------------


def test_empty_drift_respects_the_budget() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should respect budgets for empty
    drift")."""
    world = start(suite_pool(budgets=[{"nodes": "50%"}]),
                  large_app(3, spread_by_hostname=True))
    originals = fleet_of(world, 3)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 3)
    finalize_nodes(world)
    world.delete("Deployment", "large-app", "default")
    drift_annotation(world)
    eventually(world, lambda: drifted(world, originals))
    # 50% of three nodes, rounded up: two at a time.
    most = expect_disruptions_until_none_left(
        world, 3, 2, 300, until=lambda: originals_disrupted(world, originals))
    assert most == 2
    assert len(world.nodeclaims()) == 3 and claim_names(world) == originals  # no replacement


def force_pods_to_spread(world: World, nodes: list[str], labels: dict[str, str]) -> None:
    """ForcePodsToSpread: cordon a node with more than its share and delete the extra pods
    until they come back elsewhere."""
    pods = healthy_pods(world, labels)
    share = -(-len(pods) // len(nodes))
    for node in nodes:
        here = [p for p in healthy_pods(world, labels) if p["spec"]["nodeName"] == node]
        if len(here) <= share:
            continue
        world.cluster.patch("Node", node, {"spec": {"unschedulable": True}})
        for pod in here[share:]:
            world.delete("Pod", objects.name(pod), "default")
        eventually(world, lambda: len(healthy_pods(world, labels)) == len(pods), timeout=60)


def test_non_empty_delete_drift_respects_the_budget() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should respect budgets for
    non-empty delete drift")."""
    world = start(suite_pool(budgets=[{"nodes": "50%"}]), large_app(9, max_skew=3))
    originals = fleet_of(world, 3)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 9)
    world.scale("large-app", 3)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 3
               and len(world.pods()) == 3)
    nodes = [objects.name(n) for n in world.nodes()]
    force_pods_to_spread(world, nodes, LARGE_APP)
    assert sorted(p["spec"]["nodeName"] for p in healthy_pods(world, LARGE_APP)) == sorted(
        nodes)
    finalize_nodes(world)
    drift_annotation(world)
    eventually(world, lambda: drifted(world, originals))
    for pod in healthy_pods(world, LARGE_APP):
        without_do_not_disrupt(world, pod)
    most = expect_disruptions_until_none_left(
        world, 3, 2, 300, until=lambda: len(terminating(world)) == 2)
    assert most == 2
    # Deleted, not replaced: their pods moved to the third drifted node, where the
    # Deployment's new pods carry do-not-disrupt again and hold it.
    assert claim_names(world) == originals
    (kept,) = originals - terminating(world)
    assert not objects.is_deleting(world.cluster.get("NodeClaim", kept))
    assert tainted_nodes(world) == sorted(node_of(world, c) for c in terminating(world))


def terminating(world: World) -> set[str]:
    return {objects.name(c) for c in world.nodeclaims()
            if objects.condition_is_true(c, "InstanceTerminating")}


def test_non_empty_replace_drift_respects_the_budget() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should respect budgets for
    non-empty replace drift")."""
    world = start(suite_pool(budgets=[{"nodes": "3"}]),
                  deployment("large-app", 5, labels=LARGE_APP, spread_by_hostname=True))
    originals = fleet_of(world, 5)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 5)
    nodes = finalize_nodes(world)
    annotate_template(world, {"test-annotation": "drift"})
    most = expect_disruptions_until_none_left(
        world, 5, 3, 600, until=lambda: originals_disrupted(world, originals))
    assert most == 3
    for node in nodes:
        remove_testing_finalizer(world, "Node", node)
    for claim in originals:
        remove_testing_finalizer(world, "NodeClaim", claim)
    eventually(world, lambda: not originals & claim_names(world)
               and not set(nodes) & {objects.name(n) for n in world.nodes()})
    assert len(world.nodeclaims()) == 5 and len(world.nodes()) == 5
    assert len(healthy_pods(world, LARGE_APP)) == 5


def test_a_zero_budget_blocks_drift() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should not allow drift if the
    budget is fully blocking")."""
    world = start(suite_pool(budgets=[{"nodes": "0"}]), large_app(do_not_disrupt=False))
    originals = fleet_of(world, 1)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 1)
    drift_annotation(world)
    eventually(world, lambda: drifted(world, originals))
    expect_no_disruptions(world, 1, 60)


def test_a_zero_budget_blocks_drift_during_its_scheduled_window() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should not allow drift if the
    budget is fully blocking during a scheduled time")."""
    world = World()
    # A 30-minute window that opened 15 minutes ago (UTC).
    opened = world.clock.now() - timedelta(minutes=15)
    window = {"nodes": "0", "schedule": f"{opened.minute} {opened.hour} * * *",
              "duration": "30m"}
    start(suite_pool(budgets=[window]), large_app(do_not_disrupt=False), world=world)
    originals = fleet_of(world, 1)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 1)
    drift_annotation(world)
    eventually(world, lambda: drifted(world, originals))
    expect_no_disruptions(world, 1, 60)


# -- NodePool Drift (DescribeTable) -----------------------------------------------------

STARTUP_TAINT = {"key": "example.com/another-taint-2", "effect": "PreferNoSchedule"}

TEMPLATE_CHANGES: dict[str, dict[str, Any]] = {
    "Annotations": {"template_annotations": {"keyAnnotationTest": "valueAnnotationTest"}},
    "Labels": {"template_labels": {"keyLabelTest": "valueLabelTest"}},
    "Taints": {"taints": [dict(STARTUP_TAINT)]},
    "Start-up Taints": {"startupTaints": [dict(STARTUP_TAINT)]},
    "NodeRequirements": {},  # spot instead of on-demand, below
}


def changed_pool(entry: str) -> dict[str, Any]:
    body = suite_pool(**TEMPLATE_CHANGES[entry])
    if entry == "NodeRequirements":
        for requirement in body["spec"]["template"]["spec"]["requirements"]:
            if requirement["key"] == CAPACITY_TYPE:
                requirement["values"] = ["spot"]
    return body


@pytest.mark.parametrize("entry", list(TEMPLATE_CHANGES))
def test_a_nodepool_template_change_drifts_and_replaces_the_node(entry: str) -> None:
    """Karpenter test/suites/regression/drift_test.go DescribeTable("NodePool Drift")
    Entries "Annotations", "Labels", "Taints", "Start-up Taints", "NodeRequirements"."""
    # Nothing removes startup taints here but the story, as in the suite.
    world = World(sim=SimSettings(startup_taint_delay=None))
    start(large_app(), suite_pool(), world=world)
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 1)
    (pod,) = healthy_pods(world, LARGE_APP)
    (claim,) = fleet_of(world, 1)
    node = node_of(world, claim)

    world.apply(changed_pool(entry))
    eventually(world, lambda: drifted(world, {claim}))
    without_do_not_disrupt(world, pod)

    if entry == "Start-up Taints":
        eventually(world, lambda: len(world.nodes()) == 2)
        (new,) = [n for n in world.nodes() if objects.name(n) != node]
        taints = new["spec"].get("taints") or []
        assert STARTUP_TAINT in taints
        world.cluster.patch("Node", objects.name(new), {"spec": {"taints": [
            t for t in taints if t.get("key") != STARTUP_TAINT["key"]]}})
        world.deliver()

    eventually(world, lambda: objects.name(pod) not in pod_names_now(world)
               and node not in {objects.name(n) for n in world.nodes()})
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 1)
    (replacement,) = world.nodeclaims()
    if entry == "NodeRequirements":
        assert objects.labels(replacement)[CAPACITY_TYPE] == "spot"


def pod_names_now(world: World) -> set[str]:
    return {objects.name(p) for p in world.pods()}


def test_a_foreign_hash_version_restamps_nodeclaims_instead_of_drifting_them() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should update the nodepool-hash
    annotation on the nodepool and nodeclaim when the nodepool's nodepool-hash-version
    annotation does not match the controller hash version")."""
    world = start(large_app(), suite_pool())
    eventually(world, lambda: len(healthy_pods(world, LARGE_APP)) == 1)
    (claim,) = fleet_of(world, 1)

    def stamped(expected: str) -> bool:
        pool = objects.annotations(world.cluster.get("NodePool", "default"))
        ours = objects.annotations(world.cluster.get("NodeClaim", claim))
        wanted = {hashes.NODEPOOL_HASH: expected,
                  hashes.NODEPOOL_HASH_VERSION: hashes.NODEPOOL_HASH_VERSION_VALUE}
        return all(pool.get(k) == v and ours.get(k) == v for k, v in wanted.items())

    eventually(world, lambda: stamped(pool_hash(world)), timeout=30)
    first = pool_hash(world)

    # The NodeClaim first, as the hash controller only runs on NodePool changes.
    world.cluster.patch("NodeClaim", claim, {"metadata": {"annotations": {
        hashes.NODEPOOL_HASH: "test-hash-2", hashes.NODEPOOL_HASH_VERSION: "test-hash-version-2"}}})
    pool = world.cluster.get("NodePool", "default")
    pool["metadata"]["annotations"] = {**objects.annotations(pool),
                                       hashes.NODEPOOL_HASH: "test-hash-1",
                                       hashes.NODEPOOL_HASH_VERSION: "test-hash-version-1"}
    pool["spec"]["template"].setdefault("metadata", {})["annotations"] = {
        "test-key": "test-value"}
    world.cluster.update(pool)
    world.deliver()
    expected = pool_hash(world)
    assert expected != first
    eventually(world, lambda: stamped(expected), timeout=60)

    def not_drifted() -> None:
        assert objects.condition(world.cluster.get("NodeClaim", claim), "Drifted") is None
    consistently(world, not_drifted, 60)


def pool_hash(world: World) -> str:
    return hashes.nodepool_hash(NodePool.model_validate(world.cluster.get("NodePool",
                                                                          "default")))


# -- Failure ----------------------------------------------------------------------------


def inflate_pool() -> dict[str, Any]:
    """The suite's NodePool with `disruption: {}`: the API's defaults, a 10% budget."""
    body = suite_pool()
    body["spec"]["disruption"] = {}
    return body


def two_inflate_nodes(world: World) -> set[str]:
    start(deployment("inflate", 2, labels=INFLATE, spread_by_hostname=True), inflate_pool(),
          world=world)
    return fleet_of(world, 2)


def expect_originals_kept(world: World, originals: set[str]) -> None:
    def kept() -> None:
        assert originals <= claim_names(world)
    consistently(world, kept, 120)


def test_a_drifted_node_stays_when_its_replacement_never_registers() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should not disrupt a drifted node
    if the replacement node never registers")."""
    world = World()
    originals = two_inflate_nodes(world)
    # Karpenter blocks the registration of Nodes labelled registration=fail with an
    # admission policy; here the new instances' kubelets never register.
    world.cloud.settings = dataclasses.replace(world.cloud.settings,
                                               registration_delay=24 * 3600.0)
    pool = inflate_pool()
    pool["spec"]["template"]["metadata"] = {"labels": {"registration": "fail"}}
    world.apply(pool)
    eventually(world, lambda: drifted(world, originals))
    eventually(world, lambda: len(tainted_nodes(world)) >= 1)
    tainted = tainted_nodes(world)
    assert len(tainted) == 1  # the default budget, 10% of two nodes
    eventually(world, lambda: not set(tainted) & set(tainted_nodes(world)), timeout=11 * 60)
    expect_originals_kept(world, originals)


def test_a_drifted_node_stays_when_its_replacement_never_initializes() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should not disrupt a drifted node
    if the replacement node registers but never initialized")."""
    world = World(sim=SimSettings(startup_taint_delay=None))
    originals = two_inflate_nodes(world)
    pool = inflate_pool()
    pool["spec"]["template"]["spec"]["startupTaints"] = [
        {"key": "example.com/taint", "effect": "PreferNoSchedule"}]
    world.apply(pool)
    eventually(world, lambda: drifted(world, originals))
    eventually(world, lambda: len(tainted_nodes(world)) >= 1)
    tainted = tainted_nodes(world)
    assert len(tainted) == 1
    eventually(world, lambda: not set(tainted) & set(tainted_nodes(world)), timeout=11 * 60)
    # The replacement that never initialized is kept.
    assert len(world.nodes()) == 3 and len(world.nodeclaims()) == 3
    expect_originals_kept(world, originals)


def test_unhealthy_pod_disruption_budgets_block_drift() -> None:
    """Karpenter test/suites/regression/drift_test.go It("should not drift any nodes if their
    PodDisruptionBudgets are unhealthy"): two pods, one per node, whose readiness never
    passes (kwok's `unhealthy` stage, as the suite labels them), behind a budget of
    minAvailable 1: the PDB allows no disruption, so drifted nodes stay."""
    unhealthy = {**INFLATE, "kwok.x-k8s.io/stage": "unhealthy"}
    inflate = deployment("inflate", 2, labels=unhealthy, spread_by_hostname=True)
    inflate["spec"]["selector"] = {"matchLabels": INFLATE}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "inflate", "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": unhealthy}}}
    world = start(inflate, suite_pool(), pdb)
    originals = fleet_of(world, 2)
    eventually(world, lambda: len([p for p in world.running_pods()
                                   if objects.labels(p).get("app") == "inflate"]) == 2)
    assert healthy_pods(world, INFLATE) == []  # bound and running, never ready

    drift_annotation(world)
    eventually(world, lambda: drifted(world, originals))
    expect_no_disruptions(world, 2, 60)
    assert claim_names(world) == originals
