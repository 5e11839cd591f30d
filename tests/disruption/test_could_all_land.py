"""`could_all_land`, the cheap test that spares the initialized-first retry a solve: it
says no only when no placement of the pods on the machines' free room exists, checked
against every placement of a few pods on a few machines."""

from __future__ import annotations

from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.api.quantity import CPU, MEMORY, PODS
from nodewright.controllers.disruption.prefilter import Room, could_all_land, room_left
from nodewright.scheduling.pods import Pod


def pod(name: str, cpu: int, memory: int) -> Pod:
    requests = {PODS: 1}
    if cpu:
        requests[CPU] = cpu
    if memory:
        requests[MEMORY] = memory
    return Pod(name=name, namespace="default", labels={}, requests=requests)


def some_placement_exists(pods: list[Pod], rooms: list[Room]) -> bool:
    for choice in product(range(len(rooms)), repeat=len(pods)):
        used = [[0, 0, 0] for _ in rooms]
        for where, one in zip(choice, pods, strict=True):
            for i, name in enumerate((CPU, MEMORY, PODS)):
                used[where][i] += one.requests.get(name, 0)
        if all(used[m][i] <= rooms[m][i] or used[m][i] == 0
               for m in range(len(rooms)) for i in range(3)):
            return True
    return False


shapes = st.tuples(st.integers(0, 4), st.integers(0, 4))
rooms_ = st.tuples(st.integers(-2, 6), st.integers(-2, 6), st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(st.lists(shapes, min_size=1, max_size=4), st.lists(rooms_, max_size=3))
def test_no_is_said_only_when_no_placement_exists(wanted: list[tuple[int, int]],
                                                  rooms: list[Room]) -> None:
    pods = [pod(f"p{i}", cpu, memory) for i, (cpu, memory) in enumerate(wanted)]
    if not could_all_land(pods, rooms):
        assert not some_placement_exists(pods, rooms)


def test_pods_that_add_up_to_more_than_the_room_left_cannot_all_land() -> None:
    rooms = [(1000, 4, 10), (1000, 4, 10)]
    assert could_all_land([pod("a", 1000, 1), pod("b", 1000, 1)], rooms)
    # Each fits somewhere, but three do not fit in two machines' room.
    assert not could_all_land([pod(n, 800, 1) for n in "abc"], rooms)
    # A pod larger than any machine's room.
    assert not could_all_land([pod("big", 1500, 1)], rooms)


def test_a_resource_a_machine_does_not_list_does_not_refuse_a_pod() -> None:
    room = room_left({CPU: 2000, PODS: 10}, {CPU: 500, PODS: 2})
    assert room[0] == 1500 and room[2] == 8
    assert could_all_land([pod("a", 1000, 10**12)], [room])
