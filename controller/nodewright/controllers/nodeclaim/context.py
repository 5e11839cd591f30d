"""What the NodeClaim lifecycle steps share: the seams, the clock, the state, the event
recorder, and a small cache of instance types per node class version (capacity and
allocatable of a type depend on the node class's kubelet settings, not on availability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProvider
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common.registration_health import RegistrationHealthWriter
from nodewright.runtime.clock import Clock
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import ClusterState

Object = dict[str, Any]
CONFLICT_RETRY_SECONDS = 0.1


@dataclass
class LifecycleContext:
    cluster: ClusterAPI
    cloud: CloudProvider
    clock: Clock
    state: ClusterState
    recorder: EventRecorder
    # Where registration outcomes go (the NodePool's NodeRegistrationHealthy); None: nowhere.
    health: RegistrationHealthWriter | None = None
    _types: dict[tuple[str, str], Mapping[str, InstanceType]] = field(default_factory=dict)

    def instance_type(self, node_class: EC2NodeClass, name: str) -> InstanceType | None:
        raw = self.state.node_class(node_class.name) or {}
        version = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        key = (node_class.name, version)
        types = self._types.get(key)
        if types is None or name not in types:
            types = {it.name: it for it in self.cloud.get_instance_types(node_class)}
            self._types = {k: v for k, v in self._types.items() if k[0] != node_class.name}
            self._types[key] = types
        return types.get(name)


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def provider_id_of(claim: Mapping[str, Any]) -> str:
    return str((claim.get("status") or {}).get("providerID") or "")


def nodepool_of(claim: Mapping[str, Any]) -> str:
    return labels_of(claim).get("karpenter.sh/nodepool", "")
