"""The API server frozen (SIGSTOP): connections stay open and nothing comes down them, as
when a connection dies without a word. Every watch that hears nothing for the read timeout
(NODEWRIGHT_WATCH_READ_TIMEOUT, shortened here; the server sends a bookmark about every
minute, so in production it is 90 s) is abandoned and opened again from the last
resourceVersion; once the server answers again the caches follow it, and a scale-up made
right after gets its nodes.

Leader election is off: a frozen server ends a leader after its renew deadline (as it ends
Karpenter); what is looked at here is the watches."""

from __future__ import annotations

import time

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, scale, settled
from tests.e2e.harness import ControlPlane, Installation, eventually

NO_LEADER_ELECTION = ("--leader-elect", "false")
READ_TIMEOUT_SECONDS = 8
# Longer than the read timeout, so every watch open when the server froze goes silent
# for longer than it.
FREEZE_SECONDS = 15.0
SILENT = "silent for"


def test_watches_silent_through_a_frozen_api_server_are_opened_again(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start(args=NO_LEADER_ELECTION,
                       env={"NODEWRIGHT_WATCH_READ_TIMEOUT": f"{READ_TIMEOUT_SECONDS}s"})
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, nodes=1), timeout=90, what="5 pods on one m5.large")

    before = len(controller.messages())
    with plane.paused_apiserver():
        time.sleep(FREEZE_SECONDS)
    # kube-scheduler and kube-controller-manager exit when they cannot renew their leases
    # for 10 s: bring them back (the controller needs no such help).
    plane.ensure_running()

    eventually(lambda: [m for m in controller.messages()[before:] if SILENT in m],
               timeout=30, what="the controller to abandon its silent watches")
    silent = [m for m in controller.messages()[before:] if SILENT in m]
    assert all("watching again from resourceVersion" in message for message in silent)
    print(f"{len(silent)} silent watches opened again, e.g. {silent[0]!r}")

    scale(plane, 12)  # seven pods more than the m5.large holds
    eventually(lambda: settled(plane, 12, nodes=2), timeout=120,
               what="12 pods running on two nodes")
    assert controller.running()
    assert controller.healthz()[0] == 200
    assert controller.readyz()[0] == 200
