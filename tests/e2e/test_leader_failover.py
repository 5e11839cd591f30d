"""Two replicas of the controller on a real control plane, as the Deployment runs them:
one leads (it holds the Lease and is the only one to write), the other stands by. When the
leader is killed in the middle of a launch the standby takes over within a lease duration
and finishes the job without a duplicate node; when the leader is cut off from the API
server it stops before the standby can take its place."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, claims, holder, lease, metric, scale, settled
from tests.e2e.harness import FAST_SIM, ControlPlane, Installation, eventually

# Karpenter's (controller-runtime's) lease timing, which the controller runs with.
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
# Nodes that take 6 s to register: long enough to kill the leader between the launch and
# the registration.
SLOW_REGISTRATION = FAST_SIM.replace("registrationDelay=2s", "registrationDelay=6s")


def launched_not_registered(plane: ControlPlane) -> dict[str, Any] | None:
    registered = {node["spec"].get("providerID") for node in plane.items("nodes")}
    for claim in claims(plane):
        provider_id = claim.get("status", {}).get("providerID")
        if provider_id and provider_id not in registered:
            return claim
    return None


def test_the_standby_takes_over_a_leader_killed_in_the_middle_of_a_launch(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    env = {"NODEWRIGHT_SIM_TIMING": SLOW_REGISTRATION}
    first = start("replica-a", env=env)
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    second = start("replica-b", env=env)
    eventually(lambda: second.readyz()[0] == 200, timeout=60,
               what="the standby to be ready (its caches synced)")

    plane.apply(WORKSHOP)
    scale(plane, 5)
    doomed = eventually(lambda: launched_not_registered(plane), timeout=60,
                        what="a NodeClaim launched whose node has not registered")
    assert holder(plane) == "replica-a"
    # Only the leader works; the standby watches and writes nothing.
    assert metric(first, "leader_election_master_status") == 1
    assert metric(second, "leader_election_master_status") == 0
    assert metric(second, "controller_runtime_reconcile_total") == 0
    transitions = int(lease(plane)["leaseTransitions"])

    first.kill()
    killed = time.monotonic()
    eventually(lambda: holder(plane) == "replica-b",
               timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 4,
               what="the standby to take the Lease within a lease duration")
    print(f"the standby led {time.monotonic() - killed:.1f}s after the kill")
    assert int(lease(plane)["leaseTransitions"]) == transitions + 1

    # The simulated instance died with the leader: its NodeClaim is replaced, and the
    # pods run on exactly the one node they need.
    eventually(lambda: settled(plane, 5, nodes=1), timeout=90,
               what="5 pods running on one node, no NodeClaim without its Node")
    assert doomed["metadata"]["name"] not in {c["metadata"]["name"] for c in claims(plane)}
    assert second.logged("died with the controller process that launched it")
    assert metric(second, "leader_election_master_status") == 1


def test_a_leader_cut_off_from_the_api_server_stops_before_the_standby_can_lead(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    first = start("replica-a")
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    second = start("replica-b")
    eventually(lambda: second.readyz()[0] == 200, timeout=60, what="the standby to be ready")
    transitions = int(lease(plane)["leaseTransitions"])

    # The API server stops answering for longer than the renew deadline. The standby may
    # take the Lease once it answers again (and a lease duration has passed): the leader
    # must have stopped writing before then, so it must be gone while the server is still
    # frozen.
    pause = 2 * RENEW_DEADLINE
    with plane.paused_apiserver():
        paused = time.monotonic()
        try:
            code: int | None = first.wait_exit(timeout=pause - 2)
        except subprocess.TimeoutExpired:
            code = None
        stopped_after = time.monotonic() - paused
        time.sleep(max(0.0, pause - stopped_after))
    assert code == 1, (f"the leader was still running {pause - 2:.0f}s into the partition "
                       f"(exit code {code})")
    print(f"the leader exited {stopped_after:.1f}s into the partition")
    assert first.logged("lost the leader Lease")
    # (kube-scheduler and kube-controller-manager lost their leases too, and exited: the
    # next story's installation brings them back; this one schedules nothing more.)

    eventually(lambda: holder(plane) == "replica-b",
               timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
               what="the standby to take the Lease")
    assert int(lease(plane)["leaseTransitions"]) == transitions + 1
    assert second.running()
    eventually(lambda: metric(second, "leader_election_master_status") == 1, timeout=10,
               what="the standby to lead")
