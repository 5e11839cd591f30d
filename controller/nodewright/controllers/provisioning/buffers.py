"""What a solve did with CapacityBuffers' virtual pods (Karpenter's provisioning/buffers.go):
which machines host some (emptiness leaves those alone) and each buffer's Provisioning
condition: True (FitsExistingCapacity) when all its virtual pods fit the machines that
exist or are launching, False with RequiresNewCapacity when some needed a new NodeClaim
or fit nowhere, False with NotReadyForProvisioning or BufferEmpty when the buffer has
nothing to place."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodewright.api.capacitybuffer import PROVISIONING, READY_FOR_PROVISIONING
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.cluster.conditions import FALSE, TRUE, set_condition
from nodewright.cluster.copying import copy_object, deep_copy
from nodewright.controllers.common.patching import patch_status
from nodewright.controllers.provisioning.problem import StateProblem
from nodewright.scheduling.solver import SchedulingResult
from nodewright.state.buffers import BufferPods

log = logging.getLogger(__name__)

FITS_EXISTING_CAPACITY = "FitsExistingCapacity"
REQUIRES_NEW_CAPACITY = "RequiresNewCapacity"
NOT_READY_FOR_PROVISIONING = "NotReadyForProvisioning"
BUFFER_EMPTY = "BufferEmpty"


@dataclass
class BufferCounts:
    existing: int = 0
    new: int = 0
    failed: int = 0


@dataclass
class BufferPlacements:
    by_buffer: dict[str, BufferCounts] = field(default_factory=dict)
    # Machine name (the state's) -> virtual pods placed there.
    on_machines: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, buffers: BufferPods, built: StateProblem | None,
           result: SchedulingResult | None) -> BufferPlacements:
        found = cls()
        if built is None or result is None:
            return found

        def counts(key: str) -> BufferCounts | None:
            owner = buffers.owner(key)
            return None if owner is None else found.by_buffer.setdefault(owner, BufferCounts())

        for node_name, keys in result.existing:
            machine = built.nodes.get(node_name)
            for key in keys:
                entry = counts(key)
                if entry is None:
                    continue
                entry.existing += 1
                if machine is not None:
                    found.on_machines[machine.name] = found.on_machines.get(machine.name, 0) + 1
        for planned in result.nodeclaims:
            for key in planned.pods:
                entry = counts(key)
                if entry is not None:
                    entry.new += 1
        for key, _ in result.unschedulable:
            entry = counts(key)
            if entry is not None:
                entry.failed += 1
        return found


def provisioning_condition(buffer: Mapping[str, Any],
                           counts: BufferCounts | None) -> tuple[str, str, str] | None:
    """(status, reason, message) of the Provisioning condition, None to leave it."""
    if not objects.condition_is_true(buffer, READY_FOR_PROVISIONING):
        return FALSE, NOT_READY_FOR_PROVISIONING, "Buffer is not ReadyForProvisioning"
    desired = (buffer.get("status") or {}).get("replicas")
    if not isinstance(desired, int) or desired == 0:
        return FALSE, BUFFER_EMPTY, "Buffer has zero desired replicas"
    if counts is None:
        return None
    if counts.new or counts.failed:
        return (FALSE, REQUIRES_NEW_CAPACITY,
                f"{counts.new}/{desired} virtual pods required new capacity, "
                f"{counts.failed} failed")
    if counts.existing == desired:
        return TRUE, FITS_EXISTING_CAPACITY, f"All {desired} virtual pods fit on existing capacity"
    return None


def write_provisioning_conditions(cluster: ClusterAPI, now: datetime,
                                  placements: BufferPlacements) -> None:
    try:
        buffers = cluster.list("CapacityBuffer")
    except ApiError as error:
        log.error("listing CapacityBuffers: %s", error)
        return
    for raw in buffers:
        decided = provisioning_condition(raw, placements.by_buffer.get(objects.key(raw)))
        if decided is None:
            continue
        before = copy_object(raw)
        after = deep_copy(before)
        status, reason, message = decided
        if not set_condition(after, PROVISIONING, status, now, reason, message):
            continue
        try:
            patch_status(cluster, before, after)
        except ApiError as error:
            # The next solve writes it again.
            log.error("patching CapacityBuffer %s: %s", objects.key(raw), error)
