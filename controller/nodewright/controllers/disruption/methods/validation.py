"""The validation that re-checks a command 15 seconds after it was decided, on the
cluster as it is then. A command dropped says why, and of which kind the reason is
(Karpenter's getValidationFailureReason, told in ConsolidationRejected)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.candidates import Blocked, Candidate
from nodewright.controllers.disruption.commands import Command, still_valid
from nodewright.controllers.disruption.methods.consolidation import consolidation_candidates
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.disruption.methods.emptiness import empty_candidates

BUDGET = "budget"
SCHEDULING = "scheduling"
CHURN = "churn"
UNKNOWN = "unknown"


class Invalid(str):
    """Why validation dropped a command (the text), with the kind of reason: budget (a
    budget or a nomination stands in the way), scheduling (the pods would now go
    elsewhere), churn (the candidates changed) or unknown."""

    reason: str

    def __new__(cls, message: str, reason: str = UNKNOWN) -> Invalid:
        made = super().__new__(cls, message)
        made.reason = reason
        return made


def failure_reason(why: str) -> str:
    """Karpenter's getValidationFailureReason: the kind of a dropped command's reason."""
    return why.reason if isinstance(why, Invalid) else UNKNOWN


def _nominated(p: Pass, gone: set[str]) -> bool:
    return any(isinstance(item, Blocked) and item.node.provider_id in gone
               and item.cause == ex.CAUSE_NOMINATED for item in p.evaluated())


def failed(command: Command, count: int) -> None:
    """Count candidates in karpenter_voluntary_disruption_failed_validations_total."""
    if count > 0:
        disruption_metrics.FAILED_VALIDATIONS.labels(
            consolidation_type=command.consolidation_type).inc(count)


def validate(p: Pass, command: Command) -> Command | Invalid:
    """The command re-decided on the current cluster: the candidates (refreshed) it may
    still disrupt, or why it must be dropped. Failed candidates are counted as Karpenter's
    validation counts them (validation.go): every candidate of a command dropped for
    churn or a budget; for emptiness, each candidate a budget drops (the command goes on
    with the others), those no longer candidates only when none is left; none for a
    simulation that changed."""
    if command.method == ex.EMPTINESS:
        eligible: Mapping[str, Candidate] = {c.provider_id: c for c in empty_candidates(p)}
    else:
        eligible = {c.provider_id: c for c in consolidation_candidates(p, command.method)}
    fresh = [eligible[c.provider_id] for c in command.candidates if c.provider_id in eligible]
    gone = {c.provider_id for c in command.candidates} - set(eligible)
    if gone and _nominated(p, gone) and (command.method != ex.EMPTINESS or not fresh):
        # Karpenter's GetCandidates leaves a nominated machine out before its explicit
        # nomination check: a churn failure.
        failed(command, len(command.candidates))
        return Invalid("a candidate was nominated during validation", CHURN)
    if command.method != ex.EMPTINESS and len(fresh) != len(command.candidates):
        failed(command, len(command.candidates))
        return Invalid(f"{len(command.candidates) - len(fresh)} candidate(s) are no longer "
                       "valid (pods or annotations changed)", CHURN)
    if not fresh:
        failed(command, len(command.candidates))
        return Invalid("the candidates are no longer empty or disruptable", CHURN)
    rooms = p.rooms(command.reason)
    within = []
    for candidate in fresh:
        room = rooms.get(candidate.nodepool_name)
        if room is not None and room.take():
            within.append(candidate)
        elif command.method != ex.EMPTINESS:
            failed(command, len(command.candidates))
            return Invalid(f"disrupting {candidate.name} would exceed the disruption budget",
                           BUDGET)
    failed(command, len(fresh) - len(within))
    if not within:
        return Invalid("the disruption budget no longer allows it", BUDGET)
    if command.method == ex.EMPTINESS:
        return replace(command, candidates=within)
    why = still_valid(replace(command, candidates=within), p.base.simulate(within))
    if why is not None:
        return Invalid(why, SCHEDULING)
    return replace(command, candidates=within)
