"""Two replicas on the real control plane, the leader reaching the API server through the
fault proxy (tests/faults/proxy.py, http mode) and the standby directly (issue 28, part 8):
once the leader is cut off (all of it, or only its Lease renewals while its other requests
still pass) it stops writing before the standby takes the Lease; the standby finishes the
work, with one NodeClaim per node needed.

"No write after the Lease was lost" is read from the proxy's record of every request the
leader sent: the control plane keeps no audit log, and managedFields cannot tell the
replicas apart (both write as the field manager `nodewright`). A write the API server got
from the old leader after the standby's `acquireTime` would be two writers at once.
"""

from __future__ import annotations

import datetime
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import StartController
from tests.e2e.fleet import LEASE, WORKSHOP, claims, holder, lease, metric, scale, settled
from tests.e2e.harness import Controller, ControlPlane, Installation, eventually
from tests.faults.proxy import FaultProxy, Record, Rule
from tests.faults.wiring import apiserver_proxy, kubeconfig_through

# Karpenter's (controller-runtime's) lease timing, which the controller runs with.
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
LEASE_PATH = rf"/leases/{LEASE}"
NOT_THE_LEASE = r"^(?!.*/leases/)"


@pytest.fixture
def proxy(control_plane: ControlPlane) -> Iterator[FaultProxy]:
    with apiserver_proxy(control_plane.api_url, control_plane.ca_file,
                         name="leader-proxy") as faulty:
        yield faulty


def leader_and_standby(plane: ControlPlane, proxy: FaultProxy, installation: Installation,
                       start: StartController, tmp_path: Path) -> tuple[Controller, Controller]:
    kubeconfig = kubeconfig_through(proxy, installation.kubeconfig,
                                    tmp_path / "leader-through-proxy.kubeconfig")
    first = start("replica-a", kubeconfig=kubeconfig)
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    second = start("replica-b")
    eventually(lambda: second.readyz()[0] == 200, timeout=60,
               what="the standby to be ready (its caches synced)")
    return first, second


def exit_code(controller: Controller, timeout: float) -> int | None:
    try:
        return controller.wait_exit(timeout)
    except subprocess.TimeoutExpired:
        return None


def acquired_at(plane: ControlPlane) -> float:
    """When the current holder took the Lease (its acquireTime), as time.time()."""
    stamp = str(lease(plane)["acquireTime"])
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def late_writes(proxy: FaultProxy, since: float) -> list[Record]:
    return proxy.writes(since=since)


def test_a_leader_partitioned_past_the_renew_deadline_gives_way_and_nothing_is_doubled(
        control_plane: ControlPlane, proxy: FaultProxy, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    plane = control_plane
    first, second = leader_and_standby(plane, proxy, installation, start, tmp_path)
    transitions = int(lease(plane)["leaseTransitions"])
    plane.apply(WORKSHOP)
    scale(plane, 5)
    eventually(lambda: claims(plane), timeout=60, what="the leader to create a NodeClaim")

    proxy.partition()
    try:
        code = exit_code(first, timeout=LEASE_DURATION + 15)
        assert code == 1, f"the partitioned leader did not step down (exit code {code})"
        assert first.logged("lost the leader Lease")
        eventually(lambda: holder(plane) == "replica-b",
                   timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
                   what="the standby to take the Lease")
    finally:
        proxy.heal()
    assert int(lease(plane)["leaseTransitions"]) == transitions + 1
    assert late_writes(proxy, since=acquired_at(plane)) == []

    # The old leader's simulated instance died with it: its NodeClaim is replaced, and
    # the pods run on exactly the one node they need.
    eventually(lambda: settled(plane, 5, nodes=1), timeout=120,
               what="5 pods running on one node, one NodeClaim")
    assert second.running()
    assert metric(second, "leader_election_master_status") == 1


def test_a_leader_whose_renewals_stall_writes_nothing_once_the_standby_leads(
        control_plane: ControlPlane, proxy: FaultProxy, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    """Only the Lease is cut off: the leader's other requests still reach the API server,
    and it is in the middle of a scale-up. Past the renew deadline it is not sure it
    leads, so it writes nothing more (fencing) and exits; the standby takes the Lease a
    lease duration after the last renewal, and is then the only writer."""
    plane = control_plane
    first, second = leader_and_standby(plane, proxy, installation, start, tmp_path)
    plane.apply(WORKSHOP)

    cut_at = time.time()
    renewals = proxy.inject(Rule("stall", path=LEASE_PATH))
    scale(plane, 5)
    try:
        code = exit_code(first, timeout=LEASE_DURATION + 15)
        assert code == 1, f"the leader did not step down (exit code {code})"
        assert first.logged("lost the leader Lease")
        eventually(lambda: holder(plane) == "replica-b",
                   timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
                   what="the standby to take the Lease")
    finally:
        renewals.end()
    assert renewals.hits > 0

    worked = proxy.writes(since=cut_at, path=NOT_THE_LEASE)
    assert worked, "the leader wrote nothing after its renewals stalled: nothing was in flight"
    taken = acquired_at(plane)
    late = late_writes(proxy, since=taken)
    assert late == [], ("the old leader wrote after the standby took the Lease:\n"
                        + "\n".join(f"{r.method} {r.target}" for r in late[:10]))
    print(f"the old leader's last write came {taken - max(r.at for r in worked):.1f}s before "
          f"the standby led ({len(worked)} writes after its renewals stalled)")

    eventually(lambda: settled(plane, 5, nodes=1), timeout=120,
               what="5 pods running on one node, one NodeClaim")
    assert metric(second, "leader_election_master_status") == 1
