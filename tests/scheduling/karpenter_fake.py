"""Karpenter's test fixtures for the ported scheduling suites: its fake cloud provider's
instance types (pkg/cloudprovider/fake: a 4-cpu default type, a 2-cpu small one, a 16-cpu
arm64 one and a one-pod one; spot in test-zone-1/2, on-demand in test-zone-1/2/3; 100m cpu
and 10Mi reserved), its default NodePool (capacity type Exists), and a small cluster
that launches what each solve plans, so that several `ExpectProvisioned` rounds and
`ExpectSkew` read as in the Go suites."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate, cheapest_offering_of
from nodewright.scheduling.pods import ExistingNode, Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve
from tests.support.scheduling import single_values

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
MI = 2**20 * 1000
GI = 2**30 * 1000
LABELS = {"test": "test"}
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


def fake_type(name: str, cpu: int = 4, memory_gi: int = 4, pods: int = 5,
              arch: str = "amd64") -> InstanceType:
    """As fake.NewInstanceType: spot in test-zone-1/2, on-demand in all three, one price."""
    price = cpu * 0.025 + memory_gi * 0.001 + pods * 0.0001
    offerings = (
        *(Offering(z, None, "spot", price) for z in ZONES[:2]),
        *(Offering(z, None, "on-demand", price) for z in ZONES),
    )
    return InstanceType(
        name=name,
        labels={INSTANCE_TYPE: name, ARCH: arch, "kubernetes.io/os": "linux"},
        capacity={"cpu": cpu * 1000, "memory": memory_gi * GI, "pods": pods * 1000},
        overhead=Overhead({"cpu": 100, "memory": 10 * MI}, {}, {}),
        offerings=offerings,
    )


DEFAULT = fake_type("default-instance-type")
SMALL = fake_type("small-instance-type", cpu=2, memory_gi=2)
ARM = fake_type("arm-instance-type", cpu=16, memory_gi=128, arch="arm64")
SINGLE_POD = fake_type("single-pod-instance-type", pods=1)
CATALOG = (DEFAULT, SMALL, ARM, SINGLE_POD)


def nodepool(name: str = "default", *, requirements: Sequence[Requirement] = (),
             labels: Mapping[str, str] | None = None, taints: Sequence[Any] = (),
             catalog: Sequence[InstanceType] = CATALOG) -> NodePoolTemplate:
    """test.NodePool with the topology suite's requirement (capacity type Exists)."""
    merged = Requirements([Requirement(CAPACITY_TYPE, True, frozenset()), *requirements])
    for key, value in (labels or {}).items():
        merged.add(Requirement.single(key, value))
    merged.add(Requirement.single("karpenter.sh/nodepool", name))
    return NodePoolTemplate(name=name, requirements=merged, instance_types=catalog,
                            taints=tuple(taints))


def zones(*values: str) -> Requirement:
    return Requirement(ZONE, False, frozenset(values))


def capacity_types(*values: str) -> Requirement:
    return Requirement(CAPACITY_TYPE, False, frozenset(values))


_counter = [0]


def pod(labels: Mapping[str, str] | None = None, *, cpu: str | None = None,
        namespace: str = "default", name: str | None = None, **spec: Any) -> Pod:
    """test.UnschedulablePod: requests only when given."""
    _counter[0] += 1
    container: dict[str, Any] = {"name": "c"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    body = {"containers": [container], **spec}
    return parse_pod_spec(namespace, name or f"pod-{_counter[0]}", dict(labels or {}), body,
                          "spec")


def pods(count: int, labels: Mapping[str, str] | None = None, **options: Any) -> list[Pod]:
    return [pod(labels, **options) for _ in range(count)]


def spread(key: str, max_skew: int = 1, *, selector: Mapping[str, Any] | None = None,
           when: str = "DoNotSchedule", **extra: Any) -> list[dict[str, Any]]:
    constraint: dict[str, Any] = {"topologyKey": key, "maxSkew": max_skew,
                                  "whenUnsatisfiable": when, **extra}
    if selector is not None:
        constraint["labelSelector"] = selector
    return [constraint]


def match(labels: Mapping[str, str] = LABELS) -> dict[str, Any]:
    return {"matchLabels": dict(labels)}


@dataclass
class Cluster:
    """Nodes launched by earlier rounds, with the pods bound to them."""

    nodes: list[ExistingNode] = field(default_factory=list)
    bound: list[Pod] = field(default_factory=list)
    launched: int = 0

    def provision(self, pools: Sequence[NodePoolTemplate], *new: Pod,
                  namespaces: Mapping[str, Mapping[str, str]] | None = None
                  ) -> SchedulingResult:
        """ExpectProvisioned: solve, then launch every planned NodeClaim as a node (in the
        zone and capacity type of its cheapest offering) and bind the pods."""
        result = solve(SchedulingProblem(pods=list(new), nodepools=pools, nodes=self.nodes,
                                         bound_pods=self.bound, namespaces=namespaces or {}))
        by_key = {p.key: p for p in new}
        templates = {t.name: t for t in pools}
        for claim in result.nodeclaims:
            template = templates[claim.nodepool]
            it = next(t for t in template.instance_types if t.name == claim.instance_type)
            offering = cheapest_offering_of(it, claim.requirements)
            assert offering is not None
            self.launched += 1
            name = f"node-{self.launched}"
            labels = {**single_values(claim.requirements), **it.labels, ZONE: offering[2],
                      CAPACITY_TYPE: offering[1], HOSTNAME: name}
            self.nodes.append(ExistingNode(name, labels, template.taints, dict(it.allocatable)))
            self.bound.extend(replace(by_key[key], node_name=name) for key in claim.pods)
        for node, keys in result.existing:
            self.bound.extend(replace(by_key[key], node_name=node) for key in keys)
        return result

    def node_of(self, p: Pod) -> ExistingNode | None:
        name = next((b.node_name for b in self.bound if b.key == p.key), None)
        return next((n for n in self.nodes if n.name == name), None)

    def skew(self, key: str, labels: Mapping[str, str] | None = LABELS,
             namespace: str = "default") -> list[int]:
        """ExpectSkew: pods matching `labels` (all when None) per domain of `key`."""
        counts: dict[str, int] = {}
        nodes = {n.name: n for n in self.nodes}
        for p in self.bound:
            if p.namespace != namespace:
                continue
            if labels is not None and any(p.labels.get(k) != v for k, v in labels.items()):
                continue
            node = nodes.get(p.node_name or "")
            value = node.labels.get(key) if node is not None else None
            if value is not None:
                counts[value] = counts.get(value, 0) + 1
        return sorted(counts.values())
