"""Static NodePools (spec.replicas), ported from Karpenter's static provisioning and
deprovisioning suites and its static drift tests: the pool keeps its replica count
whatever the pods do, scales with `replicas`, respects limits.nodes, is never
consolidated, and rolls drifted nodes one replacement at a time."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright import metrics
from nodewright.cluster.api import ApiError
from nodewright.controllers.static.provisioning import StaticProvisioning
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.static.helpers import (
    DYNAMIC_POOL,
    claims_of,
    live_claims_of,
    nodes_of,
    static_pool,
    workload,
)


def test_a_static_nodepool_launches_its_replicas_without_any_pod(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=3))
    assert world.settle()
    claims = claims_of(world, "static")
    assert len(claims) == 3 and len(nodes_of(world, "static")) == 3
    for claim in claims:
        requirements = {r["key"] for r in claim["spec"]["requirements"]}
        # Not narrowed to instance types: the cloud provider picks the cheapest it allows.
        assert "node.kubernetes.io/instance-type" not in requirements
        assert "resources" not in claim["spec"]
        assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.large"
        assert claim["metadata"]["labels"]["team"] == "static"
        conditions = {c["type"] for c in claim["status"]["conditions"]}
        assert "Consolidatable" not in conditions  # static nodes are never consolidated
    pool = world.cluster.get("NodePool", "static")
    assert pool["status"]["nodes"] == 3
    expect_no_controller_errors(world)


def test_without_the_static_capacity_gate_a_static_nodepool_launches_nothing() -> None:
    world = World()  # StaticCapacity off, as in Karpenter
    world.apply(NODE_CLASS, static_pool(replicas=3), DYNAMIC_POOL)
    assert world.settle()
    assert claims_of(world, "static") == []
    # Nor is it used for pods: they get the dynamic NodePool's capacity.
    world.apply(workload("grow", 2, "1"))
    assert world.settle()
    assert claims_of(world, "static") == [] and world.pending_pods() == []


def test_a_static_nodepool_with_zero_replicas_launches_nothing(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=0))
    assert world.settle()
    assert claims_of(world, "static") == []


def test_scaling_replicas_up_adds_nodes_and_down_removes_the_empty_ones_first(
    world: World,
) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=2))
    assert world.settle()
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 5}})
    assert world.settle()
    assert len(live_claims_of(world, "static")) == 5
    # Pods land on two of them (the static nodes are ordinary capacity for pods).
    world.apply(workload("busy", 2, "1", node_selector={"team": "static"},
                         anti_affinity=True))
    assert world.settle()
    busy = {pod["spec"]["nodeName"] for pod in world.running_pods()}
    assert len(busy) == 2

    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 2}})
    assert world.settle()
    remaining = {n["metadata"]["name"] for n in nodes_of(world, "static")}
    assert remaining == busy  # the three empty nodes went, the busy ones stayed
    assert len(world.running_pods()) == 2
    expect_no_controller_errors(world)


def test_scale_down_keeps_nodes_with_do_not_disrupt_pods_longest(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=3))
    assert world.settle()
    world.apply(workload("keep", 1, "1", node_selector={"team": "static"},
                         annotations={"karpenter.sh/do-not-disrupt": "true"}))
    world.apply(workload("move", 2, "1", node_selector={"team": "static"},
                         anti_affinity=True))
    assert world.settle()
    kept_on = next(p["spec"]["nodeName"] for p in world.running_pods()
                   if p["metadata"]["name"].startswith("keep"))
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 1}})
    assert world.settle()
    assert [n["metadata"]["name"] for n in nodes_of(world, "static")] == [kept_on]


def test_limits_nodes_caps_the_replicas(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=5, node_limit=3))
    assert world.settle()
    assert len(claims_of(world, "static")) == 3
    world.cluster.patch("NodePool", "static", {"spec": {"limits": {"nodes": "4"}}})
    assert world.settle()
    assert len(claims_of(world, "static")) == 4


def test_a_deleted_static_nodeclaim_is_replaced(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=2))
    assert world.settle()
    victim = claims_of(world, "static")[0]["metadata"]["name"]
    world.delete("NodeClaim", victim)
    assert world.settle()
    names = [c["metadata"]["name"] for c in claims_of(world, "static")]
    assert len(names) == 2 and victim not in names


def test_pending_pods_never_launch_static_capacity(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=1), DYNAMIC_POOL)
    assert world.settle()
    world.apply(workload("grow", 6, "1"))
    assert world.settle()
    assert len(claims_of(world, "static")) == 1
    assert len(claims_of(world, "dynamic")) >= 1
    assert world.pending_pods() == []


def test_static_nodes_are_not_consolidated_even_when_empty(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=3, consolidate_after="0s"))
    assert world.settle()
    before = sorted(c["metadata"]["name"] for c in claims_of(world, "static"))
    world.advance(600)
    assert world.settle()
    assert sorted(c["metadata"]["name"] for c in claims_of(world, "static")) == before
    # The explanation says why; Karpenter publishes no event for it, nor do we.
    controller = world.controllers.disruption
    assert controller is not None
    causes = {d.cause for d in controller.decisions}
    assert "StaticNodePool" in causes
    assert not [e for e in world.events(reason="Unconsolidatable")
                if "static" in e.get("note", "")]


def test_drifted_static_nodes_are_replaced_within_the_drift_budget(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=3, drift_budget="1"))
    assert world.settle()
    before = {c["metadata"]["name"] for c in claims_of(world, "static")}
    most = 0

    def step() -> bool:
        nonlocal most
        most = max(most, len(live_claims_of(world, "static")))
        names = {c["metadata"]["name"] for c in claims_of(world, "static")}
        return not (names & before) and len(nodes_of(world, "static", ready=True)) == 3

    body = static_pool(replicas=3, drift_budget="1", labels={"team": "static", "rev": "2"})
    world.apply(body)
    assert world.run_until(step, timeout=3600)
    assert most == 4  # one replacement at a time: replicas + the Drifted budget
    for claim in claims_of(world, "static"):
        assert claim["metadata"]["labels"]["rev"] == "2"
    expect_no_controller_errors(world)


def test_static_drift_waits_for_room_under_limits_nodes(world: World) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=2, node_limit=2))
    assert world.settle()
    before = {c["metadata"]["name"] for c in claims_of(world, "static")}
    world.apply(static_pool(replicas=2, node_limit=2, labels={"team": "static", "rev": "2"}))
    assert world.settle()
    # No room for a replacement: the drifted nodes stay until the limit allows one more.
    assert {c["metadata"]["name"] for c in claims_of(world, "static")} == before
    world.cluster.patch("NodePool", "static", {"spec": {"limits": {"nodes": "3"}}})
    assert world.run_until(
        lambda: not ({c["metadata"]["name"] for c in claims_of(world, "static")} & before)
        and len(nodes_of(world, "static", ready=True)) == 2, timeout=3600)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spec": {"replicas": None}}, "Cannot transition NodePool between static"),
        ({"spec": {"limits": {"cpu": "10"}}}, "only 'limits.nodes' is supported"),
        ({"spec": {"weight": 10}}, "'weight' is not supported on static NodePools"),
    ],
)
def test_the_api_server_refuses_what_karpenter_refuses_on_static_nodepools(
    world: World, change: dict[str, Any], message: str,
) -> None:
    world.apply(NODE_CLASS, static_pool(replicas=1))
    with pytest.raises(ApiError, match=message):
        world.cluster.patch("NodePool", "static", change)


def test_a_dynamic_nodepool_cannot_become_static(world: World) -> None:
    world.apply(NODE_CLASS, DYNAMIC_POOL)
    with pytest.raises(ApiError, match="Cannot transition NodePool between static"):
        world.cluster.patch("NodePool", "dynamic", {"spec": {"replicas": 2}})


def test_plan_launches_nothing_from_a_static_nodepool(
    tmp_path: Any, capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    import yaml

    from nodewright.cli import main
    from tests.static.helpers import DYNAMIC_POOL

    files = tmp_path / "manifests.yaml"
    files.write_text(yaml.safe_dump_all([
        yaml.safe_load(NODE_CLASS), static_pool(replicas=3), DYNAMIC_POOL,
        workload("app", 2, "1")]))
    code = main(["plan", str(files), "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    plan = json.loads(captured.out)
    assert {claim["nodepool"] for claim in plan["nodeclaims"]} == {"dynamic"}
    assert "static NodePool" in captured.err


def _created(pool: str) -> float:
    return metrics.NODECLAIMS_CREATED.labels(
        reason="provisioned", nodepool=pool, min_values_relaxed="false")._value.get()


def test_a_static_nodepool_that_cannot_launch_retries_with_a_growing_backoff(
        world: World) -> None:
    """No offering can take the pool's NodeClaims (reserved capacity only, and there is no
    reservation): each is deleted as it fails to launch. Karpenter v1.14.1 creates the next
    at once; Nodewright waits 10 s, then 20, 40, ... up to 5 minutes (a simulation, where
    nothing takes time, would otherwise never leave that instant)."""
    before = _created("static")
    world.apply(NODE_CLASS, static_pool(replicas=2, capacity_types=("reserved",)))

    world.advance(10 * 60)

    attempts = _created("static") - before
    # Two NodeClaims each try, at 0, 10, 30, 70, 150, 310 s (610 s is past the window).
    assert attempts == 2 * 6
    assert live_claims_of(world, "static") == [] or all(
        not (c.get("status") or {}).get("providerID") for c in live_claims_of(world, "static"))
    expect_no_controller_errors(world)


def test_a_launch_resets_the_backoff(world: World) -> None:
    """Failures double the wait; a NodeClaim of the pool that launched starts it over."""
    world.apply(NODE_CLASS, static_pool(replicas=1))
    assert world.settle()
    (claim,) = claims_of(world, "static")
    controller = world.controllers.get("static.provisioning", StaticProvisioning)
    assert controller is not None
    unlaunched = {"metadata": {"name": "x", "labels": claim["metadata"]["labels"]}}

    waits = []
    for _ in range(3):
        controller._on_nodeclaim(WatchEvent("DELETED", unlaunched))
        controller._on_nodeclaim(WatchEvent("DELETED", unlaunched))  # the same round
        retry_at = controller._backoff["static"].retry_at
        waits.append((retry_at - world.clock.now()).total_seconds())
        world.clock.advance(waits[-1])
    controller._on_nodeclaim(WatchEvent("MODIFIED", claim))

    assert waits == [10, 20, 40]
    assert "static" not in controller._backoff
