"""The generated CRDs: three structural v1 schemas that accept our examples and refuse
what the models refuse."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from nodewright.api import EC2NodeClass, NodeClaim, NodePool
from nodewright.api.base import KubeModel
from nodewright.api.crds import render_crds_yaml
from nodewright.api.manifests import load_documents
from nodewright.api.validation import parse_document
from tests.conftest import EXAMPLES

MANIFESTS = Path(__file__).parent / "manifests"
MODELS: dict[str, type[KubeModel]] = {
    "NodePool": NodePool,
    "NodeClaim": NodeClaim,
    "EC2NodeClass": EC2NodeClass,
}


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    documents = list(yaml.safe_load_all(render_crds_yaml()))
    return {doc["spec"]["names"]["kind"]: doc for doc in documents}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _strict(schema: Any) -> Any:
    """What the API server's strict field validation does: refuse fields not in properties."""
    if isinstance(schema, dict):
        strict = {key: _strict(value) for key, value in schema.items()}
        if "properties" in schema and schema.get("properties"):
            strict["additionalProperties"] = False
        return strict
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def test_each_crd_served_and_stored_at_karpenters_version_with_a_status_subresource(
    crds: dict[str, dict[str, Any]],
) -> None:
    assert {kind: crd["spec"]["group"] for kind, crd in crds.items()} == {
        "NodePool": "karpenter.sh",
        "NodeClaim": "karpenter.sh",
        "EC2NodeClass": "karpenter.k8s.aws",
        "NodeOverlay": "karpenter.sh",
        "CapacityBuffer": "autoscaling.x-k8s.io",
    }
    for crd in crds.values():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["metadata"]["name"] == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
        (version,) = crd["spec"]["versions"]
        served = {"NodeOverlay": "v1alpha1", "CapacityBuffer": "v1beta1"}.get(
            crd["spec"]["names"]["kind"], "v1")
        assert (version["name"], version["served"], version["storage"]) == (served, True, True)
        scale = {"scale": {"specReplicasPath": ".spec.replicas",
                           "statusReplicasPath": ".status.nodes"}}
        expected = {"status": {}, **(scale if crd["spec"]["names"]["kind"] == "NodePool" else {})}
        assert version["subresources"] == expected
        assert crd["spec"]["names"]["shortNames"]


def test_printer_columns_match_karpenters(crds: dict[str, dict[str, Any]]) -> None:
    def columns(kind: str) -> list[str]:
        return [c["name"] for c in crds[kind]["spec"]["versions"][0]["additionalPrinterColumns"]]

    assert columns("NodePool")[:5] == ["NodeClass", "Nodes", "Ready", "Age", "Weight"]
    # All of Karpenter v1.14.1's NodeClaim columns, Drifted (priority 1) last.
    assert columns("NodeClaim") == ["Type", "Capacity", "Zone", "Node", "Ready", "Age",
                                    "ImageID", "ID", "NodePool", "NodeClass", "Drifted"]
    assert columns("EC2NodeClass")[:2] == ["Ready", "Age"]
    assert columns("CapacityBuffer") == ["Strategy", "PodTemplate", "Replicas", "ConditionsType",
                                         "ConditionsStatus", "ConditionsReason", "Age"]


def test_capacitybuffers_are_namespaced_as_karpenters_and_the_others_cluster_scoped(
    crds: dict[str, dict[str, Any]],
) -> None:
    scopes = {kind: crd["spec"]["scope"] for kind, crd in crds.items()}
    assert scopes.pop("CapacityBuffer") == "Namespaced"
    assert set(scopes.values()) == {"Cluster"}
    assert crds["CapacityBuffer"]["spec"]["names"]["shortNames"] == ["cb"]


def test_schemas_are_structural(crds: dict[str, dict[str, Any]]) -> None:
    for kind, crd in crds.items():
        for path, node in _nodes(_schema(crd)):
            where = f"{kind}{path}"
            assert not ("properties" in node and "additionalProperties" in node), where
            if node.get("x-kubernetes-int-or-string"):
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], where
            else:
                assert "type" in node, f"{where} has no type"


def _model_fields(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_every_model_field_is_in_the_schema(crds: dict[str, dict[str, Any]]) -> None:
    def walk(model: type[BaseModel], schema: dict[str, Any], where: str) -> None:
        assert set(schema["properties"]) == _model_fields(model), where
        for name, field in model.model_fields.items():
            wire = field.alias or name
            for nested in _nested_models(field.annotation):
                child = schema["properties"][wire]
                while child.get("type") in ("array", "object") and "properties" not in child:
                    child = child.get("items") or child["additionalProperties"]
                walk(nested, child, f"{where}.{wire}")

    for kind, model in MODELS.items():
        schema = _schema(crds[kind])
        for part in ("spec", "status"):
            annotation = model.model_fields[part].annotation
            (nested,) = _nested_models(annotation)
            walk(nested, schema["properties"][part], f"{kind}.{part}")


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()):
        found.extend(_nested_models(arg))
    return found


def _example_documents() -> list[Any]:
    documents, problems = load_documents([EXAMPLES, MANIFESTS])
    assert problems == []
    return [d for d in documents if d.kind in MODELS]


@pytest.mark.parametrize(
    "document", _example_documents(), ids=lambda d: f"{Path(d.path).name}:{d.kind}"
)
def test_every_example_is_accepted_by_the_strict_schema(
    crds: dict[str, dict[str, Any]], document: Any
) -> None:
    jsonschema.validate(document.body, _strict(_schema(crds[document.kind])))


INVALID = [
    ("NodePool", ["spec", "weight"], 0),
    ("NodePool", ["spec", "disruption", "consolidationPolicy"], "Sometimes"),
    ("NodePool", ["spec", "template", "spec", "expireAfter"], "30d"),
    ("NodePool", ["spec", "template", "spec", "unknownField"], True),
    ("NodePool", ["spec", "limits", "cpu"], "a lot"),
    ("EC2NodeClass", ["spec", "metadataOptions", "httpTokens"], "sometimes"),
    # (an empty subnetSelectorTerms is refused by a CEL rule, as in Karpenter's CRD)
    ("EC2NodeClass", ["spec", "amiSelectorTerms"], []),
    ("EC2NodeClass", ["spec", "detailedMonitoring"], "yes"),
    ("EC2NodeClass", ["spec", "kubelet", "maxPods"], -3),
    ("EC2NodeClass", ["spec", "blockDeviceMappings", 0, "ebs", "volumeType"], "gp9"),
    ("NodeClaim", ["spec", "requirements", 0, "operator"], "Near"),
]


@pytest.mark.parametrize(("kind", "path", "value"), INVALID, ids=lambda v: str(v))
def test_an_invalid_manifest_is_refused_by_schema_and_model(
    crds: dict[str, dict[str, Any]], kind: str, path: list[Any], value: Any
) -> None:
    filename = {"NodePool": "nodepool-full.yaml", "EC2NodeClass": "ec2nodeclass-full.yaml",
                "NodeClaim": "nodeclaim-full.yaml"}[kind]
    documents, _ = load_documents([MANIFESTS / filename])
    document = documents[0]
    body = copy.deepcopy(document.body)
    target = body
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, _strict(_schema(crds[kind])))
    document.body = body
    model, problems = parse_document(document)
    assert model is None and problems
