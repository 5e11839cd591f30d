"""Static provisioning (Karpenter's static.provisioning controller): a static NodePool
that is Ready gets NodeClaims until it has `spec.replicas` of them, within limits.nodes.

The missing NodeClaims are created together (Karpenter's CreateNodeClaims); those refused
are created on the next look. Scaling down is `deprovisioning`'s. NodeClaims held by a
disruption command (static drift replacing one) count as the NodePool's, so a drift never
makes it launch a second replacement. Nothing is created before the state cache has
synced: an unsynced cache undercounts, and every NodeClaim launched from that count would
be one too many.

A NodeClaim that goes away without ever launching (no offering can take it, EC2 had no
capacity) is created again only after a backoff that doubles from 10 s up to 5 minutes
while the pool's launches keep failing, and starts over once one of its NodeClaims has
launched. Karpenter v1.14.1 creates it again at once on the deletion event, so a static
NodePool that cannot launch churns NodeClaims as fast as the API server answers (and a
simulation, where answers take no time, would never get past that instant).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.api.managed import nodepool_is_managed
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.controllers.common.logfields import nodeclaim_fields
from nodewright.controllers.provisioning.creates import create_together, failures
from nodewright.controllers.static.counts import node_counts, room_under_limit
from nodewright.controllers.static.nodeclaims import static_nodeclaim_manifest
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)

REQUEUE_SECONDS = 60.0
LIMIT_REQUEUE_SECONDS = 30.0
UNSYNCED_RETRY_SECONDS = 1.0
PROVISIONED = "provisioned"
FAILED_LAUNCH_BACKOFF_SECONDS = 10.0
MAX_FAILED_LAUNCH_BACKOFF_SECONDS = 300.0


@dataclass
class _Backoff:
    """A pool's launches failing one after another: when the next may be tried."""

    failures: int
    retry_at: datetime


def static_pool_of_claim(state: ClusterState, event: WatchEvent) -> Iterable[str]:
    pool = objects.labels(event.object).get(NODEPOOL_LABEL)
    if not pool:
        return ()
    parsed = state.nodepool_model(pool)
    if parsed is None or parsed.model is None or not parsed.model.is_static:
        return ()
    return (pool,)


class StaticProvisioning:
    name = "static.provisioning"

    def __init__(self, cluster: ClusterAPI, state: ClusterState) -> None:
        self.cluster = cluster
        self.state = state
        self._backoff: dict[str, _Backoff] = {}
        self._watches = (
            Watch("NodePool"),
            Watch("NodeClaim", keys=self._on_nodeclaim),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _on_nodeclaim(self, event: WatchEvent) -> Iterable[str]:
        launched = bool((event.object.get("status") or {}).get("providerID"))
        pools = tuple(static_pool_of_claim(self.state, event))
        if launched:
            for pool in pools:
                self._backoff.pop(pool, None)
        # A static NodeClaim going away may leave the pool short.
        if event.type == "DELETED" or objects.is_deleting(event.object):
            if not launched and event.type == "DELETED":
                for pool in pools:
                    self._launch_failed(pool)
            return pools
        return ()

    def _launch_failed(self, pool: str) -> None:
        known = self._backoff.get(pool)
        now = self.state.clock.now()
        if known is not None and known.retry_at > now:
            return  # another NodeClaim of the same round: one failed round, one doubling
        failures = 1 if known is None else known.failures + 1
        wait = min(FAILED_LAUNCH_BACKOFF_SECONDS * 2 ** (failures - 1),
                   MAX_FAILED_LAUNCH_BACKOFF_SECONDS)
        self._backoff[pool] = _Backoff(failures, now + timedelta(seconds=wait))

    def reconcile(self, key: str) -> Result:
        raw = self.state.nodepool(key)
        parsed = self.state.nodepool_model(key)
        if raw is None or parsed is None or parsed.model is None:
            return Result()
        nodepool = parsed.model
        if not nodepool.is_static or objects.is_deleting(raw) or not nodepool_is_managed(raw):
            return Result()
        if not objects.condition_is_true(raw, "Ready"):
            return Result()  # its status update (Ready) brings it back
        # Karpenter's `!HasSynced() && !Synced()`: once the cache has matched the API server,
        # a NodeClaim still launching elsewhere in the cluster does not hold the pool back
        # (this pool's own unlaunched NodeClaims are counted as active either way).
        if not self.state.has_synced and not self.state.synced(self.cluster):
            return Result(requeue_after=UNSYNCED_RETRY_SECONDS)
        desired = nodepool.spec.replicas or 0
        counts = node_counts(self.state, key)
        if counts.active + counts.pending_disruption >= desired:
            return Result(requeue_after=REQUEUE_SECONDS)
        backoff = self._backoff.get(key)
        now = self.state.clock.now()
        if backoff is not None and backoff.retry_at > now:
            return Result(requeue_after=(backoff.retry_at - now).total_seconds())
        count = room_under_limit(nodepool, counts, desired - counts.active)
        if count <= 0:
            log.info("nodepool node limit reached", extra={"NodePool": {"name": key}})
            return Result(requeue_after=LIMIT_REQUEUE_SECONDS)
        log.info("provisioning nodeclaims to satisfy replica count", extra={
            "NodePool": {"name": key}, "current": counts.active, "desired": desired,
            "provision-count": count})
        manifest = static_nodeclaim_manifest(nodepool, objects.uid(raw))
        answers = create_together(self.cluster, self.state.lock, [manifest] * count)
        for created in answers:
            if isinstance(created, ApiError):
                continue
            self.state.observe_written(created)
            metrics.NODECLAIMS_CREATED.labels(
                reason=PROVISIONED, nodepool=key, min_values_relaxed="false").inc()
            # Provisioner.Create's line: a static NodeClaim asks for no resources and names
            # no instance types (Karpenter logs its nil requests and an empty list).
            log.info("created nodeclaim", extra={
                **nodeclaim_fields(created), "requests": None, "instance-types": ""})
        failed = failures(answers)
        if failed is not None:
            # Karpenter returns the error (controller-runtime's "Reconciler error" and
            # backoff); those created count next time, the missing ones are created then.
            raise failed
        return Result(requeue_after=REQUEUE_SECONDS)
