"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Custom Constraints") and
Describe("Preferential Fallback"). Each case is named by its It.

Karpenter's file holds the Contexts "Well Known Labels", "Constraints Validation" and
"Scheduling Logic" twice: once inside Describe("Custom Constraints") and once again
directly under the suite's Context (a copy with a few Its fewer). A case present in both
runs once per copy (ids `custom-constraints` and `repeated`), so both copies are counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodewright.scheduling.requirements import Requirement
from tests.scheduling.karpenter_scheduling import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    INTEGER,
    OS,
    ZONE,
    expression,
    nodepool,
    not_scheduled,
    pod,
    provisioned,
    requirement,
    scheduled,
)

BOTH = pytest.mark.parametrize("copy", ["custom-constraints", "repeated"])
TEST_KEY_IN = [requirement("test-key", "In", "test-value")]

# (It, NodePool requirements (None: the suite's), NodePool labels, pod options,
#  labels the node must have (None: the pod stays pending)).
Case = tuple[str, Sequence[Requirement] | None, Mapping[str, str], dict[str, Any],
             Mapping[str, str] | None]

NODEPOOL_WITH_LABELS: list[Case] = [
    ("should schedule unconstrained pods that don't have matching node selectors",
     None, {"test-key": "test-value"}, {}, {"test-key": "test-value"}),
    ("should not schedule pods that have conflicting node selectors",
     None, {"test-key": "test-value"}, {"node_selector": {"test-key": "different-value"}},
     None),
    ("should not schedule pods that have node selectors with undefined key",
     None, {}, {"node_selector": {"test-key": "test-value"}}, None),
    ("should schedule pods that have matching requirements",
     None, {"test-key": "test-value"},
     {"requirements": [expression("test-key", "In", "test-value", "another-value")]},
     {"test-key": "test-value"}),
    ("should not schedule pods that have conflicting requirements",
     None, {"test-key": "test-value"},
     {"requirements": [expression("test-key", "In", "another-value")]}, None),
]

ALL_ZONES_AND_UNKNOWN = expression(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3",
                                   "unknown")

# Context("Well Known Labels"), the Its both copies hold.
WELL_KNOWN_LABELS: list[Case] = [
    ("should use NodePool constraints", [requirement(ZONE, "In", "test-zone-2")], {}, {},
     {ZONE: "test-zone-2"}),
    ("should use node selectors", [requirement(ZONE, "In", "test-zone-1", "test-zone-2")], {},
     {"node_selector": {ZONE: "test-zone-2"}}, {ZONE: "test-zone-2"}),
    ("should not schedule nodes with a hostname selector", None, {},
     {"node_selector": {HOSTNAME: "red-node"}}, None),
    ("should not schedule the pod if nodeselector unknown",
     [requirement(ZONE, "In", "test-zone-1")], {}, {"node_selector": {ZONE: "unknown"}}, None),
    ("should not schedule if node selector outside of NodePool constraints",
     [requirement(ZONE, "In", "test-zone-1")], {}, {"node_selector": {ZONE: "test-zone-2"}},
     None),
    ("should schedule compatible requirements with Operator=In", None, {},
     {"requirements": [expression(ZONE, "In", "test-zone-3")]}, {ZONE: "test-zone-3"}),
    ("should schedule compatible requirements with Operator=Gt",
     [requirement(INTEGER, "Gt", "8")], {}, {}, {INTEGER: "16"}),
    ("should schedule compatible requirements with Operator=Lt",
     [requirement(INTEGER, "Lt", "8")], {}, {}, {INTEGER: "2"}),
    ("should not schedule incompatible preferences and requirements with Operator=In", None,
     {}, {"requirements": [expression(ZONE, "In", "unknown")]}, None),
    ("should schedule compatible requirements with Operator=NotIn", None, {},
     {"requirements": [expression(ZONE, "NotIn", "test-zone-1", "test-zone-2", "unknown")]},
     {ZONE: "test-zone-3"}),
    ("should not schedule incompatible preferences and requirements with Operator=NotIn",
     None, {}, {"requirements": [expression(ZONE, "NotIn", "test-zone-1", "test-zone-2",
                                            "test-zone-3", "unknown")]}, None),
    ("should schedule compatible preferences and requirements with Operator=In", None, {},
     {"requirements": [ALL_ZONES_AND_UNKNOWN],
      "preferences": [expression(ZONE, "In", "test-zone-2", "unknown")]},
     {ZONE: "test-zone-2"}),
    ("should schedule incompatible preferences and requirements with Operator=In", None, {},
     {"requirements": [ALL_ZONES_AND_UNKNOWN],
      "preferences": [expression(ZONE, "In", "unknown")]}, {}),
    ("should schedule compatible preferences and requirements with Operator=NotIn", None, {},
     {"requirements": [ALL_ZONES_AND_UNKNOWN],
      "preferences": [expression(ZONE, "NotIn", "test-zone-1", "test-zone-3")]},
     {ZONE: "test-zone-2"}),
    ("should schedule incompatible preferences and requirements with Operator=NotIn", None,
     {}, {"requirements": [ALL_ZONES_AND_UNKNOWN],
          "preferences": [expression(ZONE, "NotIn", "test-zone-1", "test-zone-2",
                                     "test-zone-3")]}, {}),
    ("should schedule compatible node selectors, preferences and requirements", None, {},
     {"node_selector": {ZONE: "test-zone-3"},
      "requirements": [expression(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3")],
      "preferences": [expression(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3")]},
     {ZONE: "test-zone-3"}),
    ("should combine multidimensional node selectors, preferences and requirements", None, {},
     {"node_selector": {ZONE: "test-zone-3", INSTANCE_TYPE: "arm-instance-type"},
      "requirements": [expression(ZONE, "In", "test-zone-1", "test-zone-3"),
                       expression(INSTANCE_TYPE, "In", "default-instance-type",
                                  "arm-instance-type")],
      "preferences": [expression(ZONE, "NotIn", "unknown"),
                      expression(INSTANCE_TYPE, "NotIn", "unknown")]},
     {ZONE: "test-zone-3", INSTANCE_TYPE: "arm-instance-type"}),
]

# Context("Well Known Labels"): the Its only the first copy holds.
WELL_KNOWN_LABELS_FIRST_COPY: list[Case] = [
    ("should schedule compatible requirements with Operator=Gte",
     [requirement(INTEGER, "Gte", "16")], {}, {}, {INTEGER: "16"}),
    ("should schedule compatible requirements with Operator=Lte",
     [requirement(INTEGER, "Lte", "2")], {}, {}, {INTEGER: "2"}),
]

# Context("Scheduling Logic"), the single-pod Its both copies hold.
SCHEDULING_LOGIC: list[Case] = [
    ("should not schedule pods that have node selectors with In operator and undefined key",
     None, {}, {"requirements": [expression("test-key", "In", "test-value")]}, None),
    ("should schedule pods that have node selectors with NotIn operator and undefined key",
     None, {}, {"requirements": [expression("test-key", "NotIn", "test-value")]}, {}),
    ("should not schedule pods that have node selectors with Exists operator and undefined "
     "key", None, {}, {"requirements": [expression("test-key", "Exists")]}, None),
    ("should schedule pods that with DoesNotExists operator and undefined key", None, {},
     {"requirements": [expression("test-key", "DoesNotExist")]}, {}),
    ("should schedule unconstrained pods that don't have matching node selectors",
     TEST_KEY_IN, {}, {}, {"test-key": "test-value"}),
    ("should schedule pods that have node selectors with matching value and In operator",
     TEST_KEY_IN, {}, {"requirements": [expression("test-key", "In", "test-value")]},
     {"test-key": "test-value"}),
    ("should not schedule pods that have node selectors with matching value and NotIn "
     "operator", TEST_KEY_IN, {},
     {"requirements": [expression("test-key", "NotIn", "test-value")]}, None),
    ("should schedule the pod with Exists operator and defined key", TEST_KEY_IN, {},
     {"requirements": [expression("test-key", "Exists")]}, {}),
    ("should not schedule the pod with DoesNotExists operator and defined key", TEST_KEY_IN,
     {}, {"requirements": [expression("test-key", "DoesNotExist")]}, None),
    ("should not schedule pods that have node selectors with different value and In operator",
     TEST_KEY_IN, {}, {"requirements": [expression("test-key", "In", "another-value")]},
     None),
    ("should schedule pods that have node selectors with different value and NotIn operator",
     TEST_KEY_IN, {}, {"requirements": [expression("test-key", "NotIn", "another-value")]},
     {"test-key": "test-value"}),
    ("Exists operator should not overwrite the existing value", None, {},
     {"requirements": [expression(ZONE, "In", "non-existent-zone"),
                       expression(ZONE, "Exists")]}, None),
]


def _story(pool_requirements: Sequence[Requirement] | None, pool_labels: Mapping[str, str],
           options: dict[str, Any], expected: Mapping[str, str] | None) -> None:
    p = pod(**options)
    cluster = provisioned(p, pools=[nodepool(requirements=pool_requirements,
                                             labels=pool_labels)])
    if expected is None:
        not_scheduled(cluster, p)
        return
    node = scheduled(cluster, p)
    for key, value in expected.items():
        assert node.labels.get(key) == value, (key, node.labels)
    # The NotIn/DoesNotExist stories: the node does not carry what the pod refuses.
    for item in options.get("requirements", []):
        if item["operator"] == "DoesNotExist":
            assert item["key"] not in node.labels
        if item["operator"] == "NotIn":
            assert node.labels.get(item["key"]) not in item.get("values", [])


def _cases(cases: list[Case]) -> list[Any]:
    return [pytest.param(*case[1:], id=case[0]) for case in cases]


# -- Describe("Custom Constraints") / Context("NodePool with Labels") --------------------


@pytest.mark.parametrize(("pool_requirements", "pool_labels", "options", "expected"),
                         _cases(NODEPOOL_WITH_LABELS))
def test_nodepool_with_labels(pool_requirements: Sequence[Requirement] | None,
                              pool_labels: Mapping[str, str], options: dict[str, Any],
                              expected: Mapping[str, str] | None) -> None:
    _story(pool_requirements, pool_labels, options, expected)


# -- Context("Well Known Labels") --------------------------------------------------------


@BOTH
@pytest.mark.parametrize(("pool_requirements", "pool_labels", "options", "expected"),
                         _cases(WELL_KNOWN_LABELS))
def test_well_known_labels(copy: str, pool_requirements: Sequence[Requirement] | None,
                           pool_labels: Mapping[str, str], options: dict[str, Any],
                           expected: Mapping[str, str] | None) -> None:
    _story(pool_requirements, pool_labels, options, expected)


@pytest.mark.parametrize(("pool_requirements", "pool_labels", "options", "expected"),
                         _cases(WELL_KNOWN_LABELS_FIRST_COPY))
def test_well_known_labels_first_copy(pool_requirements: Sequence[Requirement] | None,
                                      pool_labels: Mapping[str, str], options: dict[str, Any],
                                      expected: Mapping[str, str] | None) -> None:
    _story(pool_requirements, pool_labels, options, expected)


# -- Context("Constraints Validation") ---------------------------------------------------


@BOTH
def test_node_selectors_on_restricted_labels_are_not_scheduled(copy: str) -> None:
    # It("should not schedule pods that have node selectors with restricted labels"):
    # v1.RestrictedLabels is kubernetes.io/hostname. (The first copy also expects the
    # pod's scheduling decision to be observed though it is not scheduled: as in
    # tests/controllers/test_karpenter_provisioning_in_cluster.py
    # test_a_pod_without_a_valid_nodepool_gets_a_decision.)
    p = pod(requirements=[expression(HOSTNAME, "In", "test")])
    not_scheduled(provisioned(p), p)


@BOTH
def test_node_selectors_on_restricted_domains_are_not_scheduled(copy: str) -> None:
    # It("should not schedule pods that have node selectors with restricted domains"):
    # v1.RestrictedLabelDomains is karpenter.sh.
    p = pod(requirements=[expression("karpenter.sh/test", "In", "test")])
    not_scheduled(provisioned(p), p)


@BOTH
@pytest.mark.parametrize("subdomain", ["", "subdomain."],
                         ids=["in the kubernetes domains", "in subdomain"])
def test_nodepool_labels_in_the_kubernetes_domains_are_applied(copy: str,
                                                               subdomain: str) -> None:
    # It("should schedule pods that have node selectors with label in the kubernetes
    # domains") ("in kubernetes domains" in the second copy) and It("should schedule pods
    # that have node selectors with label in subdomain from kubernetes domains").
    keys = [f"{subdomain}{domain}/test" for domain in ("kubernetes.io", "k8s.io")]
    pool = nodepool(requirements=[requirement(key, "In", "test-value") for key in keys])
    cluster = provisioned(pools=[pool])
    for key in keys:
        p = pod()
        cluster.provision([pool], p)
        assert scheduled(cluster, p).labels.get(key) == "test-value"


@BOTH
def test_node_selectors_on_well_known_labels_are_scheduled(copy: str) -> None:
    # It("should schedule pods that have node selectors with label in wellknown label list")
    selectors = [{ZONE: "test-zone-1"}, {INSTANCE_TYPE: "default-instance-type"},
                 {ARCH: "arm64"}, {OS: "linux"}, {CAPACITY_TYPE: "spot"}]
    pods = [pod(node_selector=selector) for selector in selectors]
    cluster = provisioned(*pods)
    for p, selector in zip(pods, selectors, strict=True):
        node = scheduled(cluster, p)
        assert all(node.labels.get(k) == v for k, v in selector.items()), node.labels


# -- Context("Scheduling Logic") ---------------------------------------------------------


@BOTH
@pytest.mark.parametrize(("pool_requirements", "pool_labels", "options", "expected"),
                         _cases(SCHEDULING_LOGIC))
def test_scheduling_logic(copy: str, pool_requirements: Sequence[Requirement] | None,
                          pool_labels: Mapping[str, str], options: dict[str, Any],
                          expected: Mapping[str, str] | None) -> None:
    _story(pool_requirements, pool_labels, options, expected)


@BOTH
def test_compatible_pods_share_a_node(copy: str) -> None:
    # It("should schedule compatible pods to the same node")
    pool = nodepool(requirements=[requirement("test-key", "In", "test-value", "another-value")])
    first = pod(requirements=[expression("test-key", "In", "test-value")])
    second = pod(requirements=[expression("test-key", "NotIn", "another-value")])
    cluster = provisioned(first, second, pools=[pool])
    node1, node2 = scheduled(cluster, first), scheduled(cluster, second)
    assert node1.labels["test-key"] == node2.labels["test-key"] == "test-value"
    assert node1.name == node2.name


@BOTH
def test_incompatible_pods_get_different_nodes(copy: str) -> None:
    # It("should schedule incompatible pods to the different node")
    pool = nodepool(requirements=[requirement("test-key", "In", "test-value", "another-value")])
    first = pod(requirements=[expression("test-key", "In", "test-value")])
    second = pod(requirements=[expression("test-key", "In", "another-value")])
    cluster = provisioned(first, second, pools=[pool])
    node1, node2 = scheduled(cluster, first), scheduled(cluster, second)
    assert node1.labels["test-key"] == "test-value"
    assert node2.labels["test-key"] == "another-value"
    assert node1.name != node2.name


# -- Describe("Preferential Fallback") ---------------------------------------------------


def _affinity(required: Sequence[Sequence[dict[str, Any]]] = (),
              preferred: Sequence[tuple[int, Sequence[dict[str, Any]]]] = ()) -> dict[str, Any]:
    node_affinity: dict[str, Any] = {}
    if required:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in required]}
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": {"matchExpressions": list(term)}}
            for weight, term in preferred]
    return {"nodeAffinity": node_affinity}


def test_the_final_required_term_is_not_relaxed() -> None:
    # Context("Required") It("should not relax the final term")
    pool = nodepool(requirements=[requirement(ZONE, "In", "test-zone-1"),
                                  requirement(INSTANCE_TYPE, "In", "default-instance-type")])
    p = pod(affinity=_affinity(required=[[expression(ZONE, "In", "invalid")]]))
    not_scheduled(provisioned(p, pools=[pool]), p)


def test_required_terms_are_tried_in_turn() -> None:
    # Context("Required") It("should relax multiple terms")
    p = pod(affinity=_affinity(required=[
        [expression(ZONE, "In", "invalid")], [expression(ZONE, "In", "invalid")],
        [expression(ZONE, "In", "test-zone-1")], [expression(ZONE, "In", "test-zone-2")]]))
    assert scheduled(provisioned(p), p).labels[ZONE] == "test-zone-1"


def test_every_preferred_term_can_be_relaxed() -> None:
    # Context("Preferred") It("should relax all terms")
    p = pod(affinity=_affinity(preferred=[(1, [expression(ZONE, "In", "invalid")]),
                                          (1, [expression(INSTANCE_TYPE, "In", "invalid")])]))
    scheduled(provisioned(p), p)


def test_preferences_are_relaxed_down_to_lighter_weights() -> None:
    # Context("Preferred") It("should relax to use lighter weights")
    pool = nodepool(requirements=[requirement(ZONE, "In", "test-zone-1", "test-zone-2")])
    p = pod(affinity=_affinity(preferred=[
        (100, [expression(INSTANCE_TYPE, "In", "test-zone-3")]),
        (50, [expression(ZONE, "In", "test-zone-2")]),
        (1, [expression(ZONE, "In", "test-zone-1")])]))
    assert scheduled(provisioned(p, pools=[pool]), p).labels[ZONE] == "test-zone-2"


def test_a_preference_conflicting_with_the_requirement_is_dropped() -> None:
    # Context("Preferred") It("should schedule even if preference is conflicting with
    # requirement")
    p = pod(affinity=_affinity(required=[[expression(ZONE, "In", "test-zone-3")]],
                               preferred=[(1, [expression(ZONE, "NotIn", "test-zone-3")])]))
    assert scheduled(provisioned(p), p).labels[ZONE] == "test-zone-3"


def test_conflicting_preference_requirements_are_dropped() -> None:
    # Context("Preferred") It("should schedule even if preference requirements are
    # conflicting")
    p = pod(preferences=[expression(ZONE, "In", "invalid"), expression(ZONE, "NotIn", "invalid")])
    scheduled(provisioned(p), p)
