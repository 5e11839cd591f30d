"""A provisioning round's NodeClaims are created together, not one after another
(Karpenter's CreateNodeClaims sends them with workqueue.ParallelizeUntil,
pkg/controllers/provisioning/provisioner.go): against a real API server each create is a
round trip, and a burst's round can hold a hundred and fifty of them."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import World, node_pool

POOL = node_pool(types=["m5.large"], labels={"type": "karpenter"})


def big_pod(name: str) -> dict[str, Any]:
    """1500m: one to an m5.large (1805m free beside the workshop's DaemonSets)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": "1500m"}}}]}}


class MeetingCreates:
    """The provisioner's API client, whose NodeClaim creates each wait until `together`
    of them are in flight (one at a time, the first would wait alone and fail)."""

    def __init__(self, inner: Any, together: int) -> None:
        self._inner = inner
        self._meeting = threading.Barrier(together, timeout=10)
        self._one_at_a_time = threading.Lock()  # the virtual world's store is single-threaded

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        if obj.get("kind") == "NodeClaim":
            self._meeting.wait()
        with self._one_at_a_time:
            created: Mapping[str, Any] = self._inner.create(obj)
            return created


def test_a_rounds_nodeclaims_are_created_together() -> None:
    world = World()
    provisioner = world.controllers.provisioner
    provisioner.state.lock.concurrent = True  # other threads about, as in the operator
    provisioner.cluster = MeetingCreates(provisioner.cluster, together=3)  # type: ignore[assignment]

    world.apply(WORKSHOP, POOL, big_pod("a"), big_pod("b"), big_pod("c"))
    world.advance(30)

    assert len(world.nodeclaims()) == 3
    nominated = {e["regarding"]["name"]: e["note"] for e in world.events("Nominated")}
    assert sorted(nominated) == ["a", "b", "c"]
    assert len(set(nominated.values())) == 3
    expect_no_controller_errors(world)
