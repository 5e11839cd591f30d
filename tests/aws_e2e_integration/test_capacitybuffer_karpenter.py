"""Karpenter test/suites/integration/capacitybuffer_test.go (v1.14.1), cloud-agnostic: on
the in-memory World of tests/harness.py (simulated EC2) with the CapacityBuffer gate on,
the e2e default NodePool (`env.DefaultNodePool`: on-demand linux c/m/r types of generation
> 4, consolidation off) and the suite's buffer template, one CPU and 512Mi a replica."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.options import ControllerOptions
from tests.harness import NODE_CLASS, World, node_pool

CONSOLIDATE_AT_ONCE = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                       "consolidateAfter": "0s"}


def default_pool(disruption: dict[str, Any] | None = None) -> dict[str, Any]:
    return node_pool(requirements=[
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
    ], disruption=disruption or {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                 "consolidateAfter": "Never"})


def resources(cpu: str, memory: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}}


BUFFER_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "PodTemplate",
    "metadata": {"name": "buffer-template", "namespace": "default"},
    "template": {"spec": {"containers": [{
        "name": "pause", "image": "public.ecr.aws/eks-distro/kubernetes/pause:3.2",
        "resources": resources("1", "512Mi")}]}}}


def capacity_buffer(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": "buffer", "namespace": "default"}, "spec": spec}


def deployment(name: str, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "app", "image": "pause",
                                         "resources": resources(cpu, memory)}]}}}}


def cluster(disruption: dict[str, Any] | None = None) -> World:
    world = World(options=ControllerOptions(capacity_buffer=True))
    world.apply(NODE_CLASS, default_pool(disruption))
    return world


def buffer_status(world: World) -> dict[str, Any]:
    return dict(world.cluster.get("CapacityBuffer", "buffer", "default").get("status") or {})


def provisioned(world: World) -> bool:
    """`EventuallyExpectCapacityBufferProvisioned`: Provisioning=True."""
    found = {c["type"]: c["status"] for c in buffer_status(world).get("conditions") or []}
    return found.get("Provisioning") == "True"


def initialized(world: World) -> list[str]:
    return [objects.name(n) for n in world.nodes()
            if objects.labels(n).get("karpenter.sh/initialized") == "true"]


def running(world: World, app: str) -> list[Any]:
    return [p for p in world.running_pods() if objects.labels(p).get("app") == app]


def test_a_buffer_with_a_pod_template_provisions_from_zero(
        ) -> None:
    """Karpenter test/suites/integration/capacitybuffer_test.go It("should provision buffer
    capacity with podTemplateRef")."""
    world = cluster()
    assert world.settle()
    assert world.nodeclaims() == []

    world.apply(BUFFER_TEMPLATE, capacity_buffer(podTemplateRef={"name": "buffer-template"},
                                                 replicas=3))

    assert world.run_until(lambda: buffer_status(world).get("replicas") == 3, timeout=60)
    assert world.run_until(lambda: len(initialized(world)) >= 1 and provisioned(world))
    assert len(world.nodeclaims()) >= 1
    assert world.errors == []


def test_consumer_pods_run_on_the_buffer_s_capacity() -> None:
    """Karpenter test/suites/integration/capacitybuffer_test.go It("should allow consumer
    pods to schedule on buffer capacity")."""
    world = cluster()
    world.apply(BUFFER_TEMPLATE, capacity_buffer(podTemplateRef={"name": "buffer-template"},
                                                 replicas=2))
    assert world.run_until(lambda: len(initialized(world)) >= 1 and provisioned(world))
    claims_before = {objects.name(c) for c in world.nodeclaims()}

    world.apply(deployment("consumer", 1, "1", "512Mi"))

    assert world.run_until(lambda: len(running(world, "consumer")) == 1, timeout=120)
    (consumer,) = running(world, "consumer")
    # It ran on the capacity the buffer had launched, not on a node launched for it.
    owner = next(c for c in world.nodeclaims()
                 if (c.get("status") or {}).get("nodeName") == consumer["spec"]["nodeName"])
    assert objects.name(owner) in claims_before
    assert world.errors == []


def test_an_empty_buffer_node_is_not_consolidated() -> None:
    """Karpenter test/suites/integration/capacitybuffer_test.go It("should not disrupt
    buffer nodes when empty")."""
    world = cluster(CONSOLIDATE_AT_ONCE)
    world.apply(BUFFER_TEMPLATE, capacity_buffer(podTemplateRef={"name": "buffer-template"},
                                                 replicas=1))
    assert world.run_until(lambda: len(initialized(world)) >= 1 and provisioned(world))
    nodes = sorted(objects.name(n) for n in world.nodes())

    world.advance(60)
    for _ in range(12):
        world.advance(5)
        assert sorted(objects.name(n) for n in world.nodes()) == nodes
        assert not any(objects.is_deleting(c) for c in world.nodeclaims())
    assert world.errors == []


def test_deleting_the_buffer_lets_its_nodes_go() -> None:
    """Karpenter test/suites/integration/capacitybuffer_test.go It("should clean up buffer
    nodes after buffer deletion")."""
    world = cluster(CONSOLIDATE_AT_ONCE)
    world.apply(BUFFER_TEMPLATE, capacity_buffer(podTemplateRef={"name": "buffer-template"},
                                                 replicas=1))
    assert world.run_until(lambda: len(initialized(world)) >= 1 and provisioned(world))
    first = objects.name(world.nodeclaims()[0])

    world.delete("CapacityBuffer", "buffer", "default")

    assert world.run_until(
        lambda: first not in {objects.name(c) for c in world.nodeclaims()}, timeout=900)
    assert world.errors == []


def test_a_buffer_of_a_deployment_keeps_a_fifth_of_its_replicas() -> None:
    """Karpenter test/suites/integration/capacitybuffer_test.go It("should provision buffer
    with scalableRef")."""
    world = cluster()
    world.apply(deployment("scalable-app", 10, "500m", "256Mi"))
    assert world.run_until(lambda: len(running(world, "scalable-app")) == 10, timeout=300)
    before = len(world.nodeclaims())
    assert before >= 1

    world.apply(capacity_buffer(scalableRef={"apiGroup": "apps", "kind": "Deployment",
                                             "name": "scalable-app"}, percentage=20))

    assert world.run_until(lambda: buffer_status(world).get("replicas") == 2, timeout=60)
    assert world.run_until(lambda: provisioned(world), timeout=600)
    assert len(world.nodeclaims()) >= before
    assert world.errors == []
