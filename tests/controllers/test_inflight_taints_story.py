"""An in-flight node (launched, not initialized yet) is expected to lose its startup
taints and the well-known ephemeral ones (not-ready, unreachable, uninitialized,
readiness.k8s.io/*), so a pod that tolerates the rest is placed there instead of on a new
node; once initialized, a taint that comes back counts (Karpenter's "In-Flight Nodes"
cases, pkg/controllers/provisioning/scheduling/suite_test.go)."""

from __future__ import annotations

from nodewright.cloud.sim.settings import SimSettings
from tests.controllers.conftest import WORKSHOP
from tests.harness import World, node_pool

STARTUP_POOL = node_pool(
    families=["m5"], capacity_types=(), labels={"type": "karpenter"},
    startupTaints=[{"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}])


def pod(name: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeSelector: {{type: karpenter}}
  containers: [{{name: app, image: app, resources: {{requests: {{cpu: 100m}}}}}}]
"""


def nominations(world: World, name: str) -> list[str]:
    return [str(e.get("note")) for e in world.events("Nominated")
            if (e.get("regarding") or {}).get("name") == name]


def test_a_pod_is_planned_onto_a_node_still_carrying_its_startup_taint() -> None:
    # Startup taints are never removed here: the node stays in flight.
    world = World(sim=SimSettings(startup_taint_delay=None))
    world.apply(WORKSHOP, STARTUP_POOL, pod("first"))
    world.advance(120)
    (claim,) = world.nodeclaims()
    node = world.cluster.get("Node", claim["status"]["nodeName"])
    assert {"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"} in node[
        "spec"]["taints"]

    world.apply(pod("second"))
    world.advance(60)

    assert len(world.nodeclaims()) == 1, "launched a node for a pod the in-flight one takes"
    assert nominations(world, "second") == [
        f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}, "
        f"node/{claim['status']['nodeName']}"]


def test_an_ephemeral_taint_of_an_uninitialized_node_is_not_held_against_a_pod() -> None:
    world = World(sim=SimSettings(startup_taint_delay=None))
    world.apply(WORKSHOP, STARTUP_POOL, pod("first"))
    world.advance(120)
    (claim,) = world.nodeclaims()
    node_name = claim["status"]["nodeName"]
    node = world.cluster.get("Node", node_name)
    taints = [*node["spec"]["taints"],
              {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
              {"key": "readiness.k8s.io/network", "value": "pending", "effect": "NoSchedule"}]
    world.cluster.patch("Node", node_name, {"spec": {"taints": taints}})

    world.apply(pod("second"))
    world.advance(60)

    assert len(world.nodeclaims()) == 1


def test_after_initialization_a_returning_taint_counts() -> None:
    world = World()
    world.apply(WORKSHOP, STARTUP_POOL, pod("first"))
    assert world.settle()
    (claim,) = world.nodeclaims()
    node_name = claim["status"]["nodeName"]
    node = world.cluster.get("Node", node_name)
    assert node["metadata"]["labels"].get("karpenter.sh/initialized") == "true"
    world.cluster.patch("Node", node_name, {"spec": {"taints": [
        *node["spec"].get("taints", []),
        {"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}]}})

    world.apply(pod("second"))
    world.advance(60)

    assert len(world.nodeclaims()) == 2
