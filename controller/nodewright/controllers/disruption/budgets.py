"""Disruption budgets: how many of a NodePool's nodes may be disrupting at once, per reason.

A budget limits the reasons it names (all reasons when it names none). `nodes` is a count
or a percentage of the NodePool's nodes, rounded up (as Kubernetes rounds a PDB's
maxUnavailable). A budget with a `schedule` (cron, UTC) limits only during the `duration`
after each hit of the schedule; outside that window it allows everything. The smallest
limit among a NodePool's budgets for a reason wins. A schedule that cannot be read fails
closed: that budget allows nothing, and the reason says why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from croniter import croniter

from nodewright.api.cron import cron_problem
from nodewright.api.formats import parse_duration
from nodewright.api.nodepool import Budget

EMPTY = "Empty"
UNDERUTILIZED = "Underutilized"
DRIFTED = "Drifted"
REASONS = (EMPTY, UNDERUTILIZED, DRIFTED)

UNLIMITED = 2**31 - 1
_PERCENT = re.compile(r"^(\d{1,3})%$")


class BudgetScheduleError(ValueError):
    """A budget whose schedule or duration cannot be evaluated."""


@dataclass(frozen=True)
class Window:
    """The stretch of time a scheduled budget is in force."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class BudgetLimit:
    """What a NodePool's budgets allow for one reason over `node_count` nodes.

    `allowed` is the number of nodes that may be disrupting at once (UNLIMITED when no
    budget applies); `limiting` is the index of the budget that sets it; `window` is that
    budget's active window when it is scheduled; `errors` name budgets that failed closed.
    """

    allowed: int
    limiting: int | None
    nodes: str | None
    window: Window | None
    errors: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.limiting is None:
            return "no budget limits this reason"
        text = f'budget[{self.limiting}] nodes "{self.nodes}" allows {self.allowed}'
        if self.window is not None:
            text += (
                f" (schedule window {self.window.start:%Y-%m-%dT%H:%M:%SZ} to "
                f"{self.window.end:%Y-%m-%dT%H:%M:%SZ})"
            )
        if self.errors:
            text += f"; {'; '.join(self.errors)}"
        return text


def scaled_nodes(nodes: str, node_count: int) -> int:
    """A budget's `nodes` over a NodePool of `node_count` nodes: "3" -> 3, "10%" -> ceil."""
    match = _PERCENT.match(nodes.strip())
    if match:
        return math.ceil(int(match.group(1)) * node_count / 100)
    if nodes.strip().isdigit():
        return int(nodes.strip())
    raise BudgetScheduleError(f'nodes "{nodes}" is neither a count nor a percentage')


def active_window(budget: Budget, now: datetime) -> Window | None:
    """The window a scheduled budget is in force at `now`, or None when it is not.

    Raises BudgetScheduleError for a schedule or duration that cannot be read (and for a
    budget without a schedule: ask `is_active` about those).
    """
    if budget.schedule is None or budget.duration is None:
        raise BudgetScheduleError("schedule and duration must be set together")
    schedule = budget.schedule.strip()
    reason = cron_problem(schedule)
    if reason:
        raise BudgetScheduleError(f'schedule "{budget.schedule}": {reason}')
    length = timedelta(seconds=_duration_seconds(budget.duration))
    if now.tzinfo is not None:
        now = now.astimezone(UTC)  # schedules are in UTC whatever zone `now` is given in
    # The last hit no earlier than `length` ago: the first hit after (now - length).
    hit = _next_hit(schedule, now - length)
    if hit > now:
        return None
    return Window(hit, hit + length)


@lru_cache(maxsize=1024)
def _duration_seconds(duration: str) -> float:
    try:
        return parse_duration(duration)
    except ValueError as error:
        raise BudgetScheduleError(f'duration "{duration}": {error}') from None


# Per schedule (and the zone of the times asked about): the last time asked about
# and croniter's first hit after it. Every disruption pass asks about every budget of every
# NodePool, and the answer stays that hit for any later time before it: no hit lies
# between the two, so only asking at or past the hit needs croniter again.
_HITS: dict[tuple[str, tzinfo | None], tuple[datetime, datetime]] = {}
_HITS_KEPT = 1024


def _next_hit(schedule: str, after: datetime) -> datetime:
    key = (schedule, after.tzinfo)
    known = _HITS.get(key)
    if known is not None and known[0] <= after < known[1]:
        return known[1]
    hit: datetime = croniter(schedule, after).get_next(datetime)
    if len(_HITS) >= _HITS_KEPT:
        _HITS.clear()
    _HITS[key] = (after, hit)
    return hit


def is_active(budget: Budget, now: datetime) -> bool:
    """Whether the budget limits anything at `now` (an unscheduled one always does)."""
    if budget.schedule is None and budget.duration is None:
        return True
    return active_window(budget, now) is not None


def allowed_disruptions(
    budgets: Sequence[Budget], reason: str, node_count: int, now: datetime
) -> BudgetLimit:
    """The number of a NodePool's nodes that may be disrupting at once for `reason`."""
    allowed = UNLIMITED
    limiting: int | None = None
    limiting_nodes: str | None = None
    limiting_window: Window | None = None
    errors: list[str] = []
    for index, budget in enumerate(budgets):
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        window: Window | None = None
        try:
            scheduled = budget.schedule is not None or budget.duration is not None
            window = active_window(budget, now) if scheduled else None
            in_force = window is not None or not scheduled
            value = scaled_nodes(budget.nodes, node_count) if in_force else UNLIMITED
        except BudgetScheduleError as error:
            errors.append(f"budget[{index}] fails closed: {error}")
            value = 0
        if value < allowed or (limiting is None and value != UNLIMITED):
            allowed, limiting, limiting_nodes, limiting_window = value, index, budget.nodes, window
    return BudgetLimit(allowed, limiting, limiting_nodes, limiting_window, tuple(errors))


def next_change(budgets: Sequence[Budget], now: datetime) -> datetime | None:
    """When the earliest scheduled budget next opens or closes (to re-check then)."""
    moments: list[datetime] = []
    for budget in budgets:
        if budget.schedule is None:
            continue
        try:
            window = active_window(budget, now)
        except BudgetScheduleError:
            continue
        if window is not None:
            moments.append(window.end)
        else:
            moments.append(_next_hit(budget.schedule.strip(), now))
    return min(moments, default=None)
