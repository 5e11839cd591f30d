"""The port of Karpenter's performance suite (bench/perf_shapes.py,
bench/karpenter_performance.py): its shapes as Karpenter's tests define them, and its
measurements as Karpenter's Monitor computes them. The run itself needs the real control
plane (tests/e2e/test_benchmarks.py runs it at a tiny size)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from karpenter_performance import (
    Run,
    average_utilization,
    draining,
    originals,
    quantity,
    timeout_argument,
)
from perf_shapes import (
    CONSOLIDATION,
    DRIFT,
    LARGE_SHAPE,
    SCALE_OUT,
    TESTS,
    ZONE,
    Bounds,
    Phase,
    scaled,
)


def test_the_seven_tests_of_karpenters_suite_with_its_pod_counts_and_bounds() -> None:
    assert list(TESTS) == ["basic", "hostname-spreading", "hostname-spreading-xl",
                           "do-not-disrupt", "interference", "drift", "wide-deployments"]
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
    wide = TESTS["wide-deployments"]
    assert [(p.kind, p.healthy) for p in wide.phases] == [(SCALE_OUT, 1000), (CONSOLIDATION, 700)]
    assert wide.phases[0].bounds == Bounds(300, 0.20, 0.20, 370, 0.70)
    assert wide.phases[1].bounds == Bounds(2400, 0.20, 0.20, 340, 0.30)


def test_the_wide_test_has_karpenters_thirty_deterministic_deployments() -> None:
    """wide_deployments_test.go's getDeterministicDeploymentConfigs and
    createWideDeployments: 30 Deployments of fixed shapes, 35 pods each for the first 20
    and 30 for the last 10 (1,000), scaled in to 25 and 20 (700); every one spread over
    zones, 1-3 with hostname anti-affinity, 4-6 spread over hostnames too."""
    wide = TESTS["wide-deployments"]
    names = [w.name for w in wide.workloads]
    assert names == [f"wide-deployment-{i}" for i in range(1, 31)]
    out, scale_in = (dict(p.replicas) for p in wide.phases)
    assert [out[n] for n in names] == [35] * 20 + [30] * 10
    assert [scale_in[n] for n in names] == [25] * 20 + [20] * 10
    shapes = {w.name: (w.cpu, w.memory) for w in wide.workloads}
    assert shapes["wide-deployment-1"] == ("240m", "300Mi")
    assert shapes["wide-deployment-11"] == ("2300m", "64Gi")
    assert shapes["wide-deployment-19"] == ("225m", "500Mi")
    assert shapes["wide-deployment-30"] == ("2800m", "24Gi")
    assert [w.anti_affinity for w in wide.workloads] == [True] * 3 + [False] * 27
    assert [w.hostname_spread for w in wide.workloads] == [False] * 3 + [True] * 3 + [False] * 24

    apart = wide.workloads[0].manifest(35)["spec"]["template"]
    assert apart["metadata"]["labels"] == {
        "app": "wide-deployment-1", "testing/cluster": "unspecified",
        "has-anti-affinity": "true", "deployment-index": "1"}
    (term,) = apart["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == apart["metadata"]["labels"]
    (zone,) = apart["spec"]["topologySpreadConstraints"]
    assert zone == {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "wide-deployment-1"}}}

    spread = wide.workloads[4].manifest(35)["spec"]["template"]
    assert spread["metadata"]["labels"]["has-hostname-spread"] == "true"
    assert [(c["topologyKey"], c["labelSelector"]["matchLabels"])
            for c in spread["spec"]["topologySpreadConstraints"]] == [
        (ZONE, {"app": "wide-deployment-5"}),
        ("kubernetes.io/hostname", {"app": "wide-deployment-5"})]
    assert "affinity" not in spread["spec"]
    plain = wide.workloads[29].manifest(30)["spec"]["template"]
    assert plain["metadata"]["labels"] == {
        "app": "wide-deployment-30", "testing/cluster": "unspecified",
        "deployment-index": "30"}
    assert len(plain["spec"]["topologySpreadConstraints"]) == 1


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
    not_yet.timeout = 0.5  # ten quiet windows: matched by name, the phase would have ended
    assert not_yet.wait(phase, time.monotonic(), before) is None


def test_with_timeout_bound_each_phase_may_take_karpenters_bound_and_no_more() -> None:
    """`--timeout bound`: a scale-out ends at Karpenter's bound for it, a consolidation or
    drift at its bound plus the quiet window it ends with (a phase that ends just within its
    bound must still be reported), a phase Karpenter leaves unbounded at an hour; seconds
    given are used as they are."""
    run = CannedRun([], [])
    run.quiet, run.timeout = 180.0, None
    assert run.phase_timeout(Phase(SCALE_OUT, {}, 1, Bounds(300))) == 300
    assert run.phase_timeout(Phase(CONSOLIDATION, {}, 1, Bounds(1500))) == 1680
    assert run.phase_timeout(Phase(DRIFT, {}, 1, Bounds(3000))) == 3180
    assert run.phase_timeout(Phase(SCALE_OUT, {}, 1, Bounds())) == 3600
    run.timeout = 42.0
    assert run.phase_timeout(Phase(CONSOLIDATION, {}, 1, Bounds(1500))) == 42
    assert timeout_argument("bound") is None and timeout_argument("90") == 90.0
    with pytest.raises(argparse.ArgumentTypeError, match="neither seconds nor 'bound'"):
        timeout_argument("soon")


def test_a_stalled_phase_ends_at_its_bound_under_timeout_bound() -> None:
    """A scale-out whose pod never runs, given `--timeout bound`, is reported as not done
    once Karpenter's bound for it has passed (here a tenth of a second)."""
    pending = {**pod("", "1", "1Gi"), "status": {"phase": "Pending"}}
    run = CannedRun([], [pending])
    run.timeout = None
    started = time.monotonic()
    assert run.wait(Phase(SCALE_OUT, {}, 1, Bounds(0.1)), started, set()) is None
    assert time.monotonic() - started < 1.5
