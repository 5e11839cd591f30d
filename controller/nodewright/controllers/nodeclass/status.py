"""The EC2NodeClass status controller (Karpenter's nodeclass status controller), for the AWS
cloud: it resolves each EC2NodeClass's selector terms (subnets, security groups, AMIs) and
instance profile, and writes them to `status` with one condition per part and `Ready`
following them (`Resolution.condition_set`, `cluster.conditions.EC2NODECLASS` without
CapacityReservationsReady when the ReservedCapacity gate is off: reason
`UnhealthyDependents` and the parts that failed), so `kubectl get ec2nodeclass` tells a
user why nothing launches. It resolves again every minute: subnets, groups and AMIs change
under it (a new AMI release, a deleted subnet).

And the catalog refresh: every 12 hours, outside any provisioning, it asks the cloud for
each EC2NodeClass's instance types, which is when the provider re-reads prices and
offerings, so a provisioning loop never waits for the Pricing API.

Neither reads the state cache: with a cloud whose calls are safe from any thread (AWS)
they never take the state lock, so a resolution or a refresh that takes seconds holds up
no other controller (docs/decisions.md, "Concurrency").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.capabilities import NodeClassResolver
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.cluster.merge_patch import merge_patch_between
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, singleton_key

log = logging.getLogger(__name__)

RESOLVE_SECONDS = 60.0
CATALOG_REFRESH_SECONDS = 12 * 3600.0
# status field -> the condition whose failed lookup leaves it as it was
KEPT_ON_FAILURE = (("instanceProfile", "InstanceProfileReady"),
                   ("capacityReservations", "CapacityReservationsReady"))


class NodeClassStatus:
    name = "nodeclass.status"

    def __init__(self, cluster: ClusterAPI, resolver: NodeClassResolver, clock: Clock, *,
                 outside_state_lock: bool = False) -> None:
        """`outside_state_lock`: the resolver's calls are safe from any thread (the cloud's
        `launches_outside_state_lock`)."""
        self.cluster = cluster
        self.resolver = resolver
        self.clock = clock
        self.manages_state_lock = outside_state_lock

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("EC2NodeClass"),)

    def reconcile(self, key: str) -> Result:
        try:
            current = self.cluster.get("EC2NodeClass", key)
        except NotFoundError:
            return Result()
        if objects.is_deleting(current):
            return Result()
        try:
            model = EC2NodeClass.model_validate(current)
        except ValidationError as error:
            log.warning("EC2NodeClass %s is not valid: %s", key, error.errors()[:1],
                        extra={"EC2NodeClass": key})
            return Result()
        try:
            resolution = self.resolver.resolve(model)
        except CloudProviderError as error:
            log.warning("resolving EC2NodeClass %s failed: %s", key, error,
                        extra={"EC2NodeClass": key})
            return Result(requeue_after=RESOLVE_SECONDS)
        status = self._status(current, resolution)
        if status != (current.get("status") or {}):
            self.cluster.patch(
                "EC2NodeClass", key,
                {"metadata": {"resourceVersion": objects.meta(current).get("resourceVersion")},
                 "status": merge_patch_between(current.get("status") or {}, status)},
                subresource="status",
            )
        return Result(requeue_after=RESOLVE_SECONDS)

    def _status(self, current: Mapping[str, Any], resolution: Resolution) -> dict[str, Any]:
        resolved = resolution.to_status(self.clock.now()).to_manifest()
        resolved.pop("conditions", None)
        # A lookup that failed leaves its field as it was (Karpenter's instance profile and
        # capacity reservation reconcilers return the error before writing): the profile
        # the nodes run with stays in status, and so the one the next reconcile starts from.
        previous = current.get("status") or {}
        for key, kind in KEPT_ON_FAILURE:
            if kind in resolution.problems and key in previous:
                resolved[key] = previous[key]
        working: dict[str, Any] = {"status": {**resolved, "conditions": [
            dict(c) for c in objects.conditions(current)]}}
        working["metadata"] = dict(objects.meta(current))
        now = self.clock.now()
        kinds = resolution.condition_set
        for condition in resolution.conditions(now):
            if condition.type != kinds.root:  # the set recomputes it, as operatorpkg
                kinds.set(working, condition.type, condition.status, now,
                          reason=condition.reason, message=condition.message or "")
        status: dict[str, Any] = working["status"]
        return status


class CatalogRefresh:
    """Warms the cloud's instance types and prices for every EC2NodeClass, twice a day."""

    name = "catalog.refresh"

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.manages_state_lock = cloud.capabilities().launches_outside_state_lock

    @property
    def watches(self) -> Sequence[Watch]:
        # Started by the first EC2NodeClass the watch reports; then it keeps its own time.
        return (Watch("EC2NodeClass", lambda e: singleton_key(e) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        for body in self.cluster.list("EC2NodeClass"):
            try:
                self.cloud.get_instance_types(EC2NodeClass.model_validate(body))
            except (ValidationError, CloudProviderError) as error:
                log.info("refreshing instance types of %s: %s", objects.name(body), error)
        return Result(requeue_after=CATALOG_REFRESH_SECONDS)
