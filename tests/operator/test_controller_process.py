"""`nodewright controller --cloud sim` end to end against a stubbed API server that
enforces the installed RBAC: probes and metrics, a pending pod becoming a NodeClaim, a
simulated instance and a registered Node kept alive through its Lease, the pod reported
running, and a clean stop that releases the leader Lease."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.cluster.kube.informer import Informer
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.registry import build_controllers
from nodewright.install import InstallSettings
from nodewright.operator.config import OperatorConfig
from nodewright.operator.driver import HealthLimits
from nodewright.operator.main import ControllerProcess, build_cloud
from nodewright.runtime.clock import SystemClock
from tests.conftest import EXAMPLES
from tests.kube.apiserver import Authorizer, FakeApiServer
from tests.kube.conftest import NO_WAIT, make_client
from tests.kube.waiting import eventually
from tests.operator.world import FAST_CLOUD, FAST_LEASE

NAMESPACE = "nodewright"


def http_get(port: int, path: str) -> tuple[int, str]:
    # A generous timeout: on a CI machine running four test workers on two cores an answer
    # has taken over 5 s; the stories check what the endpoints say, not how fast.
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    settings = InstallSettings(cluster_name="demo", cloud="sim", namespace=NAMESPACE)
    fake = FakeApiServer(Authorizer.for_install(settings))
    for name in ("nodepool.yaml", "ec2nodeclass.yaml"):
        for body in yaml.safe_load_all((EXAMPLES / "workshop" / name).read_text()):
            fake.seed(body)
    yield fake
    fake.close()


def controller_process(server: FakeApiServer, *, health: HealthLimits | None = None,
                       leader_elect: bool = True) -> ControllerProcess:
    config = OperatorConfig(cluster_name="demo", cloud="sim", metrics_port=0,
                            health_probe_port=0, batch_idle_duration=0.05,
                            batch_max_duration=0.5, leader_election_namespace=NAMESPACE,
                            identity="nodewright-0_test", leader_elect=leader_elect)
    cluster = KubeCluster(make_client(server), sync_timeout=10.0,
                          informer_factory=lambda client, kind: Informer(
                              client, kind, backoff=NO_WAIT, watch_timeout=lambda: 1))
    return ControllerProcess(config, cluster=cluster, timing=FAST_LEASE,
                             sim_settings=FAST_CLOUD, health=health)


@pytest.fixture
def process(server: FakeApiServer) -> Iterator[ControllerProcess]:
    started = controller_process(server)
    started.start()
    yield started
    started.shutdown(timeout=5)


def pending_pod() -> dict[str, object]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "inflate-1", "namespace": "default", "labels": {"app": "inflate"}},
        "spec": {"nodeSelector": {"type": "karpenter"}, "schedulerName": "default-scheduler",
                 "containers": [{"name": "inflate", "image": "pause",
                                 "resources": {"requests": {"memory": "1Gi"}}}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    }


def test_a_sim_controller_provisions_and_keeps_its_nodes_alive(
        server: FakeApiServer, process: ControllerProcess) -> None:
    assert process.probes is not None and process.metrics is not None
    probes = process.probes
    eventually(lambda: http_get(probes.port, "/readyz")[0] == 200, "/readyz")
    assert http_get(probes.port, "/healthz") == (200, "ok\n")
    status, text = http_get(process.metrics.port, "/metrics")
    assert status == 200 and "karpenter_build_info" in text
    eventually(lambda: (process.operator is not None and process.operator.is_leader()),
               "the process to lead")
    assert (server.stored("Lease", "nodewright-leader-election", NAMESPACE) or {}).get(
        "spec", {}).get("holderIdentity") == "nodewright-0_test"

    server.seed(pending_pod())
    (claim,) = eventually(lambda: server.objects("NodeClaim"), "a NodeClaim for the pod")
    (node,) = eventually(lambda: server.objects("Node"), "the simulated instance's Node")
    assert node["spec"]["providerID"].startswith("aws:///")
    assert claim["spec"]["nodeClassRef"]["name"] == "default"
    name = node["metadata"]["name"]
    lease = eventually(lambda: server.stored("Lease", name, "kube-node-lease"),
                       "the node's heartbeat Lease")
    assert lease["spec"]["holderIdentity"] == name
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"

    # The real kube-scheduler binds the pod; the controller reports it running.
    server.bind("inflate-1", name)
    eventually(lambda: (server.stored("Pod", "inflate-1", "default") or {}).get(
        "status", {}).get("phase") == "Running", "the pod reported Running")

    assert process.shutdown(timeout=5)
    released = server.stored("Lease", "nodewright-leader-election", NAMESPACE)
    assert released is not None and released["spec"]["holderIdentity"] == ""
    assert server.forbidden == []  # everything it did, the installed RBAC allows


def test_a_missing_kubeconfig_is_reported_not_raised(tmp_path: Path) -> None:
    from nodewright.operator.main import StartupError

    config = OperatorConfig(cluster_name="demo", cloud="sim",
                            kubeconfig=str(tmp_path / "missing"), metrics_port=0,
                            health_probe_port=0)
    with pytest.raises(StartupError) as error:
        ControllerProcess(config).start()
    assert "missing" in str(error.value)


def test_a_sim_controller_says_it_does_not_read_the_interruption_queue(
        caplog: pytest.LogCaptureFixture) -> None:
    config = OperatorConfig(cluster_name="demo", cloud="sim",
                            interruption_queue="demo-interruptions")
    clock = SystemClock()
    cloud, _ = build_cloud(config, InMemoryCluster(clock), clock)  # type: ignore[arg-type]
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "INTERRUPTION_QUEUE='demo-interruptions' is not read with --cloud sim" in (
        warning.getMessage())
    # The simulated EC2's own queue is what the interruption controller reads.
    assert isinstance(cloud, SimulatedEC2)
    controllers = build_controllers(InMemoryCluster(clock), cloud, clock)
    assert controllers.disruption is not None
    assert controllers.disruption.interruption is not None
    assert controllers.disruption.interruption.queue is cloud.interruption_queue


def test_without_the_variable_a_sim_controller_says_nothing_about_it(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = SystemClock()
    build_cloud(OperatorConfig(cluster_name="demo", cloud="sim"),
                InMemoryCluster(clock), clock)  # type: ignore[arg-type]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def unready_because(port: int, reason: str) -> str | None:
    status, body = http_get(port, "/readyz")
    return body if status == 500 and reason in body else None


def test_a_missing_lease_namespace_makes_the_process_unready_until_it_exists(
        server: FakeApiServer) -> None:
    server.missing_namespaces.add(NAMESPACE)
    process = controller_process(server)
    process.start()
    try:
        assert process.probes is not None
        port = process.probes.port
        body = eventually(lambda: unready_because(port, "does not exist"),
                          "/readyz to say why")
        assert f"namespace {NAMESPACE!r}" in body
        assert http_get(port, "/healthz")[0] == 200  # alive: it keeps trying

        server.missing_namespaces.clear()
        eventually(lambda: http_get(port, "/readyz")[0] == 200, "ready once it exists")
        eventually(lambda: process.operator is not None and process.operator.is_leader(),
                   "the process to lead")
    finally:
        process.shutdown(timeout=5)


def test_a_missing_crd_stops_the_process_at_start(server: FakeApiServer) -> None:
    from nodewright.operator.main import StartupError

    server.unserved = {"NodePool"}
    with pytest.raises(StartupError) as error:
        controller_process(server).start()
    assert "nodepools.karpenter.sh" in str(error.value)
    assert "nodewright crds | kubectl apply -f -" in str(error.value)
