"""The validation that re-checks a command 15 seconds after it was decided, on the
cluster as it is then."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Command, still_valid
from nodewright.controllers.disruption.methods.consolidation import consolidation_candidates
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.disruption.methods.emptiness import empty_candidates


def validate(p: Pass, command: Command) -> Command | str:
    """The command re-decided on the current cluster: the candidates (refreshed) it may
    still disrupt, or why it must be dropped."""
    if command.method == ex.EMPTINESS:
        eligible: Mapping[str, Candidate] = {c.provider_id: c for c in empty_candidates(p)}
    else:
        eligible = {c.provider_id: c for c in consolidation_candidates(p, command.method)}
    fresh = [eligible[c.provider_id] for c in command.candidates if c.provider_id in eligible]
    if command.method != ex.EMPTINESS and len(fresh) != len(command.candidates):
        return (f"{len(command.candidates) - len(fresh)} candidate(s) are no longer valid "
                "(pods or annotations changed)")
    if not fresh:
        return "the candidates are no longer empty or disruptable"
    rooms = p.rooms(command.reason)
    within = []
    for candidate in fresh:
        room = rooms.get(candidate.nodepool_name)
        if room is not None and room.take():
            within.append(candidate)
        elif command.method != ex.EMPTINESS:
            return f"disrupting {candidate.name} would exceed the disruption budget"
    if not within:
        return "the disruption budget no longer allows it"
    if command.method == ex.EMPTINESS:
        return replace(command, candidates=within)
    why = still_valid(replace(command, candidates=within), p.base.simulate(within))
    if why is not None:
        return why
    return replace(command, candidates=within)
