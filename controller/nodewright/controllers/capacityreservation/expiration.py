"""Capacity-block expiration (Karpenter's capacityreservation.expiration controller): a
NodeClaim launched into a capacity block is deleted 40 minutes before the block ends, ten
minutes before EC2 starts reclaiming its instances, as an interruption notice would. Its
pods are drained by the termination controller and placed again by the provisioner (the
block's offering is no longer available by then).

The blocks' end times come from the EC2NodeClasses' status.capacityReservations, written
by the EC2NodeClass status controller; every minute, and at the next block's deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, singleton_key

log = logging.getLogger(__name__)

RESERVATION_ID_LABEL: Final = "karpenter.k8s.aws/capacity-reservation-id"
EXPIRATION_LEAD: Final = timedelta(minutes=40)
POLL_SECONDS: Final = 60.0


def block_deadlines(node_classes: Iterable[Mapping[str, Any]]) -> dict[str, datetime]:
    """Capacity block id -> when its nodes must go (40 minutes before its end)."""
    deadlines: dict[str, datetime] = {}
    for body in node_classes:
        for entry in (body.get("status") or {}).get("capacityReservations") or []:
            end = entry.get("endTime")
            if entry.get("reservationType") != "capacity-block" or not end:
                continue
            try:
                ends = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
            except ValueError:
                continue
            deadlines[str(entry.get("id"))] = ends.astimezone(UTC) - EXPIRATION_LEAD
    return deadlines


class CapacityBlockExpiration:
    name = "capacityreservation.expiration"

    # It reads no state cache, only the API server: never under the state lock.
    manages_state_lock = True

    def __init__(self, cluster: ClusterAPI, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("EC2NodeClass", singleton_key), Watch("NodeClaim", singleton_key))

    def reconcile(self, key: str) -> Result:
        deadlines = block_deadlines(self.cluster.list("EC2NodeClass"))
        now = self.clock.now()
        upcoming = [when for when in deadlines.values() if when > now]
        for claim in self.cluster.list("NodeClaim"):
            reservation = objects.labels(claim).get(RESERVATION_ID_LABEL)
            deadline = deadlines.get(reservation or "")
            if deadline is None or deadline > now or objects.is_deleting(claim):
                continue
            name = objects.name(claim)
            try:
                self.cluster.delete("NodeClaim", name, uid=objects.uid(claim) or None)
            except (NotFoundError, ConflictError):
                continue
            log.info("initiating delete of NodeClaim %s for capacity block expiration "
                     "(capacity reservation %s)", name, reservation,
                     extra={"NodeClaim": name, "capacity-reservation-id": reservation})
        wait = min([(when - now).total_seconds() for when in upcoming] + [POLL_SECONDS])
        return Result(requeue_after=max(wait, 1.0))
