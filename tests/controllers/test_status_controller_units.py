"""operatorpkg's status controller behaviour on Karpenter's NodeClaims, one reconcile at a
time. Ported from awslabs/operatorpkg status/controller_test.go (read at 7a13865; Karpenter
v1.14.1 pins 4da4c353c5fa); each test names the It it comes from."""

from __future__ import annotations

from nodewright.runtime.clock import format_time
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.metric_samples import samples, series, total
from tests.controllers.status_rig import StatusRig


class Rig(StatusRig):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def claim(self, status: str, reason: str, *, pool: str = "default",
              deleting: bool = False) -> None:
        obj = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
               "metadata": {"name": self.name, "uid": f"uid-{self.name}",
                            "labels": {"karpenter.sh/nodepool": pool,
                                       "karpenter.k8s.aws/ec2nodeclass": "default"},
                            "finalizers": ["karpenter.sh/termination"],
                            **({"deletionTimestamp": format_time(self.clock.now())}
                               if deleting else {})},
               "spec": {},
               "status": {"conditions": [{"type": "Ready", "status": status, "reason": reason,
                                          "message": "",
                                          "lastTransitionTime": format_time(self.clock.now())}]}}
        kind = "MODIFIED" if self.state.nodeclaim(self.name) else "ADDED"
        self.state.observe(WatchEvent(kind, obj))  # type: ignore[arg-type]
        self.controller.reconcile(f"NodeClaim/{self.name}")

    def gone(self) -> None:
        last = self.state.nodeclaim(self.name)
        assert last is not None
        self.state.observe(WatchEvent("DELETED", last))
        self.controller.reconcile(f"NodeClaim/{self.name}")


def test_termination_is_measured_while_it_runs_and_once_done() -> None:
    """It "should emit termination metrics when deletion timestamp is set"."""
    rig = Rig("terminating-claim")
    rig.claim("True", "Ready")
    before = total("operator_nodeclaim_termination_duration_seconds_count",
                   karpenter_sh_nodepool="default")
    rig.claim("True", "Ready", deleting=True)
    assert series("operator_nodeclaim_termination_current_time_seconds", name=rig.name)
    assert series("operator_termination_current_time_seconds", name=rig.name)
    rig.clock.advance(30)
    rig.gone()
    assert series("operator_nodeclaim_termination_current_time_seconds", name=rig.name) == []
    assert total("operator_nodeclaim_termination_duration_seconds_count",
                 karpenter_sh_nodepool="default") == before + 1
    assert [e["note"] for e in rig.sink.events if e["reason"] == "Finalized"] == [
        "Finalized karpenter.sh/termination"]


def test_a_transition_is_counted_timed_and_told() -> None:
    """It "should emit metrics and events on a transition"."""
    rig = Rig("transitioning-claim")
    rig.claim("Unknown", "AwaitingReconciliation")
    counted = {"type": "Ready", "status": "True", "reason": "Ready",
               "karpenter_sh_nodepool": "default"}
    before = total("operator_nodeclaim_status_condition_transitions_total", **counted)
    timed_before = total("operator_nodeclaim_status_condition_transition_seconds_count",
                         type="Ready", status="Unknown")
    rig.clock.advance(40)
    rig.claim("True", "Ready")
    assert total("operator_nodeclaim_status_condition_transitions_total", **counted) == (
        before + 1)
    assert total("operator_nodeclaim_status_condition_transition_seconds_count",
                 type="Ready", status="Unknown") == timed_before + 1
    notes = [(e["reason"], e["type"], e["note"]) for e in rig.sink.events]
    assert notes == [("Ready", "Normal", "Status condition transitioned, Type: Ready, "
                                         "Status: Unknown -> True, Reason: Ready")]


def test_a_new_reason_with_the_same_status_leaves_no_old_series() -> None:
    """It "should ensure that we don't leak metrics when changing reason with the same
    status"."""
    rig = Rig("reason-claim")
    rig.claim("False", "FirstReason")
    rig.claim("False", "SecondReason")
    for metric in ("operator_nodeclaim_status_condition_count",
                   "operator_status_condition_count"):
        assert [s["reason"] for s in series(metric, name=rig.name)] == ["SecondReason"]
    assert rig.sink.events == []  # the status did not change


def test_a_relabelled_object_leaves_no_series_under_its_old_labels() -> None:
    """It "should ensure that we don't leak metrics when changing labels" (with Karpenter's
    NodeClaim labels: the NodePool key)."""
    rig = Rig("relabelled-claim")
    rig.claim("True", "Ready", pool="first")
    rig.claim("True", "Ready", pool="second")
    pools = [s["karpenter_sh_nodepool"]
             for s in series("operator_nodeclaim_status_condition_count", name=rig.name)]
    assert pools == ["second"]


def value(metric: str, /, **match: str) -> list[float]:
    return [s.value for s in samples(metric)
            if all(s.labels.get(k) == v for k, v in match.items())]


def test_an_unchanged_object_reconciled_again_has_its_ages_moved_on_and_nothing_else() -> None:
    """Each requeue of an object nothing changed sets how long its conditions and its
    termination have lasted to the time then; no transition, event or series appears."""
    rig = Rig("requeued-claim")
    rig.claim("True", "Ready", deleting=True)
    transitions = total("operator_nodeclaim_status_condition_transitions_total",
                        name=rig.name)
    rig.clock.advance(25)
    rig.controller.reconcile(f"NodeClaim/{rig.name}")
    rig.clock.advance(10)
    rig.controller.reconcile(f"NodeClaim/{rig.name}")

    for metric in ("operator_nodeclaim_status_condition_current_status_seconds",
                   "operator_status_condition_current_status_seconds",
                   "operator_nodeclaim_termination_current_time_seconds",
                   "operator_termination_current_time_seconds"):
        assert value(metric, name=rig.name) == [35.0], metric
    assert value("operator_nodeclaim_status_condition_count", name=rig.name) == [1.0]
    assert total("operator_nodeclaim_status_condition_transitions_total",
                 name=rig.name) == transitions
    assert rig.sink.events == []


def test_an_unchanged_object_has_the_age_a_fresh_look_would_give_to_the_microsecond() -> None:
    """The ages a requeue sets are carried from the last look in whole microseconds: they
    equal `(now - since).total_seconds()` at every requeue, odd fractions of a second
    included."""
    rig = Rig("fractional-claim")
    rig.claim("True", "Ready")
    since = rig.clock.now()
    for step in (0.1, 9.999999, 10.000001, 0.3, 12345.678901):
        rig.clock.advance(step)
        rig.controller.reconcile(f"NodeClaim/{rig.name}")
        age = (rig.clock.now() - since).total_seconds()
        assert value("operator_nodeclaim_status_condition_current_status_seconds",
                     name=rig.name) == [age]


def test_series_another_controller_took_out_come_back_at_the_next_requeue() -> None:
    """Two operators in one process share the gauges: when the other one forgets an object
    of the same name, this one's next requeue of its unchanged object publishes its ages
    again, as a fresh look would."""
    rig, other = Rig("shared-claim"), Rig("shared-claim")
    rig.claim("True", "Ready")
    other.claim("True", "Ready")
    other.gone()
    assert value("operator_nodeclaim_status_condition_current_status_seconds",
                 name=rig.name) == []

    rig.clock.advance(20)
    rig.controller.reconcile(f"NodeClaim/{rig.name}")

    assert value("operator_nodeclaim_status_condition_current_status_seconds",
                 name=rig.name) == [20.0]
    assert value("operator_status_condition_current_status_seconds", name=rig.name) == [20.0]
