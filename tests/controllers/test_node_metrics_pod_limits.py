"""The node metrics' pod limits: a node's series are rebuilt when its pods change, and only
the pods that changed are read again (the simulator runs `metrics.node` every 5 seconds
over thousands of nodes and tens of thousands of pods)."""

from __future__ import annotations

import pytest

from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import samples
from tests.harness import World

LIMITED = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: limited, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: limited}}
  template:
    metadata: {labels: {app: limited}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers:
        - name: app
          image: app
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {cpu: 500m, memory: 256Mi}
"""


def pod_cpu_limits(node_name: str) -> float:
    found = [s.value for s in samples("karpenter_nodes_total_pod_limits")
             if s.labels.get("node_name") == node_name and s.labels.get("resource_type") == "cpu"]
    return found[0] if found else 0.0


def test_only_changed_pods_are_read_again(world: World, limit_reads: list[str]) -> None:
    reads = limit_reads
    world.apply(WORKSHOP, LIMITED)
    assert world.settle()
    world.advance(10)
    (node,) = world.nodes()
    name = node["metadata"]["name"]
    assert pod_cpu_limits(name) == pytest.approx(1.0)
    limited = {p["metadata"]["name"] for p in world.pods("default")
               if p["metadata"]["name"].startswith("limited")}
    # The replicas share their containers (the API server stores equal parts once):
    # one of them is read for all.
    assert limited & set(reads)

    reads.clear()
    world.scale("limited", 3)
    assert world.settle()
    world.advance(10)

    (third,) = {p["metadata"]["name"] for p in world.pods("default")
                if p["metadata"]["name"].startswith("limited")} - limited
    assert pod_cpu_limits(name) == pytest.approx(1.5)
    assert third not in reads, "the new replica's limits are those its siblings had"
    assert not limited & set(reads), "the pods that did not change were read again"

    world.scale("limited", 1)
    assert world.settle()
    world.advance(10)
    assert pod_cpu_limits(name) == pytest.approx(0.5)
