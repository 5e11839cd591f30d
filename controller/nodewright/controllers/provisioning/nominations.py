"""Which pending pods still hold the room an earlier solve gave them on a machine.

A pending pod nominated to a machine keeps its place there in the next solve (the machine
is still coming up, or kube-scheduler has not had the time to bind it), so nothing is
launched again for pods an in-flight machine will take. But kube-scheduler binds pods
wherever they fit, not where they were nominated: a machine can fill up with other pods
before its own nominees bind. A nominee that no longer fits beside what is bound there
(and the nominees kept before it) gives its place up at once and is solved again, as
Karpenter, which keeps no places and simulates every pending pod against each machine's
free room on every pass, launches for it on its next pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.scheduling.pods import Pod, untolerated
from nodewright.scheduling.solver.existing_nodes import node_usage
from nodewright.state import ClusterState, StateNode


def still_fitting(
    state: ClusterState, nominated: Sequence[tuple[Pod, StateNode]]
) -> tuple[list[tuple[Pod, StateNode]], list[Pod]]:
    """(the nominees that keep their place, those that give it up). Per machine, its free
    room is its allocatable less what its bound pods and the DaemonSets still to run there
    take, as the solver counts it; the nominees are kept in the order given while each
    fits in what is left and tolerates the machine's taints. Giving a place up is always
    safe: the solve then decides, and puts the pod back there if it can."""
    by_machine: dict[str, list[Pod]] = {}
    machines: dict[str, StateNode] = {}
    for pod, machine in nominated:
        by_machine.setdefault(machine.key, []).append(pod)
        machines[machine.key] = machine
    daemonsets = state.daemonsets()
    kept: list[tuple[Pod, StateNode]] = []
    released: list[Pod] = []
    for key, pods in by_machine.items():
        machine = machines[key]
        node = machine.existing_node()
        if node.unschedulable:  # cordoned: what its pods take is not counted (node_usage)
            released.extend(pods)
            continue
        running = list(state.bound_pod_models([machine.node_name])) if machine.node_name else []
        usage = node_usage(node, running, daemonsets)
        taints = [taint for taint in usage.taints if taint.effect != "PreferNoSchedule"]
        room = {name: amount - usage.requested.get(name, 0)
                for name, amount in (node.allocatable or {}).items()}
        for pod in pods:
            # A taint since (a cordon included) and the pod cannot go there either.
            if untolerated(taints, pod.tolerations) is None and _fits(pod.requests, room):
                for name, amount in pod.requests.items():
                    room[name] = room.get(name, 0) - amount
                kept.append((pod, machine))
            else:
                released.append(pod)
    return kept, released


def _fits(requests: Mapping[str, int], room: Mapping[str, int]) -> bool:
    return all(amount <= 0 or amount <= room.get(name, 0) for name, amount in requests.items())
