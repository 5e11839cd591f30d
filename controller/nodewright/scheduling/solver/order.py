"""The order pods are placed in: Karpenter's largest first, and for the pods nothing ties
together a balanced order that alternates cpu-heavy and memory-heavy pods."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.quantity import CPU, MEMORY
from nodewright.scheduling.pods import Pod


def pod_order(pod: Pod) -> tuple[int, int, str, str]:
    """Largest first: cpu, then memory; ties by namespace and name."""
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.namespace, pod.name)


def balanced_order(pods: Sequence[Pod], presorted: bool = False) -> list[Pod]:
    """Largest first, alternating between cpu-heavy and memory-heavy pods (relative to all
    of them) so that every prefix of the order keeps about the overall cpu:memory ratio.

    `presorted`: the pods are in `pod_order` already, so a stable sort by their largest
    share alone leaves pods of equal shares in that order: the same order, without
    comparing every pair's names again."""
    total_cpu = sum(p.requests.get(CPU, 0) for p in pods) or 1
    total_memory = sum(p.requests.get(MEMORY, 0) for p in pods) or 1

    # Each pod's shares (of all cpu, of all memory), worked out once.
    entries = [(pod, pod.requests.get(CPU, 0) / total_cpu,
                pod.requests.get(MEMORY, 0) / total_memory) for pod in pods]
    cpu_heavy = [entry for entry in entries if entry[1] >= entry[2]]
    memory_heavy = [entry for entry in entries if entry[1] < entry[2]]
    for group in (cpu_heavy, memory_heavy):
        if presorted:
            group.sort(key=lambda entry: -max(entry[1], entry[2]))
        else:
            group.sort(key=lambda entry: (-max(entry[1], entry[2]), pod_order(entry[0])))
    ordered: list[Pod] = []
    cpu_share = memory_share = 0.0
    next_cpu = next_memory = 0
    while next_cpu < len(cpu_heavy) or next_memory < len(memory_heavy):
        take_cpu = next_memory >= len(memory_heavy) or (
            next_cpu < len(cpu_heavy) and cpu_share <= memory_share
        )
        if take_cpu:
            pod, cpu, memory = cpu_heavy[next_cpu]
            next_cpu += 1
        else:
            pod, cpu, memory = memory_heavy[next_memory]
            next_memory += 1
        ordered.append(pod)
        cpu_share += cpu
        memory_share += memory
    return ordered

