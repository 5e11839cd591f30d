"""One explanation per node per pass, published three ways: the decision log (and its
subscribers), a Kubernetes Event on the Node and the NodeClaim (Karpenter's reasons and
dedupe windows), and the NodeClaim's `Disruptable` condition (False with the blocking cause
when something forbids disrupting it; True with the last verdict when it is a candidate).

A pass collects verdicts first (a later method may say more about a node than an earlier
one) and publishes them at its end, so a node polled every 10 s gets one record per
change, not one per method.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import remove_condition, set_condition, write_conditions
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.state.statenode import StateNode

log = logging.getLogger(__name__)

DISRUPTABLE = "Disruptable"
DISRUPTION_REASON = "DisruptionReason"
UNCONSOLIDATABLE_DEDUPE_SECONDS = 15 * 60.0
# Events about one consolidation command, deduplicated per command.
PER_COMMAND = frozenset({ex.CONSOLIDATION_CANDIDATE, ex.CONSOLIDATION_REJECTED})
# Passing states worth a decision record but not an event (Karpenter is silent too). A
# candidate its NodePool's budget holds back is one: every Karpenter method passes over it
# without an event (`continue`, or `constrainedByBudgets`), and the NodePool itself gets
# the one DisruptionBlocked event per reason (BuildDisruptionBudgetMapping).
QUIET_CAUSES = frozenset({ex.CAUSE_CONSOLIDATE_AFTER, ex.CAUSE_DELETING, ex.CAUSE_BALANCED,
                          ex.CAUSE_STATIC_SCALING, ex.CAUSE_NODE_LIMIT,
                          ex.CAUSE_STATIC_NODEPOOL, ex.CAUSE_BUDGET})


@dataclass
class Verdict:
    node: StateNode
    decision: ex.Decision


@dataclass
class PassVerdicts:
    """Verdicts of one pass, by node name; a disruption is never overwritten."""

    now: datetime
    by_node: dict[str, Verdict] = field(default_factory=dict)

    def add(self, node: StateNode, method: str, outcome: str, cause: str, message: str,
            event_reason: str, **extra: Any) -> None:
        previous = self.by_node.get(node.name)
        if previous is not None and previous.decision.outcome == ex.DISRUPTED:
            return
        decision = ex.Decision(
            time=self.now,
            node=node.name,
            nodeclaim=node.nodeclaim_name,
            nodepool=node.nodepool,
            method=method,
            outcome=outcome,
            event_reason=event_reason,
            message=message,
            cause=cause,
            **extra,
        )
        self.by_node[node.name] = Verdict(node, decision)


class VerdictPublisher:
    def __init__(self, cluster: ClusterAPI, recorder: EventRecorder, log_: ex.DecisionLog
                 ) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.decisions = log_

    def publish(self, verdicts: PassVerdicts) -> None:
        for verdict in verdicts.by_node.values():
            self.decisions.record(verdict.decision)
            if verdict.decision.outcome in (ex.BLOCKED, ex.KEPT, ex.REJECTED) and (
                    verdict.decision.cause not in QUIET_CAUSES) and _told(verdict.decision):
                self._event(verdict)
            self._condition(verdict)

    def record(self, decision: ex.Decision) -> None:
        """A decision outside a pass (command progress, expiration, interruption)."""
        self.decisions.record(decision)

    def _event(self, verdict: Verdict) -> None:
        decision = verdict.decision
        blocked = decision.outcome == ex.BLOCKED
        dedupe = None if blocked else UNCONSOLIDATABLE_DEDUPE_SECONDS
        for obj in (verdict.node.node, verdict.node.nodeclaim):
            if obj is None:
                continue
            uid = objects.uid(obj) or objects.name(obj)
            if decision.event_reason in PER_COMMAND:
                # Karpenter's key names the command (and the rejection's reason): one
                # event per command, for its two minutes.
                values: tuple[str, ...] = (uid, decision.message)
                window: float | None = None
            else:
                # Karpenter's DisruptionBlocked and Unconsolidatable are keyed by the reason
                # and the object's UID alone: a node told why it is kept is not told again,
                # for another cause either, within the window.
                values, window = (uid,), dedupe
            self.recorder.publish(Event(
                regarding=obj,
                type="Normal",
                reason=decision.event_reason,
                note=_sentence(decision.message),
                dedupe_values=values,
                dedupe_seconds=window,
            ))

    def _condition(self, verdict: Verdict) -> None:
        decision = verdict.decision
        claim = verdict.node.nodeclaim
        if claim is None or decision.outcome == ex.DISRUPTED:
            return
        status = "False" if decision.outcome == ex.BLOCKED else "True"
        reason = decision.cause or ("Candidate" if status == "True" else "Blocked")
        message = f"{decision.method}: {decision.message}"
        current = objects.condition(claim, DISRUPTABLE)
        # The same verdict from another method (multi-node consolidation runs again while a
        # budget holds it, single-node's verdict stands) is no news: no write.
        if current is not None and (current.get("status"), current.get("reason"),
                                    str(current.get("message")).partition(": ")[2]) == (
                                        status, reason, decision.message):
            return
        set_nodeclaim_condition(self.cluster, objects.name(claim), DISRUPTABLE, status,
                                decision.time, reason, message)


def set_nodeclaim_condition(cluster: ClusterAPI, name: str, condition_type: str,
                            status: str | None, now: datetime, reason: str = "",
                            message: str = "") -> bool:
    """Set (or with status None, remove) one condition on a NodeClaim, reading it fresh and
    writing with its resourceVersion; False when the NodeClaim changed or is gone."""
    try:
        claim = cluster.get("NodeClaim", name)
    except NotFoundError:
        return False
    # Its metadata too: the condition records the generation it saw (observedGeneration,
    # as operatorpkg writes on every condition of Karpenter's).
    holder: dict[str, Any] = {"metadata": objects.meta(claim),
                              "status": {"conditions": objects.conditions(claim)}}
    if status is None:
        changed = remove_condition(holder, condition_type)
    else:
        changed = set_condition(holder, condition_type, status, now, reason=reason,
                                message=message)
    if not changed:
        return True
    try:
        write_conditions(cluster, claim, holder["status"]["conditions"])
    except (ConflictError, NotFoundError):
        return False
    except ApiError as error:
        log.warning("could not set condition %s on NodeClaim %s: %s", condition_type, name,
                    error)
        return False
    return True


def _told(decision: ex.Decision) -> bool:
    """Karpenter's computeConsolidation emits ConsolidationCandidate where it builds a
    replacement only (consolidation.go EmitCandidateEvents): a delete command, emptiness's
    included, awaits its validation without one."""
    return decision.event_reason != ex.CONSOLIDATION_CANDIDATE or decision.decision == "replace"


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text

