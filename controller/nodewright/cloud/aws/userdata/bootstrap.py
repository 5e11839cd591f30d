"""What every node needs to join the cluster, independent of the AMI family's format."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeVar

from nodewright.api.formats import as_go_writes_it

if TYPE_CHECKING:
    from nodewright.api.core import Taint
    from nodewright.api.kubelet import KubeletConfiguration

_Key = TypeVar("_Key", bound=str)

# Every node registers with this taint; the controller removes it once the node is ours.
UNREGISTERED_TAINT_KEY: Final = "karpenter.sh/unregistered"


class UserDataError(ValueError):
    """The user's spec.userData cannot be merged with ours; the message names the field."""


class UnresolvedClusterError(UserDataError):
    """Something about the cluster the user data must carry is not known (yet)."""


@dataclass(frozen=True)
class NodeTaint:
    key: str
    effect: str
    value: str = ""


UNREGISTERED_TAINT: Final = NodeTaint(UNREGISTERED_TAINT_KEY, "NoExecute")


def _strings(values: Mapping[_Key, str] | None) -> dict[str, str]:
    return {str(key): str(value) for key, value in (values or {}).items()}


@dataclass(frozen=True)
class KubeletSettings:
    """The kubelet settings Karpenter's EC2NodeClass.spec.kubelet carries."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None

    def map_flags(self) -> list[tuple[str, Mapping[str, str], str]]:
        """(flag, its key/value pairs, the separator between key and value) of the map
        settings, in Karpenter's order: the kubelet command-line families write them."""
        return [
            ("--system-reserved", self.system_reserved, "="),
            ("--kube-reserved", self.kube_reserved, "="),
            ("--eviction-hard", self.eviction_hard, "<"),
            ("--eviction-soft", self.eviction_soft, "<"),
            ("--eviction-soft-grace-period", self.eviction_soft_grace_period, "="),
        ]

    def scalar_flags(self) -> list[str]:
        """The single-valued settings after the maps, as kubelet flags (those set)."""
        flags = []
        if self.eviction_max_pod_grace_period is not None:
            flags.append(f"--eviction-max-pod-grace-period={self.eviction_max_pod_grace_period}")
        if self.image_gc_high_threshold_percent is not None:
            flags.append(f"--image-gc-high-threshold={self.image_gc_high_threshold_percent}")
        if self.image_gc_low_threshold_percent is not None:
            flags.append(f"--image-gc-low-threshold={self.image_gc_low_threshold_percent}")
        if self.cpu_cfs_quota is not None:
            flags.append(f"--cpu-cfs-quota={str(self.cpu_cfs_quota).lower()}")
        return flags

    @classmethod
    def from_api(cls, kubelet: KubeletConfiguration | None) -> KubeletSettings:
        if kubelet is None:
            return cls()
        return cls(
            max_pods=kubelet.max_pods,
            pods_per_core=kubelet.pods_per_core,
            system_reserved=_strings(kubelet.system_reserved),
            kube_reserved=_strings(kubelet.kube_reserved),
            eviction_hard=_strings(kubelet.eviction_hard),
            eviction_soft=_strings(kubelet.eviction_soft),
            eviction_soft_grace_period={
                signal: as_go_writes_it(period)
                for signal, period in _strings(kubelet.eviction_soft_grace_period).items()},
            eviction_max_pod_grace_period=kubelet.eviction_max_pod_grace_period,
            image_gc_high_threshold_percent=kubelet.image_gc_high_threshold_percent,
            image_gc_low_threshold_percent=kubelet.image_gc_low_threshold_percent,
            cpu_cfs_quota=kubelet.cpu_cfs_quota,
        )


@dataclass(frozen=True)
class ClusterInfo:
    name: str
    endpoint: str
    ca_bundle: str  # base64 PEM, as EKS DescribeCluster returns it
    service_cidr: str = "10.100.0.0/16"  # what EKS uses unless told otherwise
    # The cluster DNS address nodes use unless spec.kubelet.clusterDNS says otherwise: the
    # kube-dns Service's cluster IP, as Karpenter discovers it (None: the bootstrap
    # script's own default, derived from the service CIDR).
    dns_ip: str | None = None

    @property
    def ipv6(self) -> bool:
        """An IPv6 cluster, as Karpenter tells it: its DNS address is an IPv6 one."""
        return self.dns_ip is not None and is_ipv6(self.dns_ip)


def is_ipv6(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 6
    except ValueError:
        return False


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything a node's user data carries, for one launch configuration."""

    cluster: ClusterInfo
    max_pods: int | None
    labels: Mapping[str, str]
    taints: Sequence[NodeTaint]  # includes the unregistered taint
    kubelet: KubeletSettings
    cluster_dns: Sequence[str] = ()
    custom_user_data: str | None = None
    # "RAID0": assemble the instance-store NVMe disks into one array for ephemeral storage.
    instance_store_policy: str | None = None
    # The Bottlerocket release the node boots ("v1.46.0", "latest"), when known: from
    # 1.46.0 its ephemeral-storage bind knows the directories to move by itself.
    bottlerocket_version: str | None = None

    @classmethod
    def build(
        cls,
        cluster: ClusterInfo,
        *,
        labels: Mapping[str, str],
        taints: Sequence[Taint] = (),
        startup_taints: Sequence[Taint] = (),
        kubelet: KubeletConfiguration | None = None,
        max_pods: int | None = None,
        custom_user_data: str | None = None,
        instance_store_policy: str | None = None,
        bottlerocket_version: str | None = None,
    ) -> NodeBootstrap:
        """`max_pods` from the instance type, unless the kubelet configuration fixes it."""
        settings = KubeletSettings.from_api(kubelet)
        dns = kubelet.cluster_dns if kubelet is not None else None
        node_taints = [
            NodeTaint(taint.key, taint.effect, taint.value or "")
            for taint in [*taints, *startup_taints]
        ]
        if all(taint.key != UNREGISTERED_TAINT_KEY for taint in node_taints):
            node_taints.append(UNREGISTERED_TAINT)
        return cls(
            cluster=cluster,
            max_pods=settings.max_pods if settings.max_pods is not None else max_pods,
            labels=dict(sorted(labels.items())),
            taints=tuple(node_taints),
            kubelet=settings,
            # As Karpenter does: the discovered kube-dns address unless the user set one.
            cluster_dns=tuple(dns or ((cluster.dns_ip,) if cluster.dns_ip else ())),
            custom_user_data=custom_user_data,
            instance_store_policy=instance_store_policy,
            bottlerocket_version=bottlerocket_version,
        )
