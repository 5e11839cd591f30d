"""The NodeClaim lifecycle's finalizer and observed generations, and the DRA
initialization gate's cases that apply without DRA.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/suite_test.go
(Describe "Finalizer", Context "TerminationFinalizer"; Describe "DRA Initialization
Gating")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    get,
    linked_node,
    nodeclaim,
    status_of,
)
from tests.harness import World

FINALIZER = "karpenter.sh/termination"
ALLOCATABLE = {"cpu": "8", "memory": "80Mi", "pods": "110"}
CONDITIONS = ("Launched", "Registered", "Initialized", "Ready")


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_the_termination_finalizer_is_added_to_our_nodeclaims_only(managed: bool) -> None:
    """Its "should add the finalizer if it doesn't exist" and "shouldn't add the finalizer
    to NodeClaims not managed by this instance of Karpenter"."""
    world = bench()
    (claim,) = create(world, nodeclaim(managed=managed))
    world.advance(5)
    finalizers = get(world, claim["metadata"]["name"])["metadata"].get(  # type: ignore[index]
        "finalizers") or []
    assert (FINALIZER in finalizers) is managed


def initialized(world: World, claim: dict[str, Any]) -> str:
    (created,) = create(world, claim)
    world.advance(5)
    name = str(created["metadata"]["name"])
    linked_node(world, get(world, name) or {}, allocatable=ALLOCATABLE)
    world.advance(5)
    assert all(status_of(get(world, name), c) == "True" for c in CONDITIONS)
    return name


def observed(world: World, name: str) -> dict[str, tuple[str, int]]:
    claim = get(world, name)
    assert claim is not None
    return {c["type"]: (c["status"], c.get("observedGeneration"))
            for c in claim["status"]["conditions"]}


def test_conditions_are_at_the_latest_generation_when_finalizing() -> None:
    """It "should update status conditions to the latest generation when finalizing"."""
    world = bench()
    name = initialized(world, nodeclaim())
    world.cluster.patch("NodeClaim", name, {"metadata": {"finalizers": [FINALIZER, "test/hold"]}})
    world.cluster.delete("NodeClaim", name)
    assert world.run_until(
        lambda: status_of(get(world, name), "InstanceTerminating") == "True", timeout=300)
    generation = get(world, name)["metadata"]["generation"]  # type: ignore[index]
    conditions = observed(world, name)
    for kind in (*CONDITIONS, "InstanceTerminating"):
        assert conditions[kind] == ("True", generation), kind


def test_observed_generations_follow_a_new_generation() -> None:
    """It "should update observedGeneration if generation increases after all conditions
    are marked True" (the spec changed as the test's ExpectApplied does, under the CRD's
    immutability rule: the in-memory API server is told to take it)."""
    world = bench()
    name = initialized(world, nodeclaim(requests={"cpu": "2", "memory": "50Mi", "pods": "5"}))
    current = world.cluster.get("NodeClaim", name)
    before = current["metadata"]["generation"]
    taints = [{"key": "test", "value": "value", "effect": "NoSchedule"}]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("nodewright.cluster.memory.store.admit",
                      lambda info, new, old, subresource, version: new)
        world.cluster.update({**current, "spec": {**current["spec"], "taints": taints}})
    world.deliver()
    world.advance(5)
    generation = get(world, name)["metadata"]["generation"]  # type: ignore[index]
    assert generation == before + 1
    conditions = observed(world, name)
    for kind in CONDITIONS:
        assert conditions[kind] == ("True", generation), kind


@pytest.mark.parametrize("annotations", [
    None, {"karpenter.sh/requested-dra-drivers": "driver-a.example.com"}],
                         ids=["no-annotation", "gate-off"])
def test_without_dra_a_ready_nodeclaim_initializes(annotations: dict[str, str] | None
                                                   ) -> None:
    """Its "initializes a NodeClaim with no requested-dra-drivers annotation (d)" and
    "skips the gate when DRA is disabled (e)" (Nodewright runs as IGNORE_DRA_REQUESTS=true:
    the gate is always off)."""
    world = bench()
    initialized(world, nodeclaim(annotations=annotations))
