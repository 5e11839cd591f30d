"""Events leave the reconcile path: the recorder queues them and one writer thread sends
them, so an API server that does not answer holds no reconcile up; the queue is bounded."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.operator.events import EventWriter
from nodewright.runtime.clock import SystemClock
from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import make_client
from tests.kube.conftest import server as server
from tests.kube.waiting import eventually

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u1"}}


@pytest.fixture
def cluster(server: FakeApiServer) -> Iterator[KubeCluster]:
    kube = KubeCluster(make_client(server), cached_kinds=())
    yield kube
    kube.close()


def test_a_reconcile_publishing_an_event_does_not_wait_for_the_api_server(
        server: FakeApiServer, cluster: KubeCluster) -> None:
    writer = EventWriter(cluster)
    writer.start()
    recorder = EventRecorder(cluster, SystemClock())
    recorder.send_to(writer.submit)
    server.pause()  # requests wait unanswered
    try:
        publishing = threading.Thread(target=recorder.publish, args=(
            Event(NODE, "Normal", "Launched", "launched it"),))
        publishing.start()
        publishing.join(timeout=10)
        assert not publishing.is_alive(), "publish waited for the API server"
        assert server.objects("Event") == []
    finally:
        server.resume()
    (event,) = eventually(lambda: server.objects("Event"), "the Event, once answered")
    assert (event["reason"], event["regarding"]["name"]) == ("Launched", "n1")
    assert writer.stop(timeout=10)
    assert writer.written == 1


def test_what_does_not_fit_in_the_queue_is_dropped(cluster: KubeCluster) -> None:
    writer = EventWriter(cluster, capacity=2)  # not started: nothing is taken out
    for number in range(3):
        writer.submit({"reason": f"R{number}"})
    assert (writer.pending(), writer.dropped) == (2, 1)
