"""Stories of the adapter's informers against a stubbed API server: list then watch,
bookmarks, 410 Gone, lost connections, and reads served from the caches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cluster.api import NotFoundError
from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.cluster.kube.informer import Informer
from nodewright.runtime.ratelimit import REFLECTOR_BACKOFF, Backoff
from nodewright.runtime.reconciler import WatchEvent
from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import NO_WAIT, make_client
from tests.kube.waiting import eventually


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def pod(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "app", "image": "app"}]}}


class Collector:
    """Drains a watch stream into one list, as the operator's loop does."""

    def __init__(self, cluster: KubeCluster, kinds: list[str]) -> None:
        self.stream = cluster.watch(kinds)
        self.events: list[WatchEvent] = []

    def seen(self) -> list[tuple[str, str, str]]:
        self.events += self.stream.poll()
        return [(e.type, e.kind, e.key) for e in self.events]

    def wait_for(self, *expected: tuple[str, str, str]) -> None:
        eventually(lambda: all(item in self.seen() for item in expected),
                   f"events {expected} (seen {self.seen()})")


def test_a_watch_starts_with_every_object_then_follows_changes(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a", zone="1"))
    server.seed(pod("web-1"))
    events = Collector(cluster, ["Node", "Pod"])
    events.wait_for(("ADDED", "Node", "a"), ("ADDED", "Pod", "default/web-1"))
    assert events.stream.synced()

    server.seed(node("b"))
    server.modify("Node", "a", zone="2")
    server.remove("Pod", "web-1", "default")
    events.wait_for(("ADDED", "Node", "b"), ("MODIFIED", "Node", "a"),
                    ("DELETED", "Pod", "default/web-1"))
    modified = next(e for e in events.events if e.type == "MODIFIED")
    assert modified.object["metadata"]["labels"] == {"zone": "2"}


def test_reads_of_watched_kinds_come_from_the_cache(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a", pool="x"))
    server.seed(node("b", pool="y"))
    assert cluster.get("Node", "a")["metadata"]["labels"] == {"pool": "x"}
    assert [n["metadata"]["name"] for n in cluster.list("Node", labels={"pool": "y"})] == ["b"]
    with pytest.raises(NotFoundError):
        cluster.get("Node", "missing")
    # The objects come with their kind, although list items on the wire have none.
    assert cluster.list("Node")[0]["kind"] == "Node"
    # Reads never reached the server one object at a time: one list, then watches.
    eventually(lambda: "watch" in server.verbs("nodes"), "the watch to open after the list")
    assert set(server.verbs("nodes")) == {"list", "watch"}
    assert server.verbs("nodes").count("list") == 1

    server.modify("Node", "a", pool="z")
    eventually(lambda: cluster.get("Node", "a")["metadata"]["labels"] == {"pool": "z"},
               "the cache to follow the change")


def test_copies_are_handed_out(server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a"))
    first = cluster.get("Node", "a")
    first["metadata"]["labels"]["changed"] = "locally"
    assert "changed" not in cluster.get("Node", "a")["metadata"]["labels"]


def test_watches_ask_for_bookmarks_and_resume_from_them(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a"))
    events = Collector(cluster, ["Node"])
    events.wait_for(("ADDED", "Node", "a"))
    # Pods change, nodes do not: only a bookmark can move the node watch's version on.
    for index in range(3):
        server.seed(pod(f"p{index}"))
    latest = server.stored("Pod", "p2", "default")
    assert latest is not None
    version = latest["metadata"]["resourceVersion"]
    eventually(
        lambda: any(call.params.get("resourceVersion") == version
                    for call in server.calls
                    if call.verb == "watch" and call.path == "/api/v1/nodes"),
        "a node watch resuming from the bookmark's version",
    )
    node_watches = [c for c in server.calls if c.verb == "watch" and c.path == "/api/v1/nodes"]
    assert all(c.params["allowWatchBookmarks"] == "true" for c in node_watches)
    assert ("ADDED", "Pod", "default/p0") not in events.seen()


@pytest.mark.parametrize("as_event", [False, True], ids=["http-410", "error-event"])
def test_410_gone_lists_again_and_reports_what_was_missed(
        server: FakeApiServer, cluster: KubeCluster, as_event: bool) -> None:
    server.expiry_as_event = as_event
    server.seed(node("kept"))
    server.seed(node("changed"))
    server.seed(node("removed"))
    events = Collector(cluster, ["Node"])
    events.wait_for(("ADDED", "Node", "removed"))

    server.cut_watches()  # the informer is disconnected while things change
    server.modify("Node", "changed", version="2")
    server.remove("Node", "removed")
    server.seed(node("new"))
    server.expire_history()  # and the server no longer has those changes
    server.accept_watches()

    events.wait_for(("MODIFIED", "Node", "changed"), ("DELETED", "Node", "removed"),
                    ("ADDED", "Node", "new"))
    informer = cluster.informer("Node")
    assert informer.lists == 2
    assert ("MODIFIED", "Node", "kept") not in events.seen()
    assert sorted(n["metadata"]["name"] for n in cluster.list("Node")) == [
        "changed", "kept", "new"]


def test_a_lost_connection_resumes_from_the_last_version_without_listing(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a"))
    events = Collector(cluster, ["Node"])
    events.wait_for(("ADDED", "Node", "a"))
    server.cut_watches()
    server.modify("Node", "a", during="outage")
    informer = cluster.informer("Node")
    eventually(lambda: informer.failures >= 2, "the informer to retry the refused watch")
    server.accept_watches()
    events.wait_for(("MODIFIED", "Node", "a"))
    assert informer.lists == 1


def test_the_informer_backoff_doubles_to_its_ceiling() -> None:
    backoff = Backoff(initial=0.8, maximum=30.0, jitter=0.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [
        0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0]
    jittered = REFLECTOR_BACKOFF
    assert all(0.8 <= jittered.delay(1) <= 1.6 for _ in range(50))


def test_a_failed_list_is_retried_before_anything_is_reported(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a"))
    server.fail_next(1, status=500)  # the first list fails and is retried
    events = Collector(cluster, ["Node"])
    events.wait_for(("ADDED", "Node", "a"))
    assert cluster.informer("Node").failures == 1


def test_a_write_answered_after_the_objects_deletion_does_not_bring_it_back(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    written = cluster.create(node("short-lived"))
    events = Collector(cluster, ["Node"])
    server.remove("Node", "short-lived")
    events.wait_for(("DELETED", "Node", "short-lived"))
    # The answer to a write made before the deletion arrives only now.
    cluster.informer("Node").observe_write(written)
    with pytest.raises(NotFoundError):
        cluster.get("Node", "short-lived")


def test_a_write_that_removes_the_last_finalizer_of_a_deleted_object_drops_it(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("draining"))
    assert cluster.get("Node", "draining")
    gone = node("draining")
    gone["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[],
                            resourceVersion="999999")
    cluster.informer("Node").observe_write(gone)
    with pytest.raises(NotFoundError):
        cluster.get("Node", "draining")


def test_a_relist_reports_this_process_own_writes_that_no_watch_delivered(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("old"))
    events = Collector(cluster, ["Node"])
    events.wait_for(("ADDED", "Node", "old"))

    server.cut_watches()
    # Written while the watch was down: the cache holds it at once (read-your-writes),
    # but its watch event never came...
    cluster.create(node("mine"))
    assert cluster.get("Node", "mine")["metadata"]["name"] == "mine"
    server.expire_history()  # ...and the server no longer has it to send
    server.accept_watches()

    events.wait_for(("ADDED", "Node", "mine"))
    assert cluster.informer("Node").lists == 2


@pytest.fixture
def quiet_server() -> Iterator[FakeApiServer]:
    """A server whose watch streams stay open (a minute) unless something happens."""
    fake = FakeApiServer(watch_window=60.0)
    yield fake
    fake.close()


def test_a_watch_that_goes_silent_is_restarted_from_its_last_version(
        quiet_server: FakeApiServer) -> None:
    server = quiet_server
    cluster = KubeCluster(make_client(server), informer_factory=lambda client, kind: Informer(
        client, kind, backoff=NO_WAIT, read_timeout=0.3))
    try:
        server.seed(node("a"))
        events = Collector(cluster, ["Node"])
        events.wait_for(("ADDED", "Node", "a"))
        informer = cluster.informer("Node")
        eventually(lambda: informer.synced() and informer.disconnected_for() == 0,
                   "the watch of nodes to open")

        # The connection dies without a word: the open stream sends nothing, ever.
        server.silence_watches()
        server.modify("Node", "a", during="silence")
        events.wait_for(("MODIFIED", "Node", "a"))

        assert informer.silent_restarts >= 1
        assert informer.lists == 1  # resumed from its version, not listed again
        watches = [call for call in server.calls
                   if call.verb == "watch" and call.path.endswith("/nodes")]
        assert watches[1].params["resourceVersion"] == watches[0].params["resourceVersion"]
    finally:
        cluster.close()


def test_an_informer_without_a_watch_counts_how_long_it_has_been_down(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    server.seed(node("a"))
    Collector(cluster, ["Node"]).wait_for(("ADDED", "Node", "a"))
    # (Streams end and open again all the time: the gap between them is not an outage.)
    assert cluster.disconnected(limit=5.0) == []
    server.cut_watches()
    (down,) = eventually(lambda: cluster.disconnected(limit=0.3),
                         "the informer to count its outage")
    assert down.startswith("Node for ")
    server.accept_watches()
    eventually(lambda: cluster.disconnected(limit=0.3) == [], "the watch to open again")
