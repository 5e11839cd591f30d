"""CapacityBuffers end to end, ported from Karpenter's regression suite
(test/suites/regression/capacitybuffer_test.go): the suite's NodePool consolidating when
empty or underutilized after 0s, on 2-CPU instance types (kwok's c-2x, here m5.large and
c5.large) so that each 1-CPU buffer pod needs a node of its own; buffers of a PodTemplate
or of a Deployment resolve, launch their headroom, are refilled after real pods take it,
and let it go when deleted."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from nodewright.controllers.options import ControllerOptions
from tests.buffer.helpers import buffer, conditions, pod_template, status
from tests.harness import NODE_CLASS, World
from tests.regression_b.helpers import (
    claim_names,
    consistently,
    deployment,
    eventually,
    expect_no_disruptions,
    healthy_pods,
    initialized_nodes,
    suite_pool,
)

TWO_CPU = ("m5.large", "c5.large")
BUFFER_TEMPLATE = "buffer-template"
DEPLOYMENT_REF = {"apiGroup": "apps", "kind": "Deployment"}


def template(name: str = BUFFER_TEMPLATE, cpu: str = "1", memory: str = "512Mi",
             **extra: Any) -> dict[str, Any]:
    body = pod_template(name, cpu, **extra)
    body["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = memory
    return body


def pool(**changes: Any) -> dict[str, Any]:
    return suite_pool(types=TWO_CPU, consolidate_after="0s", **changes)


def new_world(**pool_changes: Any) -> World:
    """The Context's BeforeEach: NodeClass and NodePool, and no NodeClaim before a buffer."""
    world = World(options=ControllerOptions(capacity_buffer=True))
    world.apply(NODE_CLASS, pool(**pool_changes))
    consistently(world, lambda: _no_claims(world), 5)
    return world


def _no_claims(world: World) -> None:
    assert world.nodeclaims() == []


def expect_replicas(world: World, replicas: int, name: str = "headroom") -> None:
    """EventuallyExpectCapacityBufferReplicas: ReadyForProvisioning=True and the count."""
    eventually(world, lambda: conditions(world, name).get("ReadyForProvisioning", ("",))[0]
               == "True" and status(world, name).get("replicas") == replicas, timeout=30)


def expect_provisioned(world: World, name: str = "headroom", reason: str | None = None,
                       timeout: float = 120) -> None:
    def done() -> bool:
        found = conditions(world, name).get("Provisioning")
        return found is not None and found[0] == "True" and (reason is None
                                                             or found[1] == reason)
    eventually(world, done, timeout=timeout)


def from_template(replicas: int, name: str = "headroom", **spec: Any) -> dict[str, Any]:
    return buffer(name, podTemplateRef={"name": spec.pop("template", BUFFER_TEMPLATE)},
                  replicas=replicas, **spec)


def scalable(app: str, **spec: Any) -> dict[str, Any]:
    return buffer(scalableRef={**DEPLOYMENT_REF, "name": app}, **spec)


def scalable_app(name: str = "scalable-app", replicas: int = 10) -> dict[str, Any]:
    return deployment(name, replicas, requests={"cpu": "500m", "memory": "256Mi"})


def consumer(app: str) -> dict[str, Any]:
    return deployment(app, 1, requests={"cpu": "1", "memory": "512Mi"})


def test_a_pod_template_buffer_launches_its_headroom() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should provision
    capacity when a buffer with podTemplateRef is applied")."""
    world = new_world()
    world.apply(template(), from_template(
        3, provisioningStrategy="buffer.x-k8s.io/active-capacity"))
    expect_replicas(world, 3)
    eventually(world, lambda: len(world.nodeclaims()) >= 2)
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world, reason="FitsExistingCapacity")
    assert world.pods() == []  # its pods are virtual


def test_a_changed_pod_template_updates_the_buffers_generation() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should update buffer
    status when PodTemplate is updated")."""
    world = new_world()
    world.apply(template(), from_template(2))
    eventually(world, lambda: conditions(world).get("ReadyForProvisioning", ("",))[0]
               == "True", timeout=30)
    original = status(world)["podTemplateGeneration"]
    world.apply(template(cpu="2"))
    eventually(world, lambda: status(world)["podTemplateGeneration"] > original, timeout=60)


def test_a_deployment_buffer_by_percentage_is_provisioned() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should provision
    buffer capacity using scalableRef with percentage")."""
    world = new_world()
    world.apply(scalable_app())
    eventually(world, lambda: len(healthy_pods(world, {"app": "scalable-app"})) == 10,
               timeout=120)
    world.apply(scalable("scalable-app", percentage=20))
    expect_replicas(world, 2)  # 20% of 10
    expect_provisioned(world)


def test_a_deployment_buffer_with_fixed_replicas_is_provisioned() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should provision
    buffer capacity using scalableRef with fixed replicas")."""
    world = new_world()
    world.apply(scalable_app())
    eventually(world, lambda: len(healthy_pods(world, {"app": "scalable-app"})) == 10,
               timeout=120)
    world.apply(scalable("scalable-app", replicas=3))
    expect_replicas(world, 3)
    expect_provisioned(world)


def test_a_buffer_recovers_when_its_deployment_appears() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should recover when
    scalable ref is created after buffer")."""
    world = new_world()
    world.apply(scalable("scalable-app", replicas=2))
    eventually(world, lambda: conditions(world).get("ReadyForProvisioning")
               == ("False", "ScalableRefNotFound"), timeout=30)
    world.apply(scalable_app())
    expect_replicas(world, 2)


def consume_and_refill(app: str) -> None:
    world = new_world()
    world.apply(template(), from_template(2))
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world)
    before = len(world.nodeclaims())
    assert before >= 2
    world.apply(consumer(app))
    # The consumer starts on the headroom at once, long before a new node could be up.
    eventually(world, lambda: len(healthy_pods(world, {"app": app})) == 1, timeout=15)
    eventually(world, lambda: len(world.nodeclaims()) >= before + 1)
    expect_provisioned(world)


def test_consumers_use_the_headroom_and_it_is_refilled() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should allow consumer
    pods to use existing buffer capacity and then refill")."""
    consume_and_refill("consumer")


def test_the_headroom_is_refilled_after_it_is_consumed() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should refill buffer
    capacity after consumption")."""
    consume_and_refill("refill-consumer")


def test_nodes_holding_buffer_pods_are_not_consolidated_as_empty() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should not
    empty-consolidate nodes hosting buffer pods")."""
    world = new_world()
    world.apply(template(), from_template(2))
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world)
    expect_no_disruptions(world, len(initialized_nodes(world)), 60)


def test_buffer_nodes_are_consolidated_once_the_buffer_is_deleted() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should consolidate
    buffer nodes after buffer is deleted")."""
    world = new_world()
    world.apply(template(), from_template(2))
    eventually(world, lambda: len(world.nodeclaims()) >= 2)
    first = sorted(claim_names(world))[0]
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world)
    world.delete("CapacityBuffer", "headroom", "default")
    eventually(world, lambda: first not in claim_names(world))


def test_drift_replaces_buffer_nodes() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should allow drift to
    replace buffer nodes")."""
    world = new_world()
    world.apply(template(), from_template(2))
    eventually(world, lambda: len(world.nodeclaims()) >= 2)
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world)
    originals = claim_names(world)
    world.apply(pool(template_annotations={"drift-trigger": "true"}))

    def rolled() -> bool:
        return all(objects.is_deleting(c) for c in world.nodeclaims()
                   if objects.name(c) in originals)
    eventually(world, rolled, timeout=120)
    expect_provisioned(world)


def test_fewer_replicas_are_reflected_in_the_status() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should scale buffer
    down when replicas are reduced")."""
    world = new_world()
    world.apply(template(), from_template(3))
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world)
    world.apply(from_template(1))
    expect_replicas(world, 1)


def test_a_percentage_buffer_follows_its_deployment_scaling() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should handle
    scalableRef percentage update when deployment scales")."""
    world = new_world()
    world.apply(scalable_app("growing-app", 5), scalable("growing-app", percentage=20))
    expect_replicas(world, 1)  # 20% of 5
    world.scale("growing-app", 20)
    eventually(world, lambda: status(world).get("replicas") == 4, timeout=60)


def test_a_buffer_launches_no_more_than_the_nodepools_cpu_limit() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should not provision
    buffer capacity beyond NodePool CPU limit")."""
    world = new_world()
    world.apply(pool(limits={"cpu": "4"}))  # two 2-CPU nodes
    world.apply(template(), from_template(10))
    eventually(world, lambda: len(world.nodeclaims()) == 2)
    eventually(world, lambda: len(initialized_nodes(world)) == 2)

    def two() -> None:
        assert len(world.nodeclaims()) == 2
    consistently(world, two, 30)


def test_two_buffers_are_provisioned_independently() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should provision
    capacity independently for multiple buffers")."""
    world = new_world()
    world.apply(template(), template("small-buffer-template", "500m", "256Mi"),
                from_template(2, "buffer-a"),
                from_template(3, "buffer-b", template="small-buffer-template"))
    expect_replicas(world, 2, "buffer-a")
    expect_replicas(world, 3, "buffer-b")
    eventually(world, lambda: len(world.nodeclaims()) >= 2)
    eventually(world, lambda: len(initialized_nodes(world)) >= 2)
    expect_provisioned(world, "buffer-a")
    expect_provisioned(world, "buffer-b")


def test_buffers_created_and_deleted_quickly_leak_no_nodes() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should not leak nodes
    on rapid buffer create and delete")."""
    world = new_world()
    world.apply(template())
    world.apply(from_template(1, "seed"))
    eventually(world, lambda: len(world.nodeclaims()) >= 1)
    world.delete("CapacityBuffer", "seed", "default")
    for i in range(5):
        world.apply(from_template(2, f"rapid-buffer-{i}"))
        world.advance(2)
        world.delete("CapacityBuffer", f"rapid-buffer-{i}", "default")
    eventually(world, lambda: world.cluster.list("CapacityBuffer", "default") == [],
               timeout=30)
    eventually(world, lambda: world.nodeclaims() == [], timeout=120)


def test_a_buffer_pod_packs_next_to_a_real_pod() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should coexist with
    real pods on the same node")."""
    world = new_world()
    world.apply(deployment("coexist", 1, requests={"cpu": "100m", "memory": "128Mi"}))
    eventually(world, lambda: len(healthy_pods(world, {"app": "coexist"})) == 1,
               timeout=120)
    eventually(world, lambda: len(initialized_nodes(world)) == 1)
    world.apply(template(), from_template(1))
    expect_provisioned(world)

    def one() -> None:
        assert len(world.nodeclaims()) == 1
    consistently(world, one, 30)
    assert len(healthy_pods(world, {"app": "coexist"})) == 1


def test_a_pod_templates_node_selector_is_kept() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should respect
    nodeSelector from PodTemplate")."""
    world = new_world()
    world.apply(template("selector-template", nodeSelector={"kubernetes.io/os": "linux"}),
                from_template(1, template="selector-template"))
    eventually(world, lambda: len(world.nodeclaims()) >= 1)
    eventually(world, lambda: len(initialized_nodes(world)) >= 1)
    expect_provisioned(world)
    node = initialized_nodes(world)[0]
    assert objects.labels(node)["kubernetes.io/os"] == "linux"


def test_the_headroom_is_refilled_after_its_node_expires() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should refill buffer
    after node expiry")."""
    world = new_world(expireAfter="1m")
    world.apply(template(), from_template(1))
    eventually(world, lambda: len(world.nodeclaims()) >= 1)
    (original,) = claim_names(world)
    eventually(world, lambda: len(initialized_nodes(world)) >= 1)
    expect_provisioned(world)

    def expiring() -> bool:
        try:
            return objects.is_deleting(world.cluster.get("NodeClaim", original))
        except NotFoundError:
            return True
    eventually(world, expiring, timeout=180)
    expect_provisioned(world)
    assert claim_names(world) - {original}, "no new capacity for the buffer"


def test_raising_a_buffers_limits_grows_its_replicas() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should grow buffer
    replicas when limits are increased")."""
    world = new_world()
    world.apply(template(), buffer(podTemplateRef={"name": BUFFER_TEMPLATE},
                                   limits={"cpu": "2"}))
    expect_replicas(world, 2)  # 2 CPU / 1 CPU a pod
    eventually(world, lambda: len(world.nodeclaims()) >= 1)
    eventually(world, lambda: len(initialized_nodes(world)) >= 1)
    world.apply(buffer(podTemplateRef={"name": BUFFER_TEMPLATE}, limits={"cpu": "5"}))
    eventually(world, lambda: status(world).get("replicas") == 5, timeout=60)
    expect_provisioned(world)


ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchLabels": {"app": "spread-buffer"}},
    "topologyKey": "kubernetes.io/hostname"}]}}


def test_virtual_buffer_pods_keep_their_anti_affinity() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should respect pod
    anti-affinity between virtual buffer pods")."""
    world = new_world()
    world.apply(template("anti-affinity-template", labels={"app": "spread-buffer"},
                         affinity=ANTI_AFFINITY),
                from_template(3, template="anti-affinity-template"))
    expect_replicas(world, 3)
    eventually(world, lambda: len(world.nodeclaims()) == 3)
    eventually(world, lambda: len(initialized_nodes(world)) == 3)
    expect_provisioned(world, reason="FitsExistingCapacity")


def test_virtual_pods_of_a_deployment_keep_its_anti_affinity() -> None:
    """Karpenter test/suites/regression/capacitybuffer_test.go It("should respect pod
    anti-affinity between virtual buffer pods using scalableRef")."""
    world = new_world()
    world.apply(deployment("spread-deploy", 1, labels={"app": "spread-scalable"},
                           requests={"cpu": "1", "memory": "512Mi"},
                           spread_by_hostname=True))
    eventually(world, lambda: len(healthy_pods(world, {"app": "spread-scalable"})) == 1,
               timeout=120)
    world.apply(scalable("spread-deploy", replicas=3))
    expect_replicas(world, 3)
    # One node for the real pod and one for each of the three virtual pods.
    eventually(world, lambda: len(world.nodeclaims()) == 4)
    eventually(world, lambda: len(initialized_nodes(world)) == 4)
    expect_provisioned(world, reason="FitsExistingCapacity")
