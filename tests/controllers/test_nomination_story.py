"""A pending pod keeps the room a solve gave it on an in-flight machine only while it
still fits there. kube-scheduler binds pods wherever they fit, not where Karpenter
nominated them, so a machine can fill up with other pods before its nominees bind; a
nominee that no longer fits (or no longer tolerates the machine's taints) is planned again
on the next pass (Karpenter simulates every pending pod against each machine's free room
on each pass), and one that still fits gets nothing new.

The machines here keep their startup taint (they never initialize), so kube-scheduler
cannot bind the nominees and the room is taken by a pod bound to the node directly."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.sim.settings import SimSettings
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names, expect_no_controller_errors
from tests.harness import World, node_pool

STARTUP_TAINT = {"key": "example.com/agent", "value": "starting", "effect": "NoSchedule"}
# m5.large: 1930m allocatable, 125m of it the workshop's DaemonSets': 1805m for pods.
POOL = node_pool(types=["m5.large"], labels={"type": "karpenter"},
                 startupTaints=[STARTUP_TAINT])


def pending(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def bound_to(node_name: str, name: str, cpu: str) -> dict[str, Any]:
    """A pod that lands on the node without kube-scheduler (as one bound elsewhere would)."""
    pod = pending(name, cpu)
    pod["spec"]["nodeName"] = node_name
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    return pod


def nominations(world: World, name: str) -> list[str]:
    return [str(e.get("note")).removeprefix("Pod should schedule on: ")
            for e in world.events("Nominated")
            if (e.get("regarding") or {}).get("name") == name]


def in_flight_world(*pods: dict[str, Any]) -> tuple[World, str, str]:
    """The pods pending, nominated to one launched NodeClaim whose Node registered and
    keeps its startup taint: (world, NodeClaim name, Node name)."""
    world = World(sim=SimSettings(startup_taint_delay=None))
    world.apply(WORKSHOP, POOL, *pods)
    world.advance(120)
    (claim,) = world.nodeclaims()
    name, node_name = claim["metadata"]["name"], claim["status"]["nodeName"]
    for pod in pods:
        assert nominations(world, pod["metadata"]["name"]) == [f"nodeclaim/{name}"]
    assert len(world.pending_pods()) == len(pods)
    return world, name, node_name


def test_a_nominee_whose_machine_filled_up_gets_a_new_nodeclaim_on_the_next_pass() -> None:
    world, first, node_name = in_flight_world(pending("late", "1"))

    world.apply(bound_to(node_name, "squatter", "1"))  # 805m left: "late" no longer fits
    world.advance(15)  # one pass (pending pods are looked at every 10 s)

    (second,) = [name for name in claim_names(world) if name != first]
    assert nominations(world, "late")[-1] == f"nodeclaim/{second}"
    expect_no_controller_errors(world)


def test_a_nominee_that_still_fits_its_in_flight_machine_gets_nothing_new() -> None:
    # Karpenter's It("should not launch a second node if there is an in-flight node that
    # can support the pod (#2011)") (pkg/controllers/provisioning/scheduling/suite_test.go,
    # Describe("In-Flight Nodes")), through the provisioner: the pod is not bound and is
    # looked at again with other pods bound there meanwhile.
    world, first, node_name = in_flight_world(pending("late", "1"))

    world.apply(bound_to(node_name, "neighbour", "500m"))  # 1305m left: "late" fits
    world.advance(60)

    assert claim_names(world) == [first]
    # Told again where it already was (Karpenter re-nominates each pass; its events are
    # deduplicated for two minutes), never anywhere else.
    assert set(nominations(world, "late")) <= {f"nodeclaim/{first}",
                                               f"nodeclaim/{first}, node/{node_name}"}


def test_only_the_nominees_that_no_longer_fit_are_planned_again() -> None:
    world, first, node_name = in_flight_world(pending("a", "800m"), pending("b", "800m"))

    world.apply(bound_to(node_name, "squatter", "500m"))  # 1305m left: room for one
    world.advance(60)

    (second,) = [name for name in claim_names(world) if name != first]
    # The NodeClaim each was last told (the one kept is told again, with its Node, once
    # its two-minute dedupe ends: Karpenter re-nominates each pass).
    last = sorted(nominations(world, name)[-1].split(", ")[0] for name in ("a", "b"))
    assert last == sorted([f"nodeclaim/{first}", f"nodeclaim/{second}"])


def test_a_nominee_whose_machine_took_a_taint_it_does_not_tolerate_is_planned_again() -> None:
    world, first, node_name = in_flight_world(pending("late", "1"))
    node = world.cluster.get("Node", node_name)
    world.cluster.patch("Node", node_name, {"spec": {"taints": [
        *node["spec"].get("taints", []),
        {"key": "example.com/dedicated", "value": "batch", "effect": "NoSchedule"}]}})
    world.advance(15)

    (second,) = [name for name in claim_names(world) if name != first]
    assert nominations(world, "late")[-1] == f"nodeclaim/{second}"
