"""Karpenter's provisioner-side CapacityBuffer helpers, ported: kubernetes-sigs/karpenter
v1.14.1 pkg/controllers/provisioning/buffers_test.go. Each test names its It.

Karpenter marks a virtual pod with annotations (IsVirtualPod, bufferKeyOf) and walks the
scheduler's Results for them. Nodewright's virtual pods are the cluster state's
`BufferPods`, which knows each one's buffer by its key (`owner`, `is_virtual`); what a solve
did with them is `BufferPlacements.of` (classifyBufferPods and bufferPodCountsFromResults:
per buffer how many landed on existing machines, on new NodeClaims or nowhere, and per
machine how many it hosts), and the Provisioning condition is `provisioning_condition`
(computeProvisioningCondition). Karpenter's filterVirtualPodErrors and
filterVirtualPodMapping keep virtual pods out of the cluster state's scheduling decisions;
ours are stories of the provisioner in the in-memory cluster with the CapacityBuffer gate on
(tests/buffer/helpers.py): no virtual pod is reported unschedulable, nominated, or kept in
the state's decisions, while the real pods of the same passes are."""

from __future__ import annotations

from typing import Any

from nodewright.controllers.provisioning.buffers import (
    BUFFER_EMPTY,
    FITS_EXISTING_CAPACITY,
    NOT_READY_FOR_PROVISIONING,
    REQUIRES_NEW_CAPACITY,
    BufferCounts,
    BufferPlacements,
    provisioning_condition,
)
from nodewright.controllers.provisioning.problem import StateProblem
from nodewright.scheduling.pods import Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult
from nodewright.scheduling.targets import PlannedNodeClaim
from nodewright.state import ClusterState, StateNode
from nodewright.state.buffers import BufferPods, virtual_pods
from tests.buffer.helpers import buffer, conditions, pod_template, world
from tests.harness import World, node_pool

CHUNK = parse_pod_spec("default", "chunk", {}, {"containers": [{"name": "c"}]}, "spec")


def ready_buffer(name: str, replicas: int, namespace: str = "default",
                 *, scalable: bool = False) -> dict[str, Any]:
    """test.ReadyBuffer / ReadyBufferInNamespace / ReadyScalableRefBuffer: resolved, with
    `replicas` in its status and ReadyForProvisioning=True."""
    ref: dict[str, Any] = (
        {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": name}} if scalable
        else {"podTemplateRef": {"name": f"{name}-template"}})
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {**ref, "replicas": replicas},
            "status": {"replicas": replicas, **({} if scalable else ref),
                       "conditions": [{"type": "ReadyForProvisioning", "status": "True",
                                       "reason": "Resolved"}]}}


def condition(body: dict[str, Any], counts: BufferCounts | None) -> tuple[str, str]:
    """The Provisioning condition's status and reason the provisioner would write."""
    decided = provisioning_condition(body, counts)
    assert decided is not None
    return decided[0], decided[1]


def cached(buffers: BufferPods, name: str, replicas: int,
           namespace: str = "default") -> list[Pod]:
    """virtualpods.BuildVirtualPods, kept in the state as the capacitybuffer controller
    keeps them."""
    pods = virtual_pods(namespace, name, CHUNK, replicas)
    buffers.update(f"{namespace}/{name}", pods)
    return pods


def real(name: str) -> Pod:
    return parse_pod_spec("default", name, {}, {"containers": [{"name": "c"}]}, "spec")


def new_claim(*pods: Pod) -> PlannedNodeClaim:
    return PlannedNodeClaim(name="hostname-1", nodepool="default",
                            instance_types=(("m5.large", 0.096),), capacity_type="on-demand",
                            zone=None, price=0.096, pods=tuple(p.key for p in pods),
                            requirements=Requirements())


def machine(node_name: str, provider_id: str) -> StateNode:
    found = StateNode(provider_id)
    found.node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name},
                  "spec": {"providerID": provider_id}}
    return found


def solved(*, existing: dict[str, list[Pod]] | None = None,
           claims: tuple[PlannedNodeClaim, ...] = (),
           machines: tuple[StateNode, ...] = ()) -> tuple[StateProblem, SchedulingResult]:
    """A solve's answer (Karpenter's scheduler.Results) and the machines its node names
    stand for."""
    built = StateProblem(problem=SchedulingProblem(pods=[], nodepools=[]), pools={},
                         skipped_pools={}, nodes={m.node_name: m for m in machines})
    result = SchedulingResult(
        nodeclaims=claims,
        existing=tuple((node, tuple(p.key for p in pods))
                       for node, pods in (existing or {}).items()),
        unschedulable=())
    return built, result


# -- Describe("bufferKeyOf") -------------------------------------------------------------


def test_a_real_pod_belongs_to_no_buffer() -> None:
    """Karpenter buffers_test.go Describe("bufferKeyOf") It("should return empty string for
    non-virtual pod")."""
    buffers = BufferPods()
    cached(buffers, "my-buffer", 2)
    assert buffers.owner(real("real").key) is None


def test_a_virtual_pod_belongs_to_its_buffer() -> None:
    """Karpenter buffers_test.go Describe("bufferKeyOf") It("should return namespace/name for
    complete virtual pod")."""
    buffers = BufferPods()
    pods = cached(buffers, "my-buffer", 2)
    cached(buffers, "my-buffer", 1, namespace="other")
    assert [buffers.owner(p.key) for p in pods] == ["default/my-buffer"] * 2


# -- Describe("IsVirtualPod") ------------------------------------------------------------


def test_a_real_pod_is_not_virtual() -> None:
    """Karpenter buffers_test.go Describe("IsVirtualPod") It("should return false for pod
    without annotations")."""
    buffers = BufferPods()
    cached(buffers, "web", 2)
    assert not buffers.is_virtual(real("real").key)


def test_a_buffers_pod_is_virtual() -> None:
    """Karpenter buffers_test.go Describe("IsVirtualPod") It("should return true for virtual
    pod")."""
    buffers = BufferPods()
    pods = cached(buffers, "web", 2)
    assert all(buffers.is_virtual(p.key) for p in pods)


# -- Describe("classifyBufferPods") ------------------------------------------------------


def test_virtual_pods_are_counted_per_buffer_on_existing_and_new_capacity() -> None:
    """Karpenter buffers_test.go Describe("classifyBufferPods") It("should bucket virtual pods
    by buffer namespace/name across existing and new nodes"): a's desired 3 is read from the
    buffer when its condition is written."""
    buffers = BufferPods()
    a = cached(buffers, "a", 3)
    b = cached(buffers, "b", 2)
    built, result = solved(existing={"node-1": a[:2]}, claims=(new_claim(a[2], *b),))
    found = BufferPlacements.of(buffers, built, result).by_buffer
    assert found["default/a"] == BufferCounts(existing=2, new=1)
    assert found["default/b"] == BufferCounts(existing=0, new=2)
    assert provisioning_condition(ready_buffer("a", 3), found["default/a"]) == (
        "False", REQUIRES_NEW_CAPACITY, "1/3 virtual pods required new capacity, 0 failed")


def test_real_pods_are_not_counted() -> None:
    """Karpenter buffers_test.go Describe("classifyBufferPods") It("should ignore real
    pods")."""
    buffers = BufferPods()
    built, result = solved(existing={"node-1": [real("real")]})
    assert BufferPlacements.of(buffers, built, result).by_buffer == {}


def test_buffers_of_one_name_in_two_namespaces_are_counted_apart() -> None:
    """Karpenter buffers_test.go Describe("classifyBufferPods") It("should distinguish
    buffers with the same name in different namespaces")."""
    buffers = BufferPods()
    a = cached(buffers, "buffer", 2, namespace="ns-a")
    b = cached(buffers, "buffer", 3, namespace="ns-b")
    built, result = solved(existing={"node-1": [a[0], b[0], b[1]]},
                           claims=(new_claim(a[1], b[2]),))
    found = BufferPlacements.of(buffers, built, result).by_buffer
    assert found["ns-a/buffer"] == BufferCounts(existing=1, new=1)
    assert found["ns-b/buffer"] == BufferCounts(existing=2, new=1)
    assert provisioning_condition(ready_buffer("buffer", 2, "ns-a"), found["ns-a/buffer"])[2] \
        == "1/2 virtual pods required new capacity, 0 failed"
    assert provisioning_condition(ready_buffer("buffer", 3, "ns-b"), found["ns-b/buffer"])[2] \
        == "1/3 virtual pods required new capacity, 0 failed"


# -- Describe("computeProvisioningCondition") (and "... with scalableRef buffer") ---------


def test_all_virtual_pods_on_existing_capacity_fit() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition") It("should return
    True/FitsExistingCapacity when all pods fit")."""
    assert condition(ready_buffer("web", 3), BufferCounts(existing=3)) == (
        "True", FITS_EXISTING_CAPACITY)


def test_virtual_pods_on_new_nodeclaims_require_new_capacity() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition") It("should return
    False/RequiresNewCapacity when new nodes are needed")."""
    assert condition(ready_buffer("web", 3), BufferCounts(existing=1, new=2)) == (
        "False", REQUIRES_NEW_CAPACITY)


def test_a_buffer_not_ready_is_not_provisioning() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition") It("should return
    False/NotReadyForProvisioning when buffer is not ready")."""
    not_ready = ready_buffer("web", 3)
    not_ready["status"]["conditions"][0]["status"] = "False"
    assert condition(not_ready, None) == ("False", NOT_READY_FOR_PROVISIONING)


def test_a_buffer_of_zero_replicas_is_empty() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition") It("should return
    False/BufferEmpty when replicas is zero")."""
    assert condition(ready_buffer("web", 0), None) == ("False", BUFFER_EMPTY)


def test_a_ready_buffer_no_solve_saw_keeps_its_condition() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition") It("should return nil
    when ready but no results observed")."""
    assert provisioning_condition(ready_buffer("web", 3), None) is None


def test_a_scalable_ref_buffer_that_fits_existing_capacity() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition with scalableRef
    buffer") It("should return True/FitsExistingCapacity for scalableRef buffer when all pods
    fit")."""
    assert condition(ready_buffer("scalable", 2, scalable=True), BufferCounts(existing=2)) == (
        "True", FITS_EXISTING_CAPACITY)


def test_a_scalable_ref_buffer_that_needs_new_capacity() -> None:
    """Karpenter buffers_test.go Describe("computeProvisioningCondition with scalableRef
    buffer") It("should return False/RequiresNewCapacity for scalableRef buffer when new nodes
    needed")."""
    assert condition(ready_buffer("scalable", 3, scalable=True),
                     BufferCounts(existing=1, new=2)) == ("False", REQUIRES_NEW_CAPACITY)


# -- Describe("bufferPodCountsFromResults") ----------------------------------------------


def test_virtual_pods_are_counted_per_existing_machine() -> None:
    """Karpenter buffers_test.go Describe("bufferPodCountsFromResults") It("should count
    virtual pods per providerID on existing nodes"): per machine (ours are named by their
    Node), real pods and pods on new NodeClaims left out."""
    buffers = BufferPods()
    a = cached(buffers, "a", 3)
    b = cached(buffers, "b", 2)
    built, result = solved(
        existing={"node-a": [a[0], a[1], real("real-pod")], "node-b": b},
        claims=(new_claim(a[2]),),
        machines=(machine("node-a", "provider-a"), machine("node-b", "provider-b")))
    assert BufferPlacements.of(buffers, built, result).on_machines == {"node-a": 2, "node-b": 2}


def test_an_empty_solve_hosts_no_virtual_pods() -> None:
    """Karpenter buffers_test.go Describe("bufferPodCountsFromResults") It("should return empty
    map for empty results")."""
    buffers = BufferPods()
    cached(buffers, "a", 3)
    built, result = solved(machines=(machine("node-a", "provider-a"),))
    assert BufferPlacements.of(buffers, built, result).on_machines == {}


def test_real_pods_alone_host_no_virtual_pods() -> None:
    """Karpenter buffers_test.go Describe("bufferPodCountsFromResults") It("should return empty
    map when only real pods are present")."""
    buffers = BufferPods()
    cached(buffers, "a", 3)
    built, result = solved(existing={"node-a": [real("real")]},
                           machines=(machine("node-a", "provider-a"),))
    assert BufferPlacements.of(buffers, built, result).on_machines == {}


# -- Describe("filterVirtualPodErrors") and Describe("filterVirtualPodMapping") ----------
# Stories of the provisioner: what it reports and what the cluster state keeps of its
# scheduling decisions (Karpenter's MarkPodSchedulingDecisions).

TOO_BIG = "64"  # more cpu than any type of the NodePool has


def a_pod(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "c",
                                     "resources": {"requests": {"cpu": cpu}}}], **spec}}


def virtual_keys(name: str, replicas: int) -> list[str]:
    return [f"default/capacity-buffer-{name}-{n}#virtual" for n in range(1, replicas + 1)]


class Passes:
    """What the provisioner's passes of a settled world reported and kept."""

    def __init__(self, w: World) -> None:
        assert w.settle()
        provisioner = w.controllers.provisioner
        self.state: ClusterState = provisioner.state
        self.unschedulable: set[str] = set()
        self.nominated: set[str] = set()
        for outcome in provisioner.outcomes:
            self.unschedulable |= set(outcome.unschedulable)
            self.nominated |= set(outcome.nominated)
        self.failed_events = {str(e["regarding"]["name"])
                              for e in w.events(reason="FailedScheduling")}
        self.nominated_events = {str(e["regarding"]["name"])
                                 for e in w.events(reason="Nominated")}

    def decided(self, key: str) -> bool:
        """The state kept a scheduling decision about the pod."""
        return (self.state.pod_decision_time(key) is not None
                or self.state.pod_schedulable_time(key) is not None)


def test_only_real_pods_are_reported_unschedulable() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodErrors") It("should remove virtual
    pods from error map"): a buffer and a real pod, both too big for any type."""
    w = world(pod_template("huge", TOO_BIG),
              buffer(podTemplateRef={"name": "huge"}, replicas=2), a_pod("real", TOO_BIG))
    passes = Passes(w)
    assert passes.unschedulable == {"default/real"}
    assert "real" in passes.failed_events
    assert not any(name.startswith("capacity-buffer-") for name in passes.failed_events)
    assert passes.decided("default/real")
    assert not any(passes.decided(key) for key in virtual_keys("headroom", 2))


def test_a_buffer_that_fits_nowhere_reports_no_pod() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodErrors") It("should return empty map
    when all pods are virtual"): only the buffer's pods fail; the buffer says so."""
    w = world(pod_template("huge", TOO_BIG), buffer(podTemplateRef={"name": "huge"}, replicas=2))
    passes = Passes(w)
    assert passes.unschedulable == set()
    assert passes.failed_events == set()
    assert not any(passes.decided(key) for key in virtual_keys("headroom", 2))
    assert conditions(w)["Provisioning"] == ("False", REQUIRES_NEW_CAPACITY)


def test_real_pods_that_fit_nowhere_are_all_reported_beside_a_buffer() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodErrors") It("should return all pods
    when none are virtual"): two real pods too big for any type, beside a buffer whose pods
    fit."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=2),
              a_pod("a", TOO_BIG), a_pod("b", TOO_BIG))
    passes = Passes(w)
    assert passes.unschedulable == {"default/a", "default/b"}
    assert {"a", "b"} <= passes.failed_events
    assert conditions(w)["Provisioning"] == ("True", FITS_EXISTING_CAPACITY)


def test_a_pass_where_everything_fits_reports_nothing() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodErrors") It("should handle empty
    input"): a buffer and a real pod that both fit."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=2),
              a_pod("real"))
    passes = Passes(w)
    assert passes.unschedulable == set()
    assert not any(name.startswith("capacity-buffer-") for name in passes.failed_events)
    assert w.pending_pods() == []


def test_only_real_pods_placed_beside_virtual_ones_are_nominated() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodMapping") It("should remove virtual
    pods from pod slices"): a buffer's pods and a real pod placed in one pass."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=2),
              a_pod("real"))
    passes = Passes(w)
    assert passes.nominated == {"default/real"}
    assert passes.nominated_events == {"real"}
    assert not any(passes.decided(key) for key in virtual_keys("headroom", 2))


def test_a_nodeclaim_of_virtual_pods_only_nominates_nobody() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodMapping") It("should drop keys
    entirely when only virtual pods remain"): the buffer's pods go to NodePool a, the real
    pod to NodePool b; only b's pod is nominated."""
    w = world(node_pool("a", types=["m5.large"], labels={"pool": "a"}),
              node_pool("b", types=["m5.large"], labels={"pool": "b"}),
              pod_template("chunk", "1", nodeSelector={"pool": "a"}),
              buffer(podTemplateRef={"name": "chunk"}, replicas=2),
              a_pod("real", nodeSelector={"pool": "b"}))
    passes = Passes(w)
    pools = sorted(c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in w.nodeclaims())
    assert "a" in pools and "b" in pools
    assert passes.nominated == {"default/real"}
    assert not any(passes.decided(key) for key in virtual_keys("headroom", 2))


def test_a_pass_of_virtual_pods_only_nominates_nobody() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodMapping") It("should return empty
    map when all pods are virtual"): the headroom is launched, no pod is nominated."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    passes = Passes(w)
    assert w.nodeclaims()
    assert passes.nominated == set()
    assert passes.nominated_events == set()
    assert not any(passes.decided(key) for key in virtual_keys("headroom", 2))


def test_a_pass_that_places_nothing_nominates_nothing() -> None:
    """Karpenter buffers_test.go Describe("filterVirtualPodMapping") It("should handle empty
    input"): neither the buffer's pods nor the real pod fit anywhere."""
    w = world(pod_template("huge", TOO_BIG), buffer(podTemplateRef={"name": "huge"}, replicas=1),
              a_pod("real", TOO_BIG))
    passes = Passes(w)
    assert passes.nominated == set()
    assert w.nodeclaims() == []
