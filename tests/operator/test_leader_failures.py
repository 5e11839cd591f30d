"""Leader election against a stubbed API server (RBAC as installed): what a user must fix
is an ERROR saying how, and the candidate recovers once it is fixed; a leader whose API
server stops answering stops leading while its requests still hang; the Lease is written
as client-go writes it, the leader renewing with a single update."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.install import InstallSettings
from nodewright.operator.leader import LeaderElector
from tests.kube.apiserver import Authorizer, FakeApiServer
from tests.kube.conftest import make_client
from tests.kube.waiting import eventually
from tests.operator.world import FAST_LEASE

NAMESPACE = "nodewright"
LEASE = "nodewright-leader-election"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer(Authorizer.for_install(
        InstallSettings(cluster_name="demo", cloud="sim", namespace=NAMESPACE)))
    yield fake
    fake.resume()
    fake.close()


@pytest.fixture
def cluster(server: FakeApiServer) -> Iterator[KubeCluster]:
    kube = KubeCluster(make_client(server), cached_kinds=())
    yield kube
    kube.close()


class Candidate:
    def __init__(self, cluster: KubeCluster, identity: str, namespace: str = NAMESPACE) -> None:
        self.stopped = threading.Event()
        self.elector = LeaderElector(cluster, name=LEASE, namespace=namespace,
                                     identity=identity, timing=FAST_LEASE,
                                     on_stopped_leading=self.stopped.set)

    def __enter__(self) -> LeaderElector:
        self.elector.start()
        return self.elector

    def __exit__(self, *exc: object) -> None:
        self.elector.stop(release=False, timeout=5)


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def test_a_missing_lease_namespace_says_how_to_fix_it_and_the_candidate_recovers(
        server: FakeApiServer, cluster: KubeCluster,
        caplog: pytest.LogCaptureFixture) -> None:
    server.missing_namespaces.add(NAMESPACE)
    with Candidate(cluster, "first") as elector:
        problem = eventually(elector.problem, "the candidate to name its problem")
        assert f"namespace {NAMESPACE!r} does not exist" in problem
        (error,) = {e for e in errors(caplog) if "does not exist" in e}
        assert f"kubectl create namespace {NAMESPACE}" in error
        assert "LEADER_ELECTION_NAMESPACE" in error and "POD_NAMESPACE" in error
        assert not elector.is_leader()

        server.missing_namespaces.clear()
        eventually(elector.is_leader, "the candidate to lead once the namespace exists")
        assert elector.problem() is None


def test_a_lease_rbac_refuses_is_an_error_naming_the_role_to_apply(
        server: FakeApiServer, cluster: KubeCluster,
        caplog: pytest.LogCaptureFixture) -> None:
    # The manifests' Role grants the Lease in their namespace, not in this one.
    with Candidate(cluster, "first", namespace="elsewhere") as elector:
        problem = eventually(elector.problem, "the candidate to name its problem")
        assert "403 Forbidden" in problem
        error = next(e for e in errors(caplog) if "403 Forbidden" in e)
        assert "get the leader Lease elsewhere/nodewright-leader-election" in error
        assert "`nodewright manifests`" in error and "LEADER_ELECTION_NAMESPACE" in error
        assert not elector.is_leader()


def test_a_leader_whose_api_server_stops_answering_steps_down_while_it_hangs(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    candidate = Candidate(cluster, "first")
    with candidate as elector:
        eventually(elector.is_leader, "the candidate to lead")
        server.pause()
        # Its requests never return, yet it gives up leading on its own deadline.
        eventually(candidate.stopped.is_set, "the leader to step down")
        assert not elector.is_leader()
        server.resume()


def test_the_leader_renews_with_one_update_and_keeps_its_record(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    with Candidate(cluster, "first") as elector:
        eventually(elector.is_leader, "the candidate to lead")
        first = server.stored("Lease", LEASE, NAMESPACE)
        assert first is not None
        calls = len(server.calls)
        eventually(lambda: (server.stored("Lease", LEASE, NAMESPACE) or {}).get("spec", {})
                   .get("renewTime") != first["spec"]["renewTime"], "a renewal")
        renewals = [call.verb for call in server.calls[calls:]]
        assert renewals and set(renewals) == {"update"}, renewals
        renewed = server.stored("Lease", LEASE, NAMESPACE)
        assert renewed is not None
        assert renewed["spec"]["acquireTime"] == first["spec"]["acquireTime"]
        assert renewed["spec"]["leaseTransitions"] == first["spec"]["leaseTransitions"] == 0

    # A released Lease taken by another: client-go counts that as a transition too.
    released = server.stored("Lease", LEASE, NAMESPACE)
    assert released is not None
    released["spec"].update(holderIdentity="", leaseDurationSeconds=1)
    server.remove("Lease", LEASE, NAMESPACE)
    server.seed(released)
    with Candidate(cluster, "second") as elector:
        eventually(elector.is_leader, "the second candidate to lead")
        taken = server.stored("Lease", LEASE, NAMESPACE)
        assert taken is not None
        assert taken["spec"]["holderIdentity"] == "second"
        assert taken["spec"]["leaseTransitions"] == 1
        assert taken["spec"]["acquireTime"] != released["spec"]["acquireTime"]


def test_a_leader_whose_renewals_fail_is_not_ready_until_one_goes_through(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    with Candidate(cluster, "first") as elector:
        eventually(elector.is_leader, "the candidate to lead")
        assert elector.renewal_problem() is None
        # Two attempts answered 500 (each an update, then the read that follows it):
        # still within the renew deadline, but not ready meanwhile.
        server.fail_next(4, status=500)
        problem = eventually(elector.renewal_problem, "/readyz to say the Lease is stale")
        assert "the leader Lease has not been renewed" in problem
        eventually(lambda: elector.renewal_problem() is None, "the next renewal")
        assert elector.is_leader()
