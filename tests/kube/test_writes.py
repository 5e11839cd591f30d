"""Stories of the adapter's writes against a stubbed API server: creates, optimistic
concurrency (409), the status subresource, deletes with preconditions, the Eviction API,
Events, and the RBAC the installation grants."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster.api import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    NotFoundError,
    TooManyRequestsError,
)
from nodewright.cluster.kube.access import LEADER_ELECTION_LEASE
from nodewright.cluster.kube.cluster import KubeCluster
from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import NAMESPACE


def nodeclaim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"},
                     "finalizers": ["karpenter.sh/termination"]},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": []},
    }


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "app"}]}}


def test_a_created_nodeclaim_can_be_read_back_at_once(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    created = cluster.create(nodeclaim("default-abcde"))
    assert created["metadata"]["uid"]
    # Served from the cache, which the write updated before any watch event came.
    assert cluster.get("NodeClaim", "default-abcde")["metadata"]["uid"] == (
        created["metadata"]["uid"])
    with pytest.raises(AlreadyExistsError):
        cluster.create(nodeclaim("default-abcde"))


def test_generate_name_gives_a_unique_name(cluster: KubeCluster) -> None:
    claim = nodeclaim("")
    claim["metadata"]["generateName"] = "default-"
    first, second = cluster.create(claim), cluster.create(claim)
    assert first["metadata"]["name"].startswith("default-")
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_a_create_whose_answer_was_lost_is_not_stored_twice(
        server: FakeApiServer, cluster: KubeCluster,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nodewright.cluster.kube.cluster.UNKNOWN_OUTCOME_RETRY_INTERVAL", 0.0)
    claim = nodeclaim("")
    claim["metadata"]["generateName"] = "default-"
    server.lose_next_answers(2)  # stored, then the connection broke; and again on the retry

    created = cluster.create(claim)

    stored = server.objects("NodeClaim")
    assert [c["metadata"]["name"] for c in stored] == [created["metadata"]["name"]]
    assert created["metadata"]["uid"] == stored[0]["metadata"]["uid"]
    # Not sent again: the reads after the broken connections found it stored.
    assert [call.verb for call in server.calls if call.verb == "create"] == ["create"]


def test_a_create_the_transport_resent_after_a_5xx_with_retry_after_is_stored_once(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    """Issue 28: the server stored the NodeClaim and answered 503 with Retry-After; the
    transport sent the POST again, which was answered AlreadyExists. That is the first
    request's NodeClaim (it carries this create's identity), not a taken name to draw
    another for: one NodeClaim, one instance."""
    claim = nodeclaim("")
    claim["metadata"]["generateName"] = "default-"
    server.fail_after_storing(1, 503, retry_after=0)

    created = cluster.create(claim)

    stored = server.objects("NodeClaim")
    assert [c["metadata"]["uid"] for c in stored] == [created["metadata"]["uid"]]
    assert [call.verb for call in server.calls if call.verb == "create"] == ["create"] * 2


def test_a_create_answered_with_a_timeout_after_the_write_returns_what_was_stored(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    claim = nodeclaim("")
    claim["metadata"]["generateName"] = "default-"
    server.fail_after_storing(1, 504)

    created = cluster.create(claim)

    (stored,) = server.objects("NodeClaim")
    assert created["metadata"]["uid"] == stored["metadata"]["uid"]
    assert stored["metadata"]["annotations"]["nodewright.io/create-id"]


def test_a_server_error_before_anything_was_stored_is_raised(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    claim = nodeclaim("")
    claim["metadata"]["generateName"] = "default-"
    server.fail_next(1, 500)
    with pytest.raises(ApiError) as failed:
        cluster.create(claim)
    assert failed.value.status == 500
    assert server.objects("NodeClaim") == []


def test_a_name_another_writer_holds_is_not_taken_for_ours(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(nodeclaim("default-abcde"))
    with pytest.raises(AlreadyExistsError):
        cluster.create(nodeclaim("default-abcde"))
    assert len(server.objects("NodeClaim")) == 1


def test_only_a_refused_connection_is_known_to_have_stored_nothing() -> None:
    import httpx2

    from nodewright.cluster.api import UnreachableError
    from nodewright.cluster.kube.cluster import _maybe_delivered

    refused = UnreachableError("cannot reach the API server")
    refused.__cause__ = httpx2.ConnectError("connection refused")
    reset = UnreachableError("cannot reach the API server")
    reset.__cause__ = httpx2.ReadError("connection reset by peer")
    assert not _maybe_delivered(refused)
    assert _maybe_delivered(reset)


def test_a_stale_update_is_a_conflict_and_a_fresh_one_wins(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    stored = cluster.create(nodeclaim("c1"))
    mine, theirs = dict(stored), dict(stored)
    theirs["metadata"] = {**stored["metadata"], "labels": {"writer": "them"}}
    cluster.update(theirs)
    mine["metadata"] = {**stored["metadata"], "labels": {"writer": "me"}}
    with pytest.raises(ConflictError):
        cluster.update(mine)
    fresh = server.stored("NodeClaim", "c1")
    assert fresh is not None
    fresh["metadata"]["labels"] = {"writer": "me"}
    assert cluster.update(fresh)["metadata"]["labels"] == {"writer": "me"}


def test_a_merge_patch_with_a_stale_version_is_a_conflict(cluster: KubeCluster) -> None:
    stored = cluster.create(nodeclaim("c1"))
    version = stored["metadata"]["resourceVersion"]
    cluster.patch("NodeClaim", "c1", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(ConflictError):
        cluster.patch("NodeClaim", "c1",
                      {"metadata": {"resourceVersion": version, "labels": {"b": "2"}}})
    removed = cluster.patch("NodeClaim", "c1", {"metadata": {"labels": {"a": None}}})
    assert removed["metadata"]["labels"] == {"karpenter.sh/nodepool": "default"}


def test_status_goes_through_its_subresource(server: FakeApiServer,
                                             cluster: KubeCluster) -> None:
    stored = cluster.create(nodeclaim("c1"))
    stored["status"] = {"providerID": "aws:///us-west-2a/i-0123"}
    ignored = cluster.update(stored)
    assert "providerID" not in (ignored.get("status") or {})
    ignored["status"] = {"providerID": "aws:///us-west-2a/i-0123"}
    written = cluster.update(ignored, subresource="status")
    assert written["status"]["providerID"] == "aws:///us-west-2a/i-0123"
    patched = cluster.patch("NodeClaim", "c1", {"status": {"imageID": "ami-1"}},
                            subresource="status")
    assert patched["status"] == {"providerID": "aws:///us-west-2a/i-0123", "imageID": "ami-1"}
    assert [c.path for c in server.calls if c.method in ("PUT", "PATCH")][-2:] == [
        "/apis/karpenter.sh/v1/nodeclaims/c1/status",
        "/apis/karpenter.sh/v1/nodeclaims/c1/status",
    ]


def test_delete_keeps_finalized_objects_and_checks_the_uid(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    stored = cluster.create(nodeclaim("c1"))
    with pytest.raises(ConflictError):
        cluster.delete("NodeClaim", "c1", uid="someone-else")
    cluster.delete("NodeClaim", "c1", uid=stored["metadata"]["uid"])
    deleting = server.stored("NodeClaim", "c1")
    assert deleting is not None and deleting["metadata"]["deletionTimestamp"]
    cluster.patch("NodeClaim", "c1", {"metadata": {"finalizers": None}})
    assert server.stored("NodeClaim", "c1") is None
    with pytest.raises(NotFoundError):
        cluster.delete("NodeClaim", "c1")


def test_eviction_is_refused_while_a_budget_protects_the_pod(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(pod("protected"))
    server.seed(pod("free"))
    server.protected_pods.add(("default", "protected"))
    with pytest.raises(TooManyRequestsError):
        cluster.evict("protected", "default")
    cluster.evict("free", "default", grace_period_seconds=30)
    assert server.stored("Pod", "free", "default") is None
    assert server.stored("Pod", "protected", "default") is not None
    with pytest.raises(NotFoundError):
        cluster.evict("gone", "default")
    assert server.verbs("pods/eviction") == ["create", "create", "create"]


def test_an_eviction_names_the_pod_it_means_by_uid(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    """As Karpenter's eviction queue (terminator/eviction.go): the Eviction carries
    deleteOptions.preconditions.uid, so a pod created again under the name is not evicted
    (409 Conflict) and the one meant is."""
    old_uid = server.seed(pod("web"))["metadata"]["uid"]
    server.remove("Pod", "web", "default")
    server.seed(pod("web"))
    with pytest.raises(ConflictError, match="Precondition failed: UID in precondition"):
        cluster.evict("web", "default", uid=old_uid)
    assert server.stored("Pod", "web", "default") is not None
    assert server.evictions[-1]["deleteOptions"]["preconditions"] == {"uid": old_uid}
    current = server.stored("Pod", "web", "default")
    assert current is not None
    cluster.evict("web", "default", uid=current["metadata"]["uid"])
    assert server.stored("Pod", "web", "default") is None


def test_events_are_written_through_events_k8s_io(server: FakeApiServer,
                                                  cluster: KubeCluster) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"generateName": "c1.", "namespace": "default"},
        "eventTime": "2026-01-05T00:00:00.000000Z",
        "reportingController": "karpenter.sh/nodewright",
        "reportingInstance": "nodewright-0",
        "action": "Launched",
        "reason": "Launched",
        "type": "Normal",
        "note": "launched nodeclaim",
        "regarding": {"kind": "NodeClaim", "name": "c1"},
    }
    cluster.create(event)
    assert server.calls[-1].path == "/apis/events.k8s.io/v1/namespaces/default/events"


def test_the_leader_lease_is_read_and_renewed_by_name(server: FakeApiServer,
                                                      cluster: KubeCluster) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": LEADER_ELECTION_LEASE, "namespace": NAMESPACE},
             "spec": {"holderIdentity": "a"}}
    created = cluster.create(lease)
    created["spec"]["holderIdentity"] = "b"
    cluster.update(created)
    assert cluster.get("Lease", LEADER_ELECTION_LEASE, NAMESPACE)["spec"]["holderIdentity"] == "b"


def test_what_the_installed_rbac_does_not_grant_is_forbidden(cluster: KubeCluster) -> None:
    with pytest.raises(ApiError) as refused:
        cluster.get("Lease", "someone-elses-lease", NAMESPACE)
    assert refused.value.status == 403
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "x", "namespace": "default"}, "spec": {}}
    with pytest.raises(ApiError) as refused:
        cluster.create(deployment)
    assert refused.value.status == 403


def test_server_errors_keep_their_code(server: FakeApiServer, cluster: KubeCluster) -> None:
    server.fail_next(1, status=500)
    with pytest.raises(ApiError) as failed:
        cluster.create(nodeclaim("c1"))
    assert failed.value.status == 500
