"""Fencing (issue #28): a replica that is not sure it still leads writes nothing, even the
work it started while it led: a disruption command computed before the Lease was lost, and
Events queued for the writer thread. The replica loses the Lease as it would in a
partition: its lease client stops reaching the API server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from nodewright.cluster.api import ClusterAPI, Object, UnreachableError, WatchStream
from nodewright.cluster.fencing import FencedError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.disruption.commands import Command
from nodewright.operator.events import EventWriter
from nodewright.operator.fencing import fenced
from nodewright.operator.leader import LeaderElector
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from nodewright.state.wellknown import DISRUPTED_TAINT
from tests.disruption.helpers import nodepool_with
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import (
    FAST_CONTROLLERS,
    FAST_LEASE,
    LockedCluster,
    RealTimeWorld,
)


class Partition:
    """The lease client of a replica: `cut()` and nothing it sends reaches the server."""

    def __init__(self, inner: ClusterAPI) -> None:
        self.inner = inner
        self.cut_off = threading.Event()

    def cut(self) -> None:
        self.cut_off.set()

    def _reach(self) -> None:
        if self.cut_off.is_set():
            raise UnreachableError("partitioned from the API server")

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        self._reach()
        return self.inner.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None, *,
             labels: Mapping[str, str] | None = None) -> list[Object]:
        self._reach()
        return self.inner.list(kind, namespace, labels=labels)

    def create(self, obj: Object) -> Object:
        self._reach()
        return self.inner.create(obj)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        self._reach()
        return self.inner.update(obj, subresource=subresource)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        self._reach()
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource)

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self._reach()
        self.inner.delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                          uid=uid)

    def evict(self, name: str, namespace: str, *,
              grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self._reach()
        self.inner.evict(name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        return self.inner.watch(kinds)


def event_about(obj: Object, reason: str) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{reason.lower()}", "namespace": "default"},
            "regarding": {"kind": obj["kind"], "name": meta["name"]},
            "reason": reason, "type": "Normal", "note": reason, "action": reason,
            "reportingController": "karpenter", "reportingInstance": "first",
            "eventTime": "2026-01-05T00:00:00.000000Z"}


def test_events_queued_while_leading_are_not_written_after_the_lease_is_lost(
        caplog: pytest.LogCaptureFixture) -> None:
    lock = threading.RLock()
    cluster = LockedCluster(InMemoryCluster(SystemClock()), lock)
    link = Partition(cluster)
    stepped_down = threading.Event()
    elector = LeaderElector(link, name="lease", namespace="default", identity="first",
                            timing=FAST_LEASE, on_stopped_leading=stepped_down.set)
    writer = EventWriter(fenced(cluster, elector))
    elector.start()
    try:
        eventually(elector.is_leader, "the replica to lead")
        node = cluster.create({"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "n1"}})
        for reason in ("Nominated", "DisruptionBlocked", "Unconsolidatable"):
            writer.submit(event_about(node, reason))  # queued; the writer has not run yet

        link.cut()
        eventually(stepped_down.is_set, "the replica to step down")
        writer.start()
        assert writer.stop(timeout=5)
    finally:
        elector.stop(release=False, timeout=5)

    assert cluster.list("Event") == []
    assert writer.written == 0
    refusals = [r for r in caplog.records if "not sure this replica still leads" in r.message]
    assert len(refusals) == 1 and refusals[0].levelno == logging.ERROR  # once, not per Event


def test_a_disruption_command_computed_before_the_lease_was_lost_writes_nothing(
        world: RealTimeWorld) -> None:
    link = Partition(world.cluster)
    settings = OperatorSettings(identity="first", lease_namespace="kube-system",
                                timing=FAST_LEASE, controllers=FAST_CONTROLLERS,
                                idle_interval=0.01)
    operator = Operator(world.cluster, world.cloud, settings, world_lock=world.lock,
                        lease_cluster=link)
    disruption = operator.controllers.disruption
    assert disruption is not None
    orchestrator = disruption.disruption.orchestrator
    computed: list[Command] = []
    refused: list[BaseException] = []
    start = orchestrator.start

    def lose_the_lease_then_start(command: Command, *args: Any, **kwargs: Any) -> None:
        """The command is decided; before its first write the replica loses the Lease."""
        computed.append(command)
        link.cut()
        eventually(operator.lost_leadership.is_set, "the replica to step down")
        try:
            start(command, *args, **kwargs)
        except Exception as error:
            refused.append(error)
            raise

    orchestrator.start = lose_the_lease_then_start  # type: ignore[method-assign]
    operator.start()
    world.operators.append(operator)
    eventually(operator.is_leader, "the replica to lead")
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "1s"}))
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    (claim,) = world.nodeclaims()

    world.scale("inflate", 1)  # a cheaper node would do: consolidation decides to replace
    eventually(lambda: bool(refused), "the disruption command to be refused")

    (command,) = computed
    assert [c.nodeclaim_name for c in command.candidates] == [claim["metadata"]["name"]]
    assert isinstance(refused[0].__cause__, FencedError)
    with world.lock:
        (still,) = world.nodeclaims()  # no replacement was created, nothing deleted
        assert still["metadata"]["name"] == claim["metadata"]["name"]
        (node,) = world.nodes()
        taints = (node.get("spec") or {}).get("taints") or []
        assert DISRUPTED_TAINT.key not in {t["key"] for t in taints}
        conditions = (still.get("status") or {}).get("conditions") or []
        assert "DisruptionReason" not in {c["type"] for c in conditions}
