"""The prefilter's Pareto front of free room: a pod fits some machine exactly when it fits
one of the machines on the front."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodewright.controllers.disruption.prefilter import Room, pareto_front

rooms = st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 3))


def fits(need: Room, room: Room) -> bool:
    return all(n <= r for n, r in zip(need, room, strict=True))


@given(machines=st.lists(rooms, max_size=30), need=rooms)
def test_a_pod_fits_the_front_exactly_when_it_fits_some_machine(
    machines: list[Room], need: Room,
) -> None:
    front = pareto_front((f"m{i}", room) for i, room in enumerate(machines))
    assert any(fits(need, room) for _, room in front) == any(fits(need, r) for r in machines)
    assert len(front) <= len(machines)


def test_dominated_machines_leave_the_front() -> None:
    front = pareto_front([("big", (4, 4, 2)), ("small", (1, 1, 1)), ("tall", (1, 8, 1))])
    assert sorted(name for name, _ in front) == ["big", "tall"]
