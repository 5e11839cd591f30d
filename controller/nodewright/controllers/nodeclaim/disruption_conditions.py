"""The NodeClaim disruption conditions (Karpenter's nodeclaim.disruption controller):
`Drifted` (with the drift reason) and `Consolidatable` (consolidateAfter has passed since
`status.lastPodEventTime`, which `nodeclaim.podevents` writes, or since the NodeClaim
initialized when no pod event was recorded).

Drift is re-checked every 5 minutes (the cloud's AMIs change without any cluster object
changing) and whenever the NodePool or EC2NodeClass changes; consolidatability is
re-checked when consolidateAfter runs out.

Every reconcile asks the cloud provider, as Karpenter's does; the rules before it (the
NodePool and EC2NodeClass hashes, the requirements, the offering check) are a function of
what they read, so their verdict is kept per NodeClaim with those inputs and worked out
again only when one changes (a NodeClaim's labels or annotations, the NodePool's hash or
requirements, the EC2NodeClass's hash, the catalog, or the NodeClaim coming of age for
the offering check). Most reconciles come from writes that change none of them (the
conditions, `lastPodEventTime`). The NodeClaim's model for the cloud leaves those out and
is built again only when the rest changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.formats import parse_duration_or_never
from nodewright.api.managed import nodeclaim_is_managed
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodepool import NodePool
from nodewright.cloud.provider import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import remove_condition, set_condition, write_conditions
from nodewright.controllers.common import logfields
from nodewright.controllers.nodeclaim.drift import (
    UNDECIDED,
    Drift,
    cloud_drift,
    instance_type_check_due,
    static_drift,
)
from nodewright.runtime.clock import Clock, parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.scheduling.catalog import InstanceType
from nodewright.state.cluster import ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)

DRIFTED = "Drifted"
CONSOLIDATABLE = "Consolidatable"
LAUNCHED = "Launched"
INITIALIZED = "Initialized"
DRIFT_RECHECK_SECONDS = 300.0
_CATALOG_TTL = timedelta(minutes=5)
# Karpenter's GetInstanceTypes of a NodePool whose node class is gone or terminating: none
# (so a NodeClaim due for the offering check is InstanceTypeNotFound). One object, so that
# the kept verdict (compared by identity) holds.
_NO_TYPES: tuple[InstanceType, ...] = ()


def consolidate_after_seconds(nodepool: NodePool) -> float | None:
    """consolidateAfter in seconds; None for Never (consolidation disabled)."""
    return parse_duration_or_never(nodepool.spec.disruption.consolidate_after)


def last_pod_event(claim: Mapping[str, Any], observed: datetime | None = None
                   ) -> datetime | None:
    """The later of what the NodeClaim recorded and what the caller saw (if anything)."""
    stored_text = (claim.get("status") or {}).get("lastPodEventTime")
    stored = parse_time(stored_text) if stored_text else None
    candidates = [t for t in (stored, observed) if t is not None]
    return max(candidates) if candidates else None


def consolidatable_at(
    claim: Mapping[str, Any], nodepool: NodePool, observed_pod_event: datetime | None = None
) -> datetime | None:
    """When the NodeClaim becomes consolidatable (maybe in the past): consolidateAfter
    after its last pod event, or after it initialized when none was recorded (Karpenter
    takes the recorded time as it is, even when it is older than the initialization).
    None while it is not initialized or consolidation is disabled."""
    seconds = consolidate_after_seconds(nodepool)
    initialized = objects.condition(claim, INITIALIZED)
    if seconds is None or initialized is None or initialized.get("status") != "True":
        return None
    since = last_pod_event(claim, observed_pod_event)
    if since is None:
        since = parse_time(str(initialized.get("lastTransitionTime")))
    return since + timedelta(seconds=seconds)


@dataclass(frozen=True)
class _StaticVerdict:
    """The rules before the cloud's, with everything they read (the catalog by identity:
    a refresh is a new list)."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    pool: tuple[Any, ...]
    node_class: tuple[str, str] | None
    instance_types: Sequence[InstanceType] | None
    due: bool
    drift: Drift | None

    def holds_for(self, labels: Mapping[str, str], annotations: Mapping[str, str],
                  pool: tuple[Any, ...], node_class: tuple[str, str] | None,
                  instance_types: Sequence[InstanceType] | None, due: bool) -> bool:
        return (self.instance_types is instance_types and self.due == due
                and self.pool == pool
                and self.node_class == node_class and self.labels == labels
                and self.annotations == annotations)


def _pool_inputs(nodepool: NodePool) -> tuple[Any, ...]:
    """What the NodePool rules read: its name, template hash and requirements."""
    return (nodepool.name, hashes.nodepool_hash(nodepool),
            tuple((r.key, r.operator, tuple(r.values or ()))
                  for r in nodepool.spec.template.spec.requirements))


def _without(conditions: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    holder: dict[str, Any] = {"status": {"conditions": conditions}}
    remove_condition(holder, kind)
    updated: list[Mapping[str, Any]] = holder["status"]["conditions"]
    return updated


class NodeClaimConditions:
    """Keeps `Drifted` and `Consolidatable` on every managed NodeClaim."""

    name = "nodeclaim.disruption"

    def __init__(
        self, cluster: ClusterAPI, state: ClusterState, provider: CloudProvider, clock: Clock
    ) -> None:
        self.cluster = cluster
        self.state = state
        self.provider = provider
        self.clock = clock
        self._catalogs: dict[str, tuple[datetime, list[InstanceType]]] = {}
        self._verdicts: dict[str, _StaticVerdict] = {}
        # Per NodePool / EC2NodeClass name: the model last seen and what the rules read of
        # it (a model is built once per object version).
        self._pools: dict[str, tuple[NodePool, tuple[Any, ...]]] = {}
        self._classes: dict[str, tuple[EC2NodeClass, tuple[str, str]]] = {}
        self._models: dict[str, tuple[dict[str, Any], NodeClaim | None]] = {}
        # How many times the rules before the cloud's were worked out (for tests).
        self.static_checks = 0

    @property
    def watches(self) -> Sequence[Watch]:
        return (
            Watch("NodeClaim"),
            Watch("NodePool", self._claims_of_pool),
            Watch("EC2NodeClass", self._claims_of_class),
        )

    def _claims_of_pool(self, event: WatchEvent) -> Iterable[str]:
        return [
            objects.name(claim)
            for claim in self.state.nodeclaims()
            if objects.labels(claim).get(NODEPOOL_LABEL) == event.name
        ]

    def _claims_of_class(self, event: WatchEvent) -> Iterable[str]:
        """The NodeClaims launched with this EC2NodeClass (Karpenter's
        NodeClassEventHandler: by nodeClassRef, not every NodeClaim)."""
        return [
            objects.name(claim)
            for claim in self.state.nodeclaims()
            if ((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name") == event.name
        ]

    def reconcile(self, key: str) -> Result:
        # The state cache holds the latest version (events are delivered before any
        # reconcile runs), as Karpenter's client reads its informer's; a write based on an
        # older one fails with a conflict and retries. The cached NodeClaim is read, never
        # changed: the conditions are worked out on copies of its list.
        claim = self.state.nodeclaim(key)
        if claim is None:
            self._forget(key)
            return Result()
        if objects.is_deleting(claim) or not nodeclaim_is_managed(claim):
            self._forget(key)
            return Result()
        parsed = self.state.nodepool_model(objects.labels(claim).get(NODEPOOL_LABEL, ""))
        if parsed is None or parsed.model is None:
            return Result()
        nodepool = parsed.model
        now = self.clock.now()
        status = dict(claim.get("status") or {})
        conditions = list(status.get("conditions") or [])
        generation = objects.meta(claim).get("generation")
        requeue: list[float] = []

        conditions = self._drift(claim, nodepool, conditions, now, generation)
        requeue.append(DRIFT_RECHECK_SECONDS)

        # A static NodePool's nodes are never consolidated: they never get the condition.
        ready_at = None if nodepool.is_static else consolidatable_at(claim, nodepool)
        had = any(c.get("type") == CONSOLIDATABLE for c in conditions)
        if ready_at is None or ready_at > now:
            conditions = _without(conditions, CONSOLIDATABLE)
            if had:
                log.debug("removing consolidatable status condition",
                          extra=_fields(claim, reason=_why_not_consolidatable(
                              claim, nodepool, ready_at)))
            if ready_at is not None:
                requeue.append(max((ready_at - now).total_seconds(), 0.0))
        else:
            conditions = self._set(conditions, CONSOLIDATABLE, CONSOLIDATABLE, "", now,
                                   generation)
            if not had:
                log.debug("marking consolidatable", extra=_fields(claim))

        if conditions != list(status.get("conditions") or []):
            try:
                write_conditions(self.cluster, claim, conditions)
            except ConflictError:
                return Result(requeue_after=0.0)
            except NotFoundError:
                return Result()
        return Result(requeue_after=min(requeue))

    def _set(self, conditions: list[Mapping[str, Any]], kind: str, reason: str, message: str,
             now: datetime, generation: Any) -> list[Mapping[str, Any]]:
        holder: dict[str, Any] = {"metadata": {"generation": generation},
                                  "status": {"conditions": [dict(c) for c in conditions]}}
        set_condition(holder, kind, "True", now, reason=reason, message=message)
        updated: list[Mapping[str, Any]] = holder["status"]["conditions"]
        return updated

    def _drift(self, claim: Mapping[str, Any], nodepool: NodePool,
               conditions: list[Mapping[str, Any]], now: datetime,
               generation: Any) -> list[Mapping[str, Any]]:
        existing = next((c for c in conditions if c.get("type") == DRIFTED), None)
        if not objects.condition_is_true(claim, LAUNCHED):
            if existing is not None:
                log.debug("removing drift status condition, isn't launched",
                          extra=_fields(claim))
            return _without(conditions, DRIFTED)
        class_name = nodepool.spec.template.spec.node_class_ref.name
        parsed_class = self.state.node_class_model(class_name)
        # Karpenter resolves the NodePool's node class and treats a terminating one as not
        # found: no EC2NodeClass hash or cloud check, and no instance types.
        resolvable = parsed_class is not None and not objects.is_deleting(parsed_class.source)
        node_class = parsed_class.model if parsed_class is not None and resolvable else None
        # Karpenter's instance type provider lists nothing for a node class without
        # subnets in its status ("no subnets found"): the models hold no status.
        has_subnets = parsed_class is not None and bool(
            (parsed_class.source.get("status") or {}).get("subnets"))
        # The NodeClaim's labels, as Karpenter's NewLabelRequirements(nodeClaim.Labels):
        # not the Node's, which may carry labels (or values) the NodeClaim does not.
        labels = objects.labels(claim)
        found = self._static(claim, nodepool, node_class, class_name, labels, now,
                             resolvable, has_subnets)
        if found is None and node_class is not None:
            found = self._cloud_drift(claim, node_class)
        if found is UNDECIDED:
            # Karpenter's Drift reconciler returns the error before touching the condition.
            return conditions
        if found is None:
            if existing is not None:
                log.debug("removing drifted status condition, not drifted",
                          extra=_fields(claim))
            return _without(conditions, DRIFTED)
        if existing is not None and existing.get("status") == "True" and existing.get(
                "reason") == found.reason:
            return conditions
        if existing is None:
            log.debug("marking drifted", extra=_fields(claim, reason=found.reason))
        return self._set(conditions, DRIFTED, found.reason, found.message, now, generation)

    def _static(self, claim: Mapping[str, Any], nodepool: NodePool,
                node_class: EC2NodeClass | None, class_name: str, labels: Mapping[str, str],
                now: datetime, resolvable: bool, has_subnets: bool) -> Drift | None:
        name = objects.name(claim)
        annotations = objects.annotations(claim)
        pool = self._inputs_of_pool(nodepool)
        klass = self._inputs_of_class(node_class)
        due = instance_type_check_due(objects.creation_time(claim), now)
        instance_types = (self._catalog(node_class, class_name, now, resolvable,
                                        has_subnets) if due else None)
        kept = self._verdicts.get(name)
        if kept is not None and kept.holds_for(labels, annotations, pool, klass,
                                               instance_types, due):
            return kept.drift
        self.static_checks += 1
        found = static_drift(nodepool=nodepool, annotations=annotations, labels=labels,
                             node_class=node_class, instance_types=instance_types,
                             instance_type_due=due, ca_bundle=self.state.ca_bundle)
        self._verdicts[name] = _StaticVerdict(dict(labels), dict(annotations), pool, klass,
                                              instance_types, due, found)
        return found

    def _inputs_of_pool(self, nodepool: NodePool) -> tuple[Any, ...]:
        seen = self._pools.get(nodepool.name)
        if seen is None or seen[0] is not nodepool:
            seen = (nodepool, _pool_inputs(nodepool))
            self._pools[nodepool.name] = seen
        return seen[1]

    def _inputs_of_class(self, node_class: EC2NodeClass | None) -> tuple[str, str] | None:
        if node_class is None:
            return None
        seen = self._classes.get(node_class.name)
        if seen is None or seen[0] is not node_class:
            seen = (node_class, (node_class.name,
                                 hashes.node_class_hash(node_class, self.state.ca_bundle)))
            self._classes[node_class.name] = seen
        return seen[1]

    def _forget(self, name: str) -> None:
        self._verdicts.pop(name, None)
        self._models.pop(name, None)

    def _catalog(self, node_class: EC2NodeClass | None, class_name: str, now: datetime,
                 resolvable: bool, has_subnets: bool) -> Sequence[InstanceType] | None:
        """The instance types of the NodePool's node class, None when they cannot be read
        (Karpenter's GetInstanceTypes error: its instance type provider's List fails
        without the node class's subnets in status). A node class that is gone or
        terminating has none."""
        if not resolvable:
            return _NO_TYPES
        if node_class is None or not has_subnets:
            return None
        cached = self._catalogs.get(class_name)
        if cached is not None and now - cached[0] < _CATALOG_TTL:
            return cached[1]
        try:
            types = list(self.provider.get_instance_types(node_class))
        except CloudProviderError as error:
            log.warning("drift: instance types of EC2NodeClass %s: %s", class_name, error)
            return None
        self._catalogs[class_name] = (now, types)
        return types

    def _cloud_drift(self, claim: Mapping[str, Any], node_class: EC2NodeClass
                     ) -> Drift | None:
        """The cloud provider's verdict; UNDECIDED when it could not judge (Karpenter's
        IsDrifted error, a NodeClaim whose instance is gone included)."""
        model = self._model(claim)
        if model is None:
            return None
        try:
            reason = self.provider.drift_reason(model, node_class)
        except NodeClaimNotFoundError:
            return UNDECIDED
        except CloudProviderError as error:
            log.warning("drift: cloud check of NodeClaim %s: %s", objects.name(claim), error)
            return UNDECIDED
        return cloud_drift(lambda: reason)

    def _model(self, claim: Mapping[str, Any]) -> NodeClaim | None:
        """The NodeClaim's model for the cloud's drift check, built again only when what
        the check may read changed. Most writes to a NodeClaim are of its conditions and
        `lastPodEventTime` (this controller's own, the pod events'), each a new
        resourceVersion; no drift check reads those (Karpenter's IsDrifted and ours read
        the provider and image IDs, labels, annotations and requirements), so the model
        leaves them out and one model serves every version that differs only in them.
        The provider reads the model and must not change it."""
        name = objects.name(claim)
        readable = _drift_readable(claim)
        kept = self._models.get(name)
        if kept is not None and kept[0] == readable:
            return kept[1]
        try:
            model: NodeClaim | None = NodeClaim.model_validate(readable)
        except ValidationError as error:
            log.warning("drift: NodeClaim %s cannot be read: %s", name, error)
            model = None
        self._models[name] = (readable, model)
        return model


def _fields(claim: Mapping[str, Any], **more: str) -> dict[str, str]:
    return {"controller": NodeClaimConditions.name, **logfields.nodeclaim_fields(claim),
            **more}


def _why_not_consolidatable(claim: Mapping[str, Any], nodepool: NodePool,
                            ready_at: datetime | None) -> str:
    if nodepool.is_static or consolidate_after_seconds(nodepool) is None:
        return "consolidation is disabled"
    if ready_at is None:
        return "nodeclaim isn't initialized"
    return "consolidateAfter window not yet elapsed"


def _drift_readable(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The NodeClaim without what its frequent writes change and no drift check reads."""
    readable = {k: v for k, v in claim.items()
                if k in ("apiVersion", "kind", "metadata", "spec", "status")}
    metadata = readable.get("metadata")
    if isinstance(metadata, Mapping) and "resourceVersion" in metadata:
        readable["metadata"] = {k: v for k, v in metadata.items() if k != "resourceVersion"}
    status = readable.get("status")
    if isinstance(status, Mapping):
        readable["status"] = {k: v for k, v in status.items()
                              if k not in ("conditions", "lastPodEventTime")}
    return readable
