"""A pod's size as the Kubernetes scheduler and Karpenter compute it (component-helpers
PodRequests/PodLimits through Karpenter's resources.Ceiling): containers, sidecars, init
containers, overhead, pod-level resources and in-place resized containers.

Ported from kubernetes-sigs/karpenter v1.14.1 pkg/utils/resources/suite_test.go: every
It of "Resource Calculations" (names kept in `Case.karpenter`), "UseStatusResources" and
"MaxResources".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodewright.api.quantity import maximum, parse_quantity
from nodewright.scheduling.pods import parse_pod_spec, pod_limits, pod_requests

Amounts = dict[str, str]


@dataclass
class Case:
    karpenter: str
    container: tuple[Amounts, Amounts]
    inits: list[tuple[Amounts, Amounts, bool]] = field(default_factory=list)
    pod: tuple[Amounts, Amounts] | None = None
    overhead: Amounts | None = None
    requests: Amounts = field(default_factory=dict)
    limits: Amounts = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [_container("app", *self.container)]}
        if self.inits:
            spec["initContainers"] = [
                {**_container(f"init-{n}", requests, limits),
                 **({"restartPolicy": "Always"} if sidecar else {})}
                for n, (requests, limits, sidecar) in enumerate(self.inits)]
        if self.pod is not None:
            spec["resources"] = _resources(*self.pod)
        if self.overhead:
            spec["overhead"] = self.overhead
        return spec


def _resources(requests: Amounts, limits: Amounts) -> dict[str, Amounts]:
    return {key: value for key, value in (("requests", requests), ("limits", limits)) if value}


def _container(name: str, requests: Amounts, limits: Amounts) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": _resources(requests, limits)}


def _millis(amounts: Mapping[str, str]) -> dict[str, int]:
    return {name: parse_quantity(value) for name, value in amounts.items()}


CASES = [
    Case(
        "should calculate resource requests based off of the sum of containers and sidecarContainers",  # noqa: E501
        container=({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
        inits=[
            ({"cpu": "1", "memory": "2Gi"}, {"cpu": "1", "memory": "2Gi"}, True),
        ],
        requests={"cpu": "3", "memory": "3Gi"},
        limits={"cpu": "3", "memory": "3Gi"},
    ),
    Case(
        "should calculate resource requests based off of containers, sidecarContainers, initContainers, and overhead",  # noqa: E501
        container=({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
        inits=[
            ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "2Gi"}, False),
            ({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}, True),
        ],
        overhead={"cpu": "5", "memory": "1Gi"},
        requests={"cpu": "10", "memory": "5Gi"},
        limits={"cpu": "10", "memory": "5Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after a sidecarContainer that exceeds container resource requests",  # noqa: E501
        container=({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
        inits=[
            ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "2Gi"}, True),
            ({"cpu": "10", "memory": "2Gi"}, {"cpu": "10", "memory": "2Gi"}, False),
        ],
        requests={"cpu": "14", "memory": "4Gi"},
        limits={"cpu": "14", "memory": "4Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after a sidecarContainer that doesn't exceed container resource requests",  # noqa: E501
        container=({"cpu": "2", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}),
        inits=[
            ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "2Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
        ],
        requests={"cpu": "6", "memory": "4Gi"},
        limits={"cpu": "6", "memory": "4Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after multiple sidecarContainers that exceeds container resource requests",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}, True),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
            ({"cpu": "20", "memory": "20Gi"}, {"cpu": "20", "memory": "20Gi"}, False),
        ],
        requests={"cpu": "31", "memory": "31Gi"},
        limits={"cpu": "31", "memory": "31Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after multiple sidecarContainers that doesn't exceed container resource requests",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}, True),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
        ],
        requests={"cpu": "14", "memory": "14Gi"},
        limits={"cpu": "14", "memory": "14Gi"},
    ),
    Case(
        "should calculate resource requests with multiple sidecarContainers when the first initContainer exceeds the sum of all sidecarContainers and container resource requests",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "25", "memory": "25Gi"}, {"cpu": "25", "memory": "25Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
        ],
        requests={"cpu": "25", "memory": "25Gi"},
        limits={"cpu": "25", "memory": "25Gi"},
    ),
    Case(
        "should calculate resource requests with multiple interspersed sidecarContainers and initContainers",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "2", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}, False),
        ],
        requests={"cpu": "10", "memory": "10Gi"},
        limits={"cpu": "10", "memory": "10Gi"},
    ),
    Case(
        "should calculate resource requests when the first initContainer exceeds cpu for sidecarContainers and containers but not memory",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "25", "memory": "4Gi"}, {"cpu": "25", "memory": "4Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
        ],
        requests={"cpu": "25", "memory": "9Gi"},
        limits={"cpu": "25", "memory": "9Gi"},
    ),
    Case(
        "should calculate resource requests when the first initContainer exceeds memory for sidecarContainers and containers but not cpu",  # noqa: E501
        container=({"cpu": "3", "memory": "3Gi"}, {"cpu": "3", "memory": "3Gi"}),
        inits=[
            ({"cpu": "4", "memory": "25Gi"}, {"cpu": "4", "memory": "25Gi"}, False),
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
            ({"cpu": "5", "memory": "5Gi"}, {"cpu": "5", "memory": "5Gi"}, True),
        ],
        requests={"cpu": "9", "memory": "25Gi"},
        limits={"cpu": "9", "memory": "25Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after a sidecarContainer that exceeds cpu for containers but not memory",  # noqa: E501
        container=({"cpu": "2", "memory": "4Gi"}, {"cpu": "2", "memory": "4Gi"}),
        inits=[
            ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "2Gi"}, True),
            ({"cpu": "10", "memory": "2Gi"}, {"cpu": "10", "memory": "2Gi"}, False),
        ],
        requests={"cpu": "14", "memory": "6Gi"},
        limits={"cpu": "14", "memory": "6Gi"},
    ),
    Case(
        "should calculate resource requests when there is an initContainer after a sidecarContainer that exceeds memory for containers but not cpu",  # noqa: E501
        container=({"cpu": "10", "memory": "2Gi"}, {"cpu": "10", "memory": "2Gi"}),
        inits=[
            ({"cpu": "4", "memory": "2Gi"}, {"cpu": "4", "memory": "2Gi"}, True),
            ({"cpu": "2", "memory": "4Gi"}, {"cpu": "2", "memory": "4Gi"}, False),
        ],
        requests={"cpu": "14", "memory": "6Gi"},
        limits={"cpu": "14", "memory": "6Gi"},
    ),
    Case(
        "should calculate resource requests when the pod level resources is specified",
        container=({"cpu": "1", "memory": "1Gi"}, {"cpu": "3", "memory": "3Gi"}),
        pod=({"cpu": "2", "memory": "2Gi"}, {"cpu": "4", "memory": "4Gi"}),
        requests={"cpu": "2", "memory": "2Gi"},
        limits={"cpu": "4", "memory": "4Gi"},
    ),
    Case(
        "should calculate resource requests when only the pod level resources request is specified",
        container=({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        inits=[
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
        ],
        pod=({"cpu": "2", "memory": "2Gi"}, {}),
        requests={"cpu": "2", "memory": "2Gi"},
        limits={"cpu": "2", "memory": "2Gi"},
    ),
    Case(
        "should calculate resource requests when the pod level resources requests is defaulted from limits",  # noqa: E501
        container=({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        inits=[
            ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, True),
        ],
        pod=({"cpu": "10", "memory": "10Gi"}, {"cpu": "10", "memory": "10Gi"}),
        requests={"cpu": "10", "memory": "10Gi"},
        limits={"cpu": "10", "memory": "10Gi"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.karpenter for case in CASES])
def test_resource_calculations_match_karpenter(case: Case) -> None:
    """pkg/utils/resources/suite_test.go, Context "Resource Calculations": the It named
    by the case id; requests and limits both as resources.Ceiling gives them."""
    requests = dict(pod_requests(case.spec(), "spec"))
    assert requests.pop("pods") == 1000
    assert requests == _millis(case.requests)
    assert dict(pod_limits(case.spec(), "spec")) == _millis(case.limits)


def _resized(spec_requests: Amounts, allocated: Amounts | None) -> tuple[dict[str, Any],
                                                                         dict[str, Any]]:
    spec = {"containers": [_container("app", spec_requests, {})]}
    status: dict[str, Any] = {"containerStatuses": [
        {"name": "app", "resources": {"requests": spec_requests},
         **({"allocatedResources": allocated} if allocated is not None else {})}]}
    return spec, status


def _cpu_memory(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> dict[str, int]:
    requests = dict(pod_requests(spec, "spec", status))
    requests.pop("pods")
    return requests


def test_allocated_resources_count_when_higher_than_spec_during_a_resize_down() -> None:
    """resources suite_test.go, UseStatusResources: "should use allocatedResources when
    higher than spec requests (resize-down in progress)"."""
    spec, status = _resized({"cpu": "2", "memory": "512Mi"}, {"cpu": "6", "memory": "2Gi"})
    assert _cpu_memory(spec, status) == _millis({"cpu": "6", "memory": "2Gi"})


def test_spec_counts_when_higher_than_allocated_during_a_resize_up() -> None:
    """resources suite_test.go, UseStatusResources: "should use spec requests when higher
    than allocatedResources (resize-up in progress)"."""
    spec, status = _resized({"cpu": "8", "memory": "4Gi"}, {"cpu": "2", "memory": "1Gi"})
    assert _cpu_memory(spec, status) == _millis({"cpu": "8", "memory": "4Gi"})


def test_spec_counts_when_nothing_was_resized() -> None:
    """resources suite_test.go, UseStatusResources: "should use spec requests when
    allocatedResources is not set (no resize)"."""
    spec = {"containers": [_container("app", {"cpu": "4", "memory": "2Gi"}, {})]}
    assert _cpu_memory(spec, None) == _millis({"cpu": "4", "memory": "2Gi"})


def test_an_infeasible_resize_leaves_the_spec_out() -> None:
    """component-helpers determineContainerReqs: when the kubelet marks the resize
    infeasible (PodResizePending/Infeasible) the spec will not be applied; what the
    container holds counts."""
    spec, status = _resized({"cpu": "8"}, {"cpu": "2"})
    status["containerStatuses"][0]["resources"] = {"requests": {"cpu": "2"}}
    assert _cpu_memory(spec, status) == {"cpu": 8000}
    status["conditions"] = [{"type": "PodResizePending", "status": "True",
                             "reason": "Infeasible"}]
    assert _cpu_memory(spec, status) == {"cpu": 2000}


def test_a_resized_sidecar_counts_its_status_but_a_finished_init_container_does_not() -> None:
    """component-helpers AggregateContainerRequests reads status only for containers and
    restartable init containers."""
    spec = {"containers": [_container("app", {"cpu": "1"}, {})],
            "initContainers": [
                {**_container("proxy", {"cpu": "1"}, {}), "restartPolicy": "Always"},
                _container("migrate", {"cpu": "1"}, {})]}
    status = {"initContainerStatuses": [
        {"name": "proxy", "resources": {"requests": {"cpu": "1"}},
         "allocatedResources": {"cpu": "3"}},
        {"name": "migrate", "resources": {"requests": {"cpu": "1"}},
         "allocatedResources": {"cpu": "9"}}]}
    assert _cpu_memory(spec, status) == {"cpu": 4000}


def test_pod_level_requests_default_from_pod_level_limits_in_a_manifest() -> None:
    """A manifest is read before the API server's defaulting: a pod-level limit without a
    request stands for the request (KEP-2837), unless the containers request that resource,
    whose total then stands."""
    spec = {"containers": [_container("app", {"memory": "1Gi"}, {})],
            "resources": {"limits": {"cpu": "6", "memory": "4Gi"}}}
    assert _cpu_memory(spec, None) == _millis({"cpu": "6", "memory": "1Gi"})


def test_pod_level_resources_set_only_cpu_memory_and_hugepages() -> None:
    """IsSupportedPodLevelResource: cpu, memory and hugepages-*; other pod-level entries
    leave the containers' total in place."""
    spec = {"containers": [_container("app", {"ephemeral-storage": "1Gi", "cpu": "1"}, {})],
            "resources": {"requests": {"cpu": "3", "hugepages-2Mi": "64Mi",
                                       "ephemeral-storage": "9Gi"}}}
    assert _cpu_memory(spec, None) == _millis(
        {"cpu": "3", "hugepages-2Mi": "64Mi", "ephemeral-storage": "1Gi"})


def test_the_parsed_pod_model_carries_the_same_size() -> None:
    """parse_pod_spec (what the provisioner, disruption, the in-memory kube-scheduler and
    `plan` read) sizes a pod with the same function, status included."""
    spec, status = _resized({"cpu": "2"}, {"cpu": "6"})
    spec["resources"] = {"requests": {"memory": "3Gi"}}
    pod = parse_pod_spec("default", "web", {}, spec, "spec", status=status)
    assert pod.requests == {"cpu": 6000, "memory": parse_quantity("3Gi"), "pods": 1000}


@pytest.mark.parametrize(("lists", "expected"), [
    ([], {}),
    ([{"cpu": "2", "memory": "4Gi"}], {"cpu": "2", "memory": "4Gi"}),
    ([{"cpu": "1", "memory": "4Gi"}, {"cpu": "3", "memory": "2Gi"},
      {"cpu": "2", "memory": "8Gi"}], {"cpu": "3", "memory": "8Gi"}),
    ([{"cpu": "1"}, {"memory": "2Gi"}, {"cpu": "3"}], {"cpu": "3", "memory": "2Gi"}),
], ids=[
    "should return empty list for no inputs",
    "should return the same list for a single input",
    "should return the maximum of each resource across multiple lists",
    "should include resources that only appear in some lists",
])
def test_max_resources(lists: list[Amounts], expected: Amounts) -> None:
    """resources suite_test.go, Context "MaxResources": the It named by the id."""
    assert maximum(_millis(amounts) for amounts in lists) == _millis(expected)
