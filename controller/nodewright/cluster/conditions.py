"""Status conditions as Karpenter's objects carry them (operatorpkg's condition sets).

A set has a root condition (Ready) that follows its dependents: True when all are True
for the object's current generation, False as soon as one is False for it, otherwise
Unknown ("ReconcilingDependents"; a dependent written for an older generation counts as
not yet reconciled). Conditions a set knows start Unknown with reason
AwaitingReconciliation and the object's creation time as their last transition, as
operatorpkg's do. `lastTransitionTime` moves only when a condition's status changes.

The list is in operatorpkg's order, which `kubectl describe` shows: a condition that
changes goes to the end, the list is then ordered by last transition (oldest first, ties
keeping their order) with the root (Ready) last; removing one orders the rest by type, as
operatorpkg's Clear does. A CapacityBuffer's conditions are Kubernetes' own
(apimachinery's SetStatusCondition, as Karpenter writes them): changed in place, new ones
appended.

`set_condition` is the one way anything writes a condition (NodeClaims, NodePools,
EC2NodeClasses, CapacityBuffers, the in-memory cluster's PodDisruptionBudgets): it never
changes a condition in place (the objects may be shared with a cache), stamps the object's
generation as observedGeneration (on an object being deleted, whose generation the API
server moved on when it set the deletionTimestamp, every other condition's too, as
operatorpkg's Set does, so Ready keeps following them), and reports whether anything
changed. `remove_condition` is its counterpart, and `write_conditions` sends a changed list
back guarded by the resourceVersion it was based on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI
from nodewright.runtime.clock import format_time, parse_time

Object = dict[str, Any]
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
AWAITING = ("AwaitingReconciliation", "object is awaiting reconciliation")


def status_of(obj: Mapping[str, Any], condition_type: str) -> str | None:
    condition = objects.condition(obj, condition_type)
    return None if condition is None else str(condition.get("status"))


def transition_time(obj: Mapping[str, Any], condition_type: str) -> datetime | None:
    condition = objects.condition(obj, condition_type)
    if condition is None or not condition.get("lastTransitionTime"):
        return None
    return parse_time(str(condition["lastTransitionTime"]))


class ConditionSet:
    def __init__(self, root: str, dependents: Sequence[str]) -> None:
        self.root = root
        self.dependents = tuple(dependents)

    def initialize(self, obj: Object, now: datetime) -> bool:
        created = (obj.get("metadata") or {}).get("creationTimestamp")
        since = parse_time(str(created)) if created else now
        changed = False
        for condition_type in (self.root, *self.dependents):
            if objects.condition(obj, condition_type) is None:
                changed |= self.set(obj, condition_type, UNKNOWN, since, *AWAITING)
        return changed

    def restamp(self, obj: Object, now: datetime) -> bool:
        """Write the decided (True/False) dependents again for the object's generation, as
        Karpenter's lifecycle steps do each reconcile, so Ready keeps following them."""
        changed = False
        for condition_type in self.dependents:
            condition = objects.condition(obj, condition_type)
            if condition is not None and condition.get("status") in (TRUE, FALSE):
                changed |= self.set(obj, condition_type, str(condition["status"]), now,
                                    condition.get("reason"), str(condition.get("message") or ""))
        return changed

    def set(
        self,
        obj: Object,
        condition_type: str,
        status: str,
        now: datetime,
        reason: str | None = None,
        message: str = "",
    ) -> bool:
        """Set one condition (recomputing the root); True when anything changed."""
        changed = set_condition(obj, condition_type, status, now, reason, message)
        if changed and condition_type != self.root:
            self._recompute_root(obj, now)
        return changed

    def set_true(self, obj: Object, condition_type: str, now: datetime,
                 reason: str | None = None, message: str = "") -> bool:
        return self.set(obj, condition_type, TRUE, now, reason, message)

    def set_false(self, obj: Object, condition_type: str, now: datetime, reason: str,
                  message: str = "") -> bool:
        return self.set(obj, condition_type, FALSE, now, reason, message)

    def set_unknown(self, obj: Object, condition_type: str, now: datetime, reason: str,
                    message: str = "") -> bool:
        return self.set(obj, condition_type, UNKNOWN, now, reason, message)

    def _recompute_root(self, obj: Object, now: datetime) -> None:
        generation = (obj.get("metadata") or {}).get("generation")

        def current(condition: Mapping[str, Any]) -> bool:
            return generation is None or condition.get("observedGeneration") == generation

        unhealthy = [
            condition
            for condition_type in self.dependents
            if (condition := objects.condition(obj, condition_type)) is not None
            and (condition.get("status") != TRUE or not current(condition))
        ]
        if not unhealthy:
            set_condition(obj, self.root, TRUE, now, self.root, "")
            return
        unhealthy.sort(key=lambda c: str(c.get("lastTransitionTime", "")), reverse=True)
        status = FALSE if any(
            c.get("status") == FALSE and current(c) for c in unhealthy) else UNKNOWN
        reason = "UnhealthyDependents" if status == FALSE else "ReconcilingDependents"
        message = ", ".join(f"{c.get('type')}={c.get('status')}" for c in unhealthy)
        set_condition(obj, self.root, status, now, reason, message)


def set_condition(obj: Object, condition_type: str, status: str, now: datetime,
                  reason: str | None = None, message: str = "") -> bool:
    """Set one condition (no root recomputed: `ConditionSet.set` does that); True when
    anything changed, observedGeneration included."""
    reason = reason or condition_type
    status_block = obj.get("status")
    if not isinstance(status_block, dict):
        status_block = obj["status"] = {}
    items: list[dict[str, Any]] = list(status_block.get("conditions") or [])
    metadata = obj.get("metadata") or {}
    generation = metadata.get("generation")
    index, item = next(((i, c) for i, c in enumerate(items) if c.get("type") == condition_type),
                       (None, None))
    if item is not None and (item.get("status"), item.get("reason"), item.get("message")) == (
            status, reason, message) and (
            generation is None or item.get("observedGeneration") == generation):
        return False
    if item is not None:
        entry = dict(item, status=status, reason=reason, message=message)
        if item.get("status") != status:
            entry["lastTransitionTime"] = format_time(now)
    else:
        entry = {"type": condition_type, "status": status, "reason": reason,
                 "message": message, "lastTransitionTime": format_time(now)}
    if generation is not None:
        entry["observedGeneration"] = generation
    if obj.get("kind") in _APIMETA_KINDS:
        if index is None:
            items.append(entry)
        else:
            items[index] = entry
        status_block["conditions"] = items
        return True
    if index is not None:
        del items[index]
    if generation is not None and metadata.get("deletionTimestamp"):
        items = [c if c.get("observedGeneration") == generation
                 else dict(c, observedGeneration=generation) for c in items]
    items.append(entry)
    items.sort(key=_operatorpkg_order)
    status_block["conditions"] = items
    return True


# Kinds whose conditions are Kubernetes' metav1.Conditions, kept in place.
_APIMETA_KINDS = frozenset({"CapacityBuffer"})
ROOT = "Ready"


def _operatorpkg_order(condition: Mapping[str, Any]) -> tuple[bool, str]:
    """operatorpkg's order: the root last, the others by last transition (stable)."""
    return condition.get("type") == ROOT, str(condition.get("lastTransitionTime") or "")


def remove_condition(obj: Object, condition_type: str) -> bool:
    """Drop one condition (without changing the list in place); True when it was there."""
    status_block = obj.get("status")
    if not isinstance(status_block, dict):
        return False
    items = list(status_block.get("conditions") or [])
    kept = [item for item in items if item.get("type") != condition_type]
    if len(kept) == len(items):
        return False
    if obj.get("kind") not in _APIMETA_KINDS:
        kept.sort(key=lambda c: str(c.get("type", "")))  # operatorpkg's Clear
    status_block["conditions"] = kept
    return True


def write_conditions(cluster: ClusterAPI, before: Mapping[str, Any],
                     conditions: Sequence[Mapping[str, Any]]) -> Object:
    """Replace the object's status.conditions through the status subresource, guarded by
    the resourceVersion `before` was read at: a concurrent write raises ConflictError (and
    a deleted object NotFoundError) instead of being overwritten."""
    metadata = before.get("metadata") or {}
    return cluster.patch(
        str(before.get("kind")), str(metadata.get("name") or ""),
        {"metadata": {"resourceVersion": metadata.get("resourceVersion")},
         "status": {"conditions": list(conditions)}},
        metadata.get("namespace") or None, subresource="status",
    )


NODECLAIM = ConditionSet("Ready", ("Launched", "Registered", "Initialized"))
NODEPOOL = ConditionSet("Ready", ("ValidationSucceeded", "NodeClassReady"))
# Karpenter's EC2NodeClass (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass_status.go):
# CapacityReservationsReady is one of them only with the ReservedCapacity gate on (its
# default); with it off the reservations are not reconciled and Ready does not wait on them.
EC2NODECLASS = ConditionSet("Ready", (
    "AMIsReady", "SubnetsReady", "SecurityGroupsReady", "InstanceProfileReady",
    "ValidationSucceeded", "CapacityReservationsReady", "PlacementGroupReady"))
EC2NODECLASS_UNRESERVED = ConditionSet("Ready", tuple(
    kind for kind in EC2NODECLASS.dependents if kind != "CapacityReservationsReady"))
