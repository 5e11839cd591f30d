"""Karpenter pkg/scheduling/taints_test.go: which taints are known to be ephemeral (they go
away on their own while a node starts, so initialization waits for them and the scheduler
looks past them on a node not yet initialized): Karpenter's exact list, and any taint of
the Node Readiness Controller's readiness.k8s.io/ family whatever its effect."""

from __future__ import annotations

from nodewright.scheduling.pods import Taint
from nodewright.state.wellknown import is_known_ephemeral


def test_a_taint_on_the_known_list_is_ephemeral() -> None:
    """Karpenter pkg/scheduling/taints_test.go It("matches an exact entry in
    KnownEphemeralTaints")."""
    assert is_known_ephemeral(Taint("node.kubernetes.io/not-ready", "", "NoSchedule"))


def test_a_node_readiness_controller_taint_is_ephemeral_by_its_prefix() -> None:
    """Karpenter pkg/scheduling/taints_test.go It("matches a NodeReadinessController taint
    by prefix")."""
    assert is_known_ephemeral(Taint("readiness.k8s.io/my-rule", "", "NoSchedule"))


def test_a_prefixed_taint_is_ephemeral_whatever_its_effect() -> None:
    """Karpenter pkg/scheduling/taints_test.go It("matches any effect for a prefixed
    taint")."""
    assert is_known_ephemeral(Taint("readiness.k8s.io/another", "", "NoExecute"))


def test_an_unrelated_taint_is_not_ephemeral() -> None:
    """Karpenter pkg/scheduling/taints_test.go It("does not match an unrelated taint")."""
    assert not is_known_ephemeral(Taint("example.com/some-taint", "", "NoSchedule"))


def test_the_prefix_counts_only_at_the_start_of_the_key() -> None:
    """Karpenter pkg/scheduling/taints_test.go It("does not match a taint whose key only
    contains the prefix in the middle")."""
    assert not is_known_ephemeral(Taint("foo/readiness.k8s.io/bar", "", "NoSchedule"))
