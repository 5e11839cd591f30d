"""A client wrapped by `outside_state_lock` makes each call with the state lock stepped
out of, and takes it back before returning (docs/decisions.md, "Concurrency")."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from nodewright.cloud.metered import MeteredCloud
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.unreserved import WithoutReservedCapacity
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.outside_lock import outside_state_lock
from nodewright.runtime.statelock import StateLock


class Client:
    name = "client"

    def __init__(self, lock: StateLock) -> None:
        self.lock = lock
        self.held_during: list[bool] = []

    def request(self, value: int, *, twice: bool = False) -> int:
        self.held_during.append(self.lock.held())
        return value * 2 if twice else value

    def fails(self) -> None:
        raise RuntimeError("the server said no")


def test_each_call_runs_outside_the_lock_and_the_lock_is_held_again_after() -> None:
    lock = StateLock()
    client = Client(lock)
    wrapped = outside_state_lock(client, lock)
    with lock, lock:
        assert wrapped.request(21, twice=True) == 42
        assert lock.held()
    assert client.held_during == [False]
    assert wrapped.name == "client"  # attributes are the client's own


def test_another_thread_takes_the_lock_while_a_call_waits() -> None:
    lock = StateLock()
    in_call, taken = threading.Event(), threading.Event()

    class Slow:
        def request(self) -> None:
            in_call.set()
            assert taken.wait(30)

    def other() -> None:
        assert in_call.wait(30)
        with lock:
            taken.set()

    thread = threading.Thread(target=other)
    thread.start()
    with lock:
        outside_state_lock(Slow(), lock).request()
    thread.join(30)
    assert taken.is_set()


def test_a_failed_call_still_gives_the_lock_back() -> None:
    lock = StateLock()
    wrapped = outside_state_lock(Client(lock), lock)
    with lock:
        with pytest.raises(RuntimeError, match="said no"):
            wrapped.fails()
        assert lock.held()


def test_a_call_made_without_the_lock_is_made_as_it_is() -> None:
    lock = StateLock()
    client = Client(lock)
    assert outside_state_lock(client, lock).request(1) == 1
    assert client.held_during == [False] and not lock.held()


def test_a_call_steps_out_of_the_outer_lock_too_and_takes_both_back_in_order() -> None:
    """The tests' world lock is the state lock's `outer`: held around a unit of work by the
    operator's driver, stepped out of for each request, so another thread (the in-memory
    cluster's client, a thread creating for this one) can take it meanwhile."""
    world, lock = StateLock(), StateLock()
    lock.outer = world
    seen: list[tuple[bool, bool]] = []
    other_took_world = threading.Event()

    def take_world() -> None:
        with world:
            other_took_world.set()

    class Request:
        def send(self) -> None:
            seen.append((world.held(), lock.held()))
            thread = threading.Thread(target=take_world)
            thread.start()
            thread.join(30)

    with world, lock, lock:
        outside_state_lock(Request(), lock).send()
        assert world.held() and lock.held()
    assert seen == [(False, False)]
    assert other_took_world.is_set()


def test_the_outer_lock_alone_is_stepped_out_of_by_a_thread_that_holds_only_it() -> None:
    """A reconciler that manages the state lock itself runs with the world lock only."""
    world, lock = StateLock(), StateLock()
    lock.outer = world
    client = Client(world)
    with world:
        outside_state_lock(client, lock).request(1)
        assert world.held()
    assert client.held_during == [False]


def test_a_cloud_says_whether_its_calls_are_safe_from_any_thread() -> None:
    """A typed capability, forwarded by every wrapper (no attribute probing)."""

    class Aws(SimulatedEC2):
        launches_outside_state_lock = True

    clock = VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    for cloud, safe in ((Aws(clock), True), (SimulatedEC2(clock), False)):
        wrapped = outside_state_lock(WithoutReservedCapacity(MeteredCloud(cloud, "test")),
                                     StateLock())
        assert wrapped.capabilities().launches_outside_state_lock is safe


def test_a_call_made_holding_no_lock_steps_out_of_nothing() -> None:
    """The simulator's driver holds no lock: its calls go straight through, and a call
    that fails leaves the lock as free as it found it."""
    lock = StateLock()
    client = Client(lock)
    wrapped = outside_state_lock(client, lock)
    assert wrapped.request(3) == 3
    with pytest.raises(RuntimeError, match="the server said no"):
        wrapped.fails()
    assert client.held_during == [False]
    assert not lock.held()
    with lock:
        assert wrapped.request(4) == 4
        assert lock.held()
    assert client.held_during == [False, False]
