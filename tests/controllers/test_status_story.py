"""Stories of what Nodewright writes in NodeClaim and NodePool status, as Karpenter does:
lastPodEventTime and the consolidateAfter timer it starts, NodeRegistrationHealthy when a
pool's nodes never register (and how it recovers), NodeClassReady's reasons."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from nodewright.cloud.provider import CloudProviderError
from nodewright.cloud.sim import SimSettings
from nodewright.controllers.common.registration_health import Health
from nodewright.runtime.clock import format_time, parse_time
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import nodepool_with
from tests.harness import World

HEALTHY = "NodeRegistrationHealthy"
NEVER_REGISTERS = SimSettings(registration_delay=24 * 3600.0)


def get_condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind),
                None)


def status_of(obj: dict[str, Any], kind: str) -> str | None:
    found = get_condition(obj, kind)
    return None if found is None else str(found["status"])


def the_claim(world: World) -> dict[str, Any]:
    [claim] = world.nodeclaims()
    return claim


def last_pod_event(world: World) -> datetime | None:
    recorded = the_claim(world).get("status", {}).get("lastPodEventTime")
    return parse_time(recorded) if recorded else None


def the_pool(world: World) -> dict[str, Any]:
    return world.cluster.get("NodePool", "default")


# -- lastPodEventTime and consolidateAfter ---------------------------------------------


def test_a_pod_binding_to_the_node_records_the_time_on_its_nodeclaim() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 1)
    assert world.settle()
    [pod] = world.running_pods()
    scheduled = get_condition(pod, "PodScheduled")
    assert scheduled is not None
    # The DaemonSet pods bound earlier, when the node joined; they do not count.
    assert the_claim(world)["status"]["lastPodEventTime"] == scheduled["lastTransitionTime"]

    world.scale("inflate", 2)
    assert world.run_until(lambda: len(world.running_pods()) == 2, timeout=60)
    second = max(scheduled_at(p) for p in world.running_pods())
    assert last_pod_event(world) == second

    # A DaemonSet pod replaced on the node is no pod event either.
    world.advance(60)
    [daemon_pod, *_] = world.pods("kube-system")
    world.delete("Pod", daemon_pod["metadata"]["name"], "kube-system")
    assert world.settle()
    assert len(world.running_pods("kube-system")) == 2
    assert last_pod_event(world) == second
    expect_no_controller_errors(world)


def scheduled_at(pod: dict[str, Any]) -> datetime:
    scheduled = get_condition(pod, "PodScheduled")
    assert scheduled is not None
    return parse_time(str(scheduled["lastTransitionTime"]))


def test_pod_events_within_ten_seconds_of_the_recorded_one_are_not_written() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 3)
    assert world.settle()
    world.scale("inflate", 2)
    removed = world.clock.now()
    world.advance(1)
    assert last_pod_event(world) == removed

    world.advance(4)
    world.scale("inflate", 1)
    world.advance(1)
    assert last_pod_event(world) == removed, "an event 5 s after the recorded one was written"

    world.advance(10)
    world.scale("inflate", 0)
    emptied = world.clock.now()
    world.advance(1)
    assert last_pod_event(world) == emptied
    expect_no_controller_errors(world)


def test_consolidate_after_counts_from_the_last_pod_event() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "2m"}))
    world.scale("inflate", 5)
    assert world.settle(quiet=150)
    assert status_of(the_claim(world), "Consolidatable") == "True"

    world.scale("inflate", 4)
    removed = world.clock.now()
    world.advance(1)
    assert last_pod_event(world) == removed
    assert status_of(the_claim(world), "Consolidatable") is None, "still consolidatable"

    world.advance(115)
    assert status_of(the_claim(world), "Consolidatable") is None, "consolidatable too early"
    world.advance(10)
    consolidatable = get_condition(the_claim(world), "Consolidatable")
    assert consolidatable is not None and consolidatable["status"] == "True"
    assert consolidatable["lastTransitionTime"] == format_time(removed + timedelta(minutes=2))
    assert consolidatable["observedGeneration"] == the_claim(world)["metadata"]["generation"]
    expect_no_controller_errors(world)


# -- NodeRegistrationHealthy -----------------------------------------------------------


def test_a_nodepool_whose_nodes_never_register_becomes_registration_unhealthy() -> None:
    world = World(sim=NEVER_REGISTERS)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(60)
    pool = the_pool(world)
    healthy = get_condition(pool, HEALTHY)
    assert healthy is not None and healthy["status"] == "Unknown"
    assert healthy["reason"] == "AwaitingReconciliation"
    assert healthy["observedGeneration"] == pool["metadata"]["generation"]
    first = the_claim(world)["metadata"]["name"]

    # One NodeClaim of four failing is not enough.
    assert world.run_until(lambda: first not in {c["metadata"]["name"]
                                                 for c in world.nodeclaims()}, timeout=1200)
    world.advance(5)
    assert status_of(the_pool(world), HEALTHY) == "Unknown"

    # The second is.
    assert world.run_until(lambda: status_of(the_pool(world), HEALTHY) == "False",
                           timeout=1200)
    healthy = get_condition(the_pool(world), HEALTHY)
    assert healthy is not None
    assert (healthy["reason"], healthy["message"]) == (
        "RegistrationFailed", "Failed to register node")
    # Not one of Ready's dependents: the pool still provisions.
    assert status_of(the_pool(world), "Ready") == "True"
    world.advance(60)
    assert world.nodeclaims(), "the pool stopped provisioning"

    # A restarted controller starts from the condition: one registration is not enough.
    world.restart_controllers()
    world.advance(5)
    uid = the_pool(world)["metadata"]["uid"]
    assert world.controllers.registration_health is not None
    assert world.controllers.registration_health.status(uid) is Health.UNHEALTHY
    assert status_of(the_pool(world), HEALTHY) == "False"
    expect_no_controller_errors(world)


def test_fixing_the_node_class_resets_registration_health_until_a_node_registers() -> None:
    world = World(sim=NEVER_REGISTERS)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.run_until(lambda: status_of(the_pool(world), HEALTHY) == "False",
                           timeout=3000)

    # The operator fixes what kept the nodes from joining (here: the simulated boot).
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=30.0)
    node_class = world.cluster.get("EC2NodeClass", "default")
    node_class["spec"]["tags"] = {**node_class["spec"]["tags"], "fixed": "bootstrap"}
    world.apply(node_class)
    world.advance(2)
    pool = the_pool(world)
    assert status_of(pool, HEALTHY) == "Unknown"
    assert pool["status"]["nodeClassObservedGeneration"] == (
        world.cluster.get("EC2NodeClass", "default")["metadata"]["generation"])

    assert world.run_until(lambda: status_of(the_pool(world), HEALTHY) == "True",
                           timeout=1500)
    assert world.settle()
    expect_running(world, 5)
    expect_no_controller_errors(world)


def test_a_nodepool_spec_change_sets_registration_health_unknown() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    assert status_of(the_pool(world), HEALTHY) == "True"
    world.apply(nodepool_with(labels={"type": "karpenter", "team": "a"}))
    world.advance(1)
    pool = the_pool(world)
    healthy = get_condition(pool, HEALTHY)
    assert healthy is not None and healthy["status"] == "Unknown"
    assert healthy["observedGeneration"] == pool["metadata"]["generation"] == 2


def test_launches_that_keep_failing_carry_the_launch_reason_to_the_nodepool() -> None:
    world = World()

    def refuses(nodeclaim: Any, node_class: Any) -> Any:
        raise CloudProviderError("ec2:CreateFleet: UnauthorizedOperation: not allowed",
                                 call="ec2:CreateFleet", code="UnauthorizedOperation")

    world.cloud.create = refuses  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.run_until(lambda: status_of(the_pool(world), HEALTHY) == "False",
                           timeout=1500)
    healthy = get_condition(the_pool(world), HEALTHY)
    assert healthy is not None and healthy["reason"] == "LaunchFailed"
    assert "UnauthorizedOperation" in healthy["message"]


# -- NodeClassReady --------------------------------------------------------------------


def test_a_nodepool_without_its_node_class_is_not_ready_with_karpenters_reason() -> None:
    world = World()
    world.apply(WORKSHOP / "nodepool.yaml")
    world.advance(2)
    pool = the_pool(world)
    ready = get_condition(pool, "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "NodeClassNotFound", "NodeClass not found on cluster")
    assert status_of(pool, "Ready") == "False"
    assert get_condition(pool, HEALTHY) is None, "registration health of a missing node class"

    world.apply(WORKSHOP / "ec2nodeclass.yaml")
    world.advance(2)
    assert status_of(the_pool(world), "NodeClassReady") == "True"
    assert status_of(the_pool(world), "Ready") == "True"
