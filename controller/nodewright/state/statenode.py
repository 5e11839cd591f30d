"""One machine as the controllers see it: a NodeClaim and its Node joined by provider ID,
with the requests of the pods bound to it (Karpenter's StateNode).

Before registration the NodeClaim speaks for the machine (name, labels, taints,
capacity); afterwards the Node does. Derived values are cached and dropped whenever the
Node or NodeClaim changes, so reading them in a solve costs nothing per pod.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodewright.api.quantity import Resources, parse_resources
from nodewright.scheduling.pods import ExistingNode, SpecError, Taint, parse_taints
from nodewright.state.wellknown import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    NODEPOOL_LABEL,
    REGISTERED_LABEL,
    is_known_ephemeral,
    matches,
)

Object = Mapping[str, Any]
NODES_RESOURCE = "nodes"


class NodePods:
    """The pods bound to one node name: requests per pod and running totals."""

    def __init__(self) -> None:
        self.requests: dict[str, Mapping[str, int]] = {}
        self.daemon_keys: set[str] = set()
        self.total: dict[str, int] = {}
        self.daemon_total: dict[str, int] = {}

    def copy(self) -> NodePods:
        copied = NodePods()
        copied.requests = dict(self.requests)
        copied.daemon_keys = set(self.daemon_keys)
        copied.total = dict(self.total)
        copied.daemon_total = dict(self.daemon_total)
        return copied

    def put(self, key: str, requests: Mapping[str, int], is_daemon: bool) -> None:
        self.remove(key)
        self.requests[key] = requests
        _accumulate(self.total, requests, 1)
        if is_daemon:
            self.daemon_keys.add(key)
            _accumulate(self.daemon_total, requests, 1)

    def remove(self, key: str) -> bool:
        previous = self.requests.pop(key, None)
        if previous is None:
            return False
        _accumulate(self.total, previous, -1)
        if key in self.daemon_keys:
            self.daemon_keys.discard(key)
            _accumulate(self.daemon_total, previous, -1)
        return True

    def __len__(self) -> int:
        return len(self.requests)


def _accumulate(total: dict[str, int], amounts: Mapping[str, int], sign: int) -> None:
    for name, amount in amounts.items():
        value = total.get(name, 0) + sign * amount
        if value:
            total[name] = value
        else:
            total.pop(name, None)


_EMPTY_PODS = NodePods()


def _meta(obj: Object | None) -> Mapping[str, Any]:
    if obj is None:
        return {}
    return obj.get("metadata") or {}


def _resources(raw: Any) -> Resources:
    if not isinstance(raw, Mapping):
        return {}
    try:
        return parse_resources(raw)
    except ValueError:
        return {}


class StateNode:
    def __init__(self, key: str) -> None:
        self.key = key  # provider ID (or the node name of a node without one)
        self.node: Object | None = None
        self.nodeclaim: Object | None = None
        self.pods: NodePods = _EMPTY_PODS
        self.marked_for_deletion = False
        self.nominated_until: datetime | None = None
        self.last_pod_event: datetime | None = None
        self._cache: dict[str, Any] = {}

    def changed(self) -> None:
        self._cache.clear()

    def copy(self, pods: NodePods | None = None) -> StateNode:
        """A copy with `pods` (default: a copy of this node's) in place of the live
        NodePods; the NodeClaim and Node objects are shared (updates replace them)."""
        copied = copy.copy(self)
        copied._cache = dict(self._cache)
        if pods is not None:
            copied.pods = pods
        elif self.pods is not _EMPTY_PODS:
            copied.pods = self.pods.copy()
        return copied

    # -- identity ------------------------------------------------------------------------

    @property
    def managed(self) -> bool:
        return self.nodeclaim is not None

    @property
    def provider_id(self) -> str:
        if self.node is not None:
            return str((self.node.get("spec") or {}).get("providerID") or "")
        return str(((self.nodeclaim or {}).get("status") or {}).get("providerID") or "")

    @property
    def node_name(self) -> str:
        return str(_meta(self.node).get("name") or "")

    @property
    def nodeclaim_name(self) -> str:
        return str(_meta(self.nodeclaim).get("name") or "")

    @property
    def name(self) -> str:
        """The Node's name once it registered, the NodeClaim's before."""
        if self.node is None or (self.nodeclaim is not None and not self.registered):
            return self.nodeclaim_name
        return self.node_name

    @property
    def registered(self) -> bool:
        if not self.managed:
            return True
        return self.node is not None and self._labels_of(self.node).get(REGISTERED_LABEL) == "true"

    @property
    def initialized(self) -> bool:
        if not self.managed:
            return True
        return (
            self.node is not None and self._labels_of(self.node).get(INITIALIZED_LABEL) == "true"
        )

    @property
    def deleting(self) -> bool:
        """The NodeClaim (or, unmanaged, the Node) is being deleted or its instance is."""
        if self.nodeclaim is not None:
            if _meta(self.nodeclaim).get("deletionTimestamp"):
                return True
            for condition in (self.nodeclaim.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "InstanceTerminating":
                    return bool(condition.get("status") == "True")
            return False
        return bool(_meta(self.node).get("deletionTimestamp"))

    @property
    def is_marked_for_deletion(self) -> bool:
        return self.marked_for_deletion or self.deleting

    def nominated(self, now: datetime) -> bool:
        return self.nominated_until is not None and self.nominated_until > now

    # -- what the machine looks like -----------------------------------------------------

    @staticmethod
    def _labels_of(obj: Object) -> Mapping[str, str]:
        return _meta(obj).get("labels") or {}

    def _speaker(self) -> Object:
        if self.node is None or (self.nodeclaim is not None and not self.registered):
            assert self.nodeclaim is not None
            return self.nodeclaim
        return self.node

    @property
    def labels(self) -> Mapping[str, str]:
        return self._labels_of(self._speaker())

    @property
    def annotations(self) -> Mapping[str, str]:
        return _meta(self._speaker()).get("annotations") or {}

    @property
    def nodepool(self) -> str:
        return str(self.labels.get(NODEPOOL_LABEL) or "")

    @property
    def hostname(self) -> str:
        return str(self.labels.get(HOSTNAME_LABEL) or self.name)

    def taints(self) -> tuple[Taint, ...]:
        """Taints pods must tolerate; before initialization the startup and ephemeral
        taints do not count (they are expected to go away)."""
        cached = self._cache.get("taints")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        source: Object
        if self.node is None or (self.managed and not self.registered):
            assert self.nodeclaim is not None
            source = self.nodeclaim
        else:
            source = self.node
        taints = self._parse_taints(source, "taints")
        if self.managed and not self.initialized:
            assert self.nodeclaim is not None
            startup = self._parse_taints(self.nodeclaim, "startupTaints")
            taints = tuple(
                t for t in taints
                if not is_known_ephemeral(t) and not any(matches(t, s) for s in startup)
            )
        self._cache["taints"] = taints
        return taints

    @staticmethod
    def _parse_taints(obj: Object, field: str) -> tuple[Taint, ...]:
        try:
            return parse_taints((obj.get("spec") or {}).get(field), f"spec.{field}")
        except SpecError:
            return ()

    def _merged(self, field: str) -> Resources:
        node_values = _resources(((self.node or {}).get("status") or {}).get(field))
        if self.initialized or self.nodeclaim is None:
            return node_values
        claim_values = _resources((self.nodeclaim.get("status") or {}).get(field))
        merged = dict(node_values)
        for name, amount in claim_values.items():
            if not merged.get(name):
                merged[name] = amount
        return merged

    def capacity(self) -> Resources:
        cached = self._cache.get("capacity")
        if cached is None:
            cached = self._cache["capacity"] = self._merged("capacity")
        return cached

    def allocatable(self) -> Resources:
        cached = self._cache.get("allocatable")
        if cached is None:
            cached = self._cache["allocatable"] = self._merged("allocatable")
        return cached

    def pool_usage(self) -> tuple[str, Resources] | None:
        """What this machine counts against its NodePool's limits (nothing while it is
        marked for deletion), with the `nodes` resource."""
        pool = self.nodepool
        if not pool or self.is_marked_for_deletion:
            return None
        usage = dict(self.capacity())
        usage[NODES_RESOURCE] = 1000
        return pool, usage

    def pod_requests(self) -> Mapping[str, int]:
        return self.pods.total

    def daemonset_requests(self) -> Mapping[str, int]:
        return self.pods.daemon_total

    def available(self) -> Resources:
        allocatable = self.allocatable()
        used = self.pods.total
        return {name: amount - used.get(name, 0) for name, amount in allocatable.items()}

    def existing_node(self) -> ExistingNode:
        """The machine as the solver's ExistingNode (hostname label always present)."""
        cached = self._cache.get("existing")
        if cached is None:
            labels = dict(self.labels)
            labels.setdefault(HOSTNAME_LABEL, self.name)
            unschedulable = bool(((self.node or {}).get("spec") or {}).get("unschedulable"))
            cached = ExistingNode(
                name=self.name,
                labels=labels,
                taints=self.taints(),
                allocatable=self.allocatable(),
                capacity=self.capacity() or None,
                unschedulable=unschedulable,
                initialized=self.initialized,
            )
            self._cache["existing"] = cached
        return cached

    def __repr__(self) -> str:
        return f"StateNode({self.name!r}, provider_id={self.provider_id!r})"
