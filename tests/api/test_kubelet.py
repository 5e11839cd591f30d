"""spec.kubelet as Karpenter v1.14.1 takes it: a typed struct of eleven kubelet settings that
the API server checks when the EC2NodeClass is applied (aws/karpenter-provider-aws v1.14.1
pkg/apis/v1/ec2nodeclass.go, pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).

Karpenter's own admission cases are ported in test_ec2nodeclass_cel_karpenter.py; these
stories cover what its tests do not spell out: the CRD's wording, fields outside the
struct, and the one value the CRD leaves unchecked.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodewright.api.crds import generate_crds
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.kubelet import KubeletConfiguration, kubelet_problems
from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.test_nodeclass_validate_agrees_with_crd import NODE_CLASS


def with_kubelet(kubelet: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(NODE_CLASS)
    body["spec"]["kubelet"] = kubelet
    return body


def validate(body: dict[str, Any]) -> list[str]:
    """What `nodewright validate` says about the node class, one line per problem."""
    _, problems = parse_document(Document("nodeclass.yaml", 1, copy.deepcopy(body)))
    return [f"{problem.path}: {problem.message}" for problem in problems]


def kubelet_schema() -> dict[str, Any]:
    (crd,) = [c for c in generate_crds() if c["spec"]["names"]["kind"] == "EC2NodeClass"]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    kubelet: dict[str, Any] = spec["properties"]["kubelet"]
    return kubelet


def test_the_crd_types_the_eleven_settings_of_karpenter_v1_14_1() -> None:
    schema = kubelet_schema()
    assert "x-kubernetes-preserve-unknown-fields" not in schema
    assert sorted(schema["properties"]) == sorted([
        "clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved",
        "evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
        "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota"])
    assert [rule["message"] for rule in schema["x-kubernetes-validations"]] == [
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
    ]
    reserved = schema["properties"]["kubeReserved"]["x-kubernetes-validations"]
    assert [rule["message"] for rule in reserved] == [
        "valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",
        "kubeReserved value cannot be a negative resource quantity",
    ]


def test_a_field_outside_the_struct_is_named_by_validate_and_pruned_by_the_api_server() -> None:
    """Karpenter's main branch opens spec.kubelet to every upstream field; v1.14.1 does not:
    its API server drops the field (kubectl's strict field validation refuses it)."""
    body = with_kubelet({"maxPods": 40, "cpuManagerPolicy": "static"})

    problems = validate(body)
    stored = InMemoryCluster(VirtualClock()).create(body)

    assert len(problems) == 1 and problems[0].startswith("spec.kubelet.cpuManagerPolicy: ")
    assert stored["spec"]["kubelet"] == {"maxPods": 40}


@pytest.mark.parametrize(
    ("kubelet", "expected"),
    [
        ({"maxPods": -1}, "spec.kubelet.maxPods: "),
        ({"maxPods": "ten"}, "spec.kubelet.maxPods: "),
        ({"kubeReserved": {"pods": "2"}}, "spec.kubelet.kubeReserved.pods: "),
        ({"systemReserved": {"memory": "-1Gi"}},
         "spec.kubelet.systemReserved.memory: systemReserved value cannot be a negative "
         "resource quantity"),
        ({"evictionHard": {"memory.available": "110%"}},
         "spec.kubelet.evictionHard[memory.available]: "),
        ({"evictionSoft": {"memory.available": "1Gi"}},
         "spec.kubelet: evictionSoft OwnerKey does not have a matching "
         "evictionSoftGracePeriod"),
        ({"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60},
         "spec.kubelet: imageGCHighThresholdPercent must be greater than "
         "imageGCLowThresholdPercent"),
    ],
)
def test_validate_refuses_what_the_api_server_refuses(
        kubelet: dict[str, Any], expected: str) -> None:
    problems = validate(with_kubelet(kubelet))
    assert any(problem.startswith(expected) for problem in problems), problems


@pytest.mark.parametrize(
    ("period", "expected"),
    [
        ("1m", None),
        ("90s", None),
        ("1h30m", None),
        ("soon", "'soon' is not a duration"),
        ("-1m", "'-1m' can't be a negative duration"),
    ],
)
def test_a_grace_period_the_crd_lets_through_is_checked_by_the_controller(
        period: str, expected: str | None) -> None:
    """The CRD stores evictionSoftGracePeriod values as plain strings (a metav1.Duration);
    a value no kubelet reads sets ValidationSucceeded=False instead of launching."""
    kubelet = KubeletConfiguration.model_validate({
        "evictionSoft": {"memory.available": "5%"},
        "evictionSoftGracePeriod": {"memory.available": period},
    })

    problems = kubelet_problems(kubelet)

    if expected is None:
        assert problems == []
    else:
        ((path, message),) = problems
        assert path == ("spec", "kubelet", "evictionSoftGracePeriod", "memory.available")
        assert message.startswith(expected)


def test_a_setting_one_family_ignores_is_still_a_valid_node_class() -> None:
    """As Karpenter v1.14.1: Bottlerocket has no podsPerCore setting, and a node class that
    sets it is valid (the family leaves it out); single-address families take the first
    clusterDNS entry."""
    body = with_kubelet({"podsPerCore": 4, "clusterDNS": ["10.100.0.10", "10.100.0.11"]})
    body["spec"]["amiSelectorTerms"] = [{"alias": "bottlerocket@latest"}]

    assert validate(body) == []
    model = EC2NodeClass.model_validate(body)
    assert model.spec.kubelet is not None and model.spec.kubelet.pods_per_core == 4
