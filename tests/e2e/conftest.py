"""Fixtures of the end-to-end stories: one real control plane for the whole run, Nodewright
installed from its own manifests before each story, controllers as processes, and a clean
cluster after each.

The control plane is ../shared/k8s/control-plane (kept beside the repository, never in
it; NODEWRIGHT_SHARED_DIR points elsewhere). Where it is absent every story skips and
says so. The stories run one at a time (`dev.py test` runs this folder after the rest,
without xdist): they share one cluster, and its cluster-scoped objects (Nodes,
NodeClaims, NodePools) cannot be split between parallel stories.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.e2e.harness import (
    Controller,
    ControlPlane,
    Installation,
    clean_cluster,
    start_control_plane,
    start_controller,
)

CONTROL_PLANE = SHARED / "k8s" / "control-plane"
STORY_NAMESPACES = ("default",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if not CONTROL_PLANE.exists():
        pytest.skip(f"the local Kubernetes control plane is not available: {CONTROL_PLANE} is "
                    "absent (it lives in the team's shared folder beside the repository; set "
                    "NODEWRIGHT_SHARED_DIR if it is elsewhere)")
    home = Path(os.environ.get("NW_K8S_HOME") or Path(os.environ.get("TMPDIR", "/tmp"))
                / "nw-k8s")
    plane, why_not, was_running = start_control_plane(CONTROL_PLANE, home)
    if plane is None:
        pytest.skip(why_not)
    yield plane
    if not was_running:  # leave alone an instance that someone else started
        plane.kubectl("version", check=False)  # nothing to flush; keep symmetry with start
        import subprocess

        subprocess.run([str(CONTROL_PLANE), "stop"], capture_output=True, check=False,
                       env={**os.environ, "NW_K8S_HOME": str(home)})


@pytest.fixture
def installation(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Installation]:
    """Nodewright's manifests applied (as a user applies them) and a clean cluster around
    the story."""
    # An API server outage in an earlier story may have ended kube-scheduler and
    # kube-controller-manager (they exit when they cannot renew their leases).
    control_plane.ensure_running()
    clean_cluster(control_plane, STORY_NAMESPACES)
    installed = Installation.install(control_plane, tmp_path)
    yield installed
    clean_cluster(control_plane, STORY_NAMESPACES)


StartController = Callable[..., Controller]


@pytest.fixture
def start(installation: Installation, tmp_path: Path,
          request: pytest.FixtureRequest) -> Iterator[StartController]:
    """Start `nodewright controller --cloud sim` processes as the ServiceAccount of the
    manifests; each is stopped after the story, and none may have been refused by RBAC."""
    started: list[Controller] = []

    def start_one(name: str = "replica-a", *, args: Sequence[str] = (),
                  env: dict[str, str] | None = None, kubeconfig: Path | None = None,
                  cloud: str = "sim") -> Controller:
        controller = start_controller(name, kubeconfig or installation.kubeconfig, tmp_path,
                                      args=args, env=env, cloud=cloud)
        started.append(controller)
        return controller

    yield start_one
    for controller in started:
        controller.stop()
    if request.node.get_closest_marker("forbidden_expected") is None:
        for controller in started:
            refused = [line for line in controller.raw_log().splitlines()
                       if "forbidden" in line.lower()]
            assert not refused, (f"{controller.name} was refused by RBAC:\n"
                                 + "\n".join(refused[:5]))
