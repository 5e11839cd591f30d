"""Karpenter's NodePool controller suites, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/nodepool/{counter,hash,readiness,registrationhealth,validation}/
suite_test.go. Each story names its file and It.

Karpenter's five controllers are our NodePoolStatus (counter, validation, readiness,
registration health) and HashController (hash); the stories run them in the in-memory
cluster. A NodePool "not managed by this instance" is one whose nodeClassRef names
another provider's node class (Karpenter's test uses karpenter.test.sh/UnmanagedNodeClass):
nothing of it is written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.cluster import objects
from nodewright.cluster.api import Object
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodepool.hash_annotations import HashController
from nodewright.controllers.nodepool.status import NodePoolStatus
from nodewright.controllers.options import ControllerOptions
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.expectations import condition
from tests.harness import NODE_CLASS, World, documents, node_pool
from tests.static.helpers import static_pool

BASE = {"cpu": "0", "ephemeral-storage": "0", "memory": "0", "nodes": "0", "pods": "0"}
COUNTED = ("cpu", "ephemeral-storage", "memory", "pods")


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


def pool(name: str = "default", **template_spec: Any) -> dict[str, Any]:
    return node_pool(name, labels={"type": name}, disruption={"consolidateAfter": "Never"},
                     **template_spec)


def the_pool(world: World, name: str = "default") -> Object:
    return world.cluster.get("NodePool", name)


def seeds(pool_name: str, count: int, start: int = 0) -> list[dict[str, Any]]:
    """Pods that each need a node of their own (a host port) in the pool."""
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{pool_name}-seed-{i}", "namespace": "default"},
             "spec": {"nodeSelector": {"type": pool_name},
                      "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
                      "containers": [{"name": "a", "image": "a",
                                      "ports": [{"containerPort": 80, "hostPort": 80}],
                                      "resources": {"requests": {"cpu": "100m"}}}]}}
            for i in range(start, start + count)]


def nodes_counted(world: World, name: str = "default") -> int:
    return int(the_pool(world, name).get("status", {}).get("nodes", -1))


def capacity_of(obj: Object) -> dict[str, str]:
    capacity = obj.get("status", {}).get("capacity") or {}
    return {k: str(capacity[k]) for k in COUNTED}


def counted(world: World, name: str = "default") -> dict[str, str]:
    resources = the_pool(world, name).get("status", {}).get("resources") or {}
    return {k: str(v) for k, v in resources.items()}


def foreign(world: World) -> Object:
    """A NodePool on another provider's node class, given time to be reconciled."""
    body = pool("foreign")
    body["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default"}
    world.apply(NODE_CLASS, body)
    world.advance(30)
    return the_pool(world, "foreign")


# -- counter --------------------------------------------------------------------------------


def test_counter_leaves_a_nodepool_of_another_provider_alone(world: World) -> None:
    """counter/suite_test.go It("should ignore NodePools which aren't managed by this
    instance of Karpenter")."""
    assert foreign(world).get("status", {}).get("resources") is None


def test_a_nodepool_without_nodes_counts_zero_of_each_well_known_resource(
        world: World) -> None:
    """counter/suite_test.go It("should set well-known resource to zero when no nodes exist
    in the cluster")."""
    world.apply(NODE_CLASS, pool())
    world.advance(10)
    assert counted(world) == BASE


def test_the_count_follows_the_nodeclaim_then_the_node_once_it_initializes(
        world: World) -> None:
    """counter/suite_test.go It("should set the counter from the nodeClaim and then to the
    node when it initializes")."""
    world.apply(NODE_CLASS, pool(), *seeds("default", 1))
    seen_from_claim: list[bool] = []

    def registered() -> bool:
        claims = world.nodeclaims()
        if claims and claims[0].get("status", {}).get("capacity") and not world.nodes():
            seen_from_claim.append(
                {k: counted(world).get(k) for k in COUNTED} == capacity_of(claims[0])
                and counted(world).get("nodes") == "1")
        return bool(world.nodes()) and objects.labels(world.nodes()[0]).get(
            "karpenter.sh/initialized") == "true"

    assert world.run_until(registered, timeout=300, step=1)
    assert seen_from_claim and all(seen_from_claim[1:]), "the claim's capacity was not counted"
    world.advance(5)
    (node,) = world.nodes()
    assert {k: counted(world)[k] for k in COUNTED} == capacity_of(node)
    assert counted(world)["nodes"] == "1"


def test_a_new_node_adds_its_capacity(world: World) -> None:
    """counter/suite_test.go It("should increase the counter when new nodes are created")."""
    world.apply(NODE_CLASS, pool(), *seeds("default", 1))
    assert world.settle()
    (node,) = world.nodes()
    assert {k: counted(world)[k] for k in COUNTED} == capacity_of(node)
    assert counted(world)["nodes"] == "1"


def test_a_deleted_node_takes_its_capacity_away(world: World) -> None:
    """counter/suite_test.go It("should decrease the counter when an existing node is
    deleted")."""
    world.apply(NODE_CLASS, pool(), *seeds("default", 2))
    assert world.settle()
    assert counted(world)["nodes"] == "2"
    first = min(world.nodes(), key=objects.name)
    for pod in world.pods():
        if pod["spec"].get("nodeName") == objects.name(first):
            world.delete("Pod", objects.name(pod), "default")
    world.delete("Node", objects.name(first))
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=300, step=1)
    world.advance(5)
    (left,) = world.nodes()
    assert {k: counted(world)[k] for k in COUNTED} == capacity_of(left)
    assert counted(world)["nodes"] == "1"


def test_deleting_every_node_counts_zero_again(world: World) -> None:
    """counter/suite_test.go It("should zero out the counter when all nodes are deleted")."""
    world.apply(NODE_CLASS, pool(), *seeds("default", 1))
    assert world.settle()
    assert counted(world)["nodes"] == "1"
    world.delete("Pod", "default-seed-0", "default")
    world.delete("Node", objects.name(world.nodes()[0]))
    assert world.run_until(lambda: not world.nodes(), timeout=300, step=1)
    world.advance(5)
    assert counted(world) == BASE


def test_status_nodes_is_zero_without_nodes(world: World) -> None:
    """counter/suite_test.go Context("Status.Nodes Field") It("should set Status.Nodes to
    zero when no nodes exist")."""
    world.apply(NODE_CLASS, pool())
    world.advance(10)
    assert nodes_counted(world) == 0


def test_status_nodes_is_two_with_two_nodes(world: World) -> None:
    """counter/suite_test.go It("should set Status.Nodes to 2 when two nodes exist")."""
    world.apply(NODE_CLASS, pool(), *seeds("default", 2))
    assert world.settle()
    assert nodes_counted(world) == 2


def test_status_nodes_follows_nodes_added_and_removed(world: World) -> None:
    """counter/suite_test.go It("should update Status.Nodes when nodes are added and
    removed")."""
    world.apply(NODE_CLASS, pool())
    world.advance(10)
    assert nodes_counted(world) == 0
    seen = []
    for count in (1, 2):
        world.apply(*seeds("default", 1, start=count - 1))
        assert world.settle()
        seen.append(nodes_counted(world))
    for pod in world.pods():
        world.delete("Pod", objects.name(pod), "default")
    for node in sorted(world.nodes(), key=objects.name):
        world.delete("Node", objects.name(node))
        assert world.run_until(lambda n=node: objects.name(n) not in
                               {objects.name(x) for x in world.nodes()}, timeout=300, step=1)
        world.advance(5)
        seen.append(nodes_counted(world))
    assert seen == [1, 2, 1, 0]


def test_each_nodepool_static_or_not_counts_its_own_nodes() -> None:
    """counter/suite_test.go It("should handle multiple nodepools including static with
    different node counts")."""
    world = World(options=ControllerOptions(static_capacity=True))
    world.apply(NODE_CLASS, pool(), static_pool(replicas=2), *seeds("default", 1))
    assert world.settle()
    assert nodes_counted(world) == 1
    assert nodes_counted(world, "static") == 2


def test_a_static_nodepool_counts_its_nodes_not_its_replicas() -> None:
    """counter/suite_test.go It("should handle static nodepools with replicas correctly"):
    three replicas wanted, a node limit of two lets two exist."""
    world = World(options=ControllerOptions(static_capacity=True))
    world.apply(NODE_CLASS, static_pool(replicas=3, node_limit=2))
    assert world.settle()
    static = the_pool(world, "static")
    assert static["status"]["nodes"] == 2
    assert static["spec"]["replicas"] == 3


# -- hash -----------------------------------------------------------------------------------


HASHED_TEMPLATE = {
    "expireAfter": "5m", "terminationGracePeriod": "5m",
    "taints": [{"key": "key", "effect": "NoExecute"}],
    # Karpenter's test repeats the taint as a startup taint; our validation (as Karpenter's
    # NodePool validation controller) refuses that pair, and we hash only valid NodePools.
    "startupTaints": [{"key": "startup-key", "effect": "NoExecute"}],
}


def hashed_pool(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    body = pool(**HASHED_TEMPLATE)
    body["spec"]["template"]["metadata"] = {
        "labels": {"type": "default", "keyLabel": "valueLabel"},
        "annotations": {"keyAnnotation": "valueAnnotation",
                        "keyAnnotation2": "valueAnnotation2"}}
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


def hash_of(world: World) -> str | None:
    return objects.annotations(the_pool(world)).get(hashes.NODEPOOL_HASH)


def test_hash_leaves_a_nodepool_of_another_provider_alone(world: World) -> None:
    """hash/suite_test.go It("should ignore NodePools which aren't managed by this instance
    of Karpenter")."""
    assert hashes.NODEPOOL_HASH not in objects.annotations(foreign(world))


def test_a_static_field_change_changes_the_hash(world: World) -> None:
    """hash/suite_test.go It("should update the drift hash when NodePool static field is
    updated")."""
    world.apply(NODE_CLASS, hashed_pool())
    world.advance(5)
    first = hash_of(world)
    assert first
    body = hashed_pool()
    body["spec"]["template"]["metadata"]["labels"] = {"type": "default",
                                                      "keyLabeltest": "valueLabeltest"}
    world.apply(body)
    world.advance(5)
    assert hash_of(world) not in (None, first)


def test_a_behaviour_field_change_keeps_the_hash(world: World) -> None:
    """hash/suite_test.go It("should not update the drift hash when NodePool behavior field
    is updated"): limits, consolidation, requirements and weight."""
    world.apply(NODE_CLASS, hashed_pool())
    world.advance(5)
    first = hash_of(world)
    body = hashed_pool()
    body["spec"]["limits"] = {"cpu": "16"}
    body["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    body["spec"]["template"]["spec"]["requirements"] = [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test"]}]
    body["spec"]["weight"] = 80
    world.apply(body)
    world.advance(5)
    assert the_pool(world)["metadata"]["generation"] == 2
    assert hash_of(world) == first


def test_a_hash_of_another_version_is_replaced_with_ours(world: World) -> None:
    """hash/suite_test.go It("should update nodepool hash version when the nodepool hash
    version is out of sync with the controller hash version")."""
    world.apply(NODE_CLASS, hashed_pool({hashes.NODEPOOL_HASH: "abceduefed",
                                         hashes.NODEPOOL_HASH_VERSION: "test"}))
    world.advance(5)
    annotations = objects.annotations(the_pool(world))
    assert annotations[hashes.NODEPOOL_HASH] not in ("abceduefed", None)
    assert annotations[hashes.NODEPOOL_HASH_VERSION] == hashes.NODEPOOL_HASH_VERSION_VALUE


def launched_with_old_hash(world: World, claim_version: str) -> tuple[str, str]:
    """A launched node whose NodeClaim, and then its NodePool, carry an old hash: the
    NodePool under `test`, the NodeClaim under `claim_version`."""
    world.apply(NODE_CLASS, hashed_pool(), *seeds("default", 1))
    assert world.settle()
    (claim,) = world.nodeclaims()
    name = objects.name(claim)
    world.cluster.patch("NodeClaim", name, {"metadata": {"annotations": {
        hashes.NODEPOOL_HASH: "123456", hashes.NODEPOOL_HASH_VERSION: claim_version}}})
    world.cluster.patch("NodePool", "default", {"metadata": {"annotations": {
        hashes.NODEPOOL_HASH: "abceduefed", hashes.NODEPOOL_HASH_VERSION: "test"}}})
    world.advance(5)
    return name, str(hash_of(world))


def test_nodeclaims_of_another_hash_version_are_restamped(world: World) -> None:
    """hash/suite_test.go It("should update nodepool hash versions on all nodeclaims when
    the hash versions don't match the controller hash version")."""
    name, current = launched_with_old_hash(world, "test")
    annotations = objects.annotations(world.cluster.get("NodeClaim", name))
    assert annotations[hashes.NODEPOOL_HASH] == current
    assert annotations[hashes.NODEPOOL_HASH_VERSION] == hashes.NODEPOOL_HASH_VERSION_VALUE


def test_nodeclaims_of_our_hash_version_keep_their_hash(world: World) -> None:
    """hash/suite_test.go It("should not update nodepool hash on all nodeclaims when the
    hash versions match the controller hash version")."""
    name, _ = launched_with_old_hash(world, hashes.NODEPOOL_HASH_VERSION_VALUE)
    annotations = objects.annotations(world.cluster.get("NodeClaim", name))
    assert annotations[hashes.NODEPOOL_HASH] == "123456"


def test_a_drifted_nodeclaim_keeps_its_hash() -> None:
    """hash/suite_test.go It("should not update nodepool hash on the nodeclaim if it's
    drifted"): its version is brought up to date, its hash is not. Told on the hash
    controller alone, as Karpenter's: in a running cluster the drift controller would
    clear a Drifted it cannot judge (another hash version) at the same moment."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    old = {hashes.NODEPOOL_HASH: "abceduefed", hashes.NODEPOOL_HASH_VERSION: "test"}
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {
        "name": "drifted", "labels": {"karpenter.sh/nodepool": "default"},
        "annotations": {hashes.NODEPOOL_HASH: "123456",
                        hashes.NODEPOOL_HASH_VERSION: "test"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}, "requirements": []}}
    for body in (*documents(NODE_CLASS), hashed_pool(old), claim):
        created = cluster.create(body)
        if created["kind"] == "NodeClaim":
            created = cluster.patch("NodeClaim", "drifted", {"status": {"conditions": [
                {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
                 "message": "", "lastTransitionTime": "2026-01-05T00:00:00Z"}]}},
                subresource="status")
        state.observe(WatchEvent("ADDED", created))
    HashController(cluster, state).reconcile("NodePool/default")
    annotations = objects.annotations(cluster.get("NodeClaim", "drifted"))
    assert annotations[hashes.NODEPOOL_HASH] == "123456"
    assert annotations[hashes.NODEPOOL_HASH_VERSION] == hashes.NODEPOOL_HASH_VERSION_VALUE
    pool_annotations = objects.annotations(cluster.get("NodePool", "default"))
    assert pool_annotations[hashes.NODEPOOL_HASH_VERSION] == hashes.NODEPOOL_HASH_VERSION_VALUE


# -- readiness ------------------------------------------------------------------------------


def test_readiness_leaves_a_nodepool_of_another_provider_alone(world: World) -> None:
    """readiness/suite_test.go It("should ignore NodePools which aren't managed by this
    instance of Karpenter")."""
    assert condition(foreign(world), "Ready") is None


def test_a_nodepool_without_its_node_class_is_not_ready(world: World) -> None:
    """readiness/suite_test.go It("should have status condition on nodePool as not ready
    when nodeClass does not exist")."""
    world.apply(pool())
    world.advance(5)
    assert condition(the_pool(world), "Ready") == "False"


def readiness(node_class_status: dict[str, Any]) -> Object:
    """NodePoolStatus alone, on an API server and a cluster state fed by hand (no node
    class controller rewrites the node class's status): the NodePool it writes."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    for body in (*documents(NODE_CLASS), pool()):
        created = cluster.create(body)
        if created["kind"] == "EC2NodeClass":
            created = cluster.patch("EC2NodeClass", "default", {"status": node_class_status},
                                    subresource="status")
        state.observe(WatchEvent("ADDED", created))
    NodePoolStatus(cluster, clock, state).reconcile("default")
    return cluster.get("NodePool", "default")


def ready_condition(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"conditions": [{"type": "Ready", "lastTransitionTime": "2026-01-05T00:00:00Z",
                            **c} for c in conditions]}


def test_a_nodepool_on_a_ready_node_class_is_ready() -> None:
    """readiness/suite_test.go It("should have status condition on nodePool as ready if
    nodeClass is ready")."""
    written = readiness(ready_condition([{"status": "True", "reason": "Ready",
                                          "message": ""}]))
    assert condition(written, "NodeClassReady") == "True"
    assert condition(written, "Ready") == "True"


def test_a_nodepool_on_a_node_class_not_ready_is_not_ready() -> None:
    """readiness/suite_test.go It("should have status condition on nodePool as not ready if
    nodeClass is not ready"): the NodePool carries the node class's reason and message."""
    written = readiness(ready_condition([{"status": "False", "reason": "reason",
                                          "message": "message"}]))
    assert condition(written, "Ready") == "False"
    ready = [c for c in written["status"]["conditions"] if c["type"] == "NodeClassReady"]
    assert [(c["reason"], c["message"]) for c in ready] == [("reason", "message")]


def test_a_nodepool_on_a_node_class_without_conditions_is_not_ready() -> None:
    """readiness/suite_test.go It("should have status condition on nodePool as not ready if
    nodeClass does not have status conditions")."""
    written = readiness({"conditions": []})
    assert condition(written, "Ready") == "False"
    ready = [c for c in written["status"]["conditions"] if c["type"] == "NodeClassReady"]
    assert [c["reason"] for c in ready] == ["NodeClassReadinessUnknown"]


def test_a_nodepool_on_a_terminating_node_class_is_not_ready(world: World) -> None:
    """readiness/suite_test.go It("should mark NodeClassReady status condition on nodePool
    as NotReady if nodeClass is terminating")."""
    world.apply(NODE_CLASS, pool())
    world.advance(5)
    world.cluster.patch("EC2NodeClass", "default",
                        {"metadata": {"finalizers": ["test.karpenter.sh/keep"]}})
    world.delete("EC2NodeClass", "default")
    world.advance(5)
    assert condition(the_pool(world), "Ready") == "False"
    ready = [c for c in the_pool(world)["status"]["conditions"] if c["type"] == "NodeClassReady"]
    assert [c["reason"] for c in ready] == ["NodeClassTerminating"]


# -- registrationhealth ---------------------------------------------------------------------


HEALTHY = "NodeRegistrationHealthy"


def test_registration_health_leaves_a_nodepool_of_another_provider_alone(
        world: World) -> None:
    """registrationhealth/suite_test.go It("should ignore setting NodeRegistrationHealthy
    status condition on NodePools which aren't managed by this instance of Karpenter")."""
    assert condition(foreign(world), HEALTHY) is None


def test_no_registration_health_without_the_node_class(world: World) -> None:
    """registrationhealth/suite_test.go It("should not set NodeRegistrationHealthy status
    condition on nodePool when nodeClass does not exist")."""
    world.apply(pool())
    world.advance(5)
    assert condition(the_pool(world), HEALTHY) is None


def with_health(world: World, status: str) -> Object:
    """A NodePool whose NodeRegistrationHealthy says `status` for the current generations."""
    world.apply(NODE_CLASS, pool())
    world.advance(5)
    current = the_pool(world)
    conditions = [c for c in current["status"]["conditions"] if c["type"] != HEALTHY]
    conditions.append({"type": HEALTHY, "status": status, "reason": "unhealthy"
                       if status == "False" else "NodeRegistrationHealthy", "message": "",
                       "observedGeneration": current["metadata"]["generation"],
                       "lastTransitionTime": "2026-01-05T00:00:00Z"})
    world.cluster.patch("NodePool", "default", {"status": {"conditions": conditions}},
                        subresource="status")
    world.restart_controllers()  # a fresh buffer, read back from the condition
    world.advance(5)
    return the_pool(world)


def test_a_node_class_change_resets_registration_health(world: World) -> None:
    """registrationhealth/suite_test.go It("should set NodeRegistrationHealthy status
    condition on nodePool as Unknown and reset the NodeRegistrationHealthBuffer if the
    nodeClass observed generation doesn't match with that on nodePool")."""
    with_health(world, "False")
    node_class = world.cluster.get("EC2NodeClass", "default")
    node_class["spec"]["tags"] = {"keyTag-1": "valueTag-1"}
    world.apply(node_class)
    world.advance(5)
    current = the_pool(world)
    assert condition(current, HEALTHY) == "Unknown"
    assert current["status"]["nodeClassObservedGeneration"] == 2
    health = world.controllers.registration_health
    assert health is not None
    assert health.status(objects.uid(current)).name == "UNKNOWN"


def test_a_nodepool_change_resets_registration_health(world: World) -> None:
    """registrationhealth/suite_test.go It("should set NodeRegistrationHealthy status
    condition on nodePool as Unknown if the nodePool is updated")."""
    with_health(world, "False")
    body = pool()
    body["spec"]["limits"] = {"cpu": "14"}
    world.apply(body)
    world.advance(5)
    current = the_pool(world)
    assert condition(current, HEALTHY) == "Unknown"
    health = world.controllers.registration_health
    assert health is not None
    assert health.status(objects.uid(current)).name == "UNKNOWN"


@pytest.mark.parametrize(("status", "health_name"), [
    pytest.param("True", "HEALTHY", id="true"),
    pytest.param("False", "UNHEALTHY", id="false"),
])
def test_a_settled_registration_health_is_kept(world: World, status: str,
                                              health_name: str) -> None:
    """registrationhealth/suite_test.go It("should not set NodeRegistrationHealthy status
    condition on nodePool as Unknown if it is already set to true") and It("... if it is
    already set to false")."""
    current = with_health(world, status)
    assert condition(current, HEALTHY) == status
    health = world.controllers.registration_health
    assert health is not None
    assert health.status(objects.uid(current)).name == health_name


# -- validation -----------------------------------------------------------------------------


def test_validation_leaves_a_nodepool_of_another_provider_alone(world: World) -> None:
    """validation/suite_test.go It("should ignore NodePools which aren't managed by this
    instance of Karpenter")."""
    assert condition(foreign(world), "ValidationSucceeded") is None


def test_a_valid_nodepool_is_validation_succeeded(world: World) -> None:
    """validation/suite_test.go It("should set the NodePoolValidationSucceeded status
    condition to true if nodePool healthy checks succeed")."""
    world.apply(NODE_CLASS, pool())
    world.advance(5)
    assert condition(the_pool(world), "ValidationSucceeded") == "True"
