"""Mistakes users make when they install or run the controller, on a real control plane.
Each is an ERROR saying what to do. What cannot be fixed by waiting ends the process at
start, as it ends Karpenter (a kubeconfig pointing nowhere, a CRD not installed); what
can be (a namespace, RBAC) keeps the controller retrying, not ready, until it is fixed,
and it recovers on its own."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, holder, scale, settled
from tests.e2e.harness import (
    Controller,
    ControlPlane,
    Installation,
    eventually,
    free_port,
    nodewright_output,
)


def error_saying(controller: Controller, *parts: str) -> str:
    """The controller's first ERROR line that says every one of `parts`."""
    for message in controller.messages("ERROR"):
        if all(part in message for part in parts):
            return message
    raise AssertionError(f"no ERROR saying {parts}; errors: {controller.messages('ERROR')}")


def not_ready(controller: Controller, *reasons: str) -> bool:
    status, body = controller.readyz()
    assert status == 500, f"/readyz answered {status}: {body}"
    assert all(reason in body for reason in reasons), body
    return True


def test_a_missing_lease_namespace_is_reported_until_it_is_created(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    # The controller run from a laptop with the admin's kubeconfig, its Lease pointed at
    # a namespace nobody created.
    namespace = f"nodewright-{uuid.uuid4().hex[:6]}"
    controller = start(kubeconfig=plane.kubeconfig,
                       env={"LEADER_ELECTION_NAMESPACE": namespace})
    try:
        eventually(lambda: error_saying(controller, f"namespace {namespace!r} does not exist",
                                        f"kubectl create namespace {namespace}",
                                        "LEADER_ELECTION_NAMESPACE"),
                   timeout=60, what="an ERROR saying the namespace is missing")
        eventually(lambda: not_ready(controller, namespace), timeout=10,
                   what="/readyz to say why it is not ready")
        assert controller.healthz()[0] == 200 and controller.running()

        plane.kubectl("create", "namespace", namespace)
        eventually(lambda: holder(plane, namespace) == "replica-a", timeout=30,
                   what="the controller to take the Lease once the namespace exists")
        eventually(lambda: controller.readyz()[0] == 200, timeout=10, what="ready again")
    finally:
        controller.stop()
        plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_a_missing_crd_ends_the_controller_at_start(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    crd = "ec2nodeclasses.karpenter.k8s.aws"
    plane.kubectl("delete", "crd", crd)
    try:
        controller = start()
        assert controller.wait_exit(timeout=60) != 0
        error_saying(controller, crd, "nodewright crds | kubectl apply -f -")
    finally:
        plane.apply(nodewright_output("crds"))
        plane.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")


@pytest.mark.forbidden_expected
def test_a_deleted_cluster_role_binding_is_reported_until_it_is_restored(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    binding = plane.get("clusterrolebinding", "nodewright-controller")
    plane.kubectl("delete", "clusterrolebinding", "nodewright-controller")

    controller = start()
    message = eventually(lambda: error_saying(controller, "403 Forbidden", "list",
                                              "nodewright manifests", "ClusterRoleBinding"),
                         timeout=60, what="an ERROR naming what was refused")
    print(message)
    eventually(lambda: not_ready(controller, "403 Forbidden"), timeout=10,
               what="/readyz to say the caches cannot sync")
    assert controller.running()

    for field in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        binding["metadata"].pop(field, None)
    plane.apply(yaml.safe_dump(binding))
    eventually(lambda: controller.readyz()[0] == 200, timeout=60,
               what="the caches to sync once the binding is back")
    scale(plane, 1)
    eventually(lambda: settled(plane, 1, nodes=1), timeout=90, what="a pod running")


def test_a_kubeconfig_pointing_at_no_api_server_ends_the_controller_at_start(
        control_plane: ControlPlane, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    config = yaml.safe_load(installation.kubeconfig.read_text())
    url = f"https://127.0.0.1:{free_port()}"
    config["clusters"][0]["cluster"]["server"] = url
    nowhere = tmp_path / "nowhere.kubeconfig"
    nowhere.write_text(yaml.safe_dump(config))

    controller = start(kubeconfig=nowhere)
    assert controller.wait_exit(timeout=60) != 0
    error_saying(controller, f"cannot reach the Kubernetes API server at {url}",
                 str(nowhere), "--kubeconfig", "KUBECONFIG")
