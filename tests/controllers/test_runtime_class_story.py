"""A RuntimeClass's `overhead.podFixed` counts in its pods' requests: the API server's
admission writes it into `spec.overhead` (Karpenter reads it there), and `plan` applies
the same admission to manifests."""

from __future__ import annotations

import pytest

from nodewright.cluster.api import InvalidError
from nodewright.scheduling.planning import offline_catalogs, plan
from tests.controllers.conftest import WORKSHOP
from tests.harness import World, node_pool
from tests.scheduling.test_plan_workshop import workshop

KATA = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead:
  podFixed: {cpu: "1", memory: 1Gi}
scheduling:
  nodeSelector: {sandbox: "true"}
"""

SANDBOXED = """
apiVersion: v1
kind: Pod
metadata: {name: sandboxed, namespace: default}
spec:
  runtimeClassName: kata
  nodeSelector: {type: karpenter}
  containers: [{name: app, image: app, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""

SANDBOX_POOL = node_pool(families=["c5", "m5"], capacity_types=(),
                         labels={"type": "karpenter", "sandbox": "true"})


def test_the_runtime_class_overhead_is_written_into_the_pod_and_launched_for(
        world: World) -> None:
    world.apply(WORKSHOP, SANDBOX_POOL, KATA, SANDBOXED)
    assert world.settle()

    pod = world.cluster.get("Pod", "sandboxed", "default")
    assert pod["spec"]["overhead"] == {"cpu": "1", "memory": "1Gi"}
    assert pod["spec"]["nodeSelector"] == {"type": "karpenter", "sandbox": "true"}
    (claim,) = world.nodeclaims()
    requests = claim["spec"]["resources"]["requests"]
    # 500m + 1 cpu overhead, plus the workshop's DaemonSets.
    assert requests["cpu"].endswith("m") and int(requests["cpu"][:-1]) >= 1500
    assert pod["spec"].get("nodeName")


def test_a_pod_naming_a_missing_runtime_class_is_refused(world: World) -> None:
    with pytest.raises(InvalidError, match='RuntimeClass "kata" not found'):
        world.apply(SANDBOXED)


def test_plan_applies_the_runtime_class() -> None:
    result, _ = plan(workshop(KATA, SANDBOXED), offline_catalogs("us-east-1", None), {})
    assert result is not None
    # The workshop NodePool has no sandbox label: the class's nodeSelector keeps it off.
    assert [pod for pod, _ in result.unschedulable] == ["default/sandboxed"]

    unpinned = KATA.split("scheduling:")[0]
    big = SANDBOXED.replace("cpu: 500m", "cpu: 1500m")
    with_overhead, _ = plan(workshop(unpinned, big), offline_catalogs("us-east-1", None), {})
    without, _ = plan(workshop(big.replace("runtimeClassName: kata", "")),
                      offline_catalogs("us-east-1", None), {})
    assert with_overhead is not None and without is not None
    # 1.5 cpu fits a 2-vCPU node; with the class's 1 cpu overhead it does not.
    assert [c.instance_type for c in without.nodeclaims] == ["c5.large"]
    assert [c.instance_type for c in with_overhead.nodeclaims] == ["c5.xlarge"]
