"""Disruption budgets: counts and percentages over a NodePool's nodes, schedules in UTC,
reasons, and schedules that cannot be read failing closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from nodewright.api.nodepool import Budget
from nodewright.controllers.disruption.budgets import (
    DRIFTED,
    EMPTY,
    UNDERUTILIZED,
    UNLIMITED,
    active_window,
    allowed_disruptions,
    next_change,
    scaled_nodes,
)

MONDAY_9 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def budget(**fields: object) -> Budget:
    return Budget.model_validate(fields)


def test_percentages_round_up_over_the_nodepools_nodes() -> None:
    assert scaled_nodes("10%", 10) == 1
    assert scaled_nodes("10%", 11) == 2
    assert scaled_nodes("5%", 1) == 1
    assert scaled_nodes("0%", 50) == 0
    assert scaled_nodes("100%", 7) == 7
    assert scaled_nodes("3", 100) == 3


def test_the_default_budget_allows_ten_percent() -> None:
    limit = allowed_disruptions([budget()], UNDERUTILIZED, 30, MONDAY_9)
    assert limit.allowed == 3
    assert limit.limiting == 0
    assert "allows 3" in limit.describe()


def test_no_budget_means_no_limit() -> None:
    assert allowed_disruptions([], DRIFTED, 30, MONDAY_9).allowed == UNLIMITED


def test_the_smallest_budget_for_the_reason_wins_and_others_reasons_are_ignored() -> None:
    budgets = [
        budget(nodes="50%"),
        budget(nodes="0", reasons=["Drifted"]),
        budget(nodes="2", reasons=["Empty", "Underutilized"]),
    ]
    assert allowed_disruptions(budgets, DRIFTED, 10, MONDAY_9).allowed == 0
    assert allowed_disruptions(budgets, EMPTY, 10, MONDAY_9).allowed == 2
    limit = allowed_disruptions(budgets, UNDERUTILIZED, 10, MONDAY_9)
    assert (limit.allowed, limit.limiting) == (2, 2)


def test_a_scheduled_budget_limits_only_inside_its_window() -> None:
    weekdays = budget(nodes="0", schedule="0 9 * * mon-fri", duration="8h")
    inside = allowed_disruptions([weekdays], UNDERUTILIZED, 10, MONDAY_9 + timedelta(hours=3))
    assert inside.allowed == 0
    assert inside.window is not None
    assert inside.window.start == MONDAY_9
    assert inside.window.end == MONDAY_9 + timedelta(hours=8)
    assert "2026-01-05T17:00:00Z" in inside.describe()
    after = allowed_disruptions([weekdays], UNDERUTILIZED, 10, MONDAY_9 + timedelta(hours=8))
    assert after.allowed == UNLIMITED
    before = allowed_disruptions([weekdays], UNDERUTILIZED, 10, MONDAY_9 - timedelta(minutes=1))
    assert before.allowed == UNLIMITED
    saturday = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    assert allowed_disruptions([weekdays], UNDERUTILIZED, 10, saturday).allowed == UNLIMITED


def test_the_schedule_hit_itself_is_inside_the_window() -> None:
    window = active_window(budget(nodes="0", schedule="@daily", duration="10m"),
                           datetime(2026, 1, 6, tzinfo=UTC))
    assert window is not None
    assert window.start == datetime(2026, 1, 6, tzinfo=UTC)


def test_an_unreadable_schedule_fails_closed_and_says_why() -> None:
    broken = budget(nodes="100%", schedule="every day at nine am", duration="1h")
    limit = allowed_disruptions([broken], UNDERUTILIZED, 10, MONDAY_9)
    assert limit.allowed == 0
    assert "fails closed" in limit.describe()
    assert "every day at nine am" in limit.describe()
    # ...but only for the reasons it names.
    scoped = budget(nodes="100%", schedule="0 9 * * * 7", duration="1h", reasons=["Drifted"])
    assert allowed_disruptions([scoped], EMPTY, 10, MONDAY_9).allowed == UNLIMITED
    assert allowed_disruptions([scoped], DRIFTED, 10, MONDAY_9).allowed == 0


def test_next_change_is_when_a_window_closes_or_opens() -> None:
    weekdays = budget(nodes="0", schedule="0 9 * * mon-fri", duration="8h")
    assert next_change([weekdays], MONDAY_9 + timedelta(hours=1)) == MONDAY_9 + timedelta(hours=8)
    assert next_change([weekdays], MONDAY_9 + timedelta(hours=9)) == MONDAY_9 + timedelta(days=1)
    assert next_change([budget(nodes="1")], MONDAY_9) is None


@given(
    percent=st.integers(min_value=0, max_value=100),
    nodes=st.integers(min_value=0, max_value=5000),
)
def test_a_percentage_is_the_smallest_count_covering_it(percent: int, nodes: int) -> None:
    allowed = scaled_nodes(f"{percent}%", nodes)
    assert allowed * 100 >= percent * nodes
    assert (allowed - 1) * 100 < percent * nodes or allowed == 0
    assert allowed <= nodes
