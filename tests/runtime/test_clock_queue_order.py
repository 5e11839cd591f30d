"""The virtual clock keeps its callbacks by due time, each time's in the order they were
scheduled: the order a heap of (time, sequence) entries gives, whatever the callbacks
schedule while they run (now, later, in the past, at a time already waiting)."""

from __future__ import annotations

import heapq
import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.runtime import VirtualClock

START = datetime(2026, 1, 5, tzinfo=UTC)

# A callback's plan: the offsets (seconds from now, negative: the past) of the callbacks
# it schedules when it runs, each with its own plan.
plans = st.recursive(
    st.just(()),
    lambda children: st.lists(st.tuples(st.integers(-3, 6), children), max_size=3).map(tuple),
    max_leaves=40,
)


def ran_by_the_clock(plan: tuple) -> list[int]:  # type: ignore[type-arg]
    clock = VirtualClock(START)
    ran: list[int] = []
    names = itertools.count()

    def schedule(offset: int, inner: tuple) -> None:  # type: ignore[type-arg]
        name = next(names)

        def callback() -> None:
            ran.append(name)
            for child in inner:
                schedule(*child)
        clock.call_at(clock.now() + timedelta(seconds=offset), callback)

    for child in plan:
        schedule(*child)
    while clock.step():
        pass
    return ran


def ran_by_a_heap(plan: tuple) -> list[int]:  # type: ignore[type-arg]
    now = START
    queue: list[tuple[datetime, int, int, tuple]] = []  # type: ignore[type-arg]
    sequence, names = itertools.count(), itertools.count()
    ran: list[int] = []

    def schedule(offset: int, inner: tuple) -> None:  # type: ignore[type-arg]
        heapq.heappush(queue, (max(now + timedelta(seconds=offset), now), next(sequence),
                               next(names), inner))

    for child in plan:
        schedule(*child)
    while queue:
        when, _, name, inner = heapq.heappop(queue)
        now = max(now, when)
        ran.append(name)
        for child in inner:
            schedule(*child)
    return ran


@settings(max_examples=300, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(-3, 6), plans), max_size=6).map(tuple))
def test_callbacks_run_in_the_order_a_heap_of_time_and_sequence_gives(plan: tuple) -> None:  # type: ignore[type-arg]
    assert ran_by_the_clock(plan) == ran_by_a_heap(plan)


def test_run_until_stops_before_what_is_due_later_and_stands_at_the_time_given() -> None:
    clock = VirtualClock(START)
    ran: list[str] = []
    clock.call_later(5, lambda: ran.append("five"))
    clock.call_later(5, lambda: ran.append("five again"))
    clock.call_later(10, lambda: ran.append("ten"))

    clock.run_until(START + timedelta(seconds=7))

    assert ran == ["five", "five again"]
    assert clock.now() == START + timedelta(seconds=7)
    assert clock.next_due() == START + timedelta(seconds=10)
