"""The controller through the real API server's restarts: in the middle of a scale-up,
and while the controller is frozen, so that the versions its watches had reached are older
than anything the new server keeps (410 Gone) and it must list again. Either way the
caches converge, the pods run, and nothing is launched twice.

Leader election is off in these stories: an outage longer than the renew deadline ends a
leader (as it ends Karpenter, for the kubelet to restart it); what is looked at here is
the watches."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, live, scale, settled
from tests.e2e.harness import ControlPlane, Installation, eventually

NO_LEADER_ELECTION = ("--leader-elect", "false")
# Longer than kube-scheduler's and kube-controller-manager's renew deadline (10 s): they
# exit during the outage and come back with the API server, rather than maybe after.
OUTAGE_SECONDS = 15.0
# A starting API server serves requests before its RBAC authorizer has loaded the roles
# and bindings, and refuses everyone meanwhile: the controller's retries meet that.
pytestmark = pytest.mark.forbidden_expected


def test_the_api_server_restarted_in_the_middle_of_a_scale_up(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start(args=NO_LEADER_ELECTION)
    eventually(lambda: controller.readyz()[0] == 200, timeout=60, what="the caches synced")

    scale(plane, 5)
    # The controller-manager exits during the outage too: were it to create only some
    # of the pods before it, the rest would come after the first node was chosen, and a
    # second node would be right. The outage starts once all five wait for the controller.
    eventually(lambda: len(live(plane.items("pods", "-n", "default", "-l",
                                            "app=inflate"))) == 5,
               timeout=60, what="the Deployment's 5 pods")
    plane.restart_apiserver(down_for=OUTAGE_SECONDS)

    eventually(lambda: settled(plane, 5, nodes=1), timeout=120,
               what="5 pods running on one node, one NodeClaim")
    assert controller.running()
    assert controller.readyz()[0] == 200


def test_a_watch_too_old_to_resume_lists_again_and_converges(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start(args=NO_LEADER_ELECTION)
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, nodes=1), timeout=90, what="5 pods on one m5.large")

    with controller.frozen():
        # A new API server's watch cache starts at its current resourceVersion: the
        # versions the frozen controller's watches reached are gone from it.
        plane.restart_apiserver(down_for=OUTAGE_SECONDS)
        scale(plane, 12)  # seven pods more than the m5.large holds
        eventually(lambda: len(live(plane.items("pods", "-n", "default", "-l",
                                                "app=inflate"))) == 12,
                   timeout=60, what="the Deployment's 12 pods, unseen by the controller")

    eventually(lambda: controller.logged("expired (410 Gone); listing again"), timeout=60,
               what="a watch answered 410 Gone and listed again")
    eventually(lambda: settled(plane, 12, nodes=2), timeout=120,
               what="12 pods running on two nodes")
    assert controller.running()
