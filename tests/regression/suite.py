"""What Karpenter's regression suite (test/suites/regression/suite_test.go, run against a
kwok cluster) sets up before each It, made for the in-memory `World`.

Karpenter's BeforeEach takes the environment's default NodePool, drops its limits, sets
one budget of 100 % and expireAfter 30h. `suite_pool` is that NodePool on our EC2NodeClass
`default` (`NODE_CLASS`) as the AWS provider's environment makes it
(test/pkg/environment/common/environment.go DefaultNodePool: os In linux, capacity type In
on-demand, instance category In c, m, r, generation Gt 4, family NotIn a1; consolidation
WhenEmptyOrUnderutilized after Never); kwok's own `instance-size Lt 32` requirement is
for kwok's catalogue only. `deployment` and `pod` are Karpenter's
`test.Deployment` and `test.Pod`: pause containers that request nothing unless told.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import Object
from tests.harness import World, node_pool

LINUX = {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
AWS_DEFAULT_REQUIREMENTS = (
    LINUX,
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["a1"]},
)
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def suite_pool(*, disruption: Mapping[str, Any] | None = None,
               requirements: Sequence[Mapping[str, Any]] = AWS_DEFAULT_REQUIREMENTS,
               capacity_types: Sequence[str] = ("on-demand",),
               labels: Mapping[str, str] | None = None,
               **template_spec: Any) -> dict[str, Any]:
    """The regression suite's NodePool `default`; `disruption` fields replace the suite's."""
    spec: dict[str, Any] = {"expireAfter": "30h", **template_spec}
    return node_pool(
        requirements=requirements, capacity_types=capacity_types, labels=labels,
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized",
                    "consolidateAfter": "Never", "budgets": [{"nodes": "100%"}],
                    **(disruption or {})},
        **spec)


def pod_spec(*, requests: Mapping[str, str] | None = None,
             limits: Mapping[str, str] | None = None,
             grace: int | None = None, **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    body: dict[str, Any] = {
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                        "resources": resources}],
        **spec,
    }
    if grace is not None:
        body["terminationGracePeriodSeconds"] = grace
    return body


def deployment(name: str, replicas: int = 1, *, labels: Mapping[str, str] | None = None,
               annotations: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A Deployment whose pods carry `labels` (app=<name> unless told) and `annotations`."""
    pod_labels = dict(labels or {"app": name})
    metadata: dict[str, Any] = {"labels": pod_labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": pod_labels},
                     "template": {"metadata": metadata, "spec": pod_spec(**spec)}}}


def daemonset(name: str, *, labels: Mapping[str, str] | None = None,
              **spec: Any) -> dict[str, Any]:
    pod_labels = dict(labels or {"app": name})
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": pod_labels},
                     "template": {"metadata": {"labels": pod_labels},
                                  "spec": pod_spec(**spec)}}}


def pod(name: str, *, labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default",
                                "labels": dict(labels or {"app": name})}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec(**spec)}


def node_affinity(key: str, *values: str) -> dict[str, Any]:
    """A required node affinity: `key` In `values`."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": list(values)}]}]}}}


def healthy(world: World, labels: Mapping[str, str]) -> list[Object]:
    """The running, ready pods with `labels` (Karpenter's EventuallyExpectHealthyPodCount)."""
    return [p for p in world.running_pods()
            if all(objects.labels(p).get(k) == v for k, v in labels.items())
            and any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (p.get("status") or {}).get("conditions") or [])]


def exists(world: World, kind: str, name: str, namespace: str | None = None) -> bool:
    return any(objects.name(o) == name for o in world.cluster.list(kind, namespace))


def changed(body: Mapping[str, Any], **spec: Any) -> dict[str, Any]:
    copied = copy.deepcopy(dict(body))
    copied["spec"].update(spec)
    return copied
