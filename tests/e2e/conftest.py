"""Fixtures of the end-to-end stories: one real control plane for the whole run, Nodewright
installed from its own manifests before each story, controllers as processes, and a clean
cluster after each.

The control plane is ../shared/k8s/control-plane (kept beside the repository, never in
it; NODEWRIGHT_SHARED_DIR points elsewhere). Where it is absent every story skips and
says so. The stories of one process run one at a time on its cluster: its
cluster-scoped objects (Nodes, NodeClaims, NodePools) cannot be split between parallel
stories. `dev.py test` runs this folder on two xdist workers, each with a control plane
of its own (`worker_control_plane_home`).

`--cloud aws` stories use `aws_world` (an account on a moto server on loopback, fresh for
each story), `aws_installation` (`nodewright manifests --cloud aws`), `kubelets` (the
kubelets of the instances launched there) and `start_aws` (controllers with the
Deployment's environment, reaching moto through AWS_ENDPOINT_URL).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.e2e import k8s_versions
from tests.e2e.harness import (
    CLUSTER_NAME,
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


STARTED = pytest.StashKey[list[Controller]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed story's report carries what a reader needs to see why: the tail of each
    controller's log and the cluster's pods, nodes and NodeClaims at the failure."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for controller in item.stash.get(STARTED, []):
        tail = controller.raw_log().splitlines()[-60:]
        report.sections.append((f"controller {controller.name} (last lines)", "\n".join(tail)))
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if isinstance(plane, ControlPlane):
        listed = plane.kubectl("get", "nodeclaims,nodes,pods", "-A", "-o", "wide", check=False,
                               timeout=20)
        report.sections.append(("cluster at the failure", listed.stdout + listed.stderr
                                + unready_conditions(plane)))


def unready_conditions(plane: ControlPlane) -> str:
    """The NodePools' and EC2NodeClasses' conditions that are not True, with their messages."""
    lines = []
    for kind in ("nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"):
        listed = plane.kubectl("get", kind, "-o", "json", check=False, timeout=20)
        if listed.returncode != 0:
            continue
        for item in json.loads(listed.stdout).get("items", []):
            for condition in item.get("status", {}).get("conditions", []):
                if condition.get("status") != "True":
                    lines.append(f"{kind}/{item['metadata']['name']} {condition.get('type')}="
                                 f"{condition.get('status')}: {condition.get('message')}")
    return "\n".join(lines)


def unavailable(reason: str) -> None:
    """Skip where the control plane's script cannot be had; in CI (CI=true), which has the
    shared folder beside the clone and must run these stories, fail instead."""
    report_status(skipped=reason)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run the end-to-end stories, but {reason}", pytrace=False)
    pytest.skip(reason)


def report_status(**status: str) -> None:
    """One line for `dev.py test`'s closing summary (NW_E2E_STATUS names the file): the
    version the stories ran on, or why they did not run."""
    path = os.environ.get("NW_E2E_STATUS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(status) + "\n")


def chosen_version() -> str:
    """The Kubernetes version of this run: NW_K8S_VERSION, else the newest whose binaries
    are here (k8s_versions). Set in the environment, so every `control-plane` call and
    kubectl of this process agrees."""
    version = k8s_versions.chosen(CONTROL_PLANE.parent)
    os.environ["NW_K8S_VERSION"] = version
    return version


def worker_control_plane_home() -> Path:
    """The state dir of this process's control plane: NW_K8S_HOME, else the script's own
    default for the version, so each version's cluster stays warm in its own dir. Under
    xdist (`dev.py test` runs the stories on two workers) each worker has its own control
    plane, as the control-plane README allows: worker N > 0 gets HOME-gwN and
    NW_K8S_PORT_BASE + 1000 N. The variables are set in this worker's environment, so
    every `control-plane` call and kubectl of the worker reaches its own instance."""
    home = Path(os.environ.get("NW_K8S_HOME") or k8s_versions.default_home(
        CONTROL_PLANE.parent, chosen_version(), os.environ))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    if index:
        home = home.with_name(f"{home.name}-{worker}")
        base = int(os.environ.get("NW_K8S_PORT_BASE", "26000")) + 1000 * index
        os.environ["NW_K8S_PORT_BASE"] = str(base)
    os.environ["NW_K8S_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if not CONTROL_PLANE.exists():
        unavailable(f"the local Kubernetes control plane is not available: {CONTROL_PLANE} "
                    "is absent (it lives in the team's shared folder beside the repository; "
                    "set NODEWRIGHT_SHARED_DIR if it is elsewhere)")
    home = worker_control_plane_home()
    plane, why_not, was_running = start_control_plane(CONTROL_PLANE, home)
    if plane is None:
        # A missing prerequisite (exit 3: no Kubernetes binaries, no etcd) skips the stories,
        # in CI too: the machine cannot run them, and says why. Any other failure to start
        # raised in start_control_plane and fails every story.
        report_status(skipped=why_not)
        pytest.skip(why_not)
    report_status(ran=plane.version)
    yield plane
    if not was_running:  # leave alone an instance that someone else started
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


def _controllers(installation: Installation, tmp_path: Path, request: pytest.FixtureRequest,
                 *, cloud: str, env: dict[str, str]) -> Iterator[StartController]:
    """Start `nodewright controller` processes as the ServiceAccount of the manifests; each
    is stopped after the story, and none may have been refused by RBAC."""
    started: list[Controller] = []
    request.node.stash[STARTED] = started
    base_env, default_cloud = env, cloud

    def start_one(name: str = "replica-a", *, args: Sequence[str] = (),
                  env: dict[str, str] | None = None, kubeconfig: Path | None = None,
                  cloud: str = default_cloud) -> Controller:
        controller = start_controller(name, kubeconfig or installation.kubeconfig, tmp_path,
                                      args=args, env={**base_env, **(env or {})}, cloud=cloud)
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


@pytest.fixture
def start(installation: Installation, tmp_path: Path,
          request: pytest.FixtureRequest) -> Iterator[StartController]:
    """Start `nodewright controller --cloud sim` processes (see `_controllers`)."""
    yield from _controllers(installation, tmp_path, request, cloud="sim", env={})


# --- --cloud aws: a moto server for an AWS account -------------------------------------------


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Any]:
    from tests.e2e.aws_world import MotoServer

    try:
        server = MotoServer()
    except ImportError as error:  # moto without its `server` extra (flask)
        pytest.skip(f"moto's server is not installed ({error}); "
                    "pip install -r requirements-dev.txt")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pricing_api() -> Iterator[Any]:
    from tests.e2e.aws_world import PricingApi

    api = PricingApi()
    yield api
    api.stop()


@pytest.fixture
def aws_world(moto_server: Any, pricing_api: Any, control_plane: ControlPlane) -> Any:
    """A fresh account on the moto server, set up as Karpenter's getting-started guide
    sets one up for the cluster (see tests/e2e/aws_world.py)."""
    from tests.e2e.aws_world import AwsWorld

    moto_server.reset()
    pricing_api.requests.clear()
    return AwsWorld.build(moto_server.endpoint, CLUSTER_NAME, control_plane.api_url,
                          pricing_api.endpoint)


@pytest.fixture
def aws_installation(control_plane: ControlPlane, aws_world: Any,
                     tmp_path: Path) -> Iterator[Installation]:
    """`nodewright manifests --cloud aws` applied (region, interruption queue, cluster
    endpoint as a user passes them) and a clean cluster around the story."""
    from tests.e2e.aws_world import QUEUE, REGION

    control_plane.ensure_running()  # as `installation` does
    clean_cluster(control_plane, STORY_NAMESPACES)
    installed = Installation.install(
        control_plane, tmp_path, cloud="aws",
        options=("--region", REGION, "--queue", QUEUE,
                 "--cluster-endpoint", control_plane.api_url))
    yield installed
    clean_cluster(control_plane, STORY_NAMESPACES)


@pytest.fixture
def kubelets(aws_world: Any, aws_installation: Installation,
             control_plane: ControlPlane) -> Iterator[Any]:
    """The kubelets of the instances launched in `aws_world`."""
    from tests.e2e.aws_world import kubelets_for

    yield from kubelets_for(aws_world, control_plane.kubeconfig)


@pytest.fixture
def start_aws(aws_installation: Installation, aws_world: Any, tmp_path: Path,
              request: pytest.FixtureRequest) -> Iterator[StartController]:
    """Start `nodewright controller --cloud aws` processes with the Deployment's
    environment from the manifests, reaching the moto server through AWS_ENDPOINT_URL."""
    yield from _controllers(aws_installation, tmp_path, request, cloud="aws",
                            env={**aws_installation.deployment_env,
                                 **aws_world.controller_env()})
