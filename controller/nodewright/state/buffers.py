"""The virtual pods of CapacityBuffers (Karpenter's virtualpods.Cache and the cluster
state's buffer pod counts), kept while the CapacityBuffer gate is on.

The capacitybuffer controller writes one entry per buffer that resolved (its pod template
times its replicas); the provisioner adds them to every solve as pods that are never
nominated nor reported, and records on which machines they landed so that emptiness leaves
those machines alone; consolidation simulations place them again like pending pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from nodewright.scheduling.pods import Pod

# Karpenter names virtual pods capacity-buffer-<buffer>-<n>, n from 1.
NAME_PREFIX = "capacity-buffer-"
# Ends a virtual pod's key: no pod name holds a "#" (a DNS subdomain), so no real pod's key
# ever equals a virtual pod's.
VIRTUAL_KEY_SUFFIX = "#virtual"


@dataclass(frozen=True, slots=True)
class VirtualPod(Pod):
    """A CapacityBuffer's virtual pod. Its name is Karpenter's, which a real pod of the
    namespace may also have (nothing reserves `capacity-buffer-...`); its key is its own.
    Karpenter tells them apart by object and by UID (`<buffer uid>-<n>`,
    pkg/state/virtualpods/utilities.go BuildVirtualPods); the solver and the state here go
    by key, so a shared one would make the real pod pass for headroom (never nominated,
    its failures ignored) and the two count as one."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}{VIRTUAL_KEY_SUFFIX}"


def virtual_pods(namespace: str, name: str, shape: Pod, replicas: int) -> list[Pod]:
    """`replicas` copies of the buffer's chunk, named as Karpenter names them, without the
    chunk's PersistentVolumeClaim and ephemeral volumes (Karpenter's sanitizeVirtualPodSpec:
    a virtual pod's claims never exist, so they cannot constrain where it goes)."""
    base = {f.name: getattr(shape, f.name) for f in fields(shape)}
    base.update(namespace=namespace, node_name=None, owner=f"CapacityBuffer/{name}",
                volume_claims=(), volume_requirements=(), volumes=())
    return [VirtualPod(**{**base, "name": f"{NAME_PREFIX}{name}-{n}"})
            for n in range(1, replicas + 1)]


class BufferPods:
    def __init__(self) -> None:
        self._pods: dict[str, list[Pod]] = {}
        self._owner: dict[str, str] = {}
        # Machine name -> how many virtual pods the last solve put there.
        self._on_machines: dict[str, int] = {}

    def copy(self) -> BufferPods:
        """For a state snapshot: a pass outside the state lock reads it while the
        capacitybuffer controller may update the original."""
        copied = BufferPods()
        copied._pods = dict(self._pods)
        copied._owner = dict(self._owner)
        copied._on_machines = dict(self._on_machines)
        return copied

    def update(self, buffer: str, pods: list[Pod]) -> None:
        """Replace the virtual pods of the buffer `namespace/name`."""
        self.remove(buffer)
        if pods:
            self._pods[buffer] = pods
            self._owner.update((pod.key, buffer) for pod in pods)

    def remove(self, buffer: str) -> None:
        for pod in self._pods.pop(buffer, ()):
            self._owner.pop(pod.key, None)

    def all(self) -> list[Pod]:
        return [pod for _, pods in sorted(self._pods.items()) for pod in pods]

    def buffers(self) -> list[str]:
        return sorted(self._pods)

    def owner(self, pod_key: str) -> str | None:
        """The buffer a pod key belongs to, None for a real pod."""
        return self._owner.get(pod_key)

    def is_virtual(self, pod_key: str) -> bool:
        return pod_key in self._owner

    def real(self, keys: Iterable[str]) -> list[str]:
        return [key for key in keys if key not in self._owner]

    def record_placements(self, on_machines: Mapping[str, int]) -> bool:
        """True when the machines hosting headroom changed."""
        placed = {name: count for name, count in on_machines.items() if count}
        changed = set(placed) != set(self._on_machines)
        self._on_machines = placed
        return changed

    def on_machine(self, name: str) -> int:
        return self._on_machines.get(name, 0)
