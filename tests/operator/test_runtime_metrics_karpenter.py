"""controller-runtime's reconcile metrics as a Karpenter v1.14.1 process exports them
(controller-runtime v0.23.1, pkg/internal/controller/metrics and the controller's
initMetrics), read back from the registry the operator serves: every series a controller
has from the moment it starts, how a failing and a succeeding reconcile count, and the
reconcile duration's bucket set."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.driver import OperatorDriver
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import Result, Watch
from tests.controllers.metric_samples import sample_value, samples
from tests.kube.waiting import eventually


class FailsFirst:
    """Fails on its first reconcile of a key, succeeds on the retry."""

    watches: Sequence[Watch] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.failed: set[str] = set()
        self.done = threading.Event()

    def reconcile(self, key: str) -> Result:
        if key not in self.failed:
            self.failed.add(key)
            raise RuntimeError(f"{key}: not yet")
        self.done.set()
        return Result()


def counted(metric: str, controller: str, **labels: str) -> float | None:
    return sample_value(metric, {"controller": controller, **labels})


def test_a_started_controller_exports_every_reconcile_counter_at_zero() -> None:
    """controller-runtime's initMetrics: each result and error counter at 0 before the first
    reconcile (an alert on the errors' increase sees the first one), the workers set."""
    reconciler = FailsFirst("runtime-metrics-started")
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"])
    driver.add(reconciler)
    driver.start()
    try:
        for result in ("error", "requeue_after", "requeue", "success"):
            assert counted("controller_runtime_reconcile_total", reconciler.name,
                           result=result) == 0
        for metric in ("controller_runtime_reconcile_errors_total",
                       "controller_runtime_terminal_reconcile_errors_total",
                       "controller_runtime_reconcile_panics_total",
                       "controller_runtime_reconcile_timeouts_total"):
            assert counted(metric, reconciler.name) == 0, metric
        assert counted("controller_runtime_max_concurrent_reconciles",
                       reconciler.name) == driver.workers(reconciler)
        assert counted("controller_runtime_active_workers", reconciler.name) == 0
    finally:
        driver.stop(timeout=5)


def test_a_failed_reconcile_is_an_error_and_its_retry_a_success() -> None:
    reconciler = FailsFirst("runtime-metrics-retry")
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"])
    driver.add(reconciler)
    driver.start()
    try:
        driver.enqueue(reconciler, "nodepool-a")
        assert reconciler.done.wait(10)
        eventually(lambda: counted("controller_runtime_reconcile_total", reconciler.name,
                                   result="success") == 1, "the retry to be counted")
    finally:
        driver.stop(timeout=5)
    assert counted("controller_runtime_reconcile_total", reconciler.name, result="error") == 1
    assert counted("controller_runtime_reconcile_errors_total", reconciler.name) == 1
    assert counted("controller_runtime_terminal_reconcile_errors_total", reconciler.name) == 0
    assert counted("controller_runtime_reconcile_time_seconds_count", reconciler.name) == 2


def test_the_reconcile_duration_has_controller_runtimes_buckets() -> None:
    """controller-runtime's own buckets stop at 60 s; Karpenter's DurationBuckets, which go
    on to 600 s, are for Karpenter's histograms only. histogram_quantile over
    controller_runtime_reconcile_time_seconds_bucket (Karpenter's performance dashboard)
    reads the same `le` set."""
    reconciler = FailsFirst("runtime-metrics-buckets")
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"])
    driver.add(reconciler)
    driver.start()
    try:
        driver.enqueue(reconciler, "nodepool-a")
        assert reconciler.done.wait(10)
    finally:
        driver.stop(timeout=5)
    bounds = [sample.labels["le"]
              for sample in samples("controller_runtime_reconcile_time_seconds_bucket")
              if sample.labels["controller"] == reconciler.name]
    assert [float(bound) for bound in bounds] == [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
        0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
        20, 25, 30, 40, 50, 60, float("inf")]
