"""The CRDs' CEL rules stay within the API server's cost budget.

Kubernetes estimates each rule's cost from the schema before it accepts a CRD:
a list, map or string without maxItems, maxProperties or maxLength counts as
large as a whole request, and a rule inside an unbounded list counts once per
element that could fit in one. Our EC2NodeClass was once refused for rules on
status.amis[].requirements[] ("estimated rule cost exceeds budget"). As in
Karpenter's published CRDs, every value a rule reads is bounded and status
carries no rules.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.api.core import NodeSelectorRequirementWithMinValues
from nodewright.api.crds import render_crds_yaml
from nodewright.api.schema import object_schema
from tests.api import cel_reach


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return {
        doc["spec"]["names"]["kind"]: doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for doc in yaml.safe_load_all(render_crds_yaml())
    }


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.strip(".").split("."):
        if part.endswith("[]"):
            node = node["properties"][part[:-2]]["items"]
        else:
            node = node["properties"][part]
    return node


def test_no_rule_of_any_crd_reaches_an_unbounded_list_map_or_string(
    schemas: dict[str, dict[str, Any]],
) -> None:
    found = {kind: cel_reach.problems(schema) for kind, schema in schemas.items()}
    assert found == {"NodePool": [], "NodeClaim": [], "EC2NodeClass": [], "NodeOverlay": [],
                     "CapacityBuffer": []}


def test_every_rule_is_read_by_the_checker(schemas: dict[str, dict[str, Any]]) -> None:
    """The checker parses each rule (a rule it could not read would go unchecked)."""
    counted = 0
    for schema in schemas.values():
        for site in cel_reach.rule_sites(schema):
            cel_reach.parse(site.rule)
            counted += 1
    assert counted > 40


def test_status_carries_no_rules(schemas: dict[str, dict[str, Any]]) -> None:
    for kind, schema in schemas.items():
        rules = list(cel_reach.rule_sites(schema["properties"]["status"]))
        assert rules == [], f"{kind} status has rules"


def test_the_ami_requirements_in_status_are_plain_requirements(
    schemas: dict[str, dict[str, Any]],
) -> None:
    requirement = _at(schemas["EC2NodeClass"], ".status.amis[].requirements[]")
    assert set(requirement["properties"]) == {"key", "operator", "values"}
    assert requirement["required"] == ["key", "operator"]


@pytest.mark.parametrize(
    ("kind", "path", "bound", "value"),
    [
        # The bounds Karpenter's published CRDs set (aws/karpenter-provider-aws pkg/apis/crds).
        ("NodePool", ".spec.template.spec.requirements", "maxItems", 100),
        ("NodePool", ".spec.template.spec.requirements[].key", "maxLength", 316),
        ("NodePool", ".spec.template.metadata.labels", "maxProperties", 100),
        ("NodePool", ".spec.disruption.budgets", "maxItems", 50),
        ("NodeClaim", ".spec.requirements", "maxItems", 100),
        ("EC2NodeClass", ".spec.amiSelectorTerms", "maxItems", 30),
        ("EC2NodeClass", ".spec.amiSelectorTerms[].alias", "maxLength", 30),
        ("EC2NodeClass", ".spec.amiSelectorTerms[].tags", "maxProperties", 20),
        ("EC2NodeClass", ".spec.subnetSelectorTerms", "maxItems", 30),
        ("EC2NodeClass", ".spec.securityGroupSelectorTerms", "maxItems", 30),
        ("EC2NodeClass", ".spec.capacityReservationSelectorTerms", "maxItems", 30),
        ("EC2NodeClass", ".spec.blockDeviceMappings", "maxItems", 50),
        ("EC2NodeClass", ".spec.networkInterfaces", "maxItems", 150),
        # Bounds Karpenter leaves out and we add, so that no rule reads an unbounded value:
        # a requirement value is a label value; EC2 takes 50 tags; one entry per known key.
        ("NodePool", ".spec.template.spec.requirements[].values", "items.maxLength", 63),
        ("EC2NodeClass", ".spec.tags", "maxProperties", 50),
        ("EC2NodeClass", ".spec.kubelet.kubeReserved", "maxProperties", 4),
        ("EC2NodeClass", ".spec.kubelet.evictionSoft", "maxProperties", 6),
        ("EC2NodeClass", ".spec.kubelet.evictionSoftGracePeriod", "maxProperties", 6),
    ],
)
def test_bounds_where_rules_read(
    schemas: dict[str, dict[str, Any]], kind: str, path: str, bound: str, value: int
) -> None:
    node = _at(schemas[kind], path)
    *inner, key = bound.split(".")
    for part in inner:
        node = node[part]
    assert node[key] == value


# ------------------------------------------------------- the checker itself can fail


def _wrap(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec}}


def test_the_checker_finds_a_rule_on_an_unbounded_string() -> None:
    schema = _wrap({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.name.startsWith('a')", "message": "m"}],
    })
    (problem,) = cel_reach.problems(schema)
    assert "reaches .spec.name, which has no maxLength" in problem


def test_the_checker_finds_a_rule_inside_an_unbounded_list() -> None:
    schema = _wrap({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "m"}],
        },
    })
    (problem,) = cel_reach.problems(schema)
    assert "runs once per element of .spec, which has no maxItems" in problem


def test_the_checker_follows_comprehension_variables_into_elements() -> None:
    schema = _wrap({
        "type": "array",
        "maxItems": 5,
        "items": {"type": "object", "properties": {"tags": {
            "type": "object", "additionalProperties": {"type": "string"},
        }}},
        "x-kubernetes-validations": [
            {"rule": "self.all(x, x.tags.all(k, k != ''))", "message": "m"},
        ],
    })
    (problem,) = cel_reach.problems(schema)
    assert "reaches .spec[].tags, which has no maxProperties" in problem


def test_presence_size_and_one_element_do_not_count_as_reading_a_whole_value() -> None:
    schema = _wrap({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "values": {"type": "array", "items": {"type": "string", "maxLength": 9}},
        },
        "x-kubernetes-validations": [{
            "rule": "has(self.name) && self.values.size() == 1 && int(self.values[0]) > 0",
            "message": "m",
        }],
    })
    assert cel_reach.problems(schema) == []


def test_the_checker_refuses_the_status_requirements_that_once_broke_installs() -> None:
    """The old EC2NodeClass status: requirements with their CEL rules under status.amis[]."""
    old_status = {
        "type": "object",
        "properties": {"amis": {"type": "array", "items": {
            "type": "object",
            "properties": {"requirements": {
                "type": "array", "items": object_schema(NodeSelectorRequirementWithMinValues),
            }},
        }}},
    }
    schema = {"type": "object", "properties": {"status": old_status}}
    found = cel_reach.problems(schema)
    assert found
    assert all(p.startswith(".status.amis[].requirements[]: a rule on status") for p in found)


def test_the_parser_reports_a_rule_it_cannot_read() -> None:
    with pytest.raises(cel_reach.CelSyntaxError, match="expected"):
        cel_reach.parse("self.all(x, ")
