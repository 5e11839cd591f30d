"""The real Kubernetes control plane of ../shared/k8s, and Nodewright run on it as a user runs it.

- `ControlPlane`: the running etcd + kube-apiserver + kube-scheduler +
  kube-controller-manager (`control-plane start`), kubectl as the admin or as any
  kubeconfig, and the components' pids (to stop and resume the API server).
- `Installation`: `nodewright manifests --cloud sim` applied with kubectl, the in-cluster
  Deployment scaled to 0 (no kubelet runs its pod), and a kubeconfig carrying a token of
  the ServiceAccount the manifests create: the controller runs with exactly the RBAC that
  users install.
- `Controller`: `nodewright controller` as a child process (`python -m nodewright`), its
  JSON log lines, /metrics, /healthz and /readyz.

Nothing here knows the controller's internals: stories talk to it through kubectl, its
logs and its endpoints.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER_NAME = "e2e"
CONTROLLER_NAMESPACE = "nodewright"
SERVICE_ACCOUNT = "nodewright"
# Simulated instances that launch, register and terminate in seconds, so a story of many
# nodes takes a minute or two of real time.
FAST_SIM = "launchDelay=1s,registrationDelay=2s,terminationDelay=1s,startupTaintDelay=1s"
T = TypeVar("T")


class Timeout(AssertionError):
    pass


def eventually(check: Callable[[], T], *, timeout: float = 60.0, interval: float = 0.5,
               what: str = "") -> T:
    """Call `check` until it returns something truthy (returned) or `timeout` passes; an
    AssertionError from `check` counts as not yet, and the last one is reported."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except AssertionError as error:
            last = error
        if time.monotonic() >= deadline:
            detail = f": {last}" if last else ""
            raise Timeout(f"not within {timeout:.0f}s: {what or check.__name__}{detail}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ControlPlane:
    script: Path
    kubeconfig: Path
    home: Path

    @property
    def ca_file(self) -> Path:
        return self.home / "pki" / "ca.crt"

    @functools.cached_property
    def version(self) -> str:
        """The API server's gitVersion, e.g. v1.33.3."""
        answer = json.loads(self.kubectl("version", "-o", "json").stdout)
        return str(answer["serverVersion"]["gitVersion"])

    @property
    def api_url(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["server"])

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                kubeconfig: Path | None = None, timeout: float = 60.0,
                ) -> subprocess.CompletedProcess[str]:
        command = [str(self.home / "bin" / "kubectl"),
                   f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]
        done = subprocess.run(command, input=input, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stderr}{done.stdout}")
        return done

    def get(self, *args: str) -> dict[str, Any]:
        """`kubectl get ARGS -o json`, parsed."""
        loaded: dict[str, Any] = json.loads(self.kubectl("get", *args, "-o", "json").stdout)
        return loaded

    def items(self, kind: str, *args: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(kind, *args).get("items", [])
        return found

    def apply(self, manifests: str | Path | Sequence[Path]) -> None:
        if isinstance(manifests, str):
            self.kubectl("apply", "-f", "-", input=manifests)
            return
        paths = [manifests] if isinstance(manifests, Path) else list(manifests)
        for path in paths:
            self.kubectl("apply", "-f", str(path))

    def pid(self, component: str) -> int:
        return int((self.home / "run" / f"{component}.pid").read_text().strip())

    @contextlib.contextmanager
    def paused_apiserver(self) -> Iterator[None]:
        """The API server frozen with SIGSTOP (a partition: connections stay open and
        nothing answers), resumed on leaving."""
        pid = self.pid("kube-apiserver")
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def ensure_running(self) -> None:
        """`control-plane start`: bring back what is not running (kube-scheduler and
        kube-controller-manager exit when they cannot renew their leases for 10 s, as
        during a long API server outage)."""
        started = subprocess.run([str(self.script), "start"], capture_output=True, text=True,
                                 check=False, env=_control_plane_env(self.home))
        if started.returncode != 0:
            raise AssertionError(f"control-plane start failed:\n{started.stderr[-3000:]}")

    def restart_apiserver(self, down_for: float, grace: float = 2.0) -> None:
        """Stop the API server, wait, start it again (`control-plane start` brings back what
        is not running) and wait until it answers. It gets SIGTERM, then SIGKILL after
        `grace` seconds as the kubelet does after its grace period (its graceful
        termination waits for open watches, up to a minute)."""
        pid = self.pid("kube-apiserver")
        os.kill(pid, signal.SIGTERM)
        try:
            eventually(lambda: not _alive(pid), timeout=grace, what="the API server to stop")
        except Timeout:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            eventually(lambda: not _alive(pid), timeout=30, what="the API server to die")
        time.sleep(down_for)
        self.ensure_running()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _control_plane_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "NW_K8S_HOME": str(home)}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def start_control_plane(script: Path, home: Path) -> tuple[ControlPlane | None, str, bool]:
    """(control plane, why not, whether it was already running)."""
    env = _control_plane_env(home)
    was_running = subprocess.run([str(script), "status"], capture_output=True,
                                 env=env, check=False).returncode == 0
    started = subprocess.run([str(script), "start"], capture_output=True, text=True, env=env,
                             check=False)
    if started.returncode == 3:
        lines = started.stderr.strip().splitlines() or ["a prerequisite is missing"]
        why = re.sub(r"^\[control-plane [^]]*\]\s*(ERROR:\s*)?", "", lines[-1])
        return None, f"local Kubernetes control plane: {why}", was_running
    if started.returncode != 0:
        raise RuntimeError(f"control-plane start failed:\n{started.stderr[-5000:]}")
    path = Path(started.stdout.strip().rpartition("KUBECONFIG=")[2])
    return ControlPlane(script, path, home), "", was_running


# --- the installation: what `nodewright manifests` creates ---------------------------------


def nodewright_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nodewright", *args]


def nodewright_output(*args: str) -> str:
    done = subprocess.run(nodewright_command(*args), capture_output=True, text=True,
                          check=False, cwd=REPO_ROOT)
    if done.returncode != 0:
        raise AssertionError(f"nodewright {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


@dataclass
class Installation:
    plane: ControlPlane
    kubeconfig: Path  # the controller's ServiceAccount
    # The environment the manifests' Deployment gives its container (the literal values).
    deployment_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def install(cls, plane: ControlPlane, workdir: Path, *, cloud: str = "sim",
                options: Sequence[str] = ()) -> Installation:
        """`nodewright manifests --cloud CLOUD OPTIONS...` applied as a user applies it."""
        manifests = nodewright_output("manifests", "--cluster-name", CLUSTER_NAME,
                                      "--cloud", cloud, *options)
        plane.apply(manifests)
        plane.kubectl("-n", CONTROLLER_NAMESPACE, "scale", "deployment",
                      "nodewright-controller", "--replicas", "0")
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                      *(f"crd/{crd}" for crd in (
                          "nodepools.karpenter.sh", "nodeclaims.karpenter.sh",
                          "ec2nodeclasses.karpenter.k8s.aws", "nodeoverlays.karpenter.sh",
                          "capacitybuffers.autoscaling.x-k8s.io")))
        token = plane.kubectl("-n", CONTROLLER_NAMESPACE, "create", "token", SERVICE_ACCOUNT,
                              "--duration=48h").stdout.strip()
        path = workdir / "nodewright-sa.kubeconfig"
        path.write_text(service_account_kubeconfig(plane, token))
        path.chmod(0o600)
        return cls(plane, path, deployment_env(manifests))


def deployment_env(manifests: str) -> dict[str, str]:
    """The controller container's environment in the manifests (values, not references)."""
    for document in yaml.safe_load_all(manifests):
        if isinstance(document, dict) and document.get("kind") == "Deployment":
            container = document["spec"]["template"]["spec"]["containers"][0]
            return {str(item["name"]): str(item["value"]) for item in container.get("env", [])
                    if "value" in item}
    return {}


def service_account_kubeconfig(plane: ControlPlane, token: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": plane.api_url, "certificate-authority": str(plane.ca_file)}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": SERVICE_ACCOUNT}}],
        "current-context": "e2e",
    }
    return yaml.safe_dump(config)


# --- the controller process ------------------------------------------------------------------


@dataclass
class Controller:
    """One `nodewright controller` process; `logs()` are its JSON lines so far."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    metrics_port: int
    probe_port: int
    extra_env: dict[str, str] = field(default_factory=dict)

    def logs(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                parsed = json.loads(line)
                if isinstance(parsed, dict):
                    lines.append(parsed)
        return lines

    def raw_log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def messages(self, level: str | None = None) -> list[str]:
        return [str(line.get("message", "")) for line in self.logs()
                if level is None or line.get("level") == level]

    def logged(self, text: str) -> bool:
        return any(text in message for message in self.messages())

    def running(self) -> bool:
        return self.process.poll() is None

    def http(self, port: int, path: str, timeout: float = 3.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                        timeout=timeout) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()
        except (urllib.error.URLError, OSError) as error:
            return 0, str(error)

    def readyz(self) -> tuple[int, str]:
        return self.http(self.probe_port, "/readyz")

    def healthz(self) -> tuple[int, str]:
        return self.http(self.probe_port, "/healthz")

    def metrics(self) -> str:
        status, body = self.http(self.metrics_port, "/metrics")
        assert status == 200, f"/metrics answered {status}: {body[:200]}"
        return body

    def stop(self, timeout: float = 30.0) -> int:
        if self.running():
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """The process stopped with SIGSTOP (it neither reads nor writes; its connections
        stay open), resumed on leaving."""
        self.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.running():
            self.process.kill()
        self.process.wait(10)

    def wait_exit(self, timeout: float) -> int:
        return self.process.wait(timeout)


def start_controller(
    name: str,
    kubeconfig: Path,
    workdir: Path,
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    cloud: str = "sim",
) -> Controller:
    metrics_port, probe_port = free_port(), free_port()
    log_path = workdir / f"controller-{name}.log"
    command = nodewright_command(
        "controller", "--cloud", cloud, "--cluster-name", CLUSTER_NAME,
        "--kubeconfig", str(kubeconfig), "--metrics-port", str(metrics_port),
        "--health-probe-port", str(probe_port), *args)
    environment = {**os.environ, "POD_NAME": name, "POD_NAMESPACE": CONTROLLER_NAMESPACE,
                   "NODEWRIGHT_SIM_TIMING": FAST_SIM, "NO_PROXY": "127.0.0.1,localhost",
                   **(env or {})}
    for variable in ("KUBECONFIG", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        environment.pop(variable, None)
    with log_path.open("ab") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                   cwd=REPO_ROOT, env=environment)
    return Controller(name, process, log_path, metrics_port, probe_port, env or {})


# --- between stories ---------------------------------------------------------------------------

CLUSTER_SCOPED = ("nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws",
                  "nodeoverlays.karpenter.sh")


def clean_cluster(plane: ControlPlane, namespaces: Sequence[str]) -> None:
    """Remove what stories leave: workloads, their pods and the Events in `namespaces`,
    the DaemonSets stories add to kube-system (the workshop's; a bare control plane has
    none), every NodePool, NodeClaim (finalizers dropped: no controller runs now), Node
    and EC2NodeClass, the leader Lease and a kube-dns Service a story made."""
    plane.kubectl("-n", "kube-system", "delete", "daemonsets", "--all", "--wait=false",
                  check=False)
    plane.kubectl("-n", "kube-system", "delete", "pods", "--all", "--grace-period=0",
                  "--force", "--wait=false", check=False)
    for namespace in namespaces:
        plane.kubectl("-n", namespace, "delete", "deployments,statefulsets,daemonsets,"
                      "replicasets,jobs,poddisruptionbudgets,podtemplates,"
                      "capacitybuffers.autoscaling.x-k8s.io", "--all", "--wait=false",
                      check=False)
        plane.kubectl("-n", namespace, "delete", "pods", "--all", "--grace-period=0",
                      "--force", "--wait=false", check=False)
    for kind in ("nodeclaims.karpenter.sh", "nodes", *CLUSTER_SCOPED):
        listed = plane.kubectl("get", kind, "-o", "name", check=False)
        for name in listed.stdout.split() if listed.returncode == 0 else []:
            plane.kubectl("patch", name, "--type=merge", "-p",
                          '{"metadata":{"finalizers":null}}', check=False)
        plane.kubectl("delete", kind, "--all", "--wait=false", check=False)
    plane.kubectl("-n", CONTROLLER_NAMESPACE, "delete", "lease", "--all", check=False)
    plane.kubectl("-n", "kube-system", "delete", "service", "kube-dns", "--ignore-not-found",
                  check=False)
    plane.kubectl("-n", "kube-node-lease", "delete", "lease", "--all", check=False)
    for namespace in namespaces:
        plane.kubectl("-n", namespace, "delete", "pods", "--all", "--grace-period=0",
                      "--force", check=False)
        plane.kubectl("-n", namespace, "delete", "events", "--all", check=False)
