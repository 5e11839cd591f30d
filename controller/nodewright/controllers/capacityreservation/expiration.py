"""Capacity-block expiration (Karpenter's capacityreservation.expiration controller): a
NodeClaim launched into a capacity block is deleted 40 minutes before the block ends, ten
minutes before EC2 starts reclaiming its instances, as an interruption notice would. Its
pods are drained by the termination controller and placed again by the provisioner (the
block's offering is no longer available by then).

As Karpenter, the end times come from EC2: the cloud describes the reservations the
NodeClaims name in their capacity-reservation-id label (`reservation_lookup`), and a
reservation EC2 reports expiring has its NodeClaims deleted. Unlike Karpenter's singleton,
which lists every NodeClaim each minute, it runs only while a NodeClaim is in a capacity
block: a NodeClaim event starts it only for such a NodeClaim, and it stops polling when
none is left. Then every minute, and at the next block's deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.cloud.capabilities import ReservationLookup
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

log = logging.getLogger(__name__)

RESERVATION_ID_LABEL: Final = "karpenter.k8s.aws/capacity-reservation-id"
RESERVATION_TYPE_LABEL: Final = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_BLOCK: Final = "capacity-block"
POLL_SECONDS: Final = 60.0


def capacity_block_of(claim: Mapping[str, Any]) -> str | None:
    """The reservation a NodeClaim runs in when it may be a capacity block: only a block
    expires, and every reserved NodeClaim says its reservation's type (one that does not
    is looked up all the same)."""
    labels = objects.labels(claim)
    reservation = labels.get(RESERVATION_ID_LABEL)
    if not reservation or labels.get(RESERVATION_TYPE_LABEL, CAPACITY_BLOCK) != CAPACITY_BLOCK:
        return None
    return reservation


def _capacity_block_events(event: WatchEvent) -> Iterable[str]:
    if event.type != "DELETED" and capacity_block_of(event.object):
        return ("",)
    return ()


class CapacityBlockExpiration:
    name = "capacityreservation.expiration"

    def __init__(self, cluster: ClusterAPI, clock: Clock, lookup: ReservationLookup, *,
                 outside_state_lock: bool = False) -> None:
        """`outside_state_lock`: the lookup is safe from any thread (the cloud's
        `launches_outside_state_lock`); it reads no state cache, so it then never takes
        the state lock."""
        self.cluster = cluster
        self.clock = clock
        self.lookup = lookup
        self.manages_state_lock = outside_state_lock

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("NodeClaim", _capacity_block_events),)

    def reconcile(self, key: str) -> Result:
        in_blocks = [(claim, reservation) for claim in self.cluster.list("NodeClaim")
                     if nodeclaim_is_managed(claim)
                     and (reservation := capacity_block_of(claim)) is not None]
        if not in_blocks:
            return Result()  # until a NodeClaim in a capacity block shows up
        try:
            found = self.lookup.describe_reservations({r for _, r in in_blocks})
        except CloudProviderError as error:
            log.warning("getting capacity reservations failed: %s", error)
            return Result(requeue_after=POLL_SECONDS)
        now = self.clock.now()
        expiring = {r.id for r in found if r.expiring(now)}
        for claim, reservation in in_blocks:
            if reservation in expiring and not objects.is_deleting(claim):
                self._delete(claim, reservation)
        deadlines = [r.expires_at for r in found
                     if r.expires_at is not None and r.expires_at > now]
        wait = min([(when - now).total_seconds() for when in deadlines] + [POLL_SECONDS])
        return Result(requeue_after=max(wait, 1.0))

    def _delete(self, claim: Mapping[str, Any], reservation: str) -> None:
        name = objects.name(claim)
        try:
            self.cluster.delete("NodeClaim", name, uid=objects.uid(claim) or None)
        except (NotFoundError, ConflictError):
            return
        log.info("initiating delete for capacity block expiration",
                 extra={"NodeClaim": name, "capacity-reservation-id": reservation})

