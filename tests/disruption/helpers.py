"""Helpers of the disruption stories: the workshop NodePool with changes, the workloads the
stories share, decisions read from the controllers' log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.harness import World


def nodepool_with(
    *,
    requirements: Mapping[str, Sequence[str]] | None = None,
    disruption: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The workshop NodePool, with requirement values, spec.disruption fields, template
    spec fields or template labels replaced."""
    body: dict[str, Any] = yaml.safe_load((WORKSHOP / "nodepool.yaml").read_text())
    spec = body["spec"]
    for item in spec["template"]["spec"]["requirements"]:
        if requirements and item["key"] in requirements:
            item["values"] = list(requirements[item["key"]])
    spec.setdefault("disruption", {}).update(disruption or {})
    spec["template"]["spec"].update(template or {})
    if labels is not None:
        spec["template"]["metadata"]["labels"] = dict(labels)
    return body


def one_pod_a_node(app: str, requests: str) -> str:
    """A Deployment manifest, replicas left as `%d`, whose pods ask for `requests` (a flow
    mapping's inside, `memory: 1Gi`) and keep off each other's nodes."""
    selector = f"{{matchLabels: {{app: {app}}}}}"
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {app}, namespace: default}}
spec:
  replicas: %d
  selector: {selector}
  template:
    metadata: {{labels: {{app: {app}}}}}
    spec:
      nodeSelector: {{type: karpenter}}
      terminationGracePeriodSeconds: 0
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {{topologyKey: kubernetes.io/hostname, labelSelector: {selector}}}
      containers: [{{name: app, resources: {{requests: {{{requests}}}}}}}]
"""


# One 1Gi pod a node: as many nodes as replicas.
BIG = one_pod_a_node("big", "memory: 1Gi")
# One 6-CPU pod a node: each fills most of a 2xlarge.
HOGS = one_pod_a_node("hog", 'cpu: "6"')


def statefulset(*, grace_seconds: int, requests: Mapping[str, str],
                claim: str | None = None) -> dict[str, Any]:
    """The one-replica StatefulSet `db` on Karpenter's nodes, its pod mounting the
    PersistentVolumeClaim `claim` when one is named."""
    pod: dict[str, Any] = {
        "nodeSelector": {"type": "karpenter"},
        "terminationGracePeriodSeconds": grace_seconds,
        "containers": [{"name": "db", "resources": {"requests": dict(requests)}}]}
    if claim is not None:
        pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": 1, "serviceName": "db",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod}}}


def log(world: World) -> ex.DecisionLog:
    assert world.controllers.disruption is not None
    return world.controllers.disruption.decisions


def decisions(world: World, node: str | None = None) -> list[ex.Decision]:
    return [d for d in log(world) if node is None or d.node == node]


def started(world: World) -> list[ex.Decision]:
    """Disruptions the disruption loop started, oldest first."""
    return [d for d in log(world) if d.outcome == ex.DISRUPTED
            and d.method in (ex.EMPTINESS, ex.DRIFT, ex.MULTI_NODE, ex.SINGLE_NODE)]
