"""operatorpkg's status controller as Karpenter runs it: the events that make `kubectl
describe nodeclaim` a timeline (a condition's transitions, the finalizers released) and the
per-kind operator_<kind>_* metrics with the labels Karpenter adds, on the in-memory world.

operatorpkg's own tests (status/controller_test.go) exercise a test object; these tell the
same behaviour on Karpenter's kinds (pkg/controllers/controllers.go wiring)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.controllers.metrics.status import FAMILIES, transition_note
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.controllers.metric_samples import series
from tests.harness import World


@pytest.fixture(autouse=True)
def fresh_gauges() -> Iterator[None]:
    """The registry is process-wide: an earlier world's objects (same generated names) must
    leave no condition series behind for these stories."""
    for family in FAMILIES.values():
        for gauge in (family.count, family.current_status_seconds,
                      family.termination_current_time):
            gauge.clear()
    metrics.STATUS_CONDITION_COUNT.clear()
    metrics.STATUS_CONDITION_CURRENT_STATUS_SECONDS.clear()
    yield


def notes(world: World, kind: str, name: str) -> list[tuple[str, str]]:
    return [(event["reason"], event["note"]) for event in world.events(kind=kind)
            if event["regarding"]["name"] == name]


def launched(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    world.apply(WORKSHOP)
    world.scale("inflate", 3)
    assert world.settle()
    world.advance(30)
    (claim,) = world.nodeclaims()
    (node,) = world.nodes()
    return claim, node


def test_describe_nodeclaim_shows_each_condition_turning_true(world: World) -> None:
    claim, _ = launched(world)
    timeline = notes(world, "NodeClaim", claim["metadata"]["name"])
    # Launched turns True in the reconcile that first writes the conditions, before this
    # controller ever looked (operatorpkg reports only the changes it saw, best effort).
    for type_ in ("Registered", "Initialized", "Ready"):
        assert [note for reason, note in timeline if reason == type_] == [
            f"Status condition transitioned, Type: {type_}, Status: Unknown -> True, "
            f"Reason: {type_}"], type_
    events = [e for e in world.events(kind="NodeClaim") if e["reason"] == "Ready"]
    assert {e["type"] for e in events} == {"Normal"}
    expect_no_controller_errors(world)


def test_the_transition_message_carries_the_condition_message_when_there_is_one() -> None:
    condition = {"type": "Ready", "status": "False", "reason": "NodeNotReady",
                 "message": "kubelet stopped posting"}
    assert transition_note(condition, "True") == (
        "Status condition transitioned, Type: Ready, Status: True -> False, "
        "Reason: NodeNotReady, Message: kubelet stopped posting")


def test_releasing_the_termination_finalizer_is_told_as_finalized(world: World) -> None:
    claim, node = launched(world)
    world.scale("inflate", 0)
    assert world.settle()
    world.advance(60)
    assert world.nodeclaims() == []
    for kind, name in (("NodeClaim", claim["metadata"]["name"]),
                       ("Node", node["metadata"]["name"])):
        assert ("Finalized", "Finalized karpenter.sh/termination") in notes(world, kind, name)
    expect_no_controller_errors(world)


def test_each_kind_has_its_own_status_metrics_with_karpenters_labels(world: World) -> None:
    """operatorpkg status/controller_test.go: Entry "when using WithLabels" of "should add
    labels to metrics", with the label keys Karpenter passes (controllers.go)."""
    claim, node = launched(world)
    claim_name, node_name = claim["metadata"]["name"], node["metadata"]["name"]
    # NodeClaims: the node class and NodePool label keys, made Prometheus labels.
    (ready,) = series("operator_nodeclaim_status_condition_count", name=claim_name,
                      type="Ready")
    assert ready == {"namespace": "", "name": claim_name, "type": "Ready", "status": "True",
                     "reason": "Ready", "karpenter_k8s_aws_ec2nodeclass": "default",
                     "karpenter_sh_nodepool": "default"}
    assert series("operator_nodeclaim_status_condition_transitions_total", type="Launched",
                  status="True", karpenter_sh_nodepool="default")
    # Nodes: their kubelet conditions, with the initialized label too; no generic names
    # (Karpenter's Node controller does not emit the deprecated metrics).
    (node_ready,) = series("operator_node_status_condition_count", name=node_name,
                           type="Ready")
    assert node_ready["status"] == "True"
    assert node_ready["karpenter_sh_initialized"] == "true"
    assert node_ready["karpenter_sh_nodepool"] == "default"
    assert series("operator_status_condition_count", kind="Node") == []
    # NodePools: no extra labels; the generic names are still written.
    assert series("operator_nodepool_status_condition_count", name="default", type="Ready")
    assert series("operator_status_condition_count", kind="NodePool", name="default")
    expect_no_controller_errors(world)


def test_status_histograms_use_karpenters_exponential_buckets() -> None:
    """operatorpkg: It "should use custom histogram buckets when specified", with the buckets
    controllers.go passes (ExponentialBuckets(0.5, 2, 15)) for NodeClaims, NodePools, Nodes
    and CapacityBuffers."""
    family = metrics.kind_status_metrics(
        "NodePool", (), metrics.STATUS_BUCKETS).transition_seconds
    child = family.labels(type="Probe", status="True")
    try:
        assert list(child._upper_bounds) == [0.5 * 2**i for i in range(15)] + [float("inf")]
    finally:
        family.remove("Probe", "True")
