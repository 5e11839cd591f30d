"""The NodeOverlay controller (Karpenter's nodeoverlay.controller, behind the NodeOverlay
gate): rebuilds the overlay store every NodePool's instance types go through
(`scheduling.overlays`) whenever an overlay, a NodePool or an EC2NodeClass changes, and
reports on each overlay: ValidationSucceeded (False with RuntimeValidation when its
requirements or capacity break Karpenter's rules, with Conflict when an overlay of the
same weight already changes what it would) and Ready following it.

A NodePool whose instance types cannot be read (the cloud fails, or its EC2NodeClass
cannot be parsed) stays out of the store, so it launches nothing until a later pass
includes it, as in Karpenter: the pass stores what the healthy NodePools get, writes the
statuses, then fails naming the broken NodePools, so the driver logs it and retries with
backoff. A NodePool whose EC2NodeClass is missing or being deleted is no error: Karpenter's
AWS provider answers it with no instance types (and the Warning 'Failed resolving
NodeClass', which the NodePool status controller publishes here), so it is evaluated with
none and the pass succeeds; the node class's creation starts the next pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import format_path
from nodewright.api.rules import check_nodeoverlay
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import ConditionSet
from nodewright.cluster.copying import copy_object, deep_copy
from nodewright.controllers.common.patching import patch_status
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, singleton_key
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.overlays import build_store
from nodewright.state import ClusterState

OVERLAY = ConditionSet("Ready", ("ValidationSucceeded",))
VALIDATION_SUCCEEDED = "ValidationSucceeded"
REQUEUE_SECONDS = 6 * 3600.0
UNSYNCED_RETRY_SECONDS = 1.0


class UnevaluatedNodePools(Exception):
    """NodePools whose instance types could not be read; the store was built without them."""


class NodeOverlayController:
    name = "nodeoverlay.controller"

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock,
                 state: ClusterState) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self._watches = tuple(Watch(kind, singleton_key)
                              for kind in ("NodeOverlay", "NodePool", "EC2NodeClass"))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        if not self.state.synced(self.cluster):
            return Result(requeue_after=UNSYNCED_RETRY_SECONDS)
        pools, failures = self._pools()
        valid: list[NodeOverlay] = []
        invalid: dict[str, str] = {}
        for raw in self.state.overlays():
            name = objects.name(raw)
            parsed = self.state.overlay_model(name)
            if parsed is None or parsed.model is None:
                invalid[name] = parsed.problem if parsed and parsed.problem else "invalid"
                continue
            findings = list(check_nodeoverlay(parsed.model))
            if findings:
                invalid[name] = "; ".join(f"{format_path(path)}: {message}"
                                          for path, message in findings)
                continue
            valid.append(parsed.model)
        store, conflicting = build_store(valid, pools)
        self.state.overlay_store = store
        self.state.mark_unconsolidated()
        for raw in self.state.overlays():
            if not self._write_status(raw, invalid.get(objects.name(raw)),
                                      objects.name(raw) in conflicting):
                return Result(requeue_after=0.1)
        if failures:
            raise UnevaluatedNodePools("; ".join(failures))
        return Result(requeue_after=REQUEUE_SECONDS)

    def _pools(self) -> tuple[dict[str, tuple[NodePool, list[InstanceType]]], list[str]]:
        """The NodePools with their instance types, and what kept the others out."""
        pools: dict[str, tuple[NodePool, list[InstanceType]]] = {}
        failures: list[str] = []
        cache: dict[str, list[InstanceType]] = {}
        for raw in self.state.nodepools():
            name = objects.name(raw)
            parsed = self.state.nodepool_model(name)
            if parsed is None or parsed.model is None:
                continue
            reference = parsed.model.spec.template.spec.node_class_ref
            raw_class = self.state.node_class(reference.name)
            if raw_class is None or objects.is_deleting(raw_class):
                # Karpenter's AWS GetInstanceTypes answers no instance types and no error
                # for a missing or terminating EC2NodeClass: the pool is evaluated.
                pools[name] = (parsed.model, [])
                continue
            node_class = self.state.node_class_model(reference.name)
            if node_class is None or node_class.model is None:
                failures.append(f'listing instance types for nodepool "{name}", '
                                f'EC2NodeClass "{reference.name}" is invalid')
                continue
            types = cache.get(reference.name)
            if types is None:
                try:
                    types = cache[reference.name] = self._types(node_class.model)
                except CloudProviderError as error:
                    failures.append(f'listing instance types for nodepool "{name}", {error}')
                    continue
            pools[name] = (parsed.model, types)
        return pools, failures

    def _types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return list(self.cloud.get_instance_types(node_class))

    def _write_status(self, raw: Any, problem: str | None, conflict: bool) -> bool:
        """False when the write met a newer version (the pass is repeated)."""
        before = copy_object(raw)
        after = deep_copy(before)
        now = self.clock.now()
        OVERLAY.initialize(after, now)
        if problem is not None:
            OVERLAY.set_false(after, VALIDATION_SUCCEEDED, now, "RuntimeValidation", problem)
        elif conflict:
            OVERLAY.set_false(after, VALIDATION_SUCCEEDED, now, "Conflict",
                              "conflict with another overlay")
        else:
            OVERLAY.set_true(after, VALIDATION_SUCCEEDED, now)
        try:
            patch_status(self.cluster, before, after)
        except ConflictError:
            return False
        except NotFoundError:
            return True
        return True
