"""`nodewright controller` processes under faults, where no Kubernetes binaries are (issue
28, part 8): the processes the e2e stories start (tests/e2e/harness.py), against the fake
API server on a socket (tests/faults/fake_plane.py), the fault proxy between a replica
and the server. What tests/e2e/test_faults.py and test_lease_loss.py tell on the real
control plane, told here as far as it goes without a scheduler or kubelets: one NodeClaim
per node needed, each with its Node; no write by a replica after the other took the Lease.

The lease timing is Karpenter's (15 s lease, 10 s renew deadline), so the two-replica
stories take some twenty seconds each, nearly all of it waiting: the three stories are told
side by side, each with its own fake API server, proxy and controller processes, before
the first test reads how its story ended (`told`).
"""

from __future__ import annotations

import datetime
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.harness import FAST_SIM, Controller, eventually, start_controller
from tests.faults.fake_plane import FakePlane
from tests.faults.proxy import WATCHES, FaultProxy, Rule, fail, lose_answer

pytestmark = pytest.mark.slow

LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NODECLAIMS = r"/apis/karpenter\.sh/v1/nodeclaims"
LEASE_PATH = r"/leases/nodewright-leader-election"
NOT_THE_LEASE = r"^(?!.*/leases/)"
# Nodes that take 6 s to register: a leader can be killed between a launch and it.
SLOW_REGISTRATION = FAST_SIM.replace("registrationDelay=2s", "registrationDelay=6s")
# Where no story waits between a launch and its registration: nodes up in half a second.
QUICK_SIM = "launchDelay=200ms,registrationDelay=300ms,terminationDelay=1s,startupTaintDelay=200ms"

Start = Callable[..., Controller]


@dataclass
class Told:
    """How a story ended (`error`: what it raised, None when it held) and the tail of each
    of its controllers' logs."""

    error: BaseException | None
    logs: str

    def __repr__(self) -> str:  # the logs are printed by the test, not in its arguments
        return f"Told(error={self.error!r})"


def tell(story: Callable[[FakePlane, FaultProxy, Start], None], workdir: Path) -> Told:
    """`story` against its own fake API server (reached directly or through a fault proxy)
    with the controller processes it starts, all stopped afterwards."""
    started: list[Controller] = []

    def start_one(name: str, kubeconfig: Path, *,
                  env: dict[str, str] | None = None) -> Controller:
        controller = start_controller(name, kubeconfig, workdir, env=env)
        started.append(controller)
        return controller

    error: BaseException | None = None
    plane = FakePlane.start(workdir)
    try:
        with FaultProxy(plane.address, mode="http", name="replica-a-proxy") as proxy:
            try:
                story(plane, proxy, start_one)
            except BaseException as raised:  # re-raised by the story's test
                error = raised
            finally:
                for controller in started:
                    controller.stop()
    finally:
        plane.stop()
    logs = "\n".join(f"--- {controller.name}\n"
                     + "\n".join(controller.raw_log().splitlines()[-40:])
                     for controller in started)
    return Told(error, logs)


STORIES: dict[str, Callable[[FakePlane, FaultProxy, Start], None]] = {}


def story(function: Callable[[FakePlane, FaultProxy, Start], None]
          ) -> Callable[[FakePlane, FaultProxy, Start], None]:
    """A story this module's test of the same name (`test_` before it) reads the end of."""
    STORIES[function.__name__] = function
    return function


@pytest.fixture(scope="module")
def told(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Told]]:
    """Each selected test's story, told side by side with the others."""
    names = [name for item in request.session.items if item.module is request.module
             for name in [getattr(item, "originalname", item.name).removeprefix("test_")]
             if name in STORIES]
    with ThreadPoolExecutor(max_workers=max(1, len(names)),
                            thread_name_prefix="story") as pool:
        tales = {name: pool.submit(tell, STORIES[name], tmp_path_factory.mktemp(name[:30]))
                 for name in names}
        yield {name: tale.result() for name, tale in tales.items()}


def the_end_of(told: dict[str, Told], name: str) -> None:
    """The story's controllers' logs (shown when it failed) and what it raised."""
    tale = told[name]
    print(tale.logs)
    if tale.error is not None:
        raise tale.error


def exit_code(controller: Controller, timeout: float) -> int | None:
    try:
        return controller.wait_exit(timeout)
    except subprocess.TimeoutExpired:
        return None


def acquired_at(plane: FakePlane) -> float:
    stamp = str(plane.lease()["acquireTime"])
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@story
def request_faults_a_lost_create_answer_and_410s_leave_one_nodeclaim_per_node(
        plane: FakePlane, proxy: FaultProxy, start: Start) -> None:
    """tests/e2e/test_faults.py's first story without pods to run."""
    controller = start("replica-a", plane.kubeconfig(proxy, "through-proxy"),
                       env={"NODEWRIGHT_SIM_TIMING": QUICK_SIM})
    eventually(lambda: controller.readyz()[0] == 200, timeout=60,
               what="the caches synced through the proxy")
    lost = proxy.inject(lose_answer(503, retry_after=1, methods={"POST"}, path=NODECLAIMS,
                                    limit=1))
    errors = proxy.inject(fail(500, share=0.5, path=NOT_THE_LEASE, limit=6))
    throttled = proxy.inject(fail(429, retry_after=1, methods=WRITES, path=NOT_THE_LEASE,
                                  limit=4))
    plane.pending_pods(3)
    eventually(lambda: plane.registered(nodeclaims=1), timeout=60,
               what="one NodeClaim for the three pods, with its Node")
    assert lost.hits == 1
    assert errors.hits > 0 and throttled.hits > 0

    gone = proxy.inject(Rule("expire_watch", path=WATCHES, limit=3))
    assert proxy.reset(streaming=WATCHES) > 0
    eventually(lambda: gone.hits == 3, timeout=60,
               what="watches opened again answered 410 Gone")
    eventually(lambda: controller.logged("expired (410 Gone); listing again"), timeout=30,
               what="a watch answered 410 Gone and listed again")
    plane.pending_pods(1, memory="20Gi")  # more than the first node has left
    eventually(lambda: plane.registered(nodeclaims=2), timeout=60,
               what="a second NodeClaim for the pod made after the 410s, with its Node")
    assert controller.running()
    eventually(lambda: controller.healthz()[0] == 200, timeout=30, what="/healthz ok")


@story
def a_leader_whose_renewals_stall_writes_nothing_once_the_standby_leads(
        plane: FakePlane, proxy: FaultProxy, start: Start) -> None:
    """tests/e2e/test_lease_loss.py's second story: only replica-a's Lease requests are
    held; its other requests pass, and it is launching when they stall. The proxy's
    record of what reached the server is the audit."""
    first = start("replica-a", plane.kubeconfig(proxy, "through-proxy"))
    eventually(lambda: plane.holder() == "replica-a", timeout=60, what="replica-a to lead")
    second = start("replica-b", plane.kubeconfig(name="direct"))
    eventually(lambda: second.readyz()[0] == 200, timeout=60, what="the standby ready")

    cut_at = time.time()
    renewals = proxy.inject(Rule("stall", path=LEASE_PATH))
    plane.pending_pods(3)
    try:
        code = exit_code(first, timeout=LEASE_DURATION + 15)
        assert code == 1, f"the leader did not step down (exit code {code})"
        assert first.logged("lost the leader Lease")
        eventually(lambda: plane.holder() == "replica-b",
                   timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
                   what="the standby to take the Lease")
    finally:
        renewals.end()

    worked = proxy.writes(since=cut_at, path=NOT_THE_LEASE)
    assert worked, "the leader wrote nothing after its renewals stalled"
    taken = acquired_at(plane)
    late = proxy.writes(since=taken)
    assert late == [], ("the old leader wrote after the standby took the Lease:\n"
                        + "\n".join(f"{r.method} {r.target}" for r in late[:10]))
    print(f"replica-a: {len(worked)} writes after its renewals stalled, the last "
          f"{taken - max(r.at for r in worked):.1f}s before replica-b led")
    eventually(lambda: plane.registered(nodeclaims=1), timeout=60,
               what="one NodeClaim for the three pods, with its Node")


@story
def the_leader_killed_between_a_launch_and_its_registration_leaves_one_nodeclaim(
        plane: FakePlane, _proxy: FaultProxy, start: Start) -> None:
    """tests/e2e/test_leader_failover.py's first story without pods to run: the simulated
    instance dies with its process; the standby replaces its NodeClaim, and one NodeClaim
    with its Node is left. (The standby's own launch needs no window before its
    registration: its nodes come up at once.)"""
    first = start("replica-a", plane.kubeconfig(name="replica-a"),
                  env={"NODEWRIGHT_SIM_TIMING": SLOW_REGISTRATION})
    eventually(lambda: plane.holder() == "replica-a", timeout=60, what="replica-a to lead")
    second = start("replica-b", plane.kubeconfig(name="replica-b"),
                   env={"NODEWRIGHT_SIM_TIMING": QUICK_SIM})
    eventually(lambda: second.readyz()[0] == 200, timeout=60, what="the standby ready")

    plane.pending_pods(3)
    doomed = eventually(lambda: [c for c in plane.nodeclaims()
                                 if c.get("status", {}).get("providerID")],
                        timeout=60, what="a NodeClaim launched")
    first.kill()
    eventually(lambda: plane.holder() == "replica-b",
               timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
               what="the standby to take the Lease")
    eventually(lambda: plane.registered(nodeclaims=1), timeout=90,
               what="one NodeClaim with its Node, the dead one's replaced")
    assert doomed[0]["metadata"]["name"] not in {
        c["metadata"]["name"] for c in plane.nodeclaims()}
    assert second.running()


def test_request_faults_a_lost_create_answer_and_410s_leave_one_nodeclaim_per_node(
        told: dict[str, Told]) -> None:
    the_end_of(told, "request_faults_a_lost_create_answer_and_410s_leave_one_nodeclaim_per_node")


def test_a_leader_whose_renewals_stall_writes_nothing_once_the_standby_leads(
        told: dict[str, Told]) -> None:
    the_end_of(told, "a_leader_whose_renewals_stall_writes_nothing_once_the_standby_leads")


def test_the_leader_killed_between_a_launch_and_its_registration_leaves_one_nodeclaim(
        told: dict[str, Told]) -> None:
    the_end_of(told, "the_leader_killed_between_a_launch_and_its_registration_leaves_one_nodeclaim")
