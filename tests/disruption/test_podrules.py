"""What blocks a pod's eviction: do-not-disrupt ("true" or a duration still running) and
PodDisruptionBudgets (by status, or worked out from the pods they select)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nodewright.controllers.common.podrules import (
    PdbLimits,
    do_not_disrupt_until,
    eviction_cost,
)

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)


def pod(name: str, *, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, started: datetime | None = None,
        ready: bool = True, priority: int | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running",
                              "conditions": [{"type": "Ready",
                                              "status": "True" if ready else "False"}]}
    if started is not None:
        status["startTime"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict[str, Any] = {"nodeName": "node-a", "containers": []}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": spec, "status": status}


def pdb(name: str, selector: dict[str, str], *, max_unavailable: Any = None,
        min_available: Any = None, allowed: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if min_available is not None:
        spec["minAvailable"] = min_available
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    if allowed is not None:
        body["status"] = {"disruptionsAllowed": allowed}
    return body


def test_do_not_disrupt_true_protects_for_good_a_duration_until_it_runs_out() -> None:
    assert do_not_disrupt_until(pod("a", annotations={"karpenter.sh/do-not-disrupt": "true"}),
                                NOW)[0]
    young = pod("b", annotations={"karpenter.sh/do-not-disrupt": "1h"},
                started=NOW - timedelta(minutes=10))
    active, why = do_not_disrupt_until(young, NOW)
    assert active and "2026-01-05T12:50:00Z" in why
    old = pod("c", annotations={"karpenter.sh/do-not-disrupt": "1h"},
              started=NOW - timedelta(hours=2))
    assert not do_not_disrupt_until(old, NOW)[0]
    assert not do_not_disrupt_until(pod("d", annotations={"karpenter.sh/do-not-disrupt": "no"}),
                                    NOW)[0]


def test_a_pdb_allowing_nothing_blocks_and_is_named() -> None:
    pods = [pod(f"web-{i}", labels={"app": "web"}) for i in range(3)]
    limits, problems = PdbLimits.build([pdb("web", {"app": "web"}, max_unavailable=0)], pods)
    assert problems == []
    why = limits.blocking(pods[0], NOW)
    assert why is not None and "PodDisruptionBudget default/web" in why
    assert limits.blocking(pod("other", labels={"app": "db"}), NOW) is None


def test_allowed_disruptions_come_from_status_or_from_the_pods() -> None:
    pods = [pod(f"web-{i}", labels={"app": "web"}) for i in range(3)]
    by_status, _ = PdbLimits.build([pdb("web", {"app": "web"}, min_available=1, allowed=0)],
                                   pods)
    assert by_status.blocking(pods[0], NOW) is not None
    computed, _ = PdbLimits.build([pdb("web", {"app": "web"}, min_available=2)], pods)
    assert computed.blocking(pods[0], NOW) is None
    unready = [pod(f"web-{i}", labels={"app": "web"}, ready=i == 0) for i in range(3)]
    strict, _ = PdbLimits.build([pdb("web", {"app": "web"}, min_available=2)], unready)
    assert strict.blocking(unready[0], NOW) is not None


def test_two_pdbs_on_one_pod_block_it_as_the_eviction_api_would() -> None:
    pods = [pod("web-0", labels={"app": "web", "tier": "front"})]
    limits, _ = PdbLimits.build(
        [pdb("a", {"app": "web"}, allowed=5), pdb("b", {"tier": "front"}, allowed=5)], pods)
    why = limits.blocking(pods[0], NOW)
    assert why is not None and "default/a" in why and "default/b" in why


def test_an_unreadable_pdb_is_reported_and_left_out() -> None:
    broken = pdb("bad", {})
    broken["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Near"}]}
    _, problems = PdbLimits.build([broken], [])
    assert len(problems) == 1 and "default/bad" in problems[0]


def test_eviction_cost_follows_priority_and_deletion_cost() -> None:
    assert eviction_cost(pod("a")) == 1.0
    assert eviction_cost(pod("b", priority=2**25)) == 2.0
    costly = pod("c", annotations={"controller.kubernetes.io/pod-deletion-cost": str(2**27)})
    assert eviction_cost(costly) == 2.0
    assert eviction_cost(pod("d", priority=2_000_000_000)) == 10.0
