"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Metrics"). Each story
names its It/Entry. They run the provisioner of the in-memory cluster (the workshop's
NodePool, zones us-east-1a/b/c for Karpenter's test-zone-1/2/3) and read the registry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.controllers.provisioning.solve_metrics import scheduling_simulation
from nodewright.scheduling.solver import SchedulingProblem, solve
from tests.controllers.conftest import WORKSHOP
from tests.harness import World
from tests.scheduling.karpenter_scheduling import nodepool, pod

ZONE = "topology.kubernetes.io/zone"
Z1, Z2, Z3 = "us-east-1a", "us-east-1b", "us-east-1c"
LABELS = {"app": "pod-label"}


def _samples(metric: str) -> Iterator[Any]:
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        yield from (sample for sample in family.samples if sample.name == metric)


def value(metric: str, /, **labels: str) -> float:
    return sum(s.value for s in _samples(metric)
               if all(s.labels.get(k) == v for k, v in labels.items()))


def manifest(name: str, *, labels: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "c",
                                     "resources": {"requests": {"cpu": "100m"}}}], **spec}}


def test_the_queue_depth_is_surfaced_while_the_loop_runs() -> None:
    # It("should surface the queueDepth metric while executing the scheduling loop"): read
    # while the solve of pods with hostname anti-affinity to each other runs. (Nodewright's
    # depth is the batch for the whole solve: docs/karpenter-differences.md.)
    labels = {"app": "nginx"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels},
         "topologyKey": "kubernetes.io/hostname"}]}}
    pods = [pod(labels=labels, affinity=anti) for _ in range(50)]
    with scheduling_simulation("provisioner", len(pods), pods):
        assert value("karpenter_scheduler_queue_depth", controller="provisioner") > 0
        solve(SchedulingProblem(pods=pods, nodepools=[nodepool()]))


def test_the_unschedulable_pods_count_is_surfaced() -> None:
    # It("should surface the UnschedulablePodsCount metric while executing the scheduling
    # loop"): 10 pods select an instance type that does not exist, 5 the NodePool's.
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "only"},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
                "requirements": [{"key": "node.kubernetes.io/instance-type",
                                  "operator": "In", "values": ["m5.large"]}]}}}}
    world = World()
    world.apply(WORKSHOP, pool)
    world.delete("NodePool", "default")
    world.apply(*[manifest(f"unknown-{i}", nodeSelector={
        "node.kubernetes.io/instance-type": "unknown"}) for i in range(10)],
        *[manifest(f"known-{i}", nodeSelector={
            "node.kubernetes.io/instance-type": "m5.large"}) for i in range(5)])
    world.advance(30)
    assert value("karpenter_scheduler_unschedulable_pods_count", controller="provisioner") == 10


def test_the_scheduling_duration_is_surfaced_after_a_loop() -> None:
    # It("should surface the schedulingDuration metric after executing a scheduling loop")
    metric = "karpenter_scheduler_scheduling_duration_seconds"
    before = value(f"{metric}_count", controller="provisioner")
    world = World()
    world.apply(WORKSHOP, *[manifest(f"p{i}") for i in range(3)])
    world.advance(30)
    assert value(f"{metric}_count", controller="provisioner") >= before + 1
    buckets = [s for s in _samples(f"{metric}_bucket")
               if s.labels.get("controller") == "provisioner" and s.value > 0]
    assert buckets


def test_the_pods_scheduling_decision_duration_is_observed_per_pod() -> None:
    # It("should set the PodSchedulerDecisionSeconds metric after a scheduling loop"):
    # three pods, three observations after the loop (none before).
    metric = "karpenter_pods_scheduling_decision_duration_seconds_count"
    world = World()
    world.apply(WORKSHOP)
    before = value(metric)
    world.apply(*[manifest(f"p{i}") for i in range(3)])
    world.deliver()
    assert value(metric) == before
    world.advance(60)
    assert value(metric) == before + 3


# -- Context("Pending Pods by Effective Zone Metric") -------------------------------------


def zone_counts(*bodies: Any, existing: tuple[Any, ...] = ()) -> World:
    """The existing pods launch and run first; then the pending ones meet one loop."""
    world = World()
    world.apply(WORKSHOP, *existing)
    if existing:
        assert world.settle()
    world.apply(*bodies)
    world.advance(15)
    return world


def effective(zone: str) -> float:
    return value("karpenter_scheduler_pending_pods_by_effective_zone_count",
                 controller="provisioner", zone=zone)


@pytest.mark.parametrize(("class_zones", "selector", "expected"), [
    ([Z1, Z2], {}, "flexible"), ([Z1], {}, Z1), ([Z2], {ZONE: Z1}, "none"),
], ids=["when PVC does not restrict pod to a single zone",
        "when PVC restricts pod to a single zone", "when PVC restricts pod to no zone"])
def test_the_effective_zone_of_a_pod_with_a_volume(class_zones: list[str],
                                                   selector: dict[str, str],
                                                   expected: str) -> None:
    # DescribeTable("should report metric correctly for volume constraints")
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": "zone-sc"}, "provisioner": "ebs.csi.aws.com",
          "volumeBindingMode": "WaitForFirstConsumer",
          "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE,
                                                            "values": class_zones}]}]}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "pvc-name", "namespace": "default"},
           "spec": {"storageClassName": "zone-sc", "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}
    spec: dict[str, Any] = {"volumes": [{"name": "v",
                                         "persistentVolumeClaim": {"claimName": "pvc-name"}}]}
    if selector:
        spec["nodeSelector"] = selector
    world = World()
    world.apply(WORKSHOP, sc, pvc)
    world.apply(manifest("p", **spec))
    world.advance(15)
    assert effective(expected) == 1


@pytest.mark.parametrize(("pending", "expected"), [
    ([manifest("a"), manifest("b")], {"flexible": 2}),
    ([manifest(f"z{i}", nodeSelector={ZONE: Z2}) for i in range(3)], {Z2: 3}),
    ([manifest("one", nodeSelector={ZONE: Z1}), manifest("two", nodeSelector={ZONE: Z2})],
     {Z1: 1, Z2: 1}),
    ([manifest("pref", affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [{"key": ZONE, "operator": "In", "values": [Z1]}]}}]}})],
     {"flexible": 1}),
], ids=["when pods are flexible to zones", "when pods are flexible to zones (one zone)",
        "when multiple pods have different zone constraints",
        "when pod has preffered zone affinity"])
def test_the_effective_zone_of_pending_pods(pending: list[dict[str, Any]],
                                            expected: dict[str, int]) -> None:
    # DescribeTable("should report zone of pods corectly"); Karpenter names its first two
    # Entries alike ("when pods are flexible to zones").
    zone_counts(*pending)
    for zone, count in expected.items():
        assert effective(zone) == count, zone


TSC = [{"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": LABELS}, "maxSkew": 1}]


def running(name: str, zone: str, **spec: Any) -> dict[str, Any]:
    """One of the Entry's existing pods: labelled, in `zone`."""
    return manifest(name, labels=LABELS, nodeSelector={ZONE: zone}, **spec)


def _term(selector: dict[str, str]) -> list[dict[str, Any]]:
    return [{"topologyKey": ZONE, "labelSelector": {"matchLabels": selector}}]


@pytest.mark.parametrize(("existing", "pending", "expected"), [
    ((running("e1", Z1),),
     manifest("p", affinity={"podAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": _term(LABELS)}}), Z1),
    ((running("e1", Z1), running("e2", Z2)),
     manifest("p", affinity={"podAntiAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": _term(LABELS)}}), Z3),
    ((running("e1", Z1, topologySpreadConstraints=TSC),
      running("e2", Z2, topologySpreadConstraints=TSC)),
     manifest("p", labels=LABELS, topologySpreadConstraints=TSC), Z3),
    (tuple(running(f"e{i}", zone) for i, zone in enumerate((Z1, Z1, Z2, Z2, Z3, Z3))),
     manifest("p", topologySpreadConstraints=[{**TSC[0], "minDomains": 4}]), "none"),
    ((), manifest("p", affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": _term({"nonexistent": "label"})}}),
     "none"),
    ((running("e1", Z1), running("e2", Z2), running("e3", Z3)),
     manifest("p", affinity={"podAntiAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": _term(LABELS)}}), "none"),
], ids=["when pods have required pod affinity", "when pods have required pod anti-affinity",
        "when pods have restricting TSCs", "when TSC is unsatisfiable",
        "when pod affinity is unsatisfiable", "when pod anti-affinity is unsatisfiable"])
def test_the_effective_zone_of_pending_pods_with_topology(
        existing: tuple[dict[str, Any], ...], pending: dict[str, Any], expected: str) -> None:
    # DescribeTable("should report zone of pods corectly"): the zones the pod's zonal
    # topology terms leave it, given the pods already running, narrow its effective zone.
    # The pending pod asks for more than the running pods' nodes have left, so that the
    # in-memory kube-scheduler cannot bind it before the provisioner solves for it (as
    # Karpenter's test calls Schedule with no kube-scheduler).
    big = [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "3"}}}]
    zone_counts({**pending, "spec": {**pending["spec"], "containers": big}}, existing=existing)
    assert effective(expected) == 1
