"""The Node object a simulated instance's kubelet registers, as a real one joining a
Karpenter cluster would: its providerID, the instance type's labels and the NodeClaim's
(from the user data), the NodeClaim's taints and startup taints plus
`karpenter.sh/unregistered`, and status (capacity, allocatable, Ready, node info)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from nodewright.api.core import Taint
from nodewright.api.quantity import format_quantity
from nodewright.cloud.sim.machines import SimInstance
from nodewright.runtime.clock import format_time
from nodewright.scheduling import labels as well_known

UNREGISTERED_TAINT: Final[Mapping[str, str]] = {
    "key": "karpenter.sh/unregistered",
    "effect": "NoExecute",
}
CORE_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
CONTAINER_RUNTIME: Final = "containerd://1.7.27"
OS_IMAGES: Final[Mapping[str, str]] = {
    "AL2023": "Amazon Linux 2023",
    "AL2": "Amazon Linux 2",
    "Bottlerocket": "Bottlerocket OS",
    "Windows2019": "Windows Server 2019 Datacenter",
    "Windows2022": "Windows Server 2022 Datacenter",
    "Windows2025": "Windows Server 2025 Datacenter",
}


def taint_manifest(taint: Taint) -> dict[str, Any]:
    return {k: v for k, v in taint.to_manifest().items() if k != "timeAdded"}


def registration_taints(instance: SimInstance) -> list[dict[str, Any]]:
    taints = [taint_manifest(t) for t in (*instance.node.taints, *instance.node.startup_taints)]
    return [*taints, dict(UNREGISTERED_TAINT)]


def node_labels(instance: SimInstance, hostname: str) -> dict[str, str]:
    """The NodeClaim's labels under the instance's own (the instance's facts win)."""
    labels = {**instance.node.labels, **instance.labels, well_known.HOSTNAME: hostname}
    return dict(sorted(labels.items()))


def node_object(
    instance: SimInstance, hostname: str, now: datetime, kubernetes_version: str
) -> dict[str, Any]:
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": hostname,
            "labels": node_labels(instance, hostname),
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": instance.private_ip,
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": instance.provider_id, "taints": registration_taints(instance)},
        "status": node_status(instance, hostname, stamp, kubernetes_version),
    }


def node_status(
    instance: SimInstance, hostname: str, stamp: str, kubernetes_version: str
) -> dict[str, Any]:
    instance_type = instance.instance_type
    return {
        "capacity": _resources(instance_type.capacity),
        "allocatable": _resources(instance_type.allocatable),
        "conditions": [
            _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", stamp,
                       "kubelet has sufficient memory available"),
            _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", stamp,
                       "kubelet has no disk pressure"),
            _condition("PIDPressure", "False", "KubeletHasSufficientPID", stamp,
                       "kubelet has sufficient PID available"),
            _condition("Ready", "True", "KubeletReady", stamp, "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": instance.private_ip},
            {"type": "InternalDNS", "address": hostname},
            {"type": "Hostname", "address": hostname},
        ],
        "nodeInfo": {
            "architecture": instance.architecture,
            "operatingSystem": instance_type.labels.get(well_known.OS, "linux"),
            "osImage": instance.node.os_image,
            "kubeletVersion": f"v{kubernetes_version}.0-eks",
            "containerRuntimeVersion": CONTAINER_RUNTIME,
            "machineID": instance.instance_id.removeprefix("i-").rjust(32, "0"),
            "systemUUID": instance.instance_id.removeprefix("i-").rjust(32, "0"),
        },
    }


def not_ready_conditions(
    conditions: list[dict[str, Any]], stamp: str
) -> list[dict[str, Any]]:
    """What the node lifecycle controller writes when a kubelet stops posting status."""
    updated: list[dict[str, Any]] = []
    for condition in conditions:
        changed = dict(condition)
        if changed.get("status") != "Unknown":
            changed.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=stamp,
            )
        updated.append(changed)
    return updated


def _resources(resources: Mapping[str, int]) -> dict[str, str]:
    return {
        name: format_quantity(amount, name)
        for name, amount in sorted(resources.items())
        if amount > 0 or name in CORE_RESOURCES
    }


def _condition(kind: str, status: str, reason: str, stamp: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }
