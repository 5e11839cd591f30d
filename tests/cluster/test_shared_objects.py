"""The API server stores each object version once: watchers and in-process actors are
handed the stored version itself, never a copy, so nobody may modify it in place. A
`ReadOnlyGuard` catches whoever does, and whole stories run clean under it."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.conftest import EXAMPLES
from tests.harness import World
from tests.support.read_only import (
    ReadOnlyGuard,
    SharedObjectModifiedError,
    guarded_cluster,
    verify_read_only,
)


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": name}]}}


def test_watch_events_carry_the_stored_version_itself() -> None:
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(pod("web"))
    stream = cluster.watch(["Pod"])
    cluster.patch("Pod", "web", {"metadata": {"labels": {"tier": "front"}}}, "default")

    added, modified = stream.poll()

    assert added.type == "ADDED" and modified.type == "MODIFIED"
    assert modified.object is cluster.peek("Pod", "web", "default")
    # The previous version stays what it was: writes store new objects.
    assert added.object["metadata"]["labels"] == {"app": "web"}
    assert modified.object["metadata"]["labels"] == {"app": "web", "tier": "front"}


def test_reads_through_the_api_are_still_copies() -> None:
    cluster = guarded_cluster()
    cluster.create(pod("web"))
    copy = cluster.get("Pod", "web", "default")
    copy["metadata"]["labels"]["mine"] = "yes"

    cluster.patch("Pod", "web", {"metadata": {"labels": {"tier": "front"}}}, "default")

    assert cluster.get("Pod", "web", "default")["metadata"]["labels"] == {
        "app": "web", "tier": "front"}


def test_the_guard_names_a_watcher_that_modified_an_event_object() -> None:
    cluster = guarded_cluster()
    cluster.create(pod("web"))
    stream = cluster.watch(["Pod"])
    (event,) = stream.poll()
    event.object["metadata"]["labels"]["sneaky"] = "edit"

    with pytest.raises(SharedObjectModifiedError, match=r"Pod default/web .*modified in place"):
        cluster.patch("Pod", "web", {"metadata": {"labels": {"tier": "front"}}}, "default")


def test_the_guard_checks_objects_still_stored_and_deleted_ones() -> None:
    cluster = guarded_cluster()
    cluster.create(pod("web"))
    cluster.create(pod("db"))
    stored = cluster.peek("Pod", "db", "default")
    assert stored is not None
    stored["spec"]["containers"].append({"name": "sidecar", "image": "x"})

    with pytest.raises(SharedObjectModifiedError, match="Pod default/db"):
        verify_read_only(cluster)
    with pytest.raises(SharedObjectModifiedError, match="Pod default/db"):
        cluster.delete("Pod", "db", "default")


def test_the_controllers_and_actors_never_modify_what_they_are_handed() -> None:
    world = World()
    guard = ReadOnlyGuard.install(world.cluster)
    world.apply(EXAMPLES / "workshop")
    world.scale("inflate", 12)
    assert world.settle()
    claim = world.nodeclaims()[0]["metadata"]["name"]
    world.delete("NodeClaim", claim)
    assert world.settle()
    world.scale("inflate", 0)
    assert world.settle()

    verify_read_only(world.cluster)
    assert guard.checked > 100
    assert not world.errors
