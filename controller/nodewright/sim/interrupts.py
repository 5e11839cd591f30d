"""The `interrupt` step: pick the managed nodes the selector matches and have the simulated
EC2 do to their instances what AWS does (it also puts the EventBridge message on the
interruption queue the controller reads)."""

from __future__ import annotations

from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.sim.scenario import InterruptStep, NodeSelection
from nodewright.sim.world import World
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)


def matching_nodes(world: World, select: NodeSelection) -> list[tuple[str, str]]:
    """(node name, provider ID) of live managed nodes the selection matches, by name."""
    wanted = {
        NODEPOOL_LABEL: select.node_pool,
        INSTANCE_TYPE_LABEL: select.instance_type,
        CAPACITY_TYPE_LABEL: select.capacity_type,
        ZONE_LABEL: select.zone,
    }
    found = []
    for node in world.cluster.peek_all("Node"):
        labels = objects.labels(node)
        if NODEPOOL_LABEL not in labels or objects.is_deleting(node):
            continue
        if select.name is not None and objects.name(node) != select.name:
            continue
        if any(value is not None and labels.get(key) != value for key, value in wanted.items()):
            continue
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        if provider_id:
            found.append((objects.name(node), provider_id))
    return sorted(found)


def deliver_interruption(world: World, step: InterruptStep) -> list[str]:
    """Interrupt up to `count` matching nodes; the problems, if fewer could be."""
    problems = []
    nodes = matching_nodes(world, step.select)
    if len(nodes) < step.count:
        problems.append(f"interrupt: {len(nodes)} managed node(s) match "
                        f"({step.select.describe()}), {step.count} wanted")
    for name, provider_id in nodes[: step.count]:
        try:
            world.ec2.interrupt(provider_id, step.kind)
        except (CloudProviderError, ValueError) as error:
            problems.append(f"interrupt: node {name}: {error}")
            continue
        world.recorder.note("scenario", "interrupt",
                            f"step {step.number}: {step.kind} interruption of node {name}",
                            step=step.number, node=name, interruption=step.kind)
    return problems
