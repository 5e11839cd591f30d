"""Pods of current Kubernetes on the in-memory cluster: pods claiming devices through
Dynamic Resource Allocation get no capacity (Karpenter's default IGNORE_DRA_REQUESTS=true),
DaemonSets claiming devices count in no overhead, pods whose constraints Karpenter does
not support are ignored with an event, and a resized pod takes the room its status says.

Ported from kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/
suite_test.go, Describe "Dynamic Resource Allocation (DRA)" (each test names its Entry/It).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.scheduling.podvalidation import DRA_NOT_SUPPORTED
from nodewright.state import ClusterState
from tests.controllers.conftest import WORKSHOP
from tests.harness import World

PENDING = {"conditions": [{"type": "PodScheduled", "status": "False",
                           "reason": "Unschedulable"}]}


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "nodeSelector": {"type": "karpenter"},
        "containers": [{"name": "app", "image": "nginx",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def _karpenter_events(world: World, pod: str) -> list[str]:
    return [event["note"] for event in world.events("FailedScheduling")
            if event["regarding"]["name"] == pod and event["reportingController"] == "karpenter"]


CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]


@pytest.mark.parametrize(("spec", "claims"), [
    ({"resourceClaims": CLAIM,
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"},
                                                   "claims": [{"name": "gpu"}]}}]}, True),
    ({"resourceClaims": CLAIM,
      "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "500m"},
                                                        "claims": [{"name": "gpu"}]}}]}, True),
    ({"resourceClaims": CLAIM,
      "containers": [{"name": "app", "resources": {"claims": [{"name": "gpu"}]}}],
      "initContainers": [{"name": "init", "resources": {"claims": [{"name": "gpu"}]}}]}, True),
    ({}, False),
], ids=[
    "container with resource claims",
    "init container with resource claims",
    "pod with both container and init container resource claims",
    "non-DRA pod without resource claims",
])
def test_pods_claiming_devices_get_no_capacity(world: World, spec: dict[str, Any],
                                               claims: bool) -> None:
    """scheduling suite_test.go, DescribeTable "should handle DRA pods correctly": the
    Entry named by the id. A DRA pod launches nothing and is told why; a plain one gets a
    node."""
    world.apply(WORKSHOP)
    world.apply(_pod("trainer", **spec))
    world.cluster.patch("Pod", "trainer", {"status": PENDING}, "default",
                        subresource="status")
    world.advance(60)
    if claims:
        assert world.nodeclaims() == []
        assert f"Failed to schedule pod, {DRA_NOT_SUPPORTED}" in _karpenter_events(
            world, "trainer")
    else:
        assert len(world.nodeclaims()) == 1
        assert _karpenter_events(world, "trainer") == []


def test_daemonsets_claiming_devices_count_in_no_overhead(world: World) -> None:
    """scheduling suite_test.go: "should handle DaemonSet pods with DRA requirements based
    on IgnoreDRARequests flag value" (the IgnoreDRARequests=true half; nodewright has no
    DRA scheduling for the other): a 3-cpu DaemonSet with a claim leaves a 1-cpu pod on a
    2-vCPU type."""
    world.apply(WORKSHOP)
    world.apply(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "gpu-plugin", "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"app": "gpu-plugin"}}, "template": {
            "metadata": {"labels": {"app": "gpu-plugin"}},
            "spec": {"resourceClaims": CLAIM, "containers": [{
                "name": "plugin", "resources": {"requests": {"cpu": "3"},
                                                "claims": [{"name": "gpu"}]}}]}}}}))
    world.apply(_pod("web"))
    assert world.settle()
    (claim,) = world.nodeclaims()
    assert claim["metadata"]["labels"]["karpenter.k8s.aws/instance-cpu"] == "2"


@pytest.mark.parametrize(("spec", "why"), [
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}}}},
     "Failed to schedule pod, node selector term with matchFields is not supported"),
    ({"nodeSelector": {"type": "karpenter", "karpenter.sh/capacity-type": "ondemand"}},
     "Failed to schedule pod, no valid values found in [ondemand] for karpenter.sh/capacity-type, "
     "expected one of: [on-demand reserved spot], got: [ondemand]"),
    ({"nodeSelector": {"type": "karpenter", "kubernetes.io/hostname": "node-a"}},
     "Failed to schedule pod, using label kubernetes.io/hostname is not allowed"),
], ids=["matchFields", "capacity-type In [ondemand]", "kubernetes.io/hostname"])
def test_pods_with_constraints_karpenter_does_not_support_are_ignored(
    world: World, spec: dict[str, Any], why: str,
) -> None:
    """Karpenter's provisioner Validate (provisioner.go validateNodeSelectorTerm,
    ValidateRequirement): the pod is ignored with a FailedScheduling event, nothing
    launches for it."""
    world.apply(WORKSHOP)
    world.apply(_pod("odd", **spec))
    world.cluster.patch("Pod", "odd", {"status": PENDING}, "default", subresource="status")
    world.advance(60)
    assert world.nodeclaims() == []
    assert any(note.startswith(why) for note in _karpenter_events(world, "odd"))


def _bound(status: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = _pod("db", nodeName="n1")
    pod["metadata"]["uid"] = "uid-db"
    pod["status"] = {"phase": "Running", **(status or {})}
    return pod


def test_a_resized_pod_takes_the_room_its_status_reports() -> None:
    """component-helpers PodRequests(UseStatusResources), Karpenter's resources.Ceiling:
    while a resize down is in progress the kubelet still holds the larger allocation, so
    the node's usage counts it; when it is done the pod is back to its spec."""
    state = ClusterState(VirtualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    state.observe(WatchEvent("ADDED", _bound()))
    assert state.pods.requests("default/db")["cpu"] == 1000
    resizing = {"containerStatuses": [{
        "name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        "allocatedResources": {"cpu": "3", "memory": "1Gi"}}]}
    state.observe(WatchEvent("MODIFIED", _bound(resizing)))
    assert state.pods.requests("default/db")["cpu"] == 3000
    assert state.pods.node_pods("n1").requests["default/db"]["cpu"] == 3000
    done = {"containerStatuses": [{
        "name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        "allocatedResources": {"cpu": "1", "memory": "1Gi"}}]}
    state.observe(WatchEvent("MODIFIED", _bound(done)))
    assert state.pods.node_pods("n1").requests["default/db"]["cpu"] == 1000


def test_a_nodepool_whose_requirements_leave_no_instance_type_is_told_so(world: World) -> None:
    """Karpenter's NoCompatibleInstanceTypes event (scheduling/events.go, published from
    scheduler.go NewScheduler): Warning on the NodePool, "NodePool requirements filtered out
    all compatible available instance types"; with an unmet minValues it says so."""
    from tests.disruption.helpers import nodepool_with

    world.apply(WORKSHOP)
    world.apply(nodepool_with(requirements={"karpenter.k8s.aws/instance-family": ["c9"],
                                            "karpenter.k8s.aws/instance-category": ["c"]}))
    world.scale("inflate", 1)
    world.advance(60)
    assert world.nodeclaims() == []
    (event,) = world.events("NoCompatibleInstanceTypes")
    assert (event["type"], event["regarding"]["kind"], event["regarding"]["name"]) == (
        "Warning", "NodePool", "default")
    assert event["note"] == ("NodePool requirements filtered out all compatible available "
                             "instance types")


def test_an_unmet_min_values_is_named_in_the_event(world: World) -> None:
    """NoCompatibleInstanceTypes with minValuesIncompatibleErr: "... due to minValues
    incompatibility" (MIN_VALUES_POLICY=Strict)."""
    from tests.disruption.helpers import nodepool_with

    world.apply(WORKSHOP)
    pool = nodepool_with()
    for requirement in pool["spec"]["template"]["spec"]["requirements"]:
        if requirement["key"] == "karpenter.k8s.aws/instance-family":
            requirement["minValues"] = 2
            requirement["values"] = ["c5", "c9"]
    world.apply(pool)
    world.scale("inflate", 1)
    world.advance(60)
    assert world.nodeclaims() == []
    notes = {event["note"] for event in world.events("NoCompatibleInstanceTypes")}
    assert notes == {"NodePool requirements filtered out all compatible available instance "
                     "types due to minValues incompatibility"}
