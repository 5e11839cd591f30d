"""NodePool status (Karpenter's nodepool.counter, validation, readiness and
registrationhealth controllers).

`status.resources` is what the pool's machines hold (capacity, with cpu, memory, pods,
ephemeral-storage and nodes always present), `status.nodes` their number; machines marked
for deletion do not count. Conditions: ValidationSucceeded (the NodePool validates),
NodeClassReady (its EC2NodeClass exists, is not being deleted and reports Ready, with
Karpenter's reasons: NodeClassNotFound, NodeClassTerminating, NodeClassReadinessUnknown or
the node class's own reason), and Ready following both. NodeRegistrationHealthy goes
Unknown, and the pool's registration outcomes are forgotten, when the NodePool is new or
its spec (generation) or its EC2NodeClass's generation changed since the condition was
written; `status.nodeClassObservedGeneration` remembers the latter. The NodeClaim
lifecycle sets it True or False (see `registration_health`). Written only once the state
is synced, so a restarted controller never writes a smaller count than the truth.
A NodePool on another provider's node class (its nodeClassRef's group and kind) is not
ours: its status is left alone.

While a NodePool's EC2NodeClass is missing or being deleted, the NodePool also gets the
Warning 'Failed resolving NodeClass' every two minutes (the recorder's dedupe window).
Karpenter's AWS cloud provider publishes NodePoolFailedToResolveNodeClass whenever it is
asked about such a NodePool (GetInstanceTypes from the disruption loop's NodePool map, the
pricing and NodeOverlay controllers; IsDrifted; an instance's type), which its disruption
loop does every few seconds: in effect once per window for as long as it lasts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.api.managed import nodepool_is_managed
from nodewright.api.quantity import format_quantity, is_byte_resource
from nodewright.cluster import conditions, objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import NODEPOOL
from nodewright.cluster.copying import copy_object, deep_copy
from nodewright.cluster.events import DEFAULT_DEDUPE_SECONDS, EventRecorder
from nodewright.controllers.common.node_class_events import failed_resolving_node_class
from nodewright.controllers.common.patching import patch_status
from nodewright.controllers.common.registration_health import (
    NODE_REGISTRATION_HEALTHY,
    Health,
    RegistrationHealth,
)
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import NODES_RESOURCE, ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

BASE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", NODES_RESOURCE)
UNSYNCED_RETRY_SECONDS = 1.0
_SI_SUFFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def resource_quantity(millis: int, name: str) -> str:
    """An amount of `status.resources` as Karpenter's counter writes it: Go's canonical
    Quantity. Byte resources (BinarySI, as kubelets report them) in the largest exact
    binary unit; the others (DecimalSI: cpu, pods, nodes, devices) with the SI suffix of
    their largest power of a thousand that keeps the number whole: "1k" nodes, "29k"
    pods, "1500m" but "1100" cpu."""
    if millis <= 0 or is_byte_resource(name):
        return format_quantity(millis, name)
    mantissa, exponent = millis, -3
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    if exponent > 18:  # no suffix above E (exa)
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    mantissa, exponent = mantissa * 10 ** (exponent % 3), exponent - exponent % 3
    return f"{mantissa}{_SI_SUFFIXES[exponent]}"


class NodePoolStatus:
    name = "nodepool.status"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState,
                 registration_health: RegistrationHealth | None = None,
                 recorder: EventRecorder | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self.registration_health = registration_health
        self.recorder = recorder
        self._watches = (
            Watch("NodePool"),
            Watch("EC2NodeClass", keys=self._pools_of_node_class),
            Watch("NodeClaim", keys=self._pool_label),
            Watch("Node", keys=self._pool_label),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @staticmethod
    def _pool_label(event: WatchEvent) -> Iterable[str]:
        pool = ((event.object.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL)
        return (str(pool),) if pool else ()

    def _pools_of_node_class(self, event: WatchEvent) -> Iterable[str]:
        return [
            str(pool["metadata"]["name"]) for pool in self.state.nodepools()
            if ((pool.get("spec") or {}).get("template") or {}).get("spec", {})
            .get("nodeClassRef", {}).get("name") == event.name
        ]

    def reconcile(self, key: str) -> Result:
        cached = self.state.nodepool(key)
        if cached is None or not nodepool_is_managed(cached):
            return Result()
        pool: dict[str, Any] = copy_object(cached)
        if not self.state.synced(self.cluster):
            return Result(requeue_after=UNSYNCED_RETRY_SECONDS)
        after = deep_copy(pool)
        status = after.setdefault("status", {})
        usage = self.state.nodepool_resources(key)
        resources = {name: 0 for name in BASE_RESOURCES}
        resources.update(usage)
        status["resources"] = {
            name: resource_quantity(max(amount, 0), name)
            for name, amount in sorted(resources.items())
        }
        status["nodes"] = max(resources.get(NODES_RESOURCE, 0), 0) // 1000
        now = self.clock.now()
        NODEPOOL.initialize(after, now)
        parsed = self.state.nodepool_model(key)
        if parsed is not None and parsed.model is None:
            NODEPOOL.set_false(after, "ValidationSucceeded", now, "NodePoolValidationFailed",
                               parsed.problem or "")
        else:
            NODEPOOL.set_true(after, "ValidationSucceeded", now)
        reference = (((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "nodeClassRef") or {}
        node_class = self.state.node_class(str(reference.get("name", "")))
        self._node_class_ready(after, str(reference.get("name", "")), node_class, now)
        if node_class is not None and self.registration_health is not None:
            self._registration_health(after, node_class, now)
        try:
            patch_status(self.cluster, pool, after)
        except ConflictError:
            return Result(requeue_after=0.1)
        except NotFoundError:
            return Result()
        if node_class is None or objects.is_deleting(node_class):
            if self.recorder is not None:
                self.recorder.publish(failed_resolving_node_class(pool))
            return Result(requeue_after=DEFAULT_DEDUPE_SECONDS)
        return Result()

    def _node_class_ready(self, pool: dict[str, Any], name: str,
                          node_class: Mapping[str, Any] | None, now: datetime) -> None:
        if node_class is None:
            NODEPOOL.set_false(pool, "NodeClassReady", now, "NodeClassNotFound",
                               "NodeClass not found on cluster")
            return
        if (node_class.get("metadata") or {}).get("deletionTimestamp"):
            NODEPOOL.set_false(pool, "NodeClassReady", now, "NodeClassTerminating",
                               "NodeClass is Terminating")
            return
        parsed = self.state.node_class_model(name)
        if parsed is not None and parsed.model is None:
            NODEPOOL.set_false(pool, "NodeClassReady", now, "NodeClassInvalid",
                               f"EC2NodeClass {name!r} is invalid: {parsed.problem}")
            return
        # A node class nobody has reported on yet is not known to be ready (Karpenter's
        # NodeClassReadinessUnknown); its controller writes Ready on its first reconcile.
        ready = objects.condition(node_class, "Ready")
        if ready is not None and ready.get("status") == conditions.TRUE:
            NODEPOOL.set_true(pool, "NodeClassReady", now)
        elif ready is not None and ready.get("status") == conditions.FALSE:
            NODEPOOL.set_false(pool, "NodeClassReady", now, str(ready.get("reason") or
                                                               "NodeClassNotReady"),
                               str(ready.get("message") or ""))
        else:
            NODEPOOL.set_false(pool, "NodeClassReady", now, "NodeClassReadinessUnknown",
                               "Node Class Readiness Unknown")

    def _registration_health(self, pool: dict[str, Any], node_class: Mapping[str, Any],
                             now: datetime) -> None:
        assert self.registration_health is not None
        health = self.registration_health
        metadata = pool.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        current = objects.condition(pool, NODE_REGISTRATION_HEALTHY)
        if health.status(uid) is Health.UNKNOWN and current is not None:
            # A restarted controller starts from what the condition says.
            if current.get("status") == conditions.TRUE:
                health.reset(uid, Health.HEALTHY)
            elif current.get("status") == conditions.FALSE:
                health.reset(uid, Health.UNHEALTHY)
        status = pool.setdefault("status", {})
        class_generation = (node_class.get("metadata") or {}).get("generation")
        if (
            current is None
            or status.get("nodeClassObservedGeneration") != class_generation
            or metadata.get("generation") != current.get("observedGeneration")
        ):
            NODEPOOL.set_unknown(pool, NODE_REGISTRATION_HEALTHY, now, *conditions.AWAITING)
            health.reset(uid)
        if class_generation is not None:
            status["nodeClassObservedGeneration"] = class_generation
