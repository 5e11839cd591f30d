"""The zonal shift controller (Karpenter's arczonalshift controller, with ENABLE_ZONAL_SHIFT):
every 30 seconds the cloud reads ARC's zonal shifts on the cluster, and when the set of
shifted zones changes each NodePool that can launch into a zone that shifted (or came back)
gets an event: `ZonalShiftActive` (Warning) or `ZonalShiftCleared` (Normal).

A NodePool can launch into a zone when its EC2NodeClass has a subnet there (status.subnets
maps the shift's zone id to the zone's name) and its requirements allow the zone's name and
zone id (none: any zone). Only this provider's NodePools (api/managed.py) are told: one
whose nodeClassRef names another provider's node class is another controller's, whatever
the name of its node class.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from nodewright.api.managed import nodepool_is_managed
from nodewright.cloud.capabilities import ZonalShiftSource
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import Event, EventRecorder, EventType
from nodewright.runtime.reconciler import Result, Watch, singleton_key
from nodewright.scheduling.requirements import RequirementError, Requirements

log = logging.getLogger(__name__)

INTERVAL_SECONDS: Final = 30.0
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
ZONE_ID_LABEL: Final = "topology.k8s.aws/zone-id"
ACTIVE: Final = "ZonalShiftActive"
CLEARED: Final = "ZonalShiftCleared"


class ZonalShiftEvents:
    name = "zonalshift"

    def __init__(self, cluster: ClusterAPI, recorder: EventRecorder | None,
                 shifts: ZonalShiftSource) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.shifts = shifts
        # Reads the API (not the state cache) and ARC: no state lock needed.
        self.manages_state_lock = True
        self.previous: frozenset[str] = frozenset()

    @property
    def watches(self) -> Sequence[Watch]:
        # Started by the first NodePool the watch reports; then it keeps its own time.
        return (Watch("NodePool", lambda e: singleton_key(e) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        try:
            self.shifts.update()
        except CloudProviderError as error:
            log.warning("reading zonal shifts: %s", error)
            return Result(requeue_after=INTERVAL_SECONDS)
        current = self.shifts.shifted_zones()
        if current != self.previous:
            self._publish(self.previous, current)
        # Advanced after the events, as Karpenter: a failed publish is retried next time.
        self.previous = current
        return Result(requeue_after=INTERVAL_SECONDS)

    def _publish(self, previous: frozenset[str], current: frozenset[str]) -> None:
        if self.recorder is None:
            return
        classes = {objects.name(c): c for c in self.cluster.list("EC2NodeClass")}
        for pool in self.cluster.list("NodePool"):
            if not nodepool_is_managed(pool):
                continue
            template = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
            ref = template.get("nodeClassRef") or {}
            node_class = classes.get(str(ref.get("name", "")))
            if node_class is None:
                continue
            zones = _zones_by_id(node_class)
            try:
                requirements = Requirements.from_node_selector(template.get("requirements") or [])
            except RequirementError as error:
                log.warning("NodePool %s: %s", objects.name(pool), error)
                continue
            for zone_id in sorted(current - previous):
                zone = _affected(requirements, zones, zone_id)
                if zone:
                    self._event(pool, "Warning", ACTIVE, f"Zonal shift detected: offerings in "
                                f"zone {zone} ({zone_id}) are unavailable for this NodePool",
                                zone_id)
            for zone_id in sorted(previous - current):
                zone = _affected(requirements, zones, zone_id)
                if zone:
                    self._event(pool, "Normal", CLEARED, f"Zonal shift cleared: offerings in "
                                f"zone {zone} ({zone_id}) are restored for this NodePool",
                                zone_id)

    def _event(self, pool: Mapping[str, Any], kind: EventType, reason: str, note: str,
               zone_id: str) -> None:
        assert self.recorder is not None
        uid = str((pool.get("metadata") or {}).get("uid") or objects.name(pool))
        self.recorder.publish(Event(regarding=pool, type=kind, reason=reason, note=note,
                                    dedupe_values=(uid, zone_id)))


def _zones_by_id(node_class: Mapping[str, Any]) -> dict[str, str]:
    subnets = (node_class.get("status") or {}).get("subnets") or []
    return {str(s["zoneID"]): str(s["zone"]) for s in subnets
            if s.get("zoneID") and s.get("zone")}


def _affected(requirements: Requirements, zones: Mapping[str, str], zone_id: str) -> str:
    """The shifted zone's name when the NodePool can launch there, else ""."""
    zone = zones.get(zone_id, "")
    if not zone:
        return ""
    for key, value in ((ZONE_LABEL, zone), (ZONE_ID_LABEL, zone_id)):
        if key in requirements and not requirements[key].has(value):
            return ""
    return zone
