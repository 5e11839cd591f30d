"""The work queue's promises: one entry per key, no key running twice at once, nothing
lost while it runs, the earliest wanted time kept, controller-runtime's retry backoff."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.operator.workqueue import RateLimiter, WorkQueue
from tests.controllers.metric_samples import sample_value


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


# --- client-go's workqueue metrics (k8s.io/client-go/util/workqueue/metrics.go, exported
# under controller-runtime's names: pkg/metrics/workqueue.go) ------------------------------

class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sample(metric: str, queue: str, **extra: str) -> float:
    value = sample_value(metric, {"name": queue, "controller": queue, **extra})
    return 0.0 if value is None else value


def test_the_queue_exports_client_gos_workqueue_metrics_for_its_controller() -> None:
    ticks = Ticks()
    queue = WorkQueue("metrics-story", monotonic=ticks)
    queue.add("a")
    queue.add("a")  # already waiting: not another add
    queue.add("b")
    assert sample("workqueue_adds_total", "metrics-story") == 2
    assert sample("workqueue_depth", "metrics-story", priority="") == 2

    ticks.now += 3.0
    assert queue.get() == "a"
    assert sample("workqueue_depth", "metrics-story", priority="") == 1
    assert sample("workqueue_queue_duration_seconds_count", "metrics-story") == 1
    assert sample("workqueue_queue_duration_seconds_sum", "metrics-story") == 3.0
    # Three seconds into the reconcile, the scrape sees it running.
    ticks.now += 3.0
    assert sample("workqueue_unfinished_work_seconds", "metrics-story") == 3.0
    assert sample("workqueue_longest_running_processor_seconds", "metrics-story") == 3.0

    queue.add("a")  # changed while it runs: counted, and waiting again
    assert sample("workqueue_adds_total", "metrics-story") == 3
    assert sample("workqueue_depth", "metrics-story", priority="") == 2
    ticks.now += 1.0
    queue.done("a")
    assert sample("workqueue_work_duration_seconds_sum", "metrics-story") == 4.0
    assert sample("workqueue_unfinished_work_seconds", "metrics-story") == 0.0
    assert sample("workqueue_longest_running_processor_seconds", "metrics-story") == 0.0
    assert drain(queue) == ["b", "a"]  # a queued again behind b
    assert sample("workqueue_depth", "metrics-story", priority="") == 0

    queue.add_rate_limited("a", now=ticks.now)
    assert sample("workqueue_retries_total", "metrics-story") == 1


def test_the_workqueue_durations_use_client_gos_buckets() -> None:
    from nodewright.metrics import REGISTRY
    WorkQueue("buckets-story").add("a")
    (family,) = REGISTRY.restricted_registry(["workqueue_queue_duration_seconds_bucket"]).collect()
    bounds = sorted({float(s.labels["le"]) for s in family.samples
                     if s.name.endswith("_bucket") and s.labels["name"] == "buckets-story"})
    # prometheus.ExponentialBuckets(10e-9, 10, 12), then +Inf.
    assert bounds[:-1] == pytest.approx([10.0 ** exponent for exponent in range(-8, 4)])
