"""Fixtures of the ported scheduling suite (kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go): the fake cloud provider's six
default instance types with the labels its tests select on (`size`, `special`, `integer`),
`fake.InstanceTypes(n)`, the suite's NodePool (capacity types spot, on-demand and reserved)
and pods built from `test.PodOptions`-like arguments. Rounds of ExpectProvisioned run on
`karpenter_fake.Cluster`.

Karpenter's fake provider registers its labels `size`, `special` and `integer` as well
known (a pod may select them without the NodePool naming them). Nodewright's well-known
provider labels are AWS's, so the port gives the fake types those in their place:
karpenter.k8s.aws/instance-size (small/large), karpenter.k8s.aws/instance-local-nvme (only
on the large types, as `special`) and karpenter.k8s.aws/instance-cpu (the cpu count, as
`integer`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import ExistingNode, Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.scheduling.karpenter_fake import (
    ARCH,
    CAPACITY_TYPE,
    GI,
    HOSTNAME,
    INSTANCE_TYPE,
    MI,
    ZONE,
    ZONES,
    Cluster,
)

OS = "kubernetes.io/os"
SIZE = "karpenter.k8s.aws/instance-size"
SPECIAL = "karpenter.k8s.aws/instance-local-nvme"
INTEGER = "karpenter.k8s.aws/instance-cpu"
GPU_A = "fake.com/vendor-a"
GPU_B = "fake.com/vendor-b"

__all__ = ["ARCH", "CAPACITY_TYPE", "HOSTNAME", "INSTANCE_TYPE", "ZONE", "Cluster"]


def fake_it(name: str, cpu: int = 4, memory_gi: int = 4, pods: int = 5, arch: str = "amd64",
            extra: Mapping[str, int] | None = None,
            offerings: Sequence[Offering] | None = None) -> InstanceType:
    """fake.NewInstanceType: spot in test-zone-1/2, on-demand in all three, priced by its
    resources (0.1 a cpu, 0.1 a GB, 1 a GPU); `size` small, or large with `special` for a
    type above 4 cpu and 8Gi; `integer` is its cpu count."""
    price = 0.1 * cpu + 0.1 * memory_gi * 2**30 / 1e9 + sum(1.0 for _ in (extra or {}))
    large = cpu > 4 and memory_gi > 8
    labels = {INSTANCE_TYPE: name, ARCH: arch, OS: "linux", SIZE: "large" if large else "small",
              INTEGER: str(cpu)}
    if large:
        labels[SPECIAL] = "900"
    capacity = {"cpu": cpu * 1000, "memory": memory_gi * GI, "pods": pods * 1000}
    capacity.update({key: value * 1000 for key, value in (extra or {}).items()})
    return InstanceType(
        name=name, labels=labels, capacity=capacity,
        overhead=Overhead({"cpu": 100, "memory": 10 * MI}, {}, {}),
        offerings=tuple(offerings) if offerings is not None else (
            *(Offering(z, None, "spot", price) for z in ZONES[:2]),
            *(Offering(z, None, "on-demand", price) for z in ZONES)),
    )


def default_catalog() -> tuple[InstanceType, ...]:
    """fake.CloudProvider's GetInstanceTypes."""
    return (
        fake_it("default-instance-type"),
        fake_it("small-instance-type", cpu=2, memory_gi=2),
        fake_it("gpu-vendor-instance-type", extra={GPU_A: 2}),
        fake_it("gpu-vendor-b-instance-type", extra={GPU_B: 2}),
        fake_it("arm-instance-type", cpu=16, memory_gi=128, arch="arm64"),
        fake_it("single-pod-instance-type", pods=1),
    )


def numbered_catalog(total: int) -> tuple[InstanceType, ...]:
    """fake.InstanceTypes(total): fake-it-i with i+1 cpu, 2(i+1) Gi and 10(i+1) pods."""
    return tuple(fake_it(f"fake-it-{i}", cpu=i + 1, memory_gi=2 * (i + 1), pods=10 * (i + 1))
                 for i in range(total))


def requirement(key: str, operator: str, *values: str) -> Requirement:
    return Requirement.build(key, operator, list(values))


def nodepool(name: str = "default", *, requirements: Sequence[Requirement] | None = None,
             labels: Mapping[str, str] | None = None, taints: Sequence[Any] = (),
             catalog: Sequence[InstanceType] | None = None, weight: int = 0) -> NodePoolTemplate:
    """The suite's NodePool: capacity type In [spot, on-demand, reserved] unless the test
    sets its own requirements (as Karpenter's tests replace the list)."""
    merged = Requirements(list(requirements) if requirements is not None else [
        requirement(CAPACITY_TYPE, "In", "spot", "on-demand", "reserved")])
    for key, value in (labels or {}).items():
        merged.add(Requirement.single(key, value))
    merged.add(Requirement.single("karpenter.sh/nodepool", name))
    return NodePoolTemplate(name=name, requirements=merged,
                            instance_types=catalog if catalog is not None else default_catalog(),
                            taints=tuple(taints), weight=weight)


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    item: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


_counter = [0]


def pod(*, node_selector: Mapping[str, str] | None = None,
        requirements: Sequence[Mapping[str, Any]] = (),
        preferences: Sequence[Mapping[str, Any]] = (),
        requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None, name: str | None = None,
        namespace: str = "default", **spec: Any) -> Pod:
    """test.UnschedulablePod(test.PodOptions{...}): NodeRequirements are one required term,
    NodePreferences one preferred term of weight 1; limits stand for requests when no
    request is given (as the API server defaults them)."""
    _counter[0] += 1
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}], **spec}
    if node_selector:
        body["nodeSelector"] = dict(node_selector)
    if requirements or preferences:
        affinity: dict[str, Any] = {}
        if requirements:
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [{"matchExpressions": [dict(r) for r in requirements]}]}
        if preferences:
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 1, "preference": {"matchExpressions": [dict(r) for r in preferences]}}]
        body["affinity"] = {**body.get("affinity", {}), "nodeAffinity": affinity}
    return parse_pod_spec(namespace, name or f"pod-{_counter[0]}", dict(labels or {}), body,
                          "spec")


def provisioned(*new: Pod, pools: Sequence[NodePoolTemplate] | None = None,
                cluster: Cluster | None = None) -> Cluster:
    """ExpectApplied(nodePool) + ExpectProvisioned(pods...)."""
    cluster = cluster if cluster is not None else Cluster()
    cluster.provision(list(pools) if pools is not None else [nodepool()], *new)
    return cluster


def scheduled(cluster: Cluster, p: Pod) -> ExistingNode:
    """ExpectScheduled: the node the pod was bound to."""
    node = cluster.node_of(p)
    assert node is not None, f"{p.key} was not scheduled"
    return node


def not_scheduled(cluster: Cluster, p: Pod) -> None:
    """ExpectNotScheduled."""
    node = cluster.node_of(p)
    assert node is None, f"{p.key} was scheduled on {node.name if node else ''}"
