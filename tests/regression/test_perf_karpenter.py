"""Karpenter's end-to-end regression suite, test/suites/regression/perf_test.go (v1.14.1)
Describe("Performance") Context("Provisioning"), as stories on the in-memory World.

Karpenter's Its time their phases (TimeIntervalCollector) but assert only outcomes: every
pod healthy, and after a template change that drifts every node, some NodeClaim Drifted
and then none. The stories assert those outcomes and no timings; the timed measurements of
Karpenter's performance suite are bench/karpenter_performance.py and
bench/suite_in_memory.py (test/suites/performance, not these Its).

The complex Its use Karpenter's test.MakeDiversePodOptions: six Deployments of 16 pods
(100 / 6), one each of generic pods, zonal and hostname topology spread, preferred zonal
and hostname pod affinity, and hostname anti-affinity, each pod asking a CPU and memory
drawn from Karpenter's lists. Go's seeded draws are not Python's: ours come from
random.Random(42).
"""

from __future__ import annotations

import random
from typing import Any

from nodewright.cluster import objects
from tests.controllers.expectations import condition, expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import deployment, healthy, suite_pool

REPLICAS = 100
DISCOVERY = {"testing/cluster": "owned"}  # Karpenter's test.DiscoveryLabel, testLabels
CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
LABEL_VALUES = "abcdefg"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def simple() -> list[dict[str, Any]]:
    return [deployment("simple", REPLICAS, labels=DISCOVERY, requests={"cpu": "1"})]


def diverse(seed: int = 42) -> list[dict[str, Any]]:
    """test.MakeDiversePodOptions as six Deployments of REPLICAS // 6 pods."""
    draw = random.Random(seed)

    def value() -> str:
        return draw.choice(LABEL_VALUES)

    def requests() -> dict[str, str]:
        return {"cpu": draw.choice(CPUS), "memory": draw.choice(MEMORIES)}

    def spread(key: str) -> dict[str, Any]:
        return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"my-label": value()}}}

    def preferred_affinity(key: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": key,
                                              "labelSelector": {"matchLabels": labels}}}]}}

    per_group = REPLICAS // 6
    made: list[dict[str, Any]] = []

    def add(name: str, labels: dict[str, str], **spec: Any) -> None:
        made.append(deployment(name, per_group, labels={**labels, **DISCOVERY, "group": name},
                               requests=requests(), **spec))

    add("generic", {"my-label": value()})
    add("zonal-spread", {"my-label": value()}, topologySpreadConstraints=[spread(ZONE)])
    add("hostname-spread", {"my-label": value()}, topologySpreadConstraints=[spread(HOSTNAME)])
    affinity = {"my-affinity": value()}
    add("hostname-affinity", affinity, affinity=preferred_affinity(HOSTNAME, affinity))
    affinity = {"my-affinity": value()}
    add("zonal-affinity", affinity, affinity=preferred_affinity(ZONE, affinity))
    nginx = {"app": "nginx"}
    add("anti-affinity", nginx, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": nginx}}]}})
    return made


def provisioned(deployments: list[dict[str, Any]]) -> tuple[World, int]:
    """The Deployments, then the NodePool and EC2NodeClass; every pod healthy."""
    world = World()
    world.apply(*deployments)
    world.apply(suite_pool(), NODE_CLASS)
    total = sum(d["spec"]["replicas"] for d in deployments)
    assert world.run_until(lambda: len(healthy(world, DISCOVERY)) == total, timeout=600)
    expect_no_controller_errors(world)
    return world, total


def drifted(world: World) -> list[str]:
    return [objects.name(c) for c in world.nodeclaims() if condition(c, "Drifted") == "True"]


def expect_drift_rolls_through(world: World, total: int) -> None:
    """A template label drifts every node: soon one NodeClaim is Drifted, then none is, and
    every node carries the label with every pod healthy."""
    originals = {objects.name(c) for c in world.nodeclaims()}
    world.apply(suite_pool(labels={"test-drift": "true"}))
    assert world.run_until(lambda: bool(drifted(world)), timeout=60)
    assert world.run_until(lambda: not drifted(world)
                           and not originals & {objects.name(c) for c in world.nodeclaims()},
                           timeout=600)
    assert world.run_until(lambda: len(healthy(world, DISCOVERY)) == total, timeout=600)
    assert all(objects.labels(n).get("test-drift") == "true" for n in world.nodes())
    expect_no_controller_errors(world)


def test_simple_provisioning() -> None:
    """perf_test.go It("should do simple provisioning"): 100 pods of one CPU."""
    provisioned(simple())


def test_simple_provisioning_and_simple_drift() -> None:
    """perf_test.go It("should do simple provisioning and simple drift")."""
    world, total = provisioned(simple())
    expect_drift_rolls_through(world, total)


def test_complex_provisioning() -> None:
    """perf_test.go It("should do complex provisioning")."""
    world, total = provisioned(diverse())
    assert total == 96
    # The anti-affine pods hold a node each.
    anti = [p for p in healthy(world, {"group": "anti-affinity"})]
    assert len({p["spec"]["nodeName"] for p in anti}) == len(anti) == 16


def test_complex_provisioning_and_complex_drift() -> None:
    """perf_test.go It("should do complex provisioning and complex drift")."""
    world, total = provisioned(diverse())
    expect_drift_rolls_through(world, total)
