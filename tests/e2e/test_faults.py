"""Faults between the controller and the real API server (issue 28, part 8).

The controller reaches the API server through the fault proxy (tests/faults/proxy.py): in
http mode the proxy terminates TLS with a CA of its own (the controller's kubeconfig trusts
it), checks the API server's certificate, and answers chosen requests itself; in tcp mode
TLS passes through and the faults are the network's. Each story ends as a user would check
it: every pod running, one NodeClaim per node needed and no NodeClaim without its Node,
the controller alive, healthy and ready.

- 5xx and 429 (with Retry-After) windows on everything but the Lease, the first NodeClaim's
  create stored and its answer lost (the transport sends it again: still one NodeClaim),
  then running watches cut and answered 410 Gone (their resourceVersion compacted away, as
  after a restart over a compacted etcd): the informers list again.
- delays, resets and a partition shorter than the renew deadline (tcp).
- the API server stopped for 30 s between a launch and its registration (no proxy: the
  real server stopped and started again).

The proxy's own behaviour is tested without Kubernetes (tests/faults/test_proxy.py), and
the same faults against the controller's client and the fake API server in
tests/faults/test_kube_through_proxy.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, claims, holder, live, scale, settled
from tests.e2e.harness import FAST_SIM, Controller, ControlPlane, Installation, eventually
from tests.e2e.test_leader_failover import launched_not_registered
from tests.faults.proxy import WATCHES, FaultProxy, Rule, fail, lose_answer
from tests.faults.wiring import apiserver_proxy, kubeconfig_through

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NODECLAIMS = r"/apis/karpenter\.sh/v1/nodeclaims"
# Everything but the leader Lease: failing its renewals for long ends the leader, which is
# the lease stories' subject (test_lease_loss.py), not this one's.
NOT_THE_LEASE = r"^(?!.*/leases/)"
# Windows of requests: how many are answered 500, and how many writes 429.
ERRORS = 6
THROTTLED = 4
EXPIRED_WATCHES = 3
# Well inside the renew deadline (10 s).
PARTITION_SECONDS = 3.0
OUTAGE_SECONDS = 30.0
NO_LEADER_ELECTION = ("--leader-elect", "false")
# Nodes that take 6 s to register: the outage starts between a launch and its registration.
SLOW_REGISTRATION = FAST_SIM.replace("registrationDelay=2s", "registrationDelay=6s")


@pytest.fixture
def http_proxy(control_plane: ControlPlane) -> Iterator[FaultProxy]:
    with apiserver_proxy(control_plane.api_url, control_plane.ca_file) as proxy:
        yield proxy


@pytest.fixture
def tcp_proxy(control_plane: ControlPlane) -> Iterator[FaultProxy]:
    with apiserver_proxy(control_plane.api_url, control_plane.ca_file, mode="tcp") as proxy:
        yield proxy


def through(proxy: FaultProxy, installation: Installation, tmp_path: Path) -> Path:
    """The ServiceAccount's kubeconfig, reaching the API server through `proxy`."""
    return kubeconfig_through(proxy, installation.kubeconfig,
                              tmp_path / f"through-{proxy.mode}-proxy.kubeconfig")


def healthy_and_ready(controller: Controller) -> bool:
    assert controller.running(), "the controller exited"
    assert controller.healthz()[0] == 200, f"/healthz: {controller.healthz()}"
    assert controller.readyz()[0] == 200, f"/readyz: {controller.readyz()}"
    return True


def test_5xx_429_a_lost_create_answer_and_410s_leave_one_nodeclaim_per_node(
        control_plane: ControlPlane, http_proxy: FaultProxy, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    plane, proxy = control_plane, http_proxy
    plane.apply(WORKSHOP)
    controller = start(kubeconfig=through(proxy, installation, tmp_path))
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    eventually(lambda: controller.readyz()[0] == 200, timeout=60,
               what="the caches synced through the proxy")

    # The first NodeClaim is stored and its answer lost (503, Retry-After: 1): the
    # transport sends it again. Of the requests that follow, every other one fails with
    # 500 (ERRORS of them) and the next THROTTLED writes are throttled (429,
    # Retry-After: 1): windows of requests, not of time, so none closes before the
    # scale-up's work comes through.
    lost = proxy.inject(lose_answer(503, retry_after=1, methods={"POST"},
                                    path=NODECLAIMS, limit=1))
    errors = proxy.inject(fail(500, share=0.5, path=NOT_THE_LEASE, limit=ERRORS))
    throttled = proxy.inject(fail(429, retry_after=1, methods=WRITES, path=NOT_THE_LEASE,
                                  limit=THROTTLED))
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, nodes=1), timeout=120,
               what="5 pods running on one node, one NodeClaim")
    assert lost.hits == 1, "the NodeClaim's create did not come through the proxy"
    assert errors.hits > 0 and throttled.hits > 0
    print(f"faulted: {errors.hits} answered 500, {throttled.hits} answered 429, "
          f"1 create answer lost, of {proxy.stats['requests']} requests")

    # Running watches end, and the next ones opened again are answered 410 Gone: those
    # informers list again, and see the scale-up made next.
    gone = proxy.inject(Rule("expire_watch", path=WATCHES, limit=EXPIRED_WATCHES))
    assert proxy.reset(streaming=WATCHES) > 0, "no watch came through the proxy"
    eventually(lambda: gone.hits == EXPIRED_WATCHES, timeout=60,
               what="watches opened again answered 410 Gone")
    eventually(lambda: controller.logged("expired (410 Gone); listing again"), timeout=30,
               what="a watch answered 410 Gone and listed again")
    scale(plane, 12)  # seven pods more than the m5.large holds
    eventually(lambda: settled(plane, 12, nodes=2), timeout=120,
               what="12 pods running on two nodes, one NodeClaim each")
    eventually(lambda: healthy_and_ready(controller), timeout=30,
               what="the controller healthy and ready")


def test_delays_resets_and_a_partition_shorter_than_the_renew_deadline_are_ridden_out(
        control_plane: ControlPlane, tcp_proxy: FaultProxy, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    plane, proxy = control_plane, tcp_proxy
    plane.apply(WORKSHOP)
    controller = start(kubeconfig=through(proxy, installation, tmp_path))
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    eventually(lambda: controller.readyz()[0] == 200, timeout=60,
               what="the caches synced through the proxy")

    scale(plane, 5)
    with proxy.delayed(0.2):
        eventually(lambda: claims(plane), timeout=60,
                   what="a NodeClaim created over slow connections")
    for _ in range(3):  # a flaky network: every connection reset, three times
        proxy.reset()
        time.sleep(1.0)
    with proxy.partitioned():
        time.sleep(PARTITION_SECONDS)
    eventually(lambda: settled(plane, 5, nodes=1), timeout=120,
               what="5 pods running on one node, one NodeClaim")
    assert proxy.stats["delayed"] > 0 and proxy.stats["resets"] > 0
    assert holder(plane) == "replica-a", "the leader lost its Lease to a short partition"

    scale(plane, 12)
    eventually(lambda: settled(plane, 12, nodes=2), timeout=120,
               what="12 pods running on two nodes")
    eventually(lambda: healthy_and_ready(controller), timeout=30,
               what="the controller healthy and ready")


@pytest.mark.forbidden_expected  # a starting API server refuses everyone until RBAC loads
def test_the_api_server_stopped_for_30s_between_a_launch_and_its_registration(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    """Leader election off, as in test_api_server_outages.py: an outage longer than the
    renew deadline ends a leader by design (as it ends Karpenter, for the kubelet to
    start it again); what is looked at here is the work in flight."""
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start(args=NO_LEADER_ELECTION, env={"NODEWRIGHT_SIM_TIMING": SLOW_REGISTRATION})
    eventually(lambda: controller.readyz()[0] == 200, timeout=60, what="the caches synced")
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, nodes=1), timeout=90, what="5 pods on one m5.large")

    scale(plane, 12)
    eventually(lambda: len(live(plane.items("pods", "-n", "default", "-l",
                                            "app=inflate"))) == 12,
               timeout=60, what="the Deployment's 12 pods")
    eventually(lambda: launched_not_registered(plane), timeout=60,
               what="the second NodeClaim launched, its node not registered")
    plane.restart_apiserver(down_for=OUTAGE_SECONDS)

    eventually(lambda: settled(plane, 12, nodes=2), timeout=180,
               what="12 pods running on two nodes, one NodeClaim each")
    eventually(lambda: healthy_and_ready(controller), timeout=60,
               what="the controller healthy and ready")
