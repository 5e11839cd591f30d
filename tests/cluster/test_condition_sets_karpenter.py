"""Status conditions as operatorpkg's condition sets write them (awslabs/operatorpkg
status/condition_set.go, the version Karpenter v1.14.1 builds with: `For(obj,
WithClock(...))`), seen where a user sees them: the order `kubectl describe` lists them
in, and a NodeClaim's Ready while it is being deleted.

operatorpkg's Set appends the condition it changed, orders the list by last transition
(oldest first) with the root condition last, and on an object being deleted stamps every
condition with the object's generation (the API server moved it on when it set the
deletionTimestamp), so Ready keeps following dependents that were decided before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.conditions import NODECLAIM, NODEPOOL, remove_condition, set_condition
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.controllers.nodeclaim_bench import bench, get, nodeclaim, status_of

START = datetime(2026, 1, 5, tzinfo=UTC)
FINALIZER = "karpenter.sh/termination"


def types(obj: dict[str, Any]) -> list[str]:
    return [str(c["type"]) for c in objects.conditions(obj)]


def new_claim() -> dict[str, Any]:
    claim: dict[str, Any] = {"kind": "NodeClaim", "metadata": {
        "name": "default-abc", "generation": 1, "creationTimestamp": "2026-01-05T00:00:00Z"}}
    NODECLAIM.initialize(claim, START)
    return claim


def test_a_nodeclaims_conditions_read_as_its_timeline_with_ready_last() -> None:
    claim = new_claim()
    assert types(claim) == ["Launched", "Registered", "Initialized", "Ready"]
    for seconds, kind in ((5, "Launched"), (40, "Registered"), (70, "Initialized")):
        NODECLAIM.set_true(claim, kind, START + timedelta(seconds=seconds))
    set_condition(claim, "Consolidatable", "True", START + timedelta(minutes=10))
    assert types(claim) == ["Launched", "Registered", "Initialized", "Consolidatable",
                            "Ready"]
    # A condition that changes moves to its new place in the timeline.
    NODECLAIM.set_unknown(claim, "Launched", START + timedelta(minutes=20), "LaunchFailed")
    assert types(claim) == ["Registered", "Initialized", "Consolidatable", "Launched",
                            "Ready"]


def test_a_condition_rewritten_with_its_status_unchanged_keeps_its_place() -> None:
    claim = new_claim()
    NODECLAIM.set_true(claim, "Launched", START + timedelta(seconds=5))
    NODECLAIM.set_true(claim, "Registered", START + timedelta(seconds=40))
    # A new reason, the same status: the transition time holds, and so does the order.
    NODECLAIM.set_true(claim, "Launched", START + timedelta(seconds=90), reason="Other")
    assert types(claim) == ["Initialized", "Launched", "Registered", "Ready"]


def test_removing_a_condition_orders_the_rest_by_type_as_operatorpkgs_clear() -> None:
    claim = new_claim()
    set_condition(claim, "Drifted", "True", START + timedelta(minutes=1), "NodePoolDrifted")
    assert remove_condition(claim, "Drifted")
    assert types(claim) == ["Initialized", "Launched", "Ready", "Registered"]


def test_a_nodepools_ready_comes_after_its_dependents() -> None:
    pool: dict[str, Any] = {"kind": "NodePool", "metadata": {
        "name": "default", "generation": 1, "creationTimestamp": "2026-01-05T00:00:00Z"}}
    NODEPOOL.initialize(pool, START)
    NODEPOOL.set_true(pool, "ValidationSucceeded", START + timedelta(seconds=1))
    NODEPOOL.set_true(pool, "NodeClassReady", START + timedelta(seconds=2))
    NODEPOOL.set_unknown(pool, "NodeRegistrationHealthy", START + timedelta(seconds=2),
                         "AwaitingReconciliation", "object is awaiting reconciliation")
    assert types(pool) == ["ValidationSucceeded", "NodeClassReady",
                           "NodeRegistrationHealthy", "Ready"]


def test_a_capacity_buffers_conditions_stay_where_they_were_written() -> None:
    """Kubernetes' SetStatusCondition (Karpenter's CapacityBuffer): in place, new ones
    appended."""
    buffer: dict[str, Any] = {"kind": "CapacityBuffer", "metadata": {"generation": 1}}
    set_condition(buffer, "ReadyForProvisioning", "True", START)
    set_condition(buffer, "Provisioning", "False", START + timedelta(seconds=5),
                  "RequiresNewCapacity")
    set_condition(buffer, "ReadyForProvisioning", "False", START + timedelta(seconds=9),
                  "PodTemplateNotFound")
    assert types(buffer) == ["ReadyForProvisioning", "Provisioning"]


def test_a_deleting_nodeclaim_stays_ready_when_its_instance_starts_terminating() -> None:
    """The API server moved the generation on with the deletionTimestamp; operatorpkg's
    Set stamps every condition with it, so Ready does not fall to Unknown
    (ReconcilingDependents) because Launched, Registered and Initialized were decided
    for the generation before."""
    claim = new_claim()
    for kind in ("Launched", "Registered", "Initialized"):
        NODECLAIM.set_true(claim, kind, START + timedelta(seconds=5))
    claim["metadata"] = {**claim["metadata"], "generation": 2,
                         "deletionTimestamp": "2026-01-05T01:00:00Z"}
    assert NODECLAIM.set_true(claim, "InstanceTerminating", START + timedelta(hours=1))
    ready = objects.condition(claim, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("True", "Ready")
    assert {c["type"]: c["observedGeneration"] for c in objects.conditions(claim)} == {
        "Launched": 2, "Registered": 2, "Initialized": 2, "InstanceTerminating": 2,
        "Ready": 2}


def test_an_object_not_being_deleted_keeps_its_other_conditions_generations() -> None:
    claim = new_claim()
    for kind in ("Launched", "Registered", "Initialized"):
        NODECLAIM.set_true(claim, kind, START + timedelta(seconds=5))
    claim["metadata"] = {**claim["metadata"], "generation": 2}
    NODECLAIM.set_true(claim, "Launched", START + timedelta(minutes=1))
    generations = {c["type"]: c["observedGeneration"] for c in objects.conditions(claim)}
    assert generations["Launched"] == 2 and generations["Registered"] == 1
    ready = objects.condition(claim, "Ready")
    assert ready is not None and ready["reason"] == "ReconcilingDependents"


def test_the_api_server_moves_the_generation_on_when_deletion_starts() -> None:
    cluster = InMemoryCluster(VirtualClock(START))
    cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": "held", "finalizers": ["test/hold"]},
                    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                              "kind": "EC2NodeClass", "name": "default"},
                             "requirements": []}})
    cluster.delete("NodeClaim", "held")
    assert cluster.get("NodeClaim", "held")["metadata"]["generation"] == 2
    cluster.delete("NodeClaim", "held")  # asked again: no second move
    assert cluster.get("NodeClaim", "held")["metadata"]["generation"] == 2


def test_a_nodeclaim_being_finalized_is_still_ready_as_its_instance_terminates() -> None:
    """The story: a launched, registered and initialized NodeClaim is deleted; while the
    instance terminates (a finalizer of the test's holds it) kubectl shows Ready=True and
    InstanceTerminating=True, every condition at the deleted object's generation."""
    world = bench(joins=True)
    world.apply(nodeclaim("story"))
    assert world.run_until(lambda: status_of(get(world, "story"), "Ready") == "True",
                           timeout=900)
    current = world.cluster.get("NodeClaim", "story")
    world.cluster.patch("NodeClaim", "story", {"metadata": {
        "finalizers": [*current["metadata"].get("finalizers", []), "test/hold"]}})
    world.cluster.delete("NodeClaim", "story")
    assert world.run_until(
        lambda: status_of(get(world, "story"), "InstanceTerminating") == "True", timeout=300)
    claim = get(world, "story")
    assert claim is not None
    generation = claim["metadata"]["generation"]
    assert generation == current["metadata"]["generation"] + 1
    assert status_of(claim, "Ready") == "True"
    assert {c.get("observedGeneration") for c in objects.conditions(claim)} == {generation}
