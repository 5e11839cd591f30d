"""Builders for the simulated EC2 tests: a node class, NodeClaims as the provisioner
writes them, and a simulated region on a virtual clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime import VirtualClock

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"


def node_class(
    name: str = "default", alias: str = "al2023@latest", **spec: Any
) -> EC2NodeClass:
    """An EC2NodeClass; `spec` keys (camelCase) replace the defaults."""
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "role": "KarpenterNodeRole-sim",
                "amiSelectorTerms": [{"alias": alias}],
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "sim"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "sim"}}],
                **spec,
            },
        }
    )


def requirement(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def nodeclaim(
    name: str = "default-x7k2p",
    *,
    types: Sequence[str] = (),
    capacity_types: Sequence[str] = ("on-demand",),
    zones: Sequence[str] = (),
    extra: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    startup_taints: Sequence[Mapping[str, str]] = (),
    requests: Mapping[str, str] | None = None,
    nodepool: str = "default",
) -> NodeClaim:
    requirements = [dict(r) for r in extra]
    requirements.append(requirement(CAPACITY_TYPE, *capacity_types))
    if types:
        requirements.append(requirement(INSTANCE_TYPE, *types))
    if zones:
        requirements.append(requirement(ZONE, *zones))
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": requirements,
    }
    if taints:
        spec["taints"] = list(taints)
    if startup_taints:
        spec["startupTaints"] = list(startup_taints)
    if requests:
        spec["resources"] = {"requests": dict(requests)}
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": nodepool, **(labels or {})},
            },
            "spec": spec,
        }
    )


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def ec2(clock: VirtualClock) -> SimulatedEC2:
    return SimulatedEC2(clock, seed=7)


@pytest.fixture
def cluster(clock: VirtualClock) -> InMemoryCluster:
    return InMemoryCluster(clock)


@pytest.fixture
def joined_ec2(clock: VirtualClock, cluster: InMemoryCluster) -> SimulatedEC2:
    return SimulatedEC2(clock, cluster=cluster, seed=7)
