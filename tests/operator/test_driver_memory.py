"""A controller process runs for months: what the driver keeps about failures is bounded."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.driver import ERRORS_KEPT, OperatorDriver
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import Result, Watch
from tests.kube.waiting import eventually


class FailingOnce:
    name = "failing-once"
    watches: Sequence[Watch] = ()

    def __init__(self) -> None:
        self.raised: list[RuntimeError] = []

    def reconcile(self, key: str) -> Result:
        if key in {str(error) for error in self.raised}:
            return Result()
        self.raised.append(RuntimeError(key))
        raise self.raised[-1]


def test_only_the_latest_failures_are_kept() -> None:
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"])
    failing = FailingOnce()
    driver.add(failing)
    driver.start()
    try:
        for number in range(ERRORS_KEPT + 50):
            driver.enqueue(failing, f"key-{number}")
        eventually(lambda: len(failing.raised) == ERRORS_KEPT + 50, "every key to fail once")
    finally:
        driver.stop(timeout=5)
    assert [error for _, _, error in driver.errors] == failing.raised[-ERRORS_KEPT:]
