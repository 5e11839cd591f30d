"""Reserved capacity that lapsed (Karpenter's capacityreservation.capacitytype controller):
when a capacity reservation ends or is cancelled, EC2 keeps its instances running as
on-demand ones. Every minute the NodeClaims whose instance the cloud now reports on-demand,
and their registered Nodes, are relabelled from `reserved` to `on-demand`, without the
reservation id and type labels, so scheduling, consolidation and disruption budgets stop
treating them as near-free reserved capacity. Only this demotion: an on-demand instance is
never promoted to reserved.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Final, Protocol

from nodewright.cloud.provider import CloudProviderError, Instance
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.runtime.reconciler import Result, Watch, WatchEvent, singleton_key

log = logging.getLogger(__name__)

CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"
REGISTERED_LABEL: Final = "karpenter.sh/registered"
# Karpenter's cloudprovider.ReservedCapacityLabels for the AWS provider.
RESERVED_CAPACITY_LABELS: Final = (
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-type",
)
RESERVED: Final = "reserved"
ON_DEMAND: Final = "on-demand"
POLL_SECONDS: Final = 60.0
_RESERVED: Final = {CAPACITY_TYPE_LABEL: RESERVED}


class InstanceLister(Protocol):
    def list(self) -> Collection[Instance]: ...


def _on_start(event: WatchEvent) -> Iterable[str]:
    return singleton_key(event) if event.type == "ADDED" else ()


class ReservedCapacityDemotion:
    name = "capacityreservation.capacitytype"

    def __init__(self, cluster: ClusterAPI, cloud: InstanceLister) -> None:
        self.cluster = cluster
        self.cloud = cloud

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("NodeClaim", _on_start),)

    def reconcile(self, key: str) -> Result:
        try:
            capacity_types = {i.provider_id: i.capacity_type for i in self.cloud.list()}
        except CloudProviderError as error:
            log.warning("listing instances for the reserved capacity check failed: %s", error)
            return Result(requeue_after=POLL_SECONDS)
        # Only an object labelled reserved is ever patched. Karpenter lists every NodeClaim
        # and looks up each one's Nodes (through an index on spec.providerID); here the
        # Nodes listed are those labelled reserved, and the NodeClaims those labelled
        # reserved unless such a Node exists (its NodeClaim may say on-demand already):
        # the same patches in the same order, without copying the whole fleet every minute.
        nodes: dict[str, list[dict[str, Any]]] = {}
        for node in self.cluster.list("Node", labels=_RESERVED):
            nodes.setdefault(str((node.get("spec") or {}).get("providerID") or ""), []
                             ).append(node)
        claims = self.cluster.list("NodeClaim", labels=None if nodes else _RESERVED)
        demoted: list[str] = []
        for claim in claims:
            provider_id = str((claim.get("status") or {}).get("providerID") or "")
            if not provider_id or capacity_types.get(provider_id) != ON_DEMAND:
                continue
            if objects.is_deleting(claim):
                continue  # already draining: nothing to gain
            changed = False
            if objects.labels(claim).get(CAPACITY_TYPE_LABEL) == RESERVED:
                changed = self._demote("NodeClaim", claim)
            for node in nodes.get(provider_id, ()):
                if _registered_reserved(node):
                    changed = self._demote("Node", node) or changed
            if changed:
                demoted.append(objects.name(claim))
        if demoted:
            log.info("updated capacity type for nodeclaims", extra={"NodeClaims": demoted})
        return Result(requeue_after=POLL_SECONDS)

    def _demote(self, kind: str, body: dict[str, Any]) -> bool:
        labels: dict[str, str | None] = {CAPACITY_TYPE_LABEL: ON_DEMAND}
        labels.update({label: None for label in RESERVED_CAPACITY_LABELS})
        try:
            self.cluster.patch(kind, objects.name(body), {"metadata": {
                "resourceVersion": objects.meta(body).get("resourceVersion"),
                "labels": labels}})
        except (NotFoundError, ConflictError):
            return False  # gone, or changed under us: the next pass looks again
        return True


def _registered_reserved(node: dict[str, Any]) -> bool:
    """A Node whose labels the registration has synced (an unregistered one may not carry
    them yet: the next pass gets it) and that still says reserved."""
    labels = objects.labels(node)
    return (not objects.is_deleting(node) and labels.get(REGISTERED_LABEL) == "true"
            and labels.get(CAPACITY_TYPE_LABEL) == RESERVED)
