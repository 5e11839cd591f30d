"""Disruption budget arithmetic, ported from kubernetes-sigs/karpenter v1.14.1
`pkg/apis/v1/nodepool_budgets_test.go` (Describe "Budgets").

Karpenter's `NodePool.GetAllowedDisruptionsByReason`, `Budget.GetAllowedDisruptions` and
`Budget.IsActive` are our `allowed_disruptions` (over a NodePool's budgets, or one) and
`is_active`. Karpenter's Go structs take values its CRD refuses ("1000a%", "@wrongly");
`Budget.model_construct` builds such a budget without our model's checks, as Go does.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from nodewright.api.nodepool import Budget
from nodewright.controllers.disruption.budgets import (
    DRIFTED,
    EMPTY,
    REASONS,
    UNDERUTILIZED,
    UNLIMITED,
    BudgetScheduleError,
    allowed_disruptions,
    is_active,
)

# "the middle of the year of 2000, the best year ever"
NOW = datetime(2000, 6, 15, 12, 30, 30, tzinfo=UTC)
FIRST_SUNDAY_2024 = datetime(2024, 1, 7, tzinfo=UTC)


def budget(nodes: str, schedule: str | None = "* * * * *", duration: str | None = "1h",
           reasons: list[str] | None = None) -> Budget:
    return Budget.model_construct(nodes=nodes, schedule=schedule, duration=duration,
                                  reasons=reasons)


@pytest.fixture
def budgets() -> list[Budget]:
    """Karpenter's BeforeEach budgets."""
    return [budget("10"), budget("100"), budget("100%"),
            budget("15", reasons=[DRIFTED, UNDERUTILIZED]), budget("5", reasons=[DRIFTED]),
            budget("0", "@weekly", reasons=[UNDERUTILIZED, DRIFTED, EMPTY])]


def with_(item: Budget, **changes: Any) -> Budget:
    return item.model_copy(update=changes)


def allowed(budgets: list[Budget], reason: str, now: datetime = NOW) -> int:
    return allowed_disruptions(budgets, reason, 100, now).allowed


# -- Context "GetAllowedDisruptionsByReason" ------------------------------------------------


def test_every_reason_gets_zero_when_a_budget_for_all_of_them_is_active(
        budgets: list[Budget]) -> None:
    """GetAllowedDisruptionsByReason: "should return 0 for all reasons if a budget is active
    for all reasons"."""
    budgets[5] = with_(budgets[5], schedule="* * * * *", duration="1h")
    assert [allowed(budgets, reason) for reason in REASONS] == [0, 0, 0]


def test_every_reason_is_unbounded_when_no_budget_is_active(budgets: list[Budget]) -> None:
    """GetAllowedDisruptionsByReason: "should return MaxInt32 for all reasons when there
    are no active budgets"."""
    budgets = [with_(item, schedule="@yearly", duration="1h") for item in budgets]
    assert [allowed(budgets, reason) for reason in REASONS] == [UNLIMITED] * 3


def test_inactive_reason_budgets_are_ignored(budgets: list[Budget]) -> None:
    """GetAllowedDisruptionsByReason: "should ignore reason-defined budgets when
    inactive"."""
    budgets[3] = with_(budgets[3], schedule="@yearly")
    budgets[4] = with_(budgets[4], schedule="@yearly")
    assert [allowed(budgets, reason) for reason in REASONS] == [10, 10, 10]


def test_a_budget_without_reasons_applies_to_every_reason(budgets: list[Budget]) -> None:
    """GetAllowedDisruptionsByReason: "should return the budget for all disruption reasons
    when undefined"."""
    assert budgets[0].reasons is None
    assert [allowed(budgets[:1], reason) for reason in REASONS] == [10, 10, 10]


def test_each_reason_gets_its_smallest_budget(budgets: list[Budget]) -> None:
    """GetAllowedDisruptionsByReason: "should get the minimum budget for each reason"."""
    budgets.append(budget("4", reasons=[EMPTY]))
    assert allowed(budgets, EMPTY) == 4
    assert allowed(budgets, DRIFTED) == 5
    # The budget without reasons is smaller than the Underutilized one.
    assert allowed(budgets, UNDERUTILIZED) == 10


# -- Context "AllowedDisruptions" ------------------------------------------------------------


def test_an_unreadable_schedule_allows_nothing(budgets: list[Budget]) -> None:
    """AllowedDisruptions: "should return zero values if a schedule is invalid"."""
    limit = allowed_disruptions([with_(budgets[0], schedule="@wrongly")], EMPTY, 100, NOW)
    assert (limit.allowed, len(limit.errors)) == (0, 1)


def test_an_unreadable_nodes_value_allows_nothing(budgets: list[Budget]) -> None:
    """AllowedDisruptions: "should return zero values if a nodes value is invalid"."""
    limit = allowed_disruptions([with_(budgets[0], nodes="1000a%")], EMPTY, 100, NOW)
    assert (limit.allowed, len(limit.errors)) == (0, 1)


def test_an_inactive_budget_is_unbounded(budgets: list[Budget]) -> None:
    """AllowedDisruptions: "should return MaxInt32 when a budget is inactive"."""
    assert allowed([with_(budgets[0], schedule="@yearly", duration="1h")], EMPTY) == UNLIMITED


def test_an_active_count_budget_allows_its_count(budgets: list[Budget]) -> None:
    """AllowedDisruptions: "should return the int value when a budget is active"."""
    assert allowed(budgets[:1], EMPTY) == 10


def test_an_active_percentage_budget_allows_its_share(budgets: list[Budget]) -> None:
    """AllowedDisruptions: "should return the string value when a budget is active"."""
    assert allowed(budgets[2:3], EMPTY) == 100


# -- Context "IsActive" ---------------------------------------------------------------------


def test_schedules_are_read_in_utc_whatever_the_clocks_zone(budgets: list[Budget]) -> None:
    """IsActive: "should always consider a schedule and time in UTC": midnight of June 1st
    2000 an hour east of UTC is 23:00 UTC, outside @daily's 30 minutes."""
    start_of_june_east = datetime(2000, 5, 31, tzinfo=timezone(timedelta(hours=1)))
    assert not is_active(with_(budgets[0], schedule="@daily", duration="30m"),
                         start_of_june_east)


def test_a_budget_without_schedule_and_duration_is_always_active(
        budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is active when schedule and duration are
    nil"."""
    assert is_active(with_(budgets[0], schedule=None, duration=None), NOW)


def test_a_schedule_is_active(budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is active"."""
    assert is_active(budgets[0], NOW)


def test_a_schedule_is_inactive(budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is inactive"."""
    assert not is_active(with_(budgets[0], schedule="@yearly"), NOW)


def test_a_schedule_hit_within_the_duration_is_active(budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is active when the schedule hit is in the
    middle of the duration" (the start of the year 1000)."""
    assert is_active(with_(budgets[0], schedule="@yearly", duration="24h"),
                     datetime(1000, 1, 1, 12, tzinfo=UTC))


def test_a_duration_longer_than_the_recurrence_is_active(budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is active when the duration is longer than
    the recurrence"."""
    assert is_active(with_(budgets[0], schedule="@daily", duration="48h"), FIRST_SUNDAY_2024)


def test_a_schedule_hit_after_the_duration_is_inactive(budgets: list[Budget]) -> None:
    """IsActive: "should return that a schedule is inactive when the schedule hit is after
    the duration"."""
    assert not is_active(with_(budgets[0], schedule="30 6 * * SUN", duration="6h"),
                         FIRST_SUNDAY_2024)


def test_a_backwards_range_is_an_error_saying_why(budgets: list[Budget]) -> None:
    """IsActive: "should return an error indicating why the cron fails to parse"."""
    with pytest.raises(BudgetScheduleError,
                       match=r"beginning of range \(2\) beyond end of range \(1\)"):
        is_active(with_(budgets[0], schedule="0 0 * * tue-mon", duration="6h"),
                  FIRST_SUNDAY_2024)
