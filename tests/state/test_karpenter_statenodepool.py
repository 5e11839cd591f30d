"""Karpenter's StateNodePool suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/state/statenodepool_test.go. Each test names its Context and It.

Karpenter reserves node counts under a NodePool's `limits.nodes` before creating
NodeClaims and releases what it did not use. Nodewright reserves nothing: the room is
`room_under_limit` over the NodeClaims the cluster state holds (controllers/static/counts.py),
so a grant is used by creating the NodeClaims, and released by their going away. The
stories below create what was granted before asking again."""

from __future__ import annotations

from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.controllers.static.counts import node_counts, room_under_limit
from nodewright.state import ClusterState
from tests.state.test_karpenter_cluster_state import feed, fresh, nodeclaim


class Pool:
    """A NodePool with limits.nodes 5 and what the cluster state holds of it."""

    def __init__(self, limit: int = 5) -> None:
        self.state: ClusterState = fresh()[0]
        feed(self.state, ("ADDED", {
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "default", "generation": 1},
            "spec": {"limits": {"nodes": str(limit)}, "template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"}, "requirements": []}}}}))
        self.created = 0

    @property
    def model(self) -> NodePool:
        parsed = self.state.nodepool_model("default")
        assert parsed is not None and parsed.model is not None
        return parsed.model

    def reserve(self, wanted: int) -> int:
        """Ask for `wanted` NodeClaims; create the ones granted."""
        granted = room_under_limit(self.model, node_counts(self.state, "default"), wanted)
        for _ in range(granted):
            self.add()
        return granted

    def add(self) -> dict[str, Any]:
        self.created += 1
        body = nodeclaim(f"c{self.created}", f"aws:///a/i-{self.created}")
        feed(self.state, ("ADDED", body))
        return body

    def release(self, count: int) -> None:
        """NodeClaims that were granted but failed to launch go away."""
        for claim in list(self.state.nodeclaims())[:count]:
            feed(self.state, ("DELETED", claim))


def test_a_grant_within_the_limit_is_whole() -> None:
    """ReserveNodeCount, It("should reserve requested capacity when available")."""
    pool = Pool()
    assert pool.reserve(3) == 3
    assert pool.reserve(2) == 2


def test_a_grant_beyond_the_limit_is_partial() -> None:
    """ReserveNodeCount, It("should grant partial capacity when requested exceeds
    available")."""
    pool = Pool()
    assert pool.reserve(4) == 4
    assert pool.reserve(5) == 1


def test_no_room_grants_nothing() -> None:
    """ReserveNodeCount, It("should return zero when no capacity available")."""
    pool = Pool()
    assert pool.reserve(5) == 5
    assert pool.reserve(1) == 0


def test_running_nodeclaims_take_room() -> None:
    """ReserveNodeCount, It("should account for running NodeClaims")."""
    pool = Pool()
    pool.add()
    assert pool.reserve(4) == 4
    assert pool.reserve(1) == 0


def test_deleting_nodeclaims_take_room() -> None:
    """ReserveNodeCount, It("should account for deleting NodeClaims")."""
    pool = Pool()
    pool.add()
    pool.state.mark_for_deletion("aws:///a/i-1")
    assert node_counts(pool.state, "default").deleting == 1
    assert pool.reserve(5) == 4


def test_room_comes_back_when_granted_nodeclaims_go() -> None:
    """ReleaseNodeCount, It("should release reserved capacity")."""
    pool = Pool()
    assert pool.reserve(3) == 3
    assert pool.reserve(3) == 2
    pool.release(4)
    assert pool.reserve(4) == 4
