"""The NodeClaim consistency check: a Node that came up smaller than its NodeClaim
expected is reported on the NodeClaim (FailedConsistencyCheck, ConsistentStateFound=False).

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/consistency/suite_test.go
(Describe "NodeClaimController", Context "Node Shape")."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.copying import deep_copy
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.objects import condition
from nodewright.controllers.nodeclaim.consistency import (
    SCAN_PERIOD_SECONDS,
    NodeClaimConsistency,
    node_shape_issues,
)
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import World


def launched(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    world.apply(WORKSHOP)
    world.scale("inflate", 3)
    assert world.settle()
    (claim,) = world.nodeclaims()
    (node,) = world.nodes()
    return claim, node


def consistent_state(world: World) -> tuple[str, str] | None:
    (claim,) = world.nodeclaims()
    found = condition(claim, "ConsistentStateFound")
    return None if found is None else (found["status"], found["reason"])


def test_a_node_of_the_expected_shape_is_found_consistent(world: World) -> None:
    """Entry "should set consistent state found condition to true if there are no
    consistency issues"."""
    launched(world)
    world.advance(SCAN_PERIOD_SECONDS + 1)
    assert consistent_state(world) == ("True", "ConsistentStateFound")
    assert world.events("FailedConsistencyCheck") == []
    expect_no_controller_errors(world)


def test_a_node_with_half_the_memory_fails_the_consistency_check(world: World) -> None:
    """It "should detect issues that launch with much fewer resources than expected"."""
    claim, node = launched(world)
    expected = claim["status"]["capacity"]["memory"]  # 3788Mi on the workshop's type
    smaller = deep_copy(node)
    smaller["status"]["capacity"]["memory"] = "1894Mi"
    world.cluster.update(smaller, subresource="status")
    world.advance(SCAN_PERIOD_SECONDS + 1)
    notes = [e["note"] for e in world.events("FailedConsistencyCheck")]
    assert notes == [f"expected {expected} of resource memory, but found 1894Mi "
                     "(50.0% of expected)"]
    (event,) = world.events("FailedConsistencyCheck")
    assert (event["type"], event["regarding"]["kind"]) == ("Warning", "NodeClaim")
    assert consistent_state(world) == ("False", "ConsistencyCheckFailed")


def _claim(group: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "claim", "uid": "u1", "labels": {
            "karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true"}},
        "spec": {"nodeClassRef": {"group": group, "kind": kind, "name": "default"},
                 "resources": {"requests": {"cpu": "8", "memory": "64Gi", "pods": "5"}}},
        "status": {"providerID": "aws:///us-east-1a/i-1", "nodeName": "node-1",
                   "capacity": {"cpu": "16", "memory": "128Gi", "pods": "10"},
                   "conditions": [
                       {"type": "Initialized", "status": "True", "reason": "Initialized",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"},
                       {"type": "ConsistentStateFound", "status": "Unknown",
                        "reason": "AwaitingReconciliation",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }


class _Cluster:
    """Records status writes; the check must not make any for an unmanaged NodeClaim."""

    def __init__(self) -> None:
        self.writes: list[Any] = []

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        self.writes.append(args)
        return None

    def create(self, body: Any) -> Any:
        return body


def test_nodeclaims_of_another_provider_are_left_alone() -> None:
    """Entry "should ignore NodeClaims which aren't managed by this instance of
    Karpenter"."""
    clock = VirtualClock()
    state = ClusterState(clock)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-1", "labels": {}},
            "spec": {"providerID": "aws:///us-east-1a/i-1"},
            "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "10"}}}
    claim = _claim("karpenter.test.sh", "UnmanagedNodeClass")
    state.observe(WatchEvent("ADDED", claim))
    state.observe(WatchEvent("ADDED", node))
    cluster = _Cluster()
    controller = NodeClaimConsistency(cluster, clock, state,  # type: ignore[arg-type]
                                      EventRecorder(cluster, clock))  # type: ignore[arg-type]
    controller.reconcile("claim")
    assert cluster.writes == []
    # The same NodeClaim on the EC2NodeClass is checked and found inconsistent.
    assert node_shape_issues(node, _claim("karpenter.k8s.aws", "EC2NodeClass")) == [
        "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"]


def test_deleting_or_uninitialized_nodeclaims_are_not_shape_checked() -> None:
    """nodeshape.go: deleting NodeClaims and NodeClaims not yet initialized are skipped."""
    node = {"status": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": "1"}}}
    deleting = _claim("karpenter.k8s.aws", "EC2NodeClass")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    uninitialized = _claim("karpenter.k8s.aws", "EC2NodeClass")
    uninitialized["status"]["conditions"] = []
    assert node_shape_issues(node, deleting) == []
    assert node_shape_issues(node, uninitialized) == []


def test_the_check_finds_the_node_by_provider_id_without_walking_the_fleet(
        world: World, monkeypatch: Any) -> None:
    """Karpenter finds a NodeClaim's Node through a providerID index; the check looks the
    machine up by providerID instead of walking every node of the state (at 2,000 nodes,
    every NodeClaim's check walked them all)."""
    claim, node = launched(world)
    consistency = world.controllers.get("nodeclaim.consistency", NodeClaimConsistency)
    assert consistency is not None
    smaller = deep_copy(node)
    smaller["status"]["capacity"]["memory"] = "1894Mi"
    world.cluster.update(smaller, subresource="status")
    world.deliver()
    walks: list[int] = []
    state = consistency.state
    every_node = state.nodes
    monkeypatch.setattr(state, "nodes", lambda: walks.append(1) or every_node())
    consistency._last_scanned.clear()  # due for a scan now

    consistency.reconcile(claim["metadata"]["name"])

    assert walks == []
    world.deliver()
    assert consistent_state(world) == ("False", "ConsistencyCheckFailed")
