"""Which pending pods still hold the room an earlier solve gave them on a machine.

A pending pod nominated to a machine keeps its place there in the next solve (the machine
is still coming up, or kube-scheduler has not had the time to bind it), so nothing is
launched again for pods an in-flight machine will take. But kube-scheduler binds pods
wherever they fit, not where they were nominated: a machine can fill up with other pods
before its own nominees bind, and the pods bound elsewhere than planned can leave a
nominee's machine in a domain its topology no longer allows (a zone over-skewed, a node
where a pod it must not share a node with landed). A nominee that no longer fits beside
what is bound there (and the nominees kept before it), or whose host ports, taints or
topology no longer allow the machine, gives its place up at once and is solved again, as
Karpenter, which keeps no places and simulates every pending pod against the cluster as
it is on every pass, launches for it on its next pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.scheduling.pods import HostPort, Pod, untolerated
from nodewright.scheduling.solver.existing_nodes import node_usage
from nodewright.scheduling.solver.promised import (
    Machine,
    is_bound_by_topology,
    refused_by_topology,
)
from nodewright.state import ClusterState, StateNode


def still_fitting(
    state: ClusterState, nominated: Sequence[tuple[Pod, StateNode]]
) -> tuple[list[tuple[Pod, StateNode]], list[Pod]]:
    """(the nominees that keep their place, those that give it up). Per machine, its free
    room is its allocatable less what its bound pods and the DaemonSets still to run there
    take, as the solver counts it; the nominees are kept in the order given while each
    fits in what is left, tolerates the machine's taints and finds its host ports free.
    Then the topology of those kept is judged (`promised.refused_by_topology`) against
    the pods bound now and the other nominees kept. Giving a place up is always safe: the
    solve then decides, and puts the pod back there if it can."""
    by_machine: dict[str, list[Pod]] = {}
    machines: dict[str, StateNode] = {}
    for pod, machine in nominated:
        by_machine.setdefault(machine.key, []).append(pod)
        machines[machine.key] = machine
    daemonsets = state.daemonsets()
    kept: list[tuple[Pod, StateNode]] = []
    released: list[Pod] = []
    running_on: dict[str, list[Pod]] = {}
    for key, pods in by_machine.items():
        machine = machines[key]
        node = machine.existing_node()
        if node.unschedulable:  # cordoned: what its pods take is not counted (node_usage)
            released.extend(pods)
            continue
        running = running_on[key] = _running(state, machine)
        usage = node_usage(node, running, daemonsets)
        taints = [taint for taint in usage.taints if taint.effect != "PreferNoSchedule"]
        room = {name: amount - usage.requested.get(name, 0)
                for name, amount in (node.allocatable or {}).items()}
        ports = list(usage.host_ports)
        for pod in pods:
            # A taint since (a cordon included) and the pod cannot go there either.
            if (untolerated(taints, pod.tolerations) is None and _fits(pod.requests, room)
                    and not _port_taken(pod.host_ports, ports)):
                for name, amount in pod.requests.items():
                    room[name] = room.get(name, 0) - amount
                ports.extend(pod.host_ports)
                kept.append((pod, machine))
            else:
                released.append(pod)
    refused = _refused_by_topology(state, kept, running_on)
    if refused:
        released.extend(pod for position, (pod, _) in enumerate(kept) if position in refused)
        kept = [entry for position, entry in enumerate(kept) if position not in refused]
    return kept, released


def _refused_by_topology(
    state: ClusterState, kept: Sequence[tuple[Pod, StateNode]],
    running_on: Mapping[str, list[Pod]],
) -> set[int]:
    """The positions in `kept` of the nominees whose topology refuses their machine now.
    Every bound pod is read only when a nominee has topology of its own (its groups count
    them); otherwise only the bound pods with required anti-affinity can refuse it, and
    the state knows those without reading the others."""
    if not kept:
        return set()
    promised = [(pod, machine.name) for pod, machine in kept]
    if any(is_bound_by_topology(pod) for pod, _ in kept):
        everywhere = [
            Machine(machine.existing_node(),
                    running_on[machine.key] if machine.key in running_on
                    else _running(state, machine),
                    settled=machine.registered)
            for machine in state.active_nodes()
        ]
        return refused_by_topology(everywhere, promised, state.namespaces())
    repelling: dict[str, tuple[StateNode, list[Pod]]] = {}
    for pod in state.anti_affine_pod_models():
        machine = state.node_by_name(pod.node_name or "")
        if machine is not None and not machine.is_marked_for_deletion:
            repelling.setdefault(machine.key, (machine, []))[1].append(pod)
    if not repelling:
        return set()
    for _, machine in kept:
        repelling.setdefault(machine.key, (machine, []))
    return refused_by_topology(
        [Machine(machine.existing_node(), pods, settled=machine.registered)
         for machine, pods in repelling.values()],
        promised, state.namespaces())


def _running(state: ClusterState, machine: StateNode) -> list[Pod]:
    return list(state.bound_pod_models([machine.node_name])) if machine.node_name else []


def _fits(requests: Mapping[str, int], room: Mapping[str, int]) -> bool:
    return all(amount <= 0 or amount <= room.get(name, 0) for name, amount in requests.items())


def _port_taken(wanted: Sequence[HostPort], taken: Sequence[HostPort]) -> bool:
    return any(port.conflicts(other) for port in wanted for other in taken)
