"""A NodeClaim that a pod's anti-affinity refuses stays refused for the rest of the plan,
so pods alike do not try it again: Karpenter's RespectPreferences benchmark shape (pods
that prefer no other of them in their zone, nor on their node) is planned in linear work,
not quadratic. The work is counted in fit checks, never timed."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.scheduling.solver.fit import FitCheck
from tests.scheduling.test_solver import HOSTNAME, ZONE, instance_type, nodepool, replicas, run

PODS = 120
LABEL = {"app": "nginx"}


def apart(key: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": LABEL}}


@pytest.fixture
def fit_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    check = FitCheck.check

    def counted(self: FitCheck, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return check(self, *args, **kwargs)

    monkeypatch.setattr(FitCheck, "check", counted)
    return calls


def test_pods_that_prefer_apart_get_a_node_each_in_linear_work(fit_checks: list[int]) -> None:
    pods = replicas(PODS, "nginx", labels=LABEL, affinity={"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": apart(ZONE)},
            {"weight": 1, "podAffinityTerm": apart(HOSTNAME)},
        ]}})
    result = run(pods, [nodepool(catalog=[instance_type("m.large", 2, 8, 0.1)])])
    assert not result.unschedulable
    # The zonal preference holds for the first pod of each zone only, then is relaxed; the
    # hostname one holds for every pod.
    assert len(result.nodeclaims) == PODS
    # Trying every earlier NodeClaim again for each pod would be PODS² / 2 = 7,200 checks.
    assert fit_checks[0] < 4 * PODS


def test_pods_required_apart_by_zone_wait_for_the_first_in_linear_work(
    fit_checks: list[int],
) -> None:
    pods = replicas(PODS, "nginx", labels=LABEL, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [apart(ZONE)]}})
    result = run(pods, [nodepool(catalog=[instance_type("m.large", 2, 8, 0.1)])])
    # The first pod's NodeClaim may launch in any zone, so it counts in all of them until
    # it does (Karpenter's late committal): the others wait for the next batch.
    assert len(result.nodeclaims) == 1
    assert len(result.unschedulable) == PODS - 1
    assert fit_checks[0] < 4 * PODS
