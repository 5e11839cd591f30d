"""Karpenter v1.14.1's performance suite as data: the Deployments, phases and bounds of
kubernetes-sigs/karpenter `test/suites/performance/*_test.go`, for
bench/karpenter_performance.py to run against Nodewright.

Each test applies Karpenter's performance NodePool (its AWS e2e environment's
DefaultNodePool: on-demand, linux, instance categories c/m/r, generation > 4, not a1; then
the suite's BeforeEach: no limits, WhenEmptyOrUnderutilized after 30 s, a 100 % budget)
and runs phases. A phase sets Deployment replicas (or drifts the NodePool) and waits for
the healthy pod count Karpenter's Report* waits for; its bounds are Karpenter's `Expect`s.
Pods are Karpenter's `test.CreateDeploymentOptions`: labels `app: NAME` and
`testing/cluster: unspecified`, one container with the given requests, and the options
WithHostnameSpread (maxSkew 1 on kubernetes.io/hostname, DoNotSchedule),
WithPodAntiAffinityHostname and WithDoNotDisrupt; the wide test's Deployments add labels
and their own spread constraints (WithTopologySpreadConstraints, each selecting `app`
alone: over zones, then over hostnames).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DISCOVERY_LABEL = "testing/cluster"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SCALE_OUT, CONSOLIDATION, DRIFT = "scale-out", "consolidation", "drift"


@dataclass(frozen=True)
class Workload:
    name: str
    cpu: str
    memory: str
    hostname_spread: bool = False
    anti_affinity: bool = False
    do_not_disrupt: bool = False
    # The wide test's constraints: maxSkew 1 over zones, then (with hostname_spread) over
    # hostnames, each selecting on `app` alone (WithHostnameSpread selects on every label).
    zone_spread: bool = False
    labels: tuple[tuple[str, str], ...] = ()  # more pod labels (WithLabels)

    def manifest(self, replicas: int) -> dict[str, Any]:
        # One dict, as Karpenter's modifiers share one map: the anti-affinity's selector and
        # the Deployment's have every label, those added after them included.
        labels = {"app": self.name, DISCOVERY_LABEL: "unspecified", **dict(self.labels)}
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": self.cpu,
                                                       "memory": self.memory}}}],
        }
        if self.zone_spread:
            keys = [ZONE, HOSTNAME] if self.hostname_spread else [ZONE]
            spec["topologySpreadConstraints"] = [spread(key, {"app": self.name})
                                                 for key in keys]
        elif self.hostname_spread:
            spec["topologySpreadConstraints"] = [spread(HOSTNAME, labels)]
        if self.anti_affinity:
            spec["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": labels}}]}}
        metadata: dict[str, Any] = {"labels": labels}
        if self.do_not_disrupt:
            metadata["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": self.name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": metadata, "spec": spec}},
        }


def spread(key: str, match: dict[str, str]) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": match}}


@dataclass(frozen=True)
class Bounds:
    """Karpenter's Expects for one phase (None where it asserts nothing)."""

    seconds: float | None = None
    cpu_utilization: float | None = None  # more than
    memory_utilization: float | None = None  # more than
    p95_memory_mb: float | None = None  # less than
    avg_cpu_cores: float | None = None  # less than


@dataclass(frozen=True)
class Phase:
    kind: str
    replicas: Mapping[str, int]  # Deployment -> replicas set at the phase's start
    healthy: int  # the pod count the phase waits for (Karpenter's expected pods)
    bounds: Bounds
    at_least: bool = False  # do-not-disrupt: "at least" the count


@dataclass(frozen=True)
class PerfTest:
    name: str
    karpenter_file: str
    workloads: tuple[Workload, ...]
    phases: tuple[Phase, ...]
    notes: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


SMALL = Workload("small-resource-app", "900m", "3100Mi")
LARGE = Workload("large-resource-app", "3500m", "28Gi")
SMALL_SPREAD = Workload("small-resource-app", "900m", "3100Mi", hostname_spread=True)
PROTECTED = Workload("do-not-disrupt-app", "900m", "450Mi", do_not_disrupt=True)
SMALL_APART = Workload("small-resource-app", "900m", "3100Mi", anti_affinity=True)
LARGE_APART = Workload("large-resource-app", "3500m", "28Gi", anti_affinity=True)
DRIFT_SPREAD = Workload("hostname-spread-app", "900m", "3100Mi", hostname_spread=True)
DRIFT_STANDARD = Workload("standard-app", "3500m", "28Gi")

# wide_deployments_test.go's getDeterministicDeploymentConfigs: 30 Deployments, 1,000 pods
# scaled in to 700; the first three with hostname anti-affinity, the next three spread over
# hostnames, every one spread over zones.
WIDE_CPU = (
    "240m", "450m", "650m", "900m", "1400m", "1900m", "2400m", "2800m", "3300m", "3700m",
    "2300m", "900m", "1300m", "2800m", "1800m", "1850m", "3300m", "3800m", "225m", "450m",
    "700m", "900m", "1300m", "1800m", "2400m", "2800m", "3400m", "3800m", "3300m", "2800m")
WIDE_MEMORY = (
    "300Mi", "400Mi", "700Mi", "1Gi", "2Gi", "4Gi", "8Gi", "4Gi", "16Gi", "10Gi",
    "64Gi", "30Gi", "32Gi", "32Gi", "30Gi", "20Gi", "30Gi", "300Mi", "500Mi", "750Mi",
    "1Gi", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi", "28Gi", "64Gi", "13Gi", "24Gi")
WIDE_INITIAL = (35,) * 20 + (30,) * 10
WIDE_SCALE_IN = (25,) * 20 + (20,) * 10


def wide_workload(index: int) -> Workload:
    """Karpenter's createWideDeployments for the Deployment at `index` (from 0)."""
    anti_affinity, hostname_spread = index < 3, 3 <= index < 6
    labels = ((("has-hostname-spread", "true"),) if hostname_spread else ()) + \
        ((("has-anti-affinity", "true"),) if anti_affinity else ()) + \
        (("deployment-index", str(index + 1)),)
    return Workload(f"wide-deployment-{index + 1}", WIDE_CPU[index], WIDE_MEMORY[index],
                    hostname_spread=hostname_spread, anti_affinity=anti_affinity,
                    zone_spread=True, labels=labels)


WIDE = tuple(wide_workload(index) for index in range(30))

TESTS: dict[str, PerfTest] = {test.name: test for test in (
    PerfTest(
        "basic", "basic_test.go", (SMALL, LARGE), (
            Phase(SCALE_OUT, {SMALL.name: 500, LARGE.name: 500}, 1000,
                  Bounds(120, 0.53, 0.65, 260, 0.50)),
            Phase(CONSOLIDATION, {SMALL.name: 350, LARGE.name: 350}, 700,
                  Bounds(1200, None, None, 260, 0.25)),
        )),
    PerfTest(
        "hostname-spreading", "host_name_spreading_test.go", (SMALL_SPREAD, LARGE), (
            Phase(SCALE_OUT, {SMALL.name: 500, LARGE.name: 500}, 1000,
                  Bounds(300, 0.38, 0.40, 680, 1.15)),
            # Karpenter's wait is 30 minutes; it asserts no time.
            Phase(CONSOLIDATION, {SMALL.name: 350, LARGE.name: 350}, 700,
                  Bounds(1800, 0.38, 0.40, 575, 1.00)),
        )),
    PerfTest(
        "hostname-spreading-xl", "host_name_spreading_xl_test.go", (SMALL_SPREAD, LARGE), (
            Phase(SCALE_OUT, {SMALL.name: 1000, LARGE.name: 1000}, 2000,
                  Bounds(2100, 0.38, 0.40, 1330, 1.40)),
            Phase(CONSOLIDATION, {SMALL.name: 700, LARGE.name: 700}, 1400,
                  Bounds(2100, 0.38, 0.40, 1200, 1.70)),
        )),
    PerfTest(
        "do-not-disrupt", "do_no_disrupt_test.go", (SMALL_SPREAD, LARGE, PROTECTED), (
            Phase(SCALE_OUT, {SMALL.name: 500, LARGE.name: 500, PROTECTED.name: 100}, 1100,
                  Bounds(240, 0.38, 0.40, 645, 1.10)),
            Phase(CONSOLIDATION, {SMALL.name: 250, LARGE.name: 250}, 600,
                  Bounds(2100, 0.38, 0.40, 585, 0.80), at_least=True),
        ),
        notes="after consolidation, at least one node that ran a do-not-disrupt pod remains"),
    PerfTest(
        "interference", "interference_test.go", (SMALL_APART, LARGE_APART), (
            Phase(SCALE_OUT, {SMALL.name: 500}, 500, Bounds(300, 0.38, 0.40, 620, 0.90)),
            Phase(SCALE_OUT, {SMALL.name: 250, LARGE.name: 500}, 750,
                  Bounds(600, 0.38, 0.40, 1205, 1.30)),
            Phase(CONSOLIDATION, {SMALL.name: 400, LARGE.name: 200}, 600,
                  Bounds(1500, 0.38, 0.40, 820, 0.80)),
        ),
        notes="the large Deployment is created at its second phase"),
    PerfTest(
        "drift", "drift_performance_test.go", (DRIFT_SPREAD, DRIFT_STANDARD), (
            Phase(SCALE_OUT, {DRIFT_SPREAD.name: 300, DRIFT_STANDARD.name: 300}, 600,
                  Bounds(300, None, None, 425, 0.70)),
            Phase(DRIFT, {}, 600, Bounds(3000, None, None, 470, 1.05)),
        )),
    PerfTest(
        "wide-deployments", "wide_deployments_test.go", WIDE, (
            Phase(SCALE_OUT, {w.name: n for w, n in zip(WIDE, WIDE_INITIAL, strict=True)},
                  1000, Bounds(300, 0.20, 0.20, 370, 0.70)),
            # Karpenter waits 30 minutes (for the pods, then again for quiet) and expects
            # less than 40.
            Phase(CONSOLIDATION,
                  {w.name: n for w, n in zip(WIDE, WIDE_SCALE_IN, strict=True)},
                  700, Bounds(2400, 0.20, 0.20, 340, 0.30)),
        )),
)}


def scaled(test: PerfTest, factor: float) -> PerfTest:
    """The test with every replica count (and the counts waited for) times `factor`, at
    least 1: `--scale 0.01` for a smoke run, 5 for the larger shape."""
    def times(count: int) -> int:
        return max(1, round(count * factor))

    phases = tuple(
        Phase(p.kind, {name: times(n) for name, n in p.replicas.items()}, 0, p.bounds,
              p.at_least) for p in test.phases)
    # The counts waited for follow the replicas actually set, phase after phase.
    current: dict[str, int] = {}
    final = []
    for phase in phases:
        current.update(phase.replicas)
        final.append(Phase(phase.kind, phase.replicas, sum(current.values()), phase.bounds,
                           phase.at_least))
    return PerfTest(test.name if factor == 1 else f"{test.name} x{factor:g}",
                    test.karpenter_file, test.workloads, tuple(final), test.notes, test.extra)


LARGE_SHAPE = PerfTest(
    "basic-x5", "basic_test.go (x5, ours)", (SMALL, LARGE), (
        Phase(SCALE_OUT, {SMALL.name: 2500, LARGE.name: 2500}, 5000, Bounds()),
        Phase(CONSOLIDATION, {SMALL.name: 1750, LARGE.name: 1750}, 3500, Bounds()),
    ),
    notes="Karpenter has no bound for it: sizing numbers (memory per 1,000 pods, per 100 nodes)")
