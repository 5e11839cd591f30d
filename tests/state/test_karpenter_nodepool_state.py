"""Karpenter's NodePoolState tracking, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/state/suite_test.go, Describe("NodePoolState Tracking"). Each test names
its Context and It.

Karpenter keeps running / deleting / pending-disruption NodeClaim counts per NodePool in
`state.NodePoolState`; ours are read from the cluster state on each call
(controllers/static/counts.py node_counts: active, deleting, pending_disruption). Karpenter's
MarkNodeClaimPendingDisruption is a disruption command setting the NodeClaim's
DisruptionReason condition."""

from __future__ import annotations

from typing import Any

from nodewright.controllers.static.counts import node_counts
from nodewright.state import ClusterState
from tests.state.test_karpenter_cluster_state import feed, fresh, nodeclaim


def counts(state: ClusterState, pool: str = "default") -> tuple[int, int, int]:
    found = node_counts(state, pool)
    return found.active, found.deleting, found.pending_disruption


def pending_disruption(body: dict[str, Any]) -> dict[str, Any]:
    body["status"]["conditions"] = [{"type": "DisruptionReason", "status": "True",
                                     "reason": "Underutilized", "message": "",
                                     "lastTransitionTime": "2026-01-05T00:00:00Z"}]
    return body


def tracked(*bodies: dict[str, Any]) -> ClusterState:
    state, _ = fresh()
    feed(state, *(("ADDED", body) for body in bodies))
    return state


# -- UpdateNodeClaim, New NodeClaim gets added ------------------------------------------------


def test_a_launched_nodeclaim_is_running() -> None:
    """New NodeClaim gets added, It("should track NodeClaim in running state when created
    with ProviderID")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    assert counts(state) == (1, 0, 0)
    assert state.nodeclaim("c1") is not None


def test_a_nodeclaim_without_a_provider_id_is_running() -> None:
    """New NodeClaim gets added, It("should track NodeClaim without ProviderID")."""
    state = tracked(nodeclaim("c1"))
    assert counts(state) == (1, 0, 0)
    assert state.nodeclaim("c1") is not None


def test_a_nodeclaim_without_a_nodepool_counts_for_none() -> None:
    """New NodeClaim gets added, It("should not track NodeClaim that has no nodepool")."""
    body = nodeclaim("c1", "aws:///a/i-1")
    del body["metadata"]["labels"]["karpenter.sh/nodepool"]
    state = tracked(body)
    assert counts(state, "") == (0, 0, 0)
    assert state.nodeclaim("c1") is not None


def test_nodeclaims_of_one_nodepool_add_up() -> None:
    """New NodeClaim gets added, It("should track multiple NodeClaims in the same
    NodePool")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"), nodeclaim("c2", "aws:///a/i-2"))
    assert counts(state) == (2, 0, 0)


def test_nodeclaims_of_two_nodepools_count_apart() -> None:
    """New NodeClaim gets added, It("should track NodeClaims across different
    NodePools")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"),
                    nodeclaim("c2", "aws:///a/i-2", pool="nodepool2"))
    assert counts(state) == (1, 0, 0)
    assert counts(state, "nodepool2") == (1, 0, 0)


# -- UpdateNodeClaim, Updates to existing NodeClaim ------------------------------------------


def test_an_update_without_a_state_change_changes_no_count() -> None:
    """Updates to existing NodeClaim, It("should be a no-op when NodeClaim is already
    tracked and no state change")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    body = nodeclaim("c1", "aws:///a/i-1")
    body["metadata"]["annotations"] = {"test": "annotation"}
    feed(state, ("MODIFIED", body))
    assert counts(state) == (1, 0, 0)


def test_a_new_provider_id_moves_the_nodeclaim_with_it() -> None:
    """Updates to existing NodeClaim, It("should handle NodeClaim ProviderID change"):
    marking the old provider ID changes nothing, marking the new one makes it deleting."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-2")))
    assert counts(state) == (1, 0, 0)
    state.mark_for_deletion("aws:///a/i-1")
    assert counts(state) == (1, 0, 0)
    state.mark_for_deletion("aws:///a/i-2")
    assert counts(state) == (0, 1, 0)


def test_a_marked_nodeclaim_stays_deleting_through_updates() -> None:
    """Updates to existing NodeClaim, It("should move NodeClaim to deleting state when Node
    is marked for deletion")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    state.mark_for_deletion("aws:///a/i-1")
    body = nodeclaim("c1", "aws:///a/i-1")
    body["metadata"]["annotations"] = {"updated": "true"}
    feed(state, ("MODIFIED", body))
    assert counts(state) == (0, 1, 0)


def test_a_deleted_nodeclaim_counts_nowhere() -> None:
    """Updates to existing NodeClaim, It("should handle NodeClaim cleanup correctly")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    feed(state, ("MODIFIED", nodeclaim("c1", "aws:///a/i-1")))
    assert counts(state) == (1, 0, 0)
    feed(state, ("DELETED", nodeclaim("c1", "aws:///a/i-1")))
    assert counts(state) == (0, 0, 0)


# -- Mark NodeClaims pendingdisruption, DeleteNodeClaim, MarkForDeletion ----------------------


def test_nodeclaims_a_command_holds_are_pending_disruption() -> None:
    """Mark NodeClaims pendingdisruption, It("should handle marking multiple
    NodeClaims")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"), nodeclaim("c2", "aws:///a/i-2"))
    assert counts(state) == (2, 0, 0)
    feed(state, ("MODIFIED", pending_disruption(nodeclaim("c1", "aws:///a/i-1"))))
    assert counts(state) == (1, 0, 1)
    feed(state, ("MODIFIED", pending_disruption(nodeclaim("c2", "aws:///a/i-2"))))
    assert counts(state) == (0, 0, 2)


def test_a_deleted_nodeclaim_leaves_the_nodepool_state() -> None:
    """DeleteNodeClaim, It("should remove NodeClaim from nodepool state")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    assert counts(state) == (1, 0, 0) and state.nodeclaim("c1") is not None
    feed(state, ("DELETED", nodeclaim("c1", "aws:///a/i-1")))
    assert counts(state) == (0, 0, 0) and state.nodeclaim("c1") is None


def test_marking_several_for_deletion_makes_each_deleting() -> None:
    """MarkForDeletion, It("should handle marking multiple NodeClaims for deletion")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"), nodeclaim("c2", "aws:///a/i-2"))
    state.mark_for_deletion("aws:///a/i-1", "aws:///a/i-2")
    assert counts(state) == (0, 2, 0)


def test_marking_for_deletion_moves_running_to_deleting() -> None:
    """MarkForDeletion, It("should move NodeClaim from running to deleting state")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    assert counts(state) == (1, 0, 0)
    state.mark_for_deletion("aws:///a/i-1")
    assert counts(state) == (0, 1, 0)


# -- UnmarkForDeletion, Transitions ------------------------------------------------------------


def test_unmarking_moves_deleting_back_to_running() -> None:
    """UnmarkForDeletion, It("should move NodeClaim from deleting to running state")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    state.mark_for_deletion("aws:///a/i-1")
    assert counts(state) == (0, 1, 0)
    state.unmark_for_deletion("aws:///a/i-1")
    assert counts(state) == (1, 0, 0)


def test_unmarking_several_makes_each_running() -> None:
    """UnmarkForDeletion, It("should handle unmarking multiple NodeClaims")."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"), nodeclaim("c2", "aws:///a/i-2"))
    state.mark_for_deletion("aws:///a/i-1", "aws:///a/i-2")
    assert counts(state) == (0, 2, 0)
    state.unmark_for_deletion("aws:///a/i-1", "aws:///a/i-2")
    assert counts(state) == (2, 0, 0)


def test_a_nodeclaim_is_counted_once_whatever_happens_to_it() -> None:
    """Transitions, It("should handle concurrent NodeClaim updates and state changes"): 50
    marks, pending disruptions and unmarks (in turn here, from goroutines in Karpenter)
    leave exactly one NodeClaim counted."""
    state = tracked(nodeclaim("c1", "aws:///a/i-1"))
    for i in range(50):
        if i % 3 == 0:
            state.mark_for_deletion("aws:///a/i-1")
        elif i % 3 == 1:
            feed(state, ("MODIFIED", pending_disruption(nodeclaim("c1", "aws:///a/i-1"))))
        else:
            state.unmark_for_deletion("aws:///a/i-1")
        assert sum(counts(state)) == 1
