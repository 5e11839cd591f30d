"""spec.kubelet as Karpenter v1.14 takes it: an open map of any upstream KubeletConfiguration
field, checked by the controller (cases after Karpenter's kubeletconfiguration suites)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.crds import generate_crds
from nodewright.api.kubelet import (
    KubeletConfigError,
    KubeletConfiguration,
    kubelet_problems,
    unmanaged,
)


def _messages(raw: dict[str, Any], family: str = "AL2023") -> list[str]:
    return [".".join(map(str, path)) + ": " + message
            for path, message in kubelet_problems(raw, family)]


def test_the_crd_stores_any_kubelet_object() -> None:
    (crd,) = [c for c in generate_crds() if c["spec"]["names"]["kind"] == "EC2NodeClass"]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    kubelet = spec["properties"]["kubelet"]
    assert kubelet["type"] == "object"
    assert kubelet["x-kubernetes-preserve-unknown-fields"] is True
    assert "properties" not in kubelet and "x-kubernetes-validations" not in kubelet


@pytest.mark.parametrize(
    "raw",
    [
        {"cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}},
        {"shutdownGracePeriod": "2m", "shutdownGracePeriodCriticalPods": "30s"},
        {"featureGates": {"InPlacePodVerticalScaling": True}},
        {"topologyManagerPolicy": "single-numa-node", "memoryThrottlingFactor": 0.9},
        {"logging": {"format": "json"}, "allowedUnsafeSysctls": ["net.core.somaxconn"]},
        {"evictionMinimumReclaim": {"memory.available": "0Mi"}, "podPidsLimit": 4096},
        {"maxPods": 58, "imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 70},
    ],
)
def test_any_upstream_field_is_accepted(raw: dict[str, Any]) -> None:
    assert _messages(raw) == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"cpuManagerPolicyy": "static"},
         "spec.kubelet.cpuManagerPolicyy: unknown field 'cpuManagerPolicyy': not a "
         "KubeletConfiguration field"),
        ({"maxPods": True}, "spec.kubelet.maxPods: must be an integer"),
        ({"port": 1 << 40}, f"spec.kubelet.port: {1 << 40} is out of range for a 32-bit integer"),
        ({"syncFrequency": 10},
         "spec.kubelet.syncFrequency: must be a duration string such as 30s"),
        ({"evictionHard": {"memory.available": "101%"}},
         "spec.kubelet.evictionHard.memory.available: '101%' must be a percentage or a "
         "resource quantity"),
        ({"evictionHard": {"memory.available": "-1Gi"}},
         "spec.kubelet.evictionHard.memory.available: '-1Gi' can't be a negative resource "
         "quantity"),
        ({"evictionSoft": {"memory.available": "1Gi"}},
         "spec.kubelet.evictionSoft.memory.available: has no matching evictionSoftGracePeriod"),
        ({"evictionSoftGracePeriod": {"memory.available": "1m"}},
         "spec.kubelet.evictionSoftGracePeriod.memory.available: has no matching evictionSoft"),
        ({"imageGCHighThresholdPercent": 101},
         "spec.kubelet.imageGCHighThresholdPercent: 101 must be between 0 and 100"),
        ({"podsPerCore": -1}, "spec.kubelet.podsPerCore: -1 can't be negative"),
        ({"registerWithTaints": [{"key": "a", "effect": "NoSchedule"}]},
         "spec.kubelet.registerWithTaints: can't be set, Nodewright sets it from the "
         "NodeClaim's taints so the node registers unschedulable until it's ready"),
    ],
)
def test_invalid_configurations_are_named(raw: dict[str, Any], expected: str) -> None:
    assert expected in _messages(raw)


def test_a_type_error_is_reported_alone_as_decoding_would() -> None:
    assert _messages({"maxPods": "ten", "podsPerCore": "x", "evictionHard": {"a": "b"}}) == [
        "spec.kubelet.podsPerCore: must be an integer"
    ]


def test_parse_reads_the_managed_fields_and_leaves_the_rest() -> None:
    raw = {"maxPods": 20.0, "kubeReserved": {"cpu": "100m"}, "cpuManagerPolicy": "static",
           "clusterDNS": ["10.0.0.10"]}
    parsed = KubeletConfiguration.parse(raw)
    assert (parsed.max_pods, parsed.kube_reserved, parsed.cluster_dns) == (
        20, {"cpu": "100m"}, ["10.0.0.10"])
    assert unmanaged(raw) == {"cpuManagerPolicy": "static"}


def test_parse_drops_expressions_as_karpenter_does_with_its_gate_off() -> None:
    parsed = KubeletConfiguration.parse(
        {"maxPods": "pods * 2", "systemReserved": {"cpu": "vcpus * 10", "memory": "1Gi"}})
    assert parsed.max_pods is None and parsed.system_reserved == {"memory": "1Gi"}


def test_parse_of_a_mistyped_field_names_it() -> None:
    with pytest.raises(KubeletConfigError, match=r"spec\.kubelet\.podsPerCore"):
        KubeletConfiguration.parse({"podsPerCore": "many"})


