"""Events with client-go's correlation, on the real API server and with the controller's
own ServiceAccount: a repeated Event is one Event whose series counts the repeats (a PATCH
the API server accepts: events.k8s.io/v1 allows only the series to change), and from the
10th different note similar Events are combined into one."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.event_correlation import COMBINED_PREFIX
from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.kube.cluster import KubeCluster, connect
from nodewright.operator.events import EventWriter
from nodewright.runtime.clock import SystemClock
from tests.e2e.harness import ControlPlane, Installation, eventually

POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "series-story", "uid": "0b5e6a52-0000-4000-8000-000000000001"}}


def ours(plane: ControlPlane) -> list[dict[str, Any]]:
    return [event for event in plane.items("events.events.k8s.io", "-n", "default")
            if (event.get("regarding") or {}).get("name") == "series-story"]


def test_repeated_events_are_counted_on_one_event_and_similar_ones_combined(
        control_plane: ControlPlane, installation: Installation) -> None:
    plane = control_plane
    cluster = KubeCluster(connect(str(installation.kubeconfig)), cached_kinds=())
    clock = SystemClock()
    writer = EventWriter(cluster, clock=clock)
    writer.start()
    recorder = EventRecorder(cluster, clock, reporting_instance="series-story")
    recorder.send_to(writer.submit)
    try:
        for _ in range(3):
            recorder.publish(Event(POOL, "Normal", "DisruptionBlocked", "no budget"))
        eventually(lambda: writer.written == 3, what="three writes")
        (blocked,) = ours(plane)
        assert blocked["series"]["count"] == 3, blocked
        assert blocked["note"] == "no budget"

        for number in range(11):
            recorder.publish(Event(POOL, "Warning", "FailedToResolve", f"attempt {number}"))
        eventually(lambda: writer.written == 14, what="the similar events")
        notes = sorted(event["note"] for event in ours(plane)
                       if event["reason"] == "FailedToResolve")
        assert notes == sorted([*(f"attempt {n}" for n in range(9)),
                                COMBINED_PREFIX + "attempt 9"])
        (combined,) = [event for event in ours(plane)
                       if event["note"].startswith(COMBINED_PREFIX)]
        assert combined["series"]["count"] == 2
        # kubectl's core/v1 view shows the same series.
        core = [event for event in plane.items("events", "-n", "default")
                if event["involvedObject"].get("name") == "series-story"
                and event["reason"] == "DisruptionBlocked"]
        assert [(event.get("series") or {}).get("count") for event in core] == [3]
    finally:
        writer.stop(timeout=10)
        cluster.close()
