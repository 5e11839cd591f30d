"""The provisioner against Karpenter v1.14.1 (pkg/controllers/provisioning/provisioner.go,
scheduling/scheduler.go Results.Record, pkg/state/virtualpods): stories found by the
parity audit of the provisioning area, each failing before its fix."""

from __future__ import annotations

import itertools
import logging
from datetime import datetime
from typing import Any

import pytest

from nodewright.controllers.provisioning.buffers import FITS_EXISTING_CAPACITY
from tests.buffer.helpers import buffer, conditions, pod_template, world
from tests.harness import NODE_CLASS, World, node_pool


def a_pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


def nominated_events(w: World, name: str) -> list[str]:
    return [
        str(e["note"])
        for e in w.events("Nominated")
        if (e.get("regarding") or {}).get("name") == name
    ]


def test_a_real_pod_named_like_a_virtual_pod_is_still_provisioned_for_as_itself() -> None:
    """Karpenter names a CapacityBuffer's virtual pods `capacity-buffer-<buffer>-<n>` in the
    buffer's namespace (pkg/state/virtualpods/utilities.go BuildVirtualPods, lines 85-96)
    and tells them from real pods by object and by UID (`<buffer uid>-<n>`) and by the
    fake-pod annotation (scheduling/scheduler.go isVirtualBufferPod, 344-346), never by
    name: a real pod that happens to carry the same name is nominated like any other
    (scheduler.go Results.Record 305-320, provisioner.go Create 597-601) and does not count
    as the buffer's headroom.

    Here buffer `headroom` keeps one 1-cpu virtual pod, `capacity-buffer-headroom-1`, on
    the node launched for it; then a real 3-cpu pod of that very name arrives. It does not
    fit that node, so a new NodeClaim is launched for it and it is told so; the buffer's
    one virtual pod still fits the existing node, so the buffer keeps
    FitsExistingCapacity."""
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    (headroom_claim,) = w.nodeclaims()
    assert conditions(w)["Provisioning"] == ("True", FITS_EXISTING_CAPACITY)
    provisioner = w.controllers.provisioner
    before = len(provisioner.outcomes)

    w.apply(a_pod("capacity-buffer-headroom-1", "3"))
    assert w.run_until(lambda: len(w.nodeclaims()) == 2, timeout=120)

    (launch,) = [o for o in provisioner.outcomes[before:] if o.created]
    (new_claim,) = launch.created
    assert new_claim != headroom_claim["metadata"]["name"]
    assert launch.nominated == {"default/capacity-buffer-headroom-1": f"nodeclaim/{new_claim}"}
    assert nominated_events(w, "capacity-buffer-headroom-1") == [
        f"Pod should schedule on: nodeclaim/{new_claim}"
    ]
    # The real pod's decision is the state's (pod metrics read it); the buffer's stays out.
    assert provisioner.state.pod_schedulable_time("default/capacity-buffer-headroom-1")
    assert conditions(w)["Provisioning"] == ("True", FITS_EXISTING_CAPACITY)


def records(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "nodewright.controllers.provisioning.provisioner" and r.getMessage() == message
    ]


def test_a_pod_that_fits_nowhere_is_logged_as_an_error_and_told_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Karpenter scheduler.go Results.Record (lines 293-304): each pod the solve found no
    place for is logged at error level, "could not schedule pod" with the Pod and the
    error, besides its FailedScheduling event "Failed to schedule pod, <error>"
    (events.go PodFailedToScheduleEvent). A log query for Karpenter's line finds ours."""
    caplog.set_level(logging.DEBUG, logger="nodewright.controllers.provisioning")
    w = World()
    w.apply(NODE_CLASS, node_pool(types=["m5.large"]), a_pod("huge", "64"))
    assert w.run_until(lambda: bool(w.events("FailedScheduling")), timeout=60)
    w.advance(5)

    (logged, *_) = records(caplog, "could not schedule pod")
    assert logged.levelno == logging.ERROR
    assert logged.__dict__["Pod"] == "default/huge"
    reason = w.controllers.provisioner.outcomes[-1].unschedulable["default/huge"]
    assert logged.__dict__["error"] == reason
    ours = [e for e in w.events("FailedScheduling") if e["reportingController"] == "karpenter"]
    assert [e["note"] for e in ours] == [f"Failed to schedule pod, {reason}"]
    (computing, *_) = records(caplog, "computing scheduling decision for provisionable pod(s)")
    assert computing.levelno == logging.DEBUG
    assert (computing.__dict__["pending-pods"], computing.__dict__["deleting-pods"]) == (1, 0)


def test_a_pass_that_also_fills_an_in_flight_node_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """Karpenter scheduler.go Results.Record (lines 321-341): when a pass launches new
    NodeClaims and also places pods on nodes that exist or are launching, it logs
    "computed unready node(s) will fit pod(s)" with how many nodes and pods, after
    "computed new nodeclaim(s) to fit pod(s)".

    A first pod launches an m5.xlarge NodeClaim; while it is still launching, a small pod
    that fits beside the first and a big one that does not arrive in one batch."""
    caplog.set_level(logging.INFO, logger="nodewright.controllers.provisioning")
    w = World()
    w.apply(NODE_CLASS, node_pool(types=["m5.xlarge"]), a_pod("first", "1"))
    assert w.run_until(lambda: len(w.nodeclaims()) == 1, timeout=60)
    caplog.clear()
    w.apply(a_pod("small", "500m"), a_pod("big", "3500m"))
    assert w.run_until(lambda: len(w.nodeclaims()) == 2, timeout=60)

    (computed,) = records(caplog, "computed new nodeclaim(s) to fit pod(s)")
    (unready,) = records(caplog, "computed unready node(s) will fit pod(s)")
    assert caplog.records.index(computed) < caplog.records.index(unready)
    assert (computed.__dict__["nodeclaims"], computed.__dict__["pods"]) == (1, 1)
    assert (unready.__dict__["nodes"], unready.__dict__["pods"]) == (1, 1)
    (found,) = records(caplog, "found provisionable pod(s)")
    assert sorted(found.__dict__["Pods"].split(", ")) == ["default/big", "default/small"]


def karpenters(w: World, reason: str) -> list[dict[str, Any]]:
    """The events of `reason` Nodewright wrote (kube-scheduler writes FailedScheduling too)."""
    return [e for e in w.events(reason) if e["reportingController"] == "karpenter"]


MISSING_CLASS_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "orphan"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "missing",
                },
                "requirements": [],
            }
        }
    },
}


def test_with_no_dynamic_nodepool_pending_pods_are_left_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Karpenter provisioner.go Schedule (lines 404-415) and NewScheduler (270-288): when
    no NodePool is dynamic, Ready and not being deleted, there is no scheduler at all; the
    provisioner logs "no dynamic nodepools found" and marks a failed decision for each pod,
    and publishes no FailedScheduling event (Results.Record is never reached).

    The only NodePool here names an EC2NodeClass that does not exist (Karpenter's NodePool
    is then NodeClassReady=False, so not Ready). A pending pod gets no Karpenter event; once
    the EC2NodeClass exists the pod is provisioned for as usual."""
    caplog.set_level(logging.INFO, logger="nodewright.controllers.provisioning")
    orphan = dict(MISSING_CLASS_POOL)
    w = World()
    w.apply(orphan, a_pod("waiting", "1"))
    assert w.run_until(lambda: bool(w.events("FailedScheduling")), timeout=60)
    w.advance(30)

    provisioner = w.controllers.provisioner
    assert provisioner.outcomes, "the provisioner never looked at the pod"
    assert karpenters(w, "FailedScheduling") == []
    assert karpenters(w, "Nominated") == []
    assert records(caplog, "no dynamic nodepools found")
    assert provisioner.state.pod_decision_time("default/waiting") is not None
    assert provisioner.state.pod_schedulable_time("default/waiting") is None

    # The same pod once a NodePool can launch.
    w.apply(NODE_CLASS, node_pool(types=["m5.large"]))
    assert w.run_until(lambda: bool(w.nodeclaims()), timeout=120)
    assert [e["regarding"]["name"] for e in karpenters(w, "Nominated")] == ["waiting"]


def test_a_nodepool_with_min_values_and_no_instance_type_left_names_min_values() -> None:
    """Karpenter scheduling/nodeclaim.go filterInstanceTypesByRequirements (lines 602-616)
    checks minValues on what remains even when nothing remains, so under
    MIN_VALUES_POLICY=Strict a NodePool with a minValues whose requirements leave no
    instance type at all gets NoCompatibleInstanceTypes "... due to minValues
    incompatibility" (scheduler.go NewScheduler 158-167, events.go
    NoCompatibleInstanceTypes)."""
    w = World()
    pool = node_pool(
        families=["z9"],  # no such family: nothing is compatible
        requirements=[
            {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 2}
        ],
    )
    w.apply(NODE_CLASS, pool, a_pod("waiting", "1"))
    w.advance(60)

    assert w.nodeclaims() == []
    notes = {e["note"] for e in w.events("NoCompatibleInstanceTypes")}
    assert notes == {
        "NodePool requirements filtered out all compatible available instance types "
        "due to minValues incompatibility"
    }


def test_a_nodepool_whose_instance_types_cannot_be_read_is_told_it_has_none() -> None:
    """Karpenter provisioner.go NewScheduler (lines 296-315) keeps a Ready NodePool whose
    instance types could not be resolved (the cloud's error, none found, awaiting NodeOverlay
    evaluation) with no instance types, and scheduler.go NewScheduler (156-170) then
    publishes NoCompatibleInstanceTypes for it, as for one whose requirements filter out
    every type.

    Here the cloud cannot list the EC2NodeClass's instance types."""
    from nodewright.cloud.provider import CloudProviderError

    w = World()

    def failing(node_class: Any) -> Any:
        raise CloudProviderError("ec2:DescribeInstanceTypes: throttled", code="Throttled")

    w.cloud.get_instance_types = failing  # type: ignore[method-assign]
    w.apply(NODE_CLASS, node_pool(types=["m5.large"]), a_pod("waiting", "1"))
    w.advance(60)

    assert w.nodeclaims() == []
    (event,) = w.events("NoCompatibleInstanceTypes")
    assert (event["type"], event["regarding"]["kind"], event["regarding"]["name"]) == (
        "Warning",
        "NodePool",
        "default",
    )
    assert event["note"] == (
        "NodePool requirements filtered out all compatible available instance types"
    )


def test_nodepools_left_out_of_a_pass_are_logged_as_karpenter_logs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Karpenter provisioner.go NewScheduler (lines 270-318): a NodePool that is not Ready
    is logged at error level, "ignoring nodepool, not ready"; a Ready one whose instance
    types cannot be resolved, "skipping, unable to resolve instance types" (error); a
    static one or one being deleted is left out silently.

    `orphan` names a missing EC2NodeClass; `default` is fine but the cloud cannot list its
    instance types now; `fixed` is a static NodePool."""
    from nodewright.cloud.provider import CloudProviderError

    caplog.set_level(logging.DEBUG, logger="nodewright.controllers.provisioning")
    w = World()

    def failing(node_class: Any) -> Any:
        raise CloudProviderError("ec2:DescribeInstanceTypes: throttled", code="Throttled")

    w.cloud.get_instance_types = failing  # type: ignore[method-assign]
    static = node_pool("fixed", types=["m5.large"])
    static["spec"]["replicas"] = 0
    w.apply(NODE_CLASS, MISSING_CLASS_POOL, node_pool(types=["m5.large"]), static)
    w.apply(a_pod("waiting", "1"))
    w.advance(30)

    not_ready = records(caplog, "ignoring nodepool, not ready")
    assert not_ready and {r.__dict__["NodePool"] for r in not_ready} == {"orphan"}
    assert all(r.levelno == logging.ERROR for r in not_ready)
    unresolved = records(caplog, "skipping, unable to resolve instance types")
    assert unresolved and {r.__dict__["NodePool"] for r in unresolved} == {"default"}
    assert all(r.levelno == logging.ERROR for r in unresolved)
    assert "throttled" in unresolved[0].__dict__["error"]
    mentioned = {
        r.__dict__.get("NodePool")
        for r in caplog.records
        if r.name == "nodewright.controllers.provisioning.provisioner"
    }
    assert "fixed" not in mentioned


def test_a_pod_waiting_on_a_launching_node_keeps_it_nominated_and_is_told_again() -> None:
    """Karpenter simulates every pending pod on each pass (provisioner.go Schedule); a pod
    that waits for an in-flight node is placed there again each time, so Results.Record
    (scheduler.go lines 305-320) nominates the node again (NominateNodeForPod: kept from
    disruption a nomination window from now) and publishes NominatePodEvent again, which the
    recorder lets through once the pod's two-minute dedupe ends (pkg/events/recorder.go
    defaultDedupeTimeout, events.go NominatePodEvent: "nodeclaim/<name>, node/<name>").

    The machine here registers but keeps its startup taint, so the pod cannot bind."""
    from tests.controllers.test_nomination_story import in_flight_world, nominations, pending

    w, claim, node = in_flight_world(pending("waiting", "1"))
    w.advance(150)

    assert w.pending_pods(), "the pod bound: the machine was not kept in flight"
    told = nominations(w, "waiting")
    assert told[0] == f"nodeclaim/{claim}"
    assert len(told) >= 2 and set(told[1:]) == {f"nodeclaim/{claim}, node/{node}"}
    times = sorted(
        datetime.fromisoformat(str(e["eventTime"]).replace("Z", "+00:00"))
        for e in w.events("Nominated")
        if e["regarding"]["name"] == "waiting"
    )
    assert all((b - a).total_seconds() >= 120 for a, b in itertools.pairwise(times))
    (machine,) = [m for m in w.controllers.provisioner.state.nodes() if m.nodeclaim_name == claim]
    assert machine.nominated(w.clock.now())


def test_a_pod_that_avoids_karpenter_nodes_is_ignored_with_a_decision_remembered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Karpenter provisioner.go GetPendingPods (lines 218-233): a pending pod Validate
    refuses is ignored; it is logged at debug level ("ignoring pod" with the error) and a
    failed scheduling decision is marked for it (MarkPodSchedulingDecisions: the pod
    metrics read the decision time). One that requires `karpenter.sh/nodepool
    DoesNotExist` gets no event (validateKarpenterManagedLabelCanExist, lines 584-593)."""
    caplog.set_level(logging.DEBUG, logger="nodewright.controllers.provisioning")
    shy = a_pod("shy", "1")
    shy["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
                        ]
                    }
                ]
            }
        }
    }
    w = World()
    w.apply(NODE_CLASS, node_pool(types=["m5.large"]), shy)
    assert w.run_until(lambda: bool(w.events("FailedScheduling")), timeout=60)
    w.advance(15)

    state = w.controllers.provisioner.state
    assert state.pod_decision_time("default/shy") is not None
    assert w.nodeclaims() == []
    assert karpenters(w, "FailedScheduling") == []
    (ignored, *_) = records(caplog, "ignoring pod")
    assert ignored.__dict__["Pod"] == "default/shy"
    assert ignored.__dict__["error"] == (
        "configured to not run on a Karpenter provisioned node "
        "(requirement=karpenter.sh/nodepool DoesNotExist)"
    )
