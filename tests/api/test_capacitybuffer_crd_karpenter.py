"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1), ported from kubernetes-sigs/karpenter
v1.14.1 `pkg/apis/autoscaling/v1beta1/suite_test.go` (Describe "CapacityBuffer CRD").

Karpenter checks the CRD it ships and creates buffers against a test API server; we check
the CRD we generate and create buffers against the in-memory cluster, which enforces it.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.crds import generate_crds
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.karpenter_admission import admitted

TEMPLATE = {"name": "my-template"}
DEPLOYMENT = {"apiGroup": "apps", "kind": "Deployment", "name": "my-deploy"}


def buffer(name: str = "buffer", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture(scope="module")
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def test_the_capacitybuffer_crd_is_registered() -> None:
    """suite_test.go, Registration: "should register the CapacityBuffer CRD"."""
    (crd,) = [crd for crd in generate_crds()
              if crd["metadata"]["name"] == "capacitybuffers.autoscaling.x-k8s.io"]
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"],
            crd["spec"]["scope"]) == ("autoscaling.x-k8s.io", "CapacityBuffer",
                                      "capacitybuffers", "Namespaced")


def test_a_capacitybuffer_is_created_and_read_back(cluster: InMemoryCluster) -> None:
    """suite_test.go, Registration: "should create and retrieve a CapacityBuffer
    resource"."""
    cluster.create(buffer("test-buffer", podTemplateRef=TEMPLATE, replicas=5))
    spec = cluster.get("CapacityBuffer", "test-buffer", "default")["spec"]
    assert (spec["podTemplateRef"]["name"], spec["replicas"]) == ("my-template", 5)


def test_the_provisioning_strategy_is_defaulted(cluster: InMemoryCluster) -> None:
    """suite_test.go, Schema Validation: "should set default provisioningStrategy"."""
    cluster.create(buffer("defaulted", podTemplateRef=TEMPLATE, replicas=1))
    stored = cluster.get("CapacityBuffer", "defaulted", "default")
    assert stored["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"


# (Karpenter It in Context "Schema Validation", spec, admitted by the API server)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("should accept a valid CapacityBuffer with podTemplateRef and replicas",
     {"podTemplateRef": TEMPLATE, "replicas": 3}, True),
    ("should accept a valid CapacityBuffer with podTemplateRef and limits",
     {"podTemplateRef": TEMPLATE, "limits": {"cpu": "4"}}, True),
    ("should accept a valid CapacityBuffer with scalableRef",
     {"scalableRef": DEPLOYMENT, "replicas": 5}, True),
    ("should accept scalableRef with empty apiGroup for core API group",
     {"scalableRef": {"kind": "ReplicationController", "name": "my-rc"}, "replicas": 1}, True),
    ("should reject setting both podTemplateRef and scalableRef",
     {"podTemplateRef": TEMPLATE, "scalableRef": DEPLOYMENT, "replicas": 3}, False),
    ("should reject podTemplateRef without replicas or limits", {"podTemplateRef": TEMPLATE},
     False),
    ("should reject negative replicas", {"podTemplateRef": TEMPLATE, "replicas": -1}, False),
    ("should reject negative percentage", {"scalableRef": DEPLOYMENT, "percentage": -1}, False),
    ("should reject empty podTemplateRef name", {"podTemplateRef": {"name": ""}, "replicas": 1},
     False),
    ("should reject empty scalableRef kind",
     {"scalableRef": {**DEPLOYMENT, "kind": ""}, "replicas": 1}, False),
    ("should reject empty scalableRef name",
     {"scalableRef": {**DEPLOYMENT, "name": ""}, "replicas": 1}, False),
    ("should accept zero replicas", {"podTemplateRef": TEMPLATE, "replicas": 0}, True),
    ("should accept zero percentage", {"scalableRef": DEPLOYMENT, "percentage": 0}, True),
    ("should accept both replicas and percentage together",
     {"scalableRef": DEPLOYMENT, "replicas": 10, "percentage": 20}, True),
    ("should accept scalableRef without replicas or limits", {"scalableRef": DEPLOYMENT}, True),
]


@pytest.mark.parametrize(("karpenter", "spec", "admit"), CASES,
                         ids=[case[0] for case in CASES])
def test_the_api_server_decides_as_karpenter_does(
        cluster: InMemoryCluster, karpenter: str, spec: dict[str, Any], admit: bool) -> None:
    # Karpenter: autoscaling/v1beta1/suite_test.go, Context "Schema Validation", It
    # `karpenter`.
    assert admitted(cluster, buffer(**spec)) is admit, f"{karpenter}: {spec}"
