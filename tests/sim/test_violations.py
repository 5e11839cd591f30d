"""The simulator's own checks of the promises a run must keep, each shown catching a
breach (a cluster or controller that misbehaves on purpose) and staying quiet otherwise."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.cloud.sim.ledger import Ledger, LedgerEntry
from nodewright.cluster.api import TooManyRequestsError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.common.decision_log import Decision
from nodewright.runtime.clock import VirtualClock
from nodewright.sim.observed import ObservedCluster
from nodewright.sim.violations import ViolationMonitor

START = datetime(2026, 1, 5, tzinfo=UTC)


class BudgetBlindCluster(InMemoryCluster):
    """An API server whose eviction ignores PodDisruptionBudgets (a bug to be caught)."""

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
              uid: str | None = None) -> None:
        self.delete("Pod", name, namespace, grace_period_seconds=0, uid=uid)


def watched(cluster: InMemoryCluster) -> tuple[ObservedCluster, ViolationMonitor]:
    monitor = ViolationMonitor(cluster, cluster.clock.now, START)
    observed = ObservedCluster(cluster)
    observed.before_evict.append(monitor.before_evict)
    observed.after_evict.append(monitor.after_evict)
    return observed, monitor


def web_pods_with_budget(cluster: InMemoryCluster, min_available: int) -> None:
    for name in ("web-0", "web-1"):
        cluster.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "web", "image": "web"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        })
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"minAvailable": min_available,
                             "selector": {"matchLabels": {"app": "web"}}}})


def test_an_eviction_past_a_pod_disruption_budget_is_a_violation() -> None:
    cluster = BudgetBlindCluster(VirtualClock(START))
    web_pods_with_budget(cluster, min_available=2)
    observed, monitor = watched(cluster)

    observed.evict("web-0", "default")

    (violation,) = monitor.found
    assert violation.kind == "pdb"
    assert violation.message == ("evicted pod default/web-0 although PodDisruptionBudget web "
                                 "needs 2 healthy pods and had 2")


def test_evictions_the_budget_allows_or_refuses_are_no_violation() -> None:
    cluster = InMemoryCluster(VirtualClock(START))
    web_pods_with_budget(cluster, min_available=1)
    observed, monitor = watched(cluster)

    observed.evict("web-0", "default")
    with pytest.raises(TooManyRequestsError):
        observed.evict("web-1", "default")

    assert monitor.found == []
    assert (observed.evictions, observed.refused_evictions) == (1, 1)


def test_an_eviction_right_after_a_scale_to_zero_is_no_violation() -> None:
    """A Deployment scaled to 0 expects no pods: Kubernetes' budget then allows evicting
    those its ReplicaSet has not deleted yet, and the simulator's own count must agree (it
    once fell back to counting the pods, and reported the eviction as a breach)."""
    cluster = InMemoryCluster(VirtualClock(START))
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                                 "containers": [{"name": "web", "image": "web"}]}}}})
    cluster.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": "web-1", "namespace": "default", "ownerReferences": [
                        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                         "uid": "d1", "controller": True}]},
                    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                                 "containers": [{"name": "web", "image": "web"}]}}}})
    for name in ("web-1-a", "web-1-b"):
        cluster.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-1", "uid": "r1",
                                              "controller": True}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "web", "image": "web"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        })
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}})
    observed, monitor = watched(cluster)

    observed.evict("web-1-a", "default")

    assert monitor.found == []
    assert observed.evictions == 1


def pool_with_nodes(cluster: InMemoryCluster, budget_nodes: str, disrupting: int) -> None:
    cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {
            "template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
                "requirements": []}},
            "disruption": {"budgets": [{"nodes": budget_nodes}]},
        },
    })
    for index in range(3):
        taints = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}] \
            if index < disrupting else []
        cluster.create({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"n{index}", "labels": {
                "karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true"}},
            "spec": {"taints": taints, "providerID": f"aws:///us-east-1a/i-{index}"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        })


def decision(node: str, method: str = "drift", **more: Any) -> Decision:
    return Decision(time=START, node=node, nodeclaim=f"claim-{node}", nodepool="default",
                    method=method, outcome="disrupted", event_reason="DisruptionTerminating",
                    message="", **more)


@pytest.mark.parametrize(("budget_nodes", "disrupting", "violations"), [
    ("1", 2, 1),  # two nodes disrupting where one is allowed
    ("1", 1, 0),
    ("50%", 2, 0),  # 50% of 3 rounds up to 2
])
def test_a_command_beyond_the_nodepool_budget_is_a_violation(
    budget_nodes: str, disrupting: int, violations: int
) -> None:
    cluster = InMemoryCluster(VirtualClock(START))
    pool_with_nodes(cluster, budget_nodes, disrupting)
    monitor = ViolationMonitor(cluster, cluster.clock.now, START)

    monitor.on_decision(decision(f"n{disrupting - 1}"))

    assert len(monitor.found) == violations
    if violations:
        assert monitor.found[0].message.startswith(
            "NodePool default: 2 of 3 nodes disrupting for Drifted (n0, n1)")


def test_a_multi_node_command_is_checked_node_by_node_against_the_cluster_as_it_is() -> None:
    """A command's decisions arrive one per node: each node it takes counts toward the
    budget for the next, and a node changed meanwhile is seen as it is now."""
    cluster = InMemoryCluster(VirtualClock(START))
    pool_with_nodes(cluster, "2", 0)
    monitor = ViolationMonitor(cluster, cluster.clock.now, START)

    monitor.on_decision(decision("n0", "multi-node consolidation"))
    monitor.on_decision(decision("n1", "multi-node consolidation"))
    assert monitor.found == []
    # Meanwhile n2 went NotReady: with the two taken, three are disrupting.
    cluster.patch("Node", "n2", {"status": {"conditions": [{"type": "Ready",
                                                            "status": "False"}]}},
                  subresource="status")
    monitor.on_decision(decision("n1", "multi-node consolidation"))

    assert [v.message.split(" when")[0] for v in monitor.found] == [
        "NodePool default: 3 of 3 nodes disrupting for Underutilized (n0, n1, n2)"]


def test_a_node_whose_command_was_rejected_no_longer_counts_as_disrupting() -> None:
    """The nodes are counted once per version of the cluster; which of them commands took
    is read at each decision, so a rejection (validation dropped the command) frees its
    node for the next decision against the very same count."""
    cluster = InMemoryCluster(VirtualClock(START))
    pool_with_nodes(cluster, "1", 0)
    monitor = ViolationMonitor(cluster, cluster.clock.now, START)

    monitor.on_decision(decision("n0", "single-node consolidation"))
    monitor.on_decision(replace(decision("n0", "single-node consolidation"),
                                outcome="rejected"))
    monitor.on_decision(decision("n1", "single-node consolidation"))
    assert monitor.found == []
    monitor.on_decision(decision("n2", "single-node consolidation"))

    assert [v.message.split(" when")[0] for v in monitor.found] == [
        "NodePool default: 2 of 3 nodes disrupting for Underutilized (n1, n2)"]


def replacement_story(cluster: InMemoryCluster, initialized: bool) -> ViolationMonitor:
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "old-node"}})
    claim: dict[str, Any] = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                             "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                                       "kind": "EC2NodeClass", "name": "d"},
                                      "requirements": []}}
    conditions = [{"type": "Initialized", "status": "True" if initialized else "False"}]
    for name, status in (("old", {"nodeName": "old-node"}), ("new", {"conditions": conditions})):
        cluster.create({**claim, "metadata": {"name": name}})  # created without status
        cluster.patch("NodeClaim", name, {"status": status}, subresource="status")
    monitor = ViolationMonitor(cluster, cluster.clock.now, START)
    monitor.on_decision(decision("old-node", "single-node consolidation", decision="replace",
                                 replacements=("new",)))
    return monitor


@pytest.mark.parametrize(("initialized", "violations"), [(False, 1), (True, 0)])
def test_draining_before_the_replacement_is_ready_is_a_violation(
    initialized: bool, violations: int
) -> None:
    cluster = InMemoryCluster(VirtualClock(START))
    monitor = replacement_story(cluster, initialized)

    monitor.before_delete("NodeClaim", "old", "")

    assert len(monitor.found) == violations
    if violations:
        assert monitor.found[0].message == ("node old-node (Underutilized) was drained before "
                                            "its replacement(s) new were initialized")


def entry(ended_after: float | None) -> LedgerEntry:
    running = START + timedelta(seconds=20)
    return LedgerEntry(
        instance_id="i-1", nodeclaim="claim-a", nodepool="default", instance_type="m5.large",
        zone="us-east-1a", capacity_type="on-demand", price=0.096, launched_at=START,
        running_at=running,
        billing_ended_at=None if ended_after is None else START + timedelta(
            minutes=10, seconds=ended_after),
        terminated_at=None,
    )


@pytest.mark.parametrize(("ended_after", "violations"), [(None, 1), (30.0, 0), (200.0, 1)])
def test_an_instance_running_on_after_its_nodeclaim_is_gone_is_a_violation(
    ended_after: float | None, violations: int
) -> None:
    clock = VirtualClock(START + timedelta(minutes=15))
    monitor = ViolationMonitor(InMemoryCluster(clock), clock.now, START)
    gone = {"claim-a": START + timedelta(minutes=10)}

    monitor.check_instances(Ledger((entry(ended_after),)), gone)
    monitor.check_instances(Ledger((entry(ended_after),)), gone)  # reported once

    assert [v.kind for v in monitor.found] == ["leaked-instance"] * violations
