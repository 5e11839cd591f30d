"""Memory capacity learned from registered Nodes (Karpenter's discovered capacity cache).

The catalog estimates a type's memory as its EC2 MiB less VM_MEMORY_OVERHEAD_PERCENT; the
kubelet reports what the VM really has. Once a Node of a type registers, booted from the
image the node class gives that type now, its reported memory replaces the estimate for
that type and that set of images, for 60 days, so the next plans use the real number.
A smaller reading replaces a larger one (and an equal one keeps the entry another 60
days); a larger one is ignored, as Karpenter does: the smallest VM seen is the safe bet.
A change to the node class's images starts from the estimate again."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from nodewright.api.quantity import MEMORY
from nodewright.cloud.aws.amis import Image
from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock
from nodewright.scheduling.catalog import InstanceType

log = logging.getLogger(__name__)

# Karpenter's DiscoveredCapacityCacheTTL.
DISCOVERED_CAPACITY_TTL_SECONDS: Final = 60 * 24 * 3600.0

ImageSet = frozenset[tuple[str, str, str, tuple[str, ...], str | None]]


def image_set(images: Iterable[Image]) -> ImageSet:
    """The node class's images as Karpenter hashes its status AMIs (id, name and the
    requirements, which follow from architecture, variants and Windows build), in any order."""
    return frozenset((i.id, i.name, i.architecture, tuple(sorted(i.variants)), i.windows_build)
                     for i in images)


@dataclass
class DiscoveredCapacity:
    clock: Seconds = system_clock
    _memory: TTLCache[tuple[str, ImageSet], int] = field(init=False)

    def __post_init__(self) -> None:
        self._memory = TTLCache(DISCOVERED_CAPACITY_TTL_SECONDS, self.clock)

    def record(self, instance_type: str, images: Sequence[Image], memory: int) -> bool:
        """Learn `memory` (milli-units, as `Resources`) for the type under these images;
        True when it changed what plans see (a first or a smaller reading)."""
        key = (instance_type, image_set(images))
        cached = self._memory.get(key)
        if cached is not None and memory > cached:
            return False
        self._memory.put(key, memory)
        if cached is None or memory < cached:
            log.debug("updating discovered capacity cache",
                      extra={"instance-type": instance_type, "memory-capacity": memory // 1000})
            return True
        return False

    def memory(self, instance_type: str, images: Sequence[Image]) -> int | None:
        return self._memory.get((instance_type, image_set(images)))

    def apply(self, catalog: Sequence[InstanceType],
              images: Sequence[Image]) -> list[InstanceType]:
        """The catalog with each learned memory in place of the estimate (allocatable
        follows; the overhead stays what it was computed from, as Karpenter's does)."""
        images_key = image_set(images)
        result: list[InstanceType] = []
        for instance_type in catalog:
            memory = self._memory.get((instance_type.name, images_key))
            if memory is None or MEMORY not in instance_type.capacity:
                result.append(instance_type)
            else:
                result.append(replace(instance_type,
                                      capacity={**instance_type.capacity, MEMORY: memory}))
        return result
