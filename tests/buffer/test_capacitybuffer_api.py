"""The CapacityBuffer API (autoscaling.x-k8s.io/v1beta1) as Karpenter v1.14 ships it: the
CRD's rules enforced by the API server (here the in-memory one, which compiles our CRDs),
`validate` reporting the same, and the strategy defaulted."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document
from nodewright.cluster.api import ApiError
from tests.harness import World


def buffer(name: str = "headroom", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_the_api_server_defaults_the_active_capacity_strategy() -> None:
    world = World()
    created = world.cluster.create(buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    assert created["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    assert created["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(("spec", "message"), [
    ({"podTemplateRef": {"name": "chunk"}},
     "If podTemplateRef is set, replicas or limits must also be set"),
    ({"podTemplateRef": {"name": "chunk"}, "replicas": 1,
      "scalableRef": {"kind": "Deployment", "name": "app"}},
     "You must define either PodTemplateRef or ScalableRef, but not both"),
    ({"scalableRef": {"kind": "Deployment", "name": "app"}, "replicas": -1}, "replicas"),
    ({"scalableRef": {"kind": "Deployment", "name": "app"}, "percentage": -5}, "percentage"),
    ({"scalableRef": {"kind": "", "name": "app"}}, "kind"),
    ({"podTemplateRef": {"name": "chunk"}, "limits": {"cpu": "lots"}}, "limits"),
])
def test_the_api_server_refuses_what_karpenters_crd_refuses(
        spec: dict[str, Any], message: str) -> None:
    world = World()
    with pytest.raises(ApiError, match=message):
        world.cluster.create(buffer(**spec))


@pytest.mark.parametrize("spec", [
    {"podTemplateRef": {"name": "chunk"}, "replicas": 3},
    {"podTemplateRef": {"name": "chunk"}, "limits": {"cpu": "10", "memory": "20Gi"}},
    {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "app"}, "percentage": 20},
    {"scalableRef": {"kind": "StatefulSet", "name": "db"}},
])
def test_valid_buffers_are_accepted_by_the_api_server_and_validate(spec: dict[str, Any]) -> None:
    World().cluster.create(buffer(**spec))
    model, problems = parse_document(Document("b.yaml", 1, buffer(**spec)))
    assert problems == [] and model is not None


def test_validate_reports_the_crds_rules_and_the_served_version() -> None:
    both = buffer(podTemplateRef={"name": "chunk"}, scalableRef={"kind": "Deployment",
                                                                 "name": "app"})
    model, problems = parse_document(Document("b.yaml", 1, both))
    found = {(p.path, p.message) for p in problems}
    assert model is None
    assert ("spec", "You must define either PodTemplateRef or ScalableRef, but not both") in found
    assert ("spec", "If podTemplateRef is set, replicas or limits must also be set") in found
    wrong = {**buffer(podTemplateRef={"name": "chunk"}, replicas=1),
             "apiVersion": "autoscaling.x-k8s.io/v1alpha1"}
    _, refused = parse_document(Document("b.yaml", 1, wrong))
    assert "CapacityBuffer is autoscaling.x-k8s.io/v1beta1" in refused[0].message
