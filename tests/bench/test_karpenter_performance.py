"""The port of Karpenter's performance suite (bench/perf_shapes.py,
bench/karpenter_performance.py): its shapes as Karpenter's tests define them, and its
measurements as Karpenter's Monitor computes them. The run itself needs the real control
plane (tests/e2e/test_benchmarks.py runs it at a tiny size)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from karpenter_performance import Run, average_utilization, draining, originals, quantity
from perf_shapes import (
    CONSOLIDATION,
    DRIFT,
    LARGE_SHAPE,
    SCALE_OUT,
    TESTS,
    Bounds,
    Phase,
    scaled,
)


def test_the_six_tests_of_karpenters_suite_with_its_pod_counts_and_bounds() -> None:
    assert list(TESTS) == ["basic", "hostname-spreading", "hostname-spreading-xl",
                           "do-not-disrupt", "interference", "drift"]
    basic = TESTS["basic"]
    assert [(p.kind, p.healthy) for p in basic.phases] == [(SCALE_OUT, 1000),
                                                          (CONSOLIDATION, 700)]
    assert basic.phases[0].bounds.seconds == 120
    assert basic.phases[0].bounds.cpu_utilization == 0.53
    assert basic.phases[0].bounds.memory_utilization == 0.65
    assert [p.healthy for p in TESTS["interference"].phases] == [500, 750, 600]
    assert [p.healthy for p in TESTS["do-not-disrupt"].phases] == [1100, 600]
    assert TESTS["do-not-disrupt"].phases[1].at_least
    assert [p.kind for p in TESTS["drift"].phases] == [SCALE_OUT, DRIFT]
    assert [p.healthy for p in LARGE_SHAPE.phases] == [5000, 3500]


def test_a_scaled_test_waits_for_the_replicas_it_sets() -> None:
    tiny = scaled(TESTS["interference"], 0.01)
    assert [dict(p.replicas) for p in tiny.phases] == [
        {"small-resource-app": 5}, {"small-resource-app": 2, "large-resource-app": 5},
        {"small-resource-app": 4, "large-resource-app": 2}]
    assert [p.healthy for p in tiny.phases] == [5, 7, 6]


def test_deployments_are_karpenters_create_deployment_options() -> None:
    spread = next(w for w in TESTS["hostname-spreading"].workloads if w.hostname_spread)
    manifest = spread.manifest(3)
    template = manifest["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "small-resource-app",
                                              "testing/cluster": "unspecified"}
    (constraint,) = template["spec"]["topologySpreadConstraints"]
    assert constraint["topologyKey"] == "kubernetes.io/hostname"
    assert constraint["whenUnsatisfiable"] == "DoNotSchedule" and constraint["maxSkew"] == 1
    protected = next(w for w in TESTS["do-not-disrupt"].workloads if w.do_not_disrupt)
    annotations = protected.manifest(1)["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"karpenter.sh/do-not-disrupt": "true"}


@pytest.mark.parametrize(("text", "value"), [("900m", 0.9), ("2", 2.0), ("3100Mi", 3100 * 2**20),
                                              ("28Gi", 28 * 2**30), ("1k", 1000.0)])
def test_quantities(text: str, value: float) -> None:
    assert quantity(text) == pytest.approx(value)


def node(name: str, cpu: str, memory: str, *, managed: bool = True) -> dict[str, object]:
    labels = {"karpenter.sh/nodepool": "default"} if managed else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": memory}}}


def pod(node_name: str, cpu: str, memory: str) -> dict[str, object]:
    return {"metadata": {"name": "p"}, "status": {"phase": "Running"},
            "spec": {"nodeName": node_name, "containers": [
                {"resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def test_utilization_is_the_mean_over_nodepool_nodes_of_requests_over_allocatable() -> None:
    nodes = [node("a", "4", "8Gi"), node("b", "2", "8Gi"), node("system", "2", "4Gi",
                                                                  managed=False)]
    pods = [pod("a", "3", "4Gi"), pod("b", "1", "2Gi"), pod("system", "2", "4Gi")]
    assert average_utilization(nodes, pods, "cpu") == pytest.approx((0.75 + 0.5) / 2)
    assert average_utilization(nodes, pods, "memory") == pytest.approx((0.5 + 0.25) / 2)


def test_a_node_is_draining_while_tainted_disrupted_or_deleting() -> None:
    tainted = {"metadata": {}, "spec": {"taints": [{"key": "karpenter.sh/disrupted"}]}}
    deleting = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}}
    assert draining(tainted) and draining(deleting)
    assert not draining({"metadata": {}, "spec": {}})


class CannedRun(Run):
    """Run.wait over a cluster given as lists (no control plane)."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self._nodes, self._pods = nodes, pods
        self.poll, self.quiet, self.timeout = 0.01, 0.05, 2.0

    def nodes(self) -> list[dict[str, Any]]:
        return self._nodes

    def pods(self) -> list[dict[str, Any]]:
        return self._pods


def named(name: str, uid: str) -> dict[str, Any]:
    found: dict[str, Any] = {**node(name, "4", "8Gi"), "spec": {}}
    found["metadata"]["uid"] = uid
    return found


def test_a_drift_ends_once_every_node_there_before_is_gone_even_under_a_reused_name() -> None:
    """Found by the in-memory drift test at half scale: a replacement instance got the private
    IP (so the node name) of a terminated one, and the phase, matching nodes by name, waited
    for it until its timeout. The nodes there before the drift are matched by UID."""
    name = "ip-10-0-0-5.ec2.internal"
    before = originals([named(name, "old"), node("system", "2", "4Gi", managed=False)])
    assert before == {"old"}
    phase = Phase(DRIFT, {}, 1, Bounds())
    running = [pod(name, "1", "1Gi")]

    replaced = CannedRun([named(name, "new")], running)
    assert replaced.wait(phase, time.monotonic(), before) is not None

    not_yet = CannedRun([named(name, "old")], running)
    assert not_yet.wait(phase, time.monotonic(), before) is None
