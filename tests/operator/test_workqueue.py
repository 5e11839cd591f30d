"""The work queue's promises: one entry per key, no key running twice at once, nothing
lost while it runs, the earliest wanted time kept, controller-runtime's retry backoff."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodewright.operator.workqueue import RateLimiter, WorkQueue


def drain(queue: WorkQueue) -> list[str]:
    taken = []
    while (key := queue.get()) is not None:
        taken.append(key)
        queue.done(key)
    return taken


def test_a_key_added_twice_runs_once() -> None:
    queue = WorkQueue("test")
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert drain(queue) == ["a", "b"]


def test_a_key_added_while_it_runs_runs_again_afterwards() -> None:
    queue = WorkQueue("test")
    queue.add("a")
    assert queue.get() == "a"
    queue.add("a")
    assert queue.get() is None  # not while it is being reconciled
    queue.done("a")
    assert queue.get() == "a"


def test_a_delayed_key_waits_for_its_time_and_the_earliest_time_wins() -> None:
    queue = WorkQueue("test")
    queue.add_after("a", 10.0, now=100.0)
    queue.add_after("a", 5.0, now=100.0)
    queue.add_after("a", 20.0, now=100.0)
    queue.promote_due(104.0)
    assert queue.get() is None
    assert queue.next_due() == 105.0
    queue.promote_due(105.0)
    assert queue.get() == "a"
    queue.done("a")
    queue.promote_due(200.0)  # the later wishes were folded into the earliest
    assert queue.get() is None


def test_an_immediate_add_overrides_a_delay() -> None:
    queue = WorkQueue("test")
    queue.add_after("a", 60.0, now=0.0)
    queue.add("a")
    assert drain(queue) == ["a"]
    queue.promote_due(60.0)
    assert queue.get() is None


def test_retries_back_off_exponentially_and_forget_resets() -> None:
    limiter = RateLimiter()
    delays = [limiter.when("a", now=0.0) for _ in range(5)]
    assert delays == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert limiter.when("b", now=0.0) == 0.005  # per key
    limiter.forget("a")
    assert limiter.when("a", now=0.0) == 0.005
    for _ in range(40):
        limiter.when("c", now=0.0)
    assert limiter.when("c", now=0.0) == 1000.0  # the ceiling


def test_the_bucket_limits_the_overall_retry_rate() -> None:
    limiter = RateLimiter(base=0.0, qps=10.0, burst=100)
    delays = [limiter.when(f"key-{i}", now=0.0) for i in range(110)]
    assert delays[:100] == [0.0] * 100
    assert delays[100] > 0.0  # beyond the burst, 10 per second
    assert abs(delays[109] - 1.0) < 1e-9


@given(st.lists(st.tuples(st.sampled_from(["add", "get", "done"]),
                          st.sampled_from(["a", "b", "c"])), max_size=60))
def test_no_key_is_ever_handed_out_twice_at_once(steps: list[tuple[str, str]]) -> None:
    queue = WorkQueue("property")
    running: set[str] = set()
    for action, key in steps:
        if action == "add":
            queue.add(key)
        elif action == "get":
            taken = queue.get()
            if taken is not None:
                assert taken not in running
                running.add(taken)
        elif key in running:
            running.discard(key)
            queue.done(key)
    for key in sorted(running):
        queue.done(key)
    remaining = drain(queue)
    assert len(remaining) == len(set(remaining))
