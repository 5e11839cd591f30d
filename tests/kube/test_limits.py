"""The adapter's client-side limits against a stubbed API server: KUBE_CLIENT_QPS and
KUBE_CLIENT_BURST space the requests, and an answer with Retry-After is waited out and
sent again. Time is a counter the waits advance: nothing sleeps, no duration is measured."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cluster.api import ApiError, TooManyRequestsError
from nodewright.cluster.fencing import Fence, FencedError
from nodewright.cluster.kube.access import LEADER_ELECTION_LEASE
from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.cluster.kube.transport import ClientLimits, LimitedTransport, limit, resource_of
from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import make_client


class CountedTime:
    """A monotonic clock that moves only when someone waits."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "nodewright"}, "spec": {}}


@pytest.fixture
def time_() -> CountedTime:
    return CountedTime()


def limited(server: FakeApiServer, time_: CountedTime, limits: ClientLimits,
            ) -> tuple[KubeCluster, LimitedTransport]:
    client = make_client(server)
    transport = limit(client, limits, monotonic=time_.monotonic, sleep=time_.sleep)
    # Nothing cached: every read below is a request.
    return KubeCluster(client, cached_kinds=()), transport


@pytest.fixture
def slow(server: FakeApiServer, time_: CountedTime,
         ) -> Iterator[tuple[KubeCluster, LimitedTransport]]:
    cluster, transport = limited(server, time_, ClientLimits(qps=10.0, burst=2))
    yield cluster, transport
    cluster.close()


def test_requests_beyond_the_burst_are_spaced_at_the_qps(
        slow: tuple[KubeCluster, LimitedTransport], time_: CountedTime) -> None:
    cluster, transport = slow
    for index in range(5):
        cluster.create(lease(f"lease-{index}"))
    # Two ride the burst; each of the other three waits a tenth of a second for its token.
    assert [why for why, _ in transport.waits] == ["qps"] * 3
    assert [seconds for _, seconds in transport.waits] == pytest.approx([0.1] * 3)

    time_.sleep(10.0)  # idle time refills the burst, no more
    cluster.list("Namespace")
    cluster.list("Namespace")
    assert len(transport.waits) == 3
    cluster.list("Namespace")
    assert len(transport.waits) == 4


def test_a_429_with_retry_after_is_waited_out_and_sent_again(
        server: FakeApiServer, time_: CountedTime) -> None:
    cluster, transport = limited(server, time_, ClientLimits())
    try:
        server.fail_next(2, status=429, retry_after=3)
        created = cluster.create(lease(LEADER_ELECTION_LEASE))
        assert created["metadata"]["name"] == LEADER_ELECTION_LEASE
        assert list(transport.waits) == [("retry-after", 3.0), ("retry-after", 3.0)]
        assert server.verbs("leases") == ["create"] * 3

        # Reads too, and a 503 that says when to come back.
        server.fail_next(1, status=503, retry_after=1)
        read = cluster.get("Lease", LEADER_ELECTION_LEASE, "nodewright")
        assert read["metadata"]["name"] == LEADER_ELECTION_LEASE
        assert transport.waits[-1] == ("retry-after", 1.0)
    finally:
        cluster.close()


def test_retries_are_bounded_in_number_and_in_wait(
        server: FakeApiServer, time_: CountedTime) -> None:
    cluster, transport = limited(server, time_,
                                 ClientLimits(retries=2, max_retry_after=5.0))
    try:
        server.fail_next(3, status=429, retry_after=600)
        with pytest.raises(TooManyRequestsError):
            cluster.create(lease("mine"))
        assert list(transport.waits) == [("retry-after", 5.0), ("retry-after", 5.0)]

        # Without Retry-After nothing is retried here (the reconcile's backoff decides).
        server.fail_next(1, status=500)
        with pytest.raises(ApiError):
            cluster.create(lease("other"))
        assert len(transport.waits) == 2
    finally:
        cluster.close()


def test_a_write_waiting_out_retry_after_is_not_sent_again_once_the_replica_is_fenced(
        server: FakeApiServer, time_: CountedTime) -> None:
    """Issue #28 (fencing): the replica stops being sure it leads while its create sleeps
    out a Retry-After; the create is not sent again, and a Lease write still goes out."""
    sure = {"leading": True}

    def sleep_and_lose_the_lease(seconds: float) -> None:
        time_.sleep(seconds)
        sure["leading"] = False

    client = make_client(server)
    transport = limit(client, ClientLimits(), monotonic=time_.monotonic,
                      sleep=sleep_and_lose_the_lease)
    transport.fence = Fence(lambda: None if sure["leading"] else "the Lease was lost")
    cluster = KubeCluster(client, cached_kinds=())
    try:
        server.fail_next(1, status=429, retry_after=3)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        with pytest.raises(FencedError, match="create Node: not sure this replica"):
            cluster.create(node)
        assert server.verbs("nodes") == ["create"]  # the first attempt only

        with pytest.raises(FencedError):
            cluster.delete("Node", "n1")
        assert server.verbs("nodes") == ["create"]
        cluster.create(lease(LEADER_ELECTION_LEASE))  # leader election is never fenced
        assert server.verbs("leases") == ["create"]
    finally:
        cluster.close()


@pytest.mark.parametrize(("path", "addressed"), [
    ("/api/v1/namespaces/default/pods/web-1/eviction", ("Pod", "web-1")),
    ("/apis/events.k8s.io/v1/namespaces/default/events", ("Event", "")),
    ("/apis/karpenter.sh/v1/nodeclaims/default-abcde/status", ("NodeClaim", "default-abcde")),
    ("/apis/coordination.k8s.io/v1/namespaces/nodewright/leases/lease", ("Lease", "lease")),
    ("/api/v1/nodes", ("Node", "")),
])
def test_the_fence_reads_the_kind_and_name_a_write_addresses(
        path: str, addressed: tuple[str, str]) -> None:
    assert resource_of(path) == addressed
