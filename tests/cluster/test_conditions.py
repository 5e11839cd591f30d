"""Removing a condition beside setting one, and writing a changed list back guarded by the
resourceVersion it was based on (one helper for every controller that does it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ConflictError
from nodewright.cluster.conditions import remove_condition, set_condition, write_conditions
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock

NOW = datetime(2026, 1, 5, tzinfo=UTC)


def _claim(cluster: InMemoryCluster) -> dict[str, Any]:
    created = cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "default-abc"},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}, "requirements": []},
    })
    holder = {"metadata": created["metadata"], "status": {}}
    set_condition(holder, "Drifted", "True", NOW, "NodePoolDrifted")
    set_condition(holder, "Consolidatable", "True", NOW)
    return cluster.patch("NodeClaim", "default-abc", {"status": holder["status"]},
                         subresource="status")


def test_removing_a_condition_leaves_the_list_it_came_from_alone() -> None:
    original = [{"type": "Consolidatable", "status": "True"},
                {"type": "Drifted", "status": "True"}]
    holder: dict[str, Any] = {"status": {"conditions": original}}
    assert remove_condition(holder, "Drifted")
    assert [c["type"] for c in holder["status"]["conditions"]] == ["Consolidatable"]
    assert len(original) == 2
    assert not remove_condition(holder, "Drifted")
    assert not remove_condition({}, "Drifted")


def test_a_changed_list_is_written_when_nobody_wrote_in_between() -> None:
    cluster = InMemoryCluster(VirtualClock(NOW))
    claim = _claim(cluster)
    holder = {"status": {"conditions": objects.conditions(claim)}}
    remove_condition(holder, "Drifted")
    written = write_conditions(cluster, claim, holder["status"]["conditions"])
    assert [c["type"] for c in objects.conditions(written)] == ["Consolidatable"]


def test_a_list_read_before_another_write_is_refused() -> None:
    cluster = InMemoryCluster(VirtualClock(NOW))
    stale = _claim(cluster)
    cluster.patch("NodeClaim", "default-abc", {"metadata": {"labels": {"team": "a"}}})
    with pytest.raises(ConflictError):
        write_conditions(cluster, stale, [])
    assert len(objects.conditions(cluster.get("NodeClaim", "default-abc"))) == 2
