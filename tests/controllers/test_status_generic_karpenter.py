"""operatorpkg's status controller on the kinds Karpenter watches with it: the "Generic
Controller" Its told on Nodes (Karpenter's GenericObjectController[*corev1.Node], without
EmitDeprecatedMetrics: only the operator_node_* names), and the abnormal-condition It on
NodeClaims (status.NewController with EmitDeprecatedMetrics: both names).

Ported from awslabs/operatorpkg status/controller_test.go (read at 7a13865; Karpenter v1.14.1
pins 4da4c353c5fa); each test names the Describe and It it comes from. A condition the
controller has not seen counts as Unknown, as operatorpkg's nil condition does: seeing one
Unknown first is no transition."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.runtime.clock import format_time
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.metric_samples import samples, series, total
from tests.controllers.status_rig import StatusRig


class Rig(StatusRig):
    """One object of `kind` (Node or NodeClaim) in its own NodePool, so the per-kind
    counters (which have no object name label) read only this story's object."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__()
        self.kind, self.name, self.pool = kind, name, f"pool-of-{name}"
        self.last: dict[str, Any] | None = None

    def write(self, *conds: tuple[str, str, str], deleting: bool = False,
              labels: dict[str, str] | None = None) -> None:
        """Write the object with these (type, status, reason) conditions and reconcile;
        `labels` replace its usual ones (node class, NodePool, instance type)."""
        now = format_time(self.clock.now())
        before = {c["type"]: c for c in (self.last or {}).get("status", {}).get(
            "conditions", [])}
        conditions = []
        for type_, status, reason in conds:
            old = before.get(type_)
            since = old["lastTransitionTime"] if old and old["status"] == status else now
            conditions.append({"type": type_, "status": status, "reason": reason,
                               "message": "", "lastTransitionTime": since})
        api = "v1" if self.kind == "Node" else "karpenter.sh/v1"
        obj: dict[str, Any] = {
            "apiVersion": api, "kind": self.kind,
            "metadata": {"name": self.name, "uid": f"uid-{self.name}",
                         "labels": labels if labels is not None else {
                             "karpenter.sh/nodepool": self.pool,
                             "karpenter.k8s.aws/ec2nodeclass": "default",
                             "node.kubernetes.io/instance-type": "m5.large"},
                         "finalizers": ["karpenter.sh/termination"],
                         **({"deletionTimestamp": now} if deleting else {})},
            "spec": {"providerID": f"aws:///us-west-2a/i-{self.name}"},
            "status": {"conditions": conditions}}
        self.state.observe(WatchEvent("MODIFIED" if self.last else "ADDED", obj))
        self.last = obj
        self.controller.reconcile(f"{self.kind}/{self.name}")

    def gone(self) -> None:
        assert self.last is not None
        self.state.observe(WatchEvent("DELETED", self.last))
        self.controller.reconcile(f"{self.kind}/{self.name}")

    def prefix(self) -> str:
        return f"operator_{self.kind.lower()}"

    def transitions(self, type_: str, status: str) -> float:
        return total(f"{self.prefix()}_status_condition_transitions_total",
                     karpenter_sh_nodepool=self.pool, type=type_, status=status)


def test_a_terminating_node_is_measured_while_it_terminates_and_once_gone() -> None:
    """Describe "Generic Controller", It "should emit termination metrics when deletion
    timestamp is set" (Karpenter's Node controller: no deprecated operator_termination_*)."""
    rig = Rig("Node", "terminating-node")
    rig.write(("Ready", "True", "KubeletReady"))
    rig.write(("Ready", "True", "KubeletReady"), deleting=True)
    rig.clock.advance(30)
    rig.controller.reconcile(f"Node/{rig.name}")
    (current,) = [s.value for s in samples("operator_node_termination_current_time_seconds")
                  if s.labels.get("name") == rig.name]
    assert current == 30.0
    assert series("operator_termination_current_time_seconds", name=rig.name) == []
    rig.gone()
    assert series("operator_node_termination_current_time_seconds", name=rig.name) == []
    assert total("operator_node_termination_duration_seconds_count",
                 karpenter_sh_nodepool=rig.pool) == 1
    assert total("operator_termination_duration_seconds_count", kind="Node") == 0


def test_a_node_condition_transition_is_counted_timed_and_told() -> None:
    """Describe "Generic Controller", It "should emit metrics and events on a transition"."""
    rig = Rig("Node", "transitioning-node")
    rig.write(("Ready", "Unknown", "NodeStatusNeverUpdated"),
              ("MemoryPressure", "Unknown", "NodeStatusNeverUpdated"))
    for type_ in ("Ready", "MemoryPressure"):
        assert [s["status"] for s in series("operator_node_status_condition_count",
                                            name=rig.name, type=type_)] == ["Unknown"]
    # Seen Unknown first: nothing transitioned, nothing is told.
    assert total("operator_node_status_condition_transitions_total",
                 karpenter_sh_nodepool=rig.pool) == 0
    assert rig.sink.events == []

    rig.clock.advance(40)
    rig.write(("Ready", "True", "KubeletReady"),
              ("MemoryPressure", "Unknown", "NodeStatusNeverUpdated"))
    assert [s["status"] for s in series("operator_node_status_condition_count",
                                        name=rig.name, type="Ready")] == ["True"]
    assert rig.transitions("Ready", "True") == 1
    assert rig.transitions("Ready", "Unknown") == 0
    assert rig.transitions("MemoryPressure", "Unknown") == 0
    assert total("operator_node_status_condition_transition_seconds_count",
                 karpenter_sh_nodepool=rig.pool, type="Ready", status="Unknown") == 1
    assert total("operator_node_status_condition_transition_seconds_sum",
                 karpenter_sh_nodepool=rig.pool, type="Ready", status="Unknown") == 40
    assert series("operator_status_condition_transitions_total", kind="Node") == []
    assert [(e["type"], e["reason"], e["note"]) for e in rig.sink.events] == [
        ("Normal", "Ready", "Status condition transitioned, Type: Ready, "
                            "Status: Unknown -> True, Reason: KubeletReady")]


@pytest.mark.parametrize("labels", [
    pytest.param({"karpenter.sh/nodepool": "pool-of-registering-node"},
                 id="a managed Node not yet labelled with its instance type"),
    pytest.param({}, id="a Node no NodePool owns"),
])
def test_every_node_is_measured_not_only_those_the_state_tracks(
        labels: dict[str, str]) -> None:
    """Karpenter's Node status controller (GenericObjectController[*corev1.Node]) watches
    every Node: one without the instance-type and initialized labels (which the cluster
    state waits for) or of no NodePool still has its conditions measured."""
    rig = Rig("Node", "registering-node")
    rig.write(("Ready", "False", "KubeletNotReady"), labels=labels)
    assert [s["status"] for s in series("operator_node_status_condition_count",
                                        name=rig.name, type="Ready")] == ["False"]
    rig.gone()
    assert series("operator_node_status_condition_count", name=rig.name) == []


def abnormal_condition_story(rig: Rig, ready: tuple[str, str, str], abnormal: str) -> None:
    """An abnormal condition appears True, turns False, then is cleared: each status it
    reached is counted once, and clearing it counts nothing."""
    rig.write(ready)
    rig.write(ready, (abnormal, "True", abnormal))
    assert (rig.transitions(abnormal, "True"), rig.transitions(abnormal, "False"),
            rig.transitions(abnormal, "Unknown")) == (1, 0, 0)
    rig.write(ready, (abnormal, "False", "reason"))
    assert (rig.transitions(abnormal, "True"), rig.transitions(abnormal, "False"),
            rig.transitions(abnormal, "Unknown")) == (1, 1, 0)
    rig.write(ready)
    assert (rig.transitions(abnormal, "True"), rig.transitions(abnormal, "False"),
            rig.transitions(abnormal, "Unknown")) == (1, 1, 0)


def test_an_abnormal_node_condition_counts_each_status_it_reaches() -> None:
    """Describe "Generic Controller", It "should emit transition total metrics for abnormal
    conditions"."""
    rig = Rig("Node", "abnormal-node")
    abnormal_condition_story(rig, ("Ready", "True", "KubeletReady"), "DiskPressure")


def test_an_abnormal_nodeclaim_condition_counts_each_status_it_reaches() -> None:
    """Describe "Controller", It "should emit transition total metrics for abnormal
    conditions" (the deprecated generic counter too)."""
    rig = Rig("NodeClaim", "abnormal-claim")
    abnormal_condition_story(rig, ("Ready", "Unknown", "AwaitingReconciliation"),
                             "ConsistentStateFound")
    generic = {"kind": "NodeClaim", "type": "ConsistentStateFound", "reason": "reason"}
    assert total("operator_status_condition_transitions_total", status="False",
                 **generic) >= 1
