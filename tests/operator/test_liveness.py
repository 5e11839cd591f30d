"""/healthz means the loop makes progress: a controller with work that finishes no
reconcile past its budget, or an informer without a watch past its limit, fails it (the
kubelet restarts the process); time spent on other controllers, and a standby's idle
queues, do not."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from nodewright.cluster.kube.access import WATCHED_KINDS
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.driver import HealthLimits, OperatorDriver
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from tests.kube.apiserver import FakeApiServer
from tests.kube.waiting import eventually
from tests.operator.test_controller_process import (
    controller_process,
    http_get,
    pending_pod,
    server,  # noqa: F401  (the fixture)
)


class Blocking:
    """A reconcile that hangs (a request that never returns) until released."""

    watches: Sequence[Watch] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.release = threading.Event()
        self.running = threading.Event()
        self.done: list[str] = []

    def reconcile(self, key: str) -> Result:
        self.running.set()
        self.release.wait(30)
        self.done.append(key)
        return Result()


class Quick:
    watches: Sequence[Watch] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.done: list[str] = []

    def reconcile(self, key: str) -> Result:
        self.done.append(key)
        return Result()


def driver_with(*reconcilers: Blocking | Quick, health: HealthLimits) -> OperatorDriver:
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"],
                            health=health)
    driver.add(*reconcilers)
    return driver


def test_a_reconcile_that_hangs_past_its_budget_fails_liveness_until_it_returns() -> None:
    hanging = Blocking("termination")
    driver = driver_with(hanging, health=HealthLimits(stall_budget=0.2))
    driver.start()
    try:
        assert driver.stalled() is None
        driver.enqueue(hanging, "node-a")
        problem = eventually(driver.stalled, "liveness to fail")
        assert "controller termination has been in one reconcile" in problem
        hanging.release.set()
        eventually(lambda: driver.stalled() is None, "liveness to recover")
    finally:
        hanging.release.set()
        driver.stop(timeout=5)


def test_time_spent_on_another_controller_is_not_charged_to_a_waiting_one() -> None:
    # Disruption may take long (its budget is large); provisioning waits its turn.
    disruption = Blocking("disruption")
    provisioner = Quick("provisioner")
    health = HealthLimits(stall_budget=0.2, stall_budgets={"disruption": 60.0})
    driver = driver_with(disruption, provisioner, health=health)
    driver.start()
    try:
        driver.enqueue(disruption, "")
        assert disruption.running.wait(10)
        driver.enqueue(provisioner, "")
        time.sleep(0.5)  # past the provisioner's budget, while disruption runs
        assert driver.stalled() is None
        disruption.release.set()
        eventually(lambda: provisioner.done, "the provisioner's turn")
        assert driver.stalled() is None
    finally:
        disruption.release.set()
        driver.stop(timeout=5)


def test_a_standby_whose_queues_fill_up_is_not_stalled() -> None:
    provisioner = Quick("provisioner")
    driver = driver_with(provisioner, health=HealthLimits(stall_budget=0.1))
    driver.start(leading=False)
    try:
        driver.enqueue(provisioner, "")
        time.sleep(0.3)
        assert driver.stalled() is None
        driver.leading.set()  # it takes over: its budget counts from now
        eventually(lambda: provisioner.done, "the new leader to reconcile")
        assert driver.stalled() is None
    finally:
        driver.stop(timeout=5)


def unhealthy_because(port: int, reason: str) -> str | None:
    status, body = http_get(port, "/healthz")
    return body if status == 500 and reason in body else None


def test_healthz_fails_while_a_reconcile_waits_on_an_api_server_that_does_not_answer(
        server: FakeApiServer) -> None:  # noqa: F811
    process = controller_process(server, leader_elect=False,
                                 health=HealthLimits(stall_budget=0.5,
                                                     stall_budgets={}))
    process.start()
    try:
        assert process.probes is not None
        port = process.probes.port
        eventually(lambda: http_get(port, "/readyz")[0] == 200, "/readyz")
        # a loaded machine may take longer than the 0.5 s budget for a start-up reconcile
        eventually(lambda: http_get(port, "/healthz") == (200, "ok\n"), "/healthz ok")

        server.pause()  # requests wait unanswered: the provisioner's create hangs
        server.seed(pending_pod())
        body = eventually(lambda: unhealthy_because(port, "controller"),
                          "/healthz to report the stalled controller")
        assert "without finishing a reconcile" in body or "in one reconcile" in body

        server.resume()
        eventually(lambda: http_get(port, "/healthz")[0] == 200, "/healthz to recover")
        eventually(lambda: server.objects("NodeClaim"), "the NodeClaim, once answered")
    finally:
        server.resume()
        process.shutdown(timeout=5)


def test_healthz_fails_when_an_informer_has_had_no_watch_past_the_limit(
        server: FakeApiServer) -> None:  # noqa: F811
    process = controller_process(server, health=HealthLimits(disconnected=0.3))
    process.start()
    try:
        assert process.probes is not None
        port = process.probes.port
        eventually(lambda: http_get(port, "/readyz")[0] == 200, "/readyz")

        server.cut_watches()  # every watch ends and new ones are refused (503)
        body = eventually(lambda: unhealthy_because(port, "no watch of the API server"),
                          "/healthz to report the informers without a watch")
        assert any(f"{kind} for " in body for kind in WATCHED_KINDS)

        server.accept_watches()
        eventually(lambda: http_get(port, "/healthz")[0] == 200, "/healthz to recover")
    finally:
        process.shutdown(timeout=5)


class EveryController(dict[str, float]):
    """Per-controller budgets: a minute for every controller, whatever its name."""

    def get(self, key: str, default: float | None = None) -> float:  # type: ignore[override]
        return 60.0


def test_healthz_fails_when_the_dispatcher_stops_taking_watch_events(
        server: FakeApiServer) -> None:  # noqa: F811
    """Issue #28: a wedged dispatcher delivers nothing, so no controller has work to stall
    on; the watch events waiting for it are what shows it."""
    process = controller_process(server, leader_elect=False,
                                 health=HealthLimits(stall_budget=0.5,
                                                     stall_budgets=EveryController()))
    process.start()
    wedge = threading.Event()
    try:
        assert process.probes is not None and process.operator is not None
        port = process.probes.port
        eventually(lambda: http_get(port, "/readyz")[0] == 200, "/readyz")
        eventually(lambda: http_get(port, "/healthz") == (200, "ok\n"), "/healthz ok")

        def hangs_on_the_first_pod(event: WatchEvent) -> None:
            if event.kind == "Pod":
                hanging.set()
                wedge.wait(30)

        hanging = threading.Event()
        process.operator.driver.listen(hangs_on_the_first_pod)
        server.seed(pending_pod())  # the dispatcher takes it and hangs in the listener
        assert hanging.wait(10)
        server.seed({**pending_pod(), "metadata": {"name": "inflate-2",
                                                   "namespace": "default"}})
        body = eventually(lambda: unhealthy_because(port, "watch event buffer"),
                          "/healthz to report the events nobody takes")
        assert "without progress" in body

        wedge.set()
        eventually(lambda: http_get(port, "/healthz")[0] == 200, "/healthz to recover")
    finally:
        wedge.set()
        process.shutdown(timeout=5)
