"""The solver sizes pods as the Kubernetes scheduler does: sidecars, init containers,
pod-level resources and DaemonSet pods' init containers decide which type launches.

Ported from kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/suite_test.go
and pkg/controllers/provisioning/scheduling/suite_test.go (each test names its It). Where
Karpenter adds three types "one that's what we want, one that's slightly smaller, one
that's slightly bigger", so do we: a miscounted pod lands on the wrong one.
"""

from __future__ import annotations

from typing import Any

from nodewright.scheduling.pods import daemonset_from_manifest, parse_pod_spec
from tests.scheduling.test_solver import instance_type, nodepool, run

# 10 cpu/4Gi, 11/5 and 12/6, priced by size.
AROUND_ELEVEN = [instance_type("ten.1", 10, 4, 1.0), instance_type("eleven.1", 11, 5, 1.1),
                 instance_type("twelve.1", 12, 6, 1.2)]
# Two types as Karpenter's fake provider has them: 2 cpu/2Gi and 4 cpu/4Gi.
TWO_AND_FOUR = [instance_type("small.2", 2, 2, 0.1), instance_type("default.4", 4, 4, 0.2)]


def _resources(cpu: str, memory: str) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory}
    return {"requests": amounts, "limits": amounts}


def _launched_for(spec: dict[str, Any], catalog: list[Any]) -> list[str]:
    pod = parse_pod_spec("default", "app", {}, spec, "spec")
    result = run([pod], [nodepool(catalog=catalog)])
    return [claim.instance_type for claim in result.nodeclaims]


def test_init_container_first_then_sidecar() -> None:
    """provisioning suite_test.go: "should schedule based on the max resource requests of
    containers and initContainers with sidecar containers when initcontainer comes
    first"."""
    spec = {"containers": [{"name": "app", "resources": _resources("6", "2Gi")}],
            "initContainers": [
                {"name": "init", "resources": _resources("10", "4Gi")},
                {"name": "sidecar", "restartPolicy": "Always",
                 "resources": _resources("4.9", "2.9Gi")}]}
    assert _launched_for(spec, AROUND_ELEVEN) == ["eleven.1"]


def test_sidecar_first_and_init_container_smaller_than_the_containers() -> None:
    """provisioning suite_test.go: "should schedule based on the max resource requests of
    containers and initContainers with sidecar containers when sidecar container comes
    first and init container resources are smaller than container resources"."""
    spec = {"containers": [{"name": "app", "resources": _resources("6", "2Gi")}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always",
                 "resources": _resources("4.9", "2.9Gi")},
                {"name": "init", "resources": _resources("5", "1Gi")}]}
    assert _launched_for(spec, AROUND_ELEVEN) == ["eleven.1"]


def test_sidecar_first_and_init_container_bigger_than_the_containers() -> None:
    """provisioning suite_test.go: "should schedule based on the max resource requests of
    containers and initContainers with sidecar containers when sidecar container comes
    first and init container resources are bigger than container resources"."""
    spec = {"containers": [{"name": "app", "resources": _resources("5", "1Gi")}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always",
                 "resources": _resources("4.9", "2.9Gi")},
                {"name": "init", "resources": _resources("6", "2Gi")}]}
    assert _launched_for(spec, AROUND_ELEVEN) == ["eleven.1"]


def test_pod_level_requests_decide_the_size() -> None:
    """provisioning suite_test.go: "should schedule based on the pod level resources
    requests" (the containers alone would fit the smaller type, the pod-level 9.9 cpu /
    3.9Gi need the 10/4 one)."""
    spec = {"resources": {"limits": {"cpu": "10", "memory": "4Gi"},
                          "requests": {"cpu": "9.9", "memory": "3.9Gi"}},
            "containers": [{"name": "app", "resources": _resources("5", "1Gi")}],
            "initContainers": [
                {"name": "init", "resources": _resources("6", "2Gi")},
                {"name": "sidecar", "restartPolicy": "Always",
                 "resources": _resources("4", "2Gi")}]}
    smaller = [instance_type("nine.1", 9, 3, 0.9), *AROUND_ELEVEN]
    assert _launched_for(spec, smaller) == ["ten.1"]


def test_a_pod_asking_only_at_pod_level_is_not_planned_as_tiny() -> None:
    """The issue's example: 6 cpu asked at pod level only, once planned on a 1-cpu type."""
    spec = {"resources": {"requests": {"cpu": "6"}}, "containers": [{"name": "app"}]}
    catalog = [instance_type("one.1", 1, 2, 0.05), instance_type("eight.1", 8, 16, 0.4)]
    assert _launched_for(spec, catalog) == ["eight.1"]


def test_init_container_requests_count_when_binpacking() -> None:
    """scheduling suite_test.go: "should take into account initContainer resource
    requests when binpacking"."""
    spec = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1",
                                                                      "memory": "1Gi"}}}],
            "initContainers": [{"name": "init", "resources": {"requests": {
                "cpu": "2", "memory": "1Gi"}}}]}
    catalog = [instance_type("one.1", 1, 4, 0.05), *TWO_AND_FOUR]
    assert _launched_for(spec, catalog) == ["small.2"]


def test_init_container_requests_too_large_for_any_type_launch_nothing() -> None:
    """scheduling suite_test.go: "should not schedule pods when initContainer resource
    requests are greater than available instance types"."""
    spec = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1",
                                                                      "memory": "1Gi"}}}],
            "initContainers": [{"name": "init", "resources": {"requests": {
                "cpu": "2", "memory": "1Ti"}}}]}
    pod = parse_pod_spec("default", "app", {}, spec, "spec")
    result = run([pod], [nodepool(catalog=TWO_AND_FOUR)])
    assert result.nodeclaims == () and [key for key, _ in result.unschedulable] == [pod.key]


def _daemonset(spec: dict[str, Any]) -> Any:
    return daemonset_from_manifest({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {"template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}}})


def _small_pod() -> Any:
    return parse_pod_spec("default", "app", {}, {"containers": [{"name": "app"}]}, "spec")


def test_a_daemonset_limit_without_request_counts_as_its_request() -> None:
    """provisioning suite_test.go, Resource Limits: "should not schedule if resource
    requests are not defined and limits (requests) are too large"."""
    agent = _daemonset({"containers": [{"name": "agent", "resources": {
        "limits": {"cpu": "10000", "memory": "10000Gi"}, "requests": {"cpu": "1"}}}]})
    result = run([_small_pod()], [nodepool(catalog=TWO_AND_FOUR)], daemonsets=[agent])
    assert result.nodeclaims == () and len(result.unschedulable) == 1


def test_a_daemonset_pods_init_containers_size_its_overhead() -> None:
    """provisioning suite_test.go, Resource Limits: "should schedule based on the max
    resource requests of containers and initContainers" (the 2Gi type would mean the
    DaemonSet's init container was not respected)."""
    agent = _daemonset({
        "containers": [{"name": "agent", "resources": {
            "limits": {"cpu": "10000", "memory": "1Gi"}, "requests": {"cpu": "1"}}}],
        "initContainers": [{"name": "setup", "resources": {
            "limits": {"cpu": "10000", "memory": "3Gi"}, "requests": {"cpu": "3"}}}]})
    result = run([_small_pod()], [nodepool(catalog=TWO_AND_FOUR)], daemonsets=[agent])
    assert [claim.instance_type for claim in result.nodeclaims] == ["default.4"]


def test_a_daemonset_whose_init_container_fits_no_type_blocks_the_pool() -> None:
    """provisioning suite_test.go, Resource Limits: "should not schedule if combined max
    resources are too large for any node"."""
    agent = _daemonset({
        "containers": [{"name": "agent", "resources": {
            "limits": {"cpu": "10000", "memory": "1Gi"}, "requests": {"cpu": "1"}}}],
        "initContainers": [{"name": "setup", "resources": {
            "limits": {"cpu": "10000", "memory": "10000Gi"}, "requests": {"cpu": "1"}}}]})
    result = run([_small_pod()], [nodepool(catalog=TWO_AND_FOUR)], daemonsets=[agent])
    assert result.nodeclaims == () and len(result.unschedulable) == 1


def test_a_daemonset_init_container_too_large_blocks_the_pool() -> None:
    """provisioning suite_test.go, Resource Limits: "should not schedule if initContainer
    resources are too large"."""
    agent = _daemonset({
        "containers": [{"name": "agent"}],
        "initContainers": [{"name": "setup", "resources": {
            "requests": {"cpu": "10000", "memory": "10000Gi"}}}]})
    result = run([_small_pod()], [nodepool(catalog=TWO_AND_FOUR)], daemonsets=[agent])
    assert result.nodeclaims == () and len(result.unschedulable) == 1
