"""The shape of Karpenter's basic performance test, for the stories that scale it.

Karpenter's test/suites/performance/basic_test.go ("Basic Deployment", "should efficiently
scale two deployments with different resource profiles") creates, in one burst, 500 pods
of 900m/3100Mi and 500 of 3500m/28Gi, on the AWS suite's default NodePool
(test/pkg/environment/common/environment.go DefaultNodePool: linux, on-demand, categories
c/m/r, generation > 4, not a1) with the performance suite's changes (no limits,
WhenEmptyOrUnderutilized after 30 s, a 100% budget)."""

from __future__ import annotations

from typing import Any

SMALL = ("small-resource-app", "900m", "3100Mi")
LARGE = ("large-resource-app", "3500m", "28Gi")
REPLICAS = 500


def perf_nodepool(node_class: str = "default", name: str = "default") -> dict[str, Any]:
    requirements = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["a1"]},
    ]
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {
            "template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": node_class},
                "requirements": requirements,
                "expireAfter": "Never",
            }},
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                           "consolidateAfter": "30s", "budgets": [{"nodes": "100%"}]},
        },
    }


def deployment(name: str, replicas: int, cpu: str, memory: str,
               namespace: str = "default") -> dict[str, Any]:
    """As Karpenter's test.Deployment(test.CreateDeploymentOptions(name, replicas, cpu,
    memory)): one container requesting (and limited to) cpu and memory."""
    resources = {"cpu": cpu, "memory": memory}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                         "resources": {"requests": resources,
                                                       "limits": resources}}]},
            },
        },
    }


def burst(replicas: int = REPLICAS, namespace: str = "default") -> list[dict[str, Any]]:
    return [deployment(name, replicas, cpu, memory, namespace)
            for name, cpu, memory in (SMALL, LARGE)]
