"""Karpenter's PodDisruptionBudget limits, ported: kubernetes-sigs/karpenter v1.14.1
pkg/utils/pdb/suite_test.go. Each test names its Describe and It or Entry.

Karpenter's `pdb.Limits` is our `PdbLimits`, and its two questions live where they are
asked:

- `CanEvictPods` (may disruption take a node with these pods?) is the candidate check of
  the disruption controller, `candidates.pod_blocker`: the first pod that may not be
  evicted, in words that name the budget(s) that forbid it;
- `IsCurrentlyReschedulable` (will this pod of a deleting node need a place soon?) is the
  provisioner's choice of the pods of machines being deleted (`pods_to_schedule`): a pod a
  budget fully blocks, or one with do-not-disrupt, is not planned for.

Karpenter's envtest runs no disruption controller, so its budgets have no status (0
disruptions allowed); ours are given that status too. Pods run on a node, Ready unless a
test says otherwise."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.common.decision_log import CAUSE_PDB
from nodewright.controllers.common.podrules import PdbLimits
from nodewright.controllers.disruption.candidates import CandidateContext, pod_blocker
from nodewright.controllers.provisioning.provisioner import Provisioner
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.state import ClusterState

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
POD_LABELS = {"pdb-test": "value"}
NODE_NAME = "node-a"
PROVIDER_ID = "aws:///us-west-2a/i-0123456789abcdef0"


def a_pod(name: str, *, labels: dict[str, str] | None = None, ready: bool = True,
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "spec": {"nodeName": NODE_NAME,
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": "Running", "startTime": "2026-01-05T11:00:00Z",
                       "conditions": [{"type": "Ready",
                                       "status": "True" if ready else "False"}]}}


def a_pdb(name: str = "pdb", *, labels: dict[str, str] | None = None,
          min_available: Any = None, max_unavailable: Any = None,
          unhealthy_pod_eviction_policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(labels or POD_LABELS)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec,
            "status": {"disruptionsAllowed": 0}}


# The budgets of Karpenter's tables: each allows no disruption of the pods it selects.
BLOCKING_BUDGETS = {
    "100% min available": [a_pdb(min_available="100%")],
    "0% max unavailable": [a_pdb(max_unavailable="0%")],
    "0 max unavailable": [a_pdb(max_unavailable=0)],
    "multiple PDBs on the same pod": [a_pdb("pdb-1", min_available="100%"),
                                      a_pdb("pdb-2", min_available="100%")],
}


def eviction_blocker(pods: list[dict[str, Any]], pdbs: list[dict[str, Any]]
                     ) -> tuple[str, str] | None:
    """What the disruption controller's candidate check says of a node running `pods`."""
    limits, problems = PdbLimits.build(pdbs, pods)
    assert problems == []
    context = CandidateContext(now=NOW, nodepools={}, instance_types={}, pdbs=limits,
                               pods_on=lambda _: pods)
    return pod_blocker(pods, context)


def planned_for(pods: list[dict[str, Any]], pdbs: list[dict[str, Any]]) -> list[str]:
    """The pods of a node being deleted that the provisioner plans a place for."""
    clock = VirtualClock(NOW)
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE_NAME, "labels": {
                "node.kubernetes.io/instance-type": "m5.large"}},
            "spec": {"providerID": PROVIDER_ID},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"}}}
    for obj in (node, *pods, *pdbs):
        state.observe(WatchEvent("ADDED", obj))  # type: ignore[arg-type]
    state.mark_for_deletion(PROVIDER_ID)
    provisioner = Provisioner(cluster, None, clock, state,  # type: ignore[arg-type]
                              EventRecorder(cluster, clock))
    to_place, _ = provisioner.pods_to_schedule()
    return [pod.name for pod in to_place]


# -- Describe("CanEvictPods") -----------------------------------------------------------------


def test_an_unhealthy_pod_may_be_evicted_when_its_budget_always_allows_it() -> None:
    """CanEvictPods It("can evict unhealthy pods when UnhealthyPodEvictionPolicy is set to
    always allow")."""
    budget = a_pdb(min_available="100%", unhealthy_pod_eviction_policy="AlwaysAllow")
    assert eviction_blocker([a_pod("app", labels=POD_LABELS, ready=False)], [budget]) is None


def test_an_unhealthy_pod_may_not_be_evicted_under_the_default_policy() -> None:
    """CanEvictPods It("can't evict unhealthy pods when UnhealthyPodEvictionPolicy is not
    set")."""
    blocker = eviction_blocker([a_pod("app", labels=POD_LABELS, ready=False)],
                               [a_pdb(min_available="100%")])
    assert blocker is not None
    cause, why = blocker
    assert cause == CAUSE_PDB
    assert "default/pdb" in why


def test_pods_no_budget_selects_may_be_evicted() -> None:
    """CanEvictPods It("can evict pods when no PDBs match")."""
    other = a_pdb(labels={"other": "value"})
    assert eviction_blocker([a_pod("app", labels=POD_LABELS)], [other]) is None


@pytest.mark.parametrize("entry", list(BLOCKING_BUDGETS))
def test_no_pod_may_be_evicted_when_budgets_forbid_it_for_every_pod(entry: str) -> None:
    """CanEvictPods DescribeTable("can't evict pods when disruptions are not allowed for
    every pod in the list"), one case per Entry (its text is the parameter)."""
    budgets = BLOCKING_BUDGETS[entry]
    pods = [a_pod("app-1", labels=POD_LABELS), a_pod("app-2", labels=POD_LABELS)]
    blocker = eviction_blocker(pods, budgets)
    assert blocker is not None
    cause, why = blocker
    assert cause == CAUSE_PDB
    for budget in budgets:
        assert f"default/{budget['metadata']['name']}" in why


@pytest.mark.parametrize("entry", list(BLOCKING_BUDGETS))
def test_no_pod_may_be_evicted_when_budgets_forbid_it_for_one_pod(entry: str) -> None:
    """CanEvictPods DescribeTable("can't evict pods when disruptions are not allowed for one
    pod in the list"), one case per Entry: the second pod no budget selects comes first."""
    budgets = BLOCKING_BUDGETS[entry]
    pods = [a_pod("free"), a_pod("guarded", labels=POD_LABELS)]
    blocker = eviction_blocker(pods, budgets)
    assert blocker is not None
    cause, why = blocker
    assert cause == CAUSE_PDB
    assert "default/guarded" in why
    for budget in budgets:
        assert f"default/{budget['metadata']['name']}" in why


# -- Describe("IsCurrentlyReschedulable") -----------------------------------------------------


def test_an_unhealthy_pod_a_budget_lets_go_is_planned_for() -> None:
    """IsCurrentlyReschedulable It("considers unhealthy pod as currently reschedulable when
    UnhealthyPodEvictionPolicy is set to always allow")."""
    budget = a_pdb(min_available="100%", unhealthy_pod_eviction_policy="AlwaysAllow")
    assert planned_for([a_pod("app", labels=POD_LABELS, ready=False)], [budget]) == ["app"]


def test_an_unhealthy_pod_a_budget_holds_is_not_planned_for() -> None:
    """IsCurrentlyReschedulable It("does not consider unhealthy pod as currently
    reschedulable when UnhealthyPodEvictionPolicy is not set")."""
    budget = a_pdb(min_available="100%")
    assert planned_for([a_pod("app", labels=POD_LABELS, ready=False)], [budget]) == []


def test_a_pod_no_budget_selects_is_planned_for() -> None:
    """IsCurrentlyReschedulable It("considers pod as currently reschedulable when no PDBs
    match")."""
    other = a_pdb(labels={"other": "value"})
    assert planned_for([a_pod("app", labels=POD_LABELS)], [other]) == ["app"]


@pytest.mark.parametrize("entry", list(BLOCKING_BUDGETS))
def test_a_pod_budgets_fully_block_is_not_planned_for(entry: str) -> None:
    """IsCurrentlyReschedulable DescribeTable("pods which are not currently reschedulable due
    to PDBs"), one case per Entry (its text is the parameter)."""
    pods = [a_pod("app", labels=POD_LABELS)]
    assert planned_for(pods, BLOCKING_BUDGETS[entry]) == []
    # The same pod without the budgets is planned for: it is the budgets that hold it.
    assert planned_for(pods, []) == ["app"]


def test_a_do_not_disrupt_pod_is_not_planned_for() -> None:
    """IsCurrentlyReschedulable It("does not consider pod with do-not-disrupt annotation as
    currently reschedulable")."""
    pod = a_pod("app", labels=POD_LABELS, annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert planned_for([pod, a_pod("other")], []) == ["other"]
