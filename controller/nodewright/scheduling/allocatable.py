"""Capacity and overhead of a node, computed the way Karpenter's AWS provider computes them.

allocatable = capacity - (kube-reserved + system-reserved + hard eviction thresholds).
The arithmetic deliberately repeats Karpenter's float64 steps (VM memory overhead, cpu
reservation per core range, percentage eviction thresholds) so the results match to the byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.api.quantity import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resources,
    add,
    parse_quantity,
    subtract,
)
from nodewright.scheduling import karpenter_tables
from nodewright.scheduling.ec2_info import InstanceTypeFacts

MIB = 2**20
GIB = 2**30
DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.075
DEFAULT_MAX_PODS = 110  # kubelet's own default, used when ENI-limited density does not apply
MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"

NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
AWS_NEURON = "aws.amazon.com/neuron"
AWS_NEURON_CORE = "aws.amazon.com/neuroncore"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_EFA = "vpc.amazonaws.com/efa"
AWS_POD_ENI = "vpc.amazonaws.com/pod-eni"
# Secondary IPv4 addresses of the primary interface, which the VPC resource controller hands
# to Windows pods (its webhook adds a request for one to each Windows pod).
AWS_PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"
POD_ENI_FILE = Path(__file__).parent / "data" / "pod-eni.json"

# kube-reserved cpu: a share of each range of millicores (first core 6 %, second 1 %,
# cores three and four 0.5 %, every further core 0.25 %).
_CPU_RESERVATION_RANGES: tuple[tuple[int, int, float], ...] = (
    (0, 1000, 0.06),
    (1000, 2000, 0.01),
    (2000, 4000, 0.005),
    (4000, 1 << 31, 0.0025),
)


class SettingsError(ValueError):
    """A node class value the allocatable math cannot use; `path` is the field's path."""

    def __init__(self, path: tuple[str | int, ...], detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"{_dotted(path)}: {detail}")


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@dataclass(frozen=True, slots=True)
class AMIFamilyTraits:
    """How an AMI family changes the allocatable math (Karpenter's per-family feature flags)."""

    name: str
    eni_limited_memory_overhead: bool  # kube-reserved memory uses ENI-limited pods, not maxPods
    pods_per_core_enabled: bool
    eni_limited_pod_density: bool  # else kubelet's default of 110 pods
    ephemeral_device: str
    default_ephemeral_gib: int


AMI_FAMILIES: dict[str, AMIFamilyTraits] = {
    "AL2023": AMIFamilyTraits("AL2023", True, True, True, "/dev/xvda", 20),
    "AL2": AMIFamilyTraits("AL2", True, True, True, "/dev/xvda", 20),
    "Bottlerocket": AMIFamilyTraits("Bottlerocket", False, False, True, "/dev/xvdb", 20),
    "Windows2019": AMIFamilyTraits("Windows2019", False, True, False, "/dev/sda1", 50),
    "Windows2022": AMIFamilyTraits("Windows2022", False, True, False, "/dev/sda1", 50),
    "Windows2025": AMIFamilyTraits("Windows2025", False, True, False, "/dev/sda1", 50),
    "Custom": AMIFamilyTraits("Custom", True, True, True, "/dev/xvda", 20),
}


@dataclass(frozen=True, slots=True)
class Overhead:
    """What the node keeps for itself; the scheduler never hands it to pods."""

    kube_reserved: Resources
    system_reserved: Resources
    eviction_threshold: Resources

    @property
    def total(self) -> Resources:
        return add(self.kube_reserved, self.system_reserved, self.eviction_threshold)


@dataclass(frozen=True, slots=True)
class NodeSettings:
    """The EC2NodeClass settings that change capacity or overhead, already parsed.

    `ephemeral_storage` is the size of the volume kubelet uses (None: the family default);
    `instance_store_raid0` uses the local NVMe disks instead, where the type has them.
    """

    ami_family: str = "AL2023"
    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Resources = field(default_factory=dict)
    system_reserved: Resources = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    ephemeral_storage: int | None = None
    instance_store_raid0: bool = False
    reserved_enis: int = 0
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    # cpuOptions.nestedVirtualization: enabled keeps only types that support it.
    nested_virtualization: bool = False
    # spec.networkInterfaces as (card, device, type); None when the node class lists none.
    network_interfaces: tuple[tuple[int, int, str], ...] | None = None
    # The strategy of the placement group the node class launches into: only types that
    # support it are kept (the group is resolved by the cloud, not read from the spec).
    placement_strategy: str | None = None
    # spec.connectionTracking is set: only Nitro types take tracking timeouts.
    connection_tracking: bool = False

    @property
    def efa_only_interfaces(self) -> int:
        return sum(1 for *_, kind in self.network_interfaces or () if kind == "efa-only")

    @property
    def traits(self) -> AMIFamilyTraits:
        return AMI_FAMILIES.get(self.ami_family, AMI_FAMILIES["Custom"])

    def cache_key(self) -> tuple[object, ...]:
        return (
            self.ami_family,
            self.max_pods,
            self.pods_per_core,
            tuple(sorted(self.kube_reserved.items())),
            tuple(sorted(self.system_reserved.items())),
            tuple(sorted(self.eviction_hard.items())),
            self.ephemeral_storage,
            self.instance_store_raid0,
            self.reserved_enis,
            self.vm_memory_overhead_percent,
            self.nested_virtualization,
            self.network_interfaces,
            self.placement_strategy,
            self.connection_tracking,
        )


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """The operator's settings that change every type's capacity (VM_MEMORY_OVERHEAD_PERCENT,
    RESERVED_ENIS), the same for every node class."""

    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    reserved_enis: int = 0


def node_settings(
    kubelet: KubeletConfiguration | None = None,
    node_class: EC2NodeClass | None = None,
    provider: ProviderSettings | None = None,
) -> NodeSettings:
    """Settings from an EC2NodeClass (family, kubelet, block devices) and/or a kubelet block,
    with the operator's `provider` settings.

    An explicit `kubelet` wins over the node class's own. Raises ValueError naming the field
    path (spec.kubelet.kubeReserved.memory, ...) when a value cannot be used.
    """
    settings = _node_class_settings(kubelet, node_class)
    cpu_options = node_class.spec.cpu_options if node_class is not None else None
    if cpu_options is not None and cpu_options.nested_virtualization == "enabled":
        settings = replace(settings, nested_virtualization=True)
    if node_class is not None and node_class.spec.connection_tracking is not None:
        settings = replace(settings, connection_tracking=True)
    interfaces = node_class.spec.network_interfaces if node_class is not None else None
    # An empty list is set, as in Karpenter: types need ENA network cards, EFA devices go.
    if interfaces is not None:
        settings = replace(settings, network_interfaces=tuple(
            (i.network_card_index, i.device_index, i.interface_type) for i in interfaces))
    if provider is None:
        return settings
    return replace(settings, vm_memory_overhead_percent=provider.vm_memory_overhead_percent,
                   reserved_enis=provider.reserved_enis)


def _node_class_settings(
    kubelet: KubeletConfiguration | None, node_class: EC2NodeClass | None,
) -> NodeSettings:
    family = node_class.resolved_ami_family() if node_class is not None else "AL2023"
    if kubelet is None and node_class is not None:
        kubelet = node_class.spec.kubelet
    settings = NodeSettings(ami_family=family)
    if node_class is not None:
        settings = _with_storage(settings, node_class)
    if kubelet is None:
        return settings
    for signal, value in (kubelet.eviction_hard or {}).items():
        _check_eviction_value(signal, value)
    return NodeSettings(
        ami_family=family,
        max_pods=kubelet.max_pods,
        pods_per_core=kubelet.pods_per_core,
        kube_reserved=_parse_map("kubeReserved", kubelet.kube_reserved),
        system_reserved=_parse_map("systemReserved", kubelet.system_reserved),
        eviction_hard={str(k): v for k, v in (kubelet.eviction_hard or {}).items()},
        ephemeral_storage=settings.ephemeral_storage,
        instance_store_raid0=settings.instance_store_raid0,
    )


def capacity(facts: InstanceTypeFacts, settings: NodeSettings) -> Resources:
    """Everything the node reports as capacity; extended resources only when present."""
    result: Resources = {
        CPU: facts.vcpus * 1000,
        MEMORY: memory_capacity(facts, settings) * 1000,
        EPHEMERAL_STORAGE: ephemeral_storage(facts, settings) * 1000,
        PODS: max_pods(facts, settings) * 1000,
    }
    extended = {
        NVIDIA_GPU: facts.gpu_count("NVIDIA"),
        AMD_GPU: facts.gpu_count("AMD"),
        HABANA_GAUDI: facts.gpu_count("Habana"),
        AWS_NEURON: sum(device.count for device in facts.neuron_devices),
        AWS_NEURON_CORE: facts.neuron_cores,
        # Listed interfaces replace the type's EFA devices with the EFA-only ones listed.
        AWS_EFA: (facts.efa_interfaces if settings.network_interfaces is None
                  else settings.efa_only_interfaces),
        AWS_POD_ENI: pod_eni(facts.name),
        AWS_PRIVATE_IPV4: (private_ipv4_addresses(facts.name)
                           if settings.ami_family.startswith("Windows") else 0),
    }
    result.update({name: count * 1000 for name, count in extended.items() if count > 0})
    return result


@cache
def _branch_interfaces() -> dict[str, int]:
    with POD_ENI_FILE.open() as data:
        return dict(json.load(data)["podENI"])


def pod_eni(instance_type: str) -> int:
    """Branch network interfaces a type offers for security groups per pod
    (`vpc.amazonaws.com/pod-eni`): those of ENI-trunking types, from Karpenter's VPC
    limits table; 0 on the others."""
    return _branch_interfaces().get(instance_type, 0)


def private_ipv4_addresses(instance_type: str) -> int:
    """Secondary IPv4 addresses a Windows node offers its pods
    (`vpc.amazonaws.com/PrivateIPv4Address`): the VPC limits table's addresses per interface
    less the primary one, as the VPC resource controller counts them; 0 for unlisted types."""
    per_interface = karpenter_tables.ipv4_per_interface(instance_type)
    return max(per_interface - 1, 0) if per_interface is not None else 0


def overhead(facts: InstanceTypeFacts, settings: NodeSettings) -> Overhead:
    traits = settings.traits
    pods_for_memory = (
        eni_limited_pods(facts, 0, _efa_only_on_first_card(settings))
        if traits.eni_limited_memory_overhead
        else max_pods(facts, settings)
    )
    return Overhead(
        kube_reserved=kube_reserved(facts.vcpus * 1000, pods_for_memory, settings.kube_reserved),
        system_reserved=dict(settings.system_reserved),
        eviction_threshold=eviction_threshold(
            memory_capacity(facts, settings), ephemeral_storage(facts, settings), settings
        ),
    )


def allocatable(capacity_: Resources, overhead_: Overhead) -> Resources:
    """capacity minus overhead, over the capacity's resources (may go negative on tiny types)."""
    return subtract(capacity_, overhead_.total)


def memory_capacity(facts: InstanceTypeFacts, settings: NodeSettings) -> int:
    """Memory in bytes: the type's MiB (less 64 MiB on Graviton), less the VM overhead."""
    mib = facts.memory_mib - (64 if facts.first_architecture == "arm64" else 0)
    overhead_mib = math.ceil(float(mib * MIB) * settings.vm_memory_overhead_percent / 1024 / 1024)
    return (mib - overhead_mib) * MIB


def ephemeral_storage(facts: InstanceTypeFacts, settings: NodeSettings) -> int:
    """Bytes of the volume kubelet uses for ephemeral storage."""
    if settings.instance_store_raid0 and facts.instance_storage_gb is not None:
        return facts.instance_storage_gb * 10**9
    if settings.ephemeral_storage is not None:
        return settings.ephemeral_storage
    return settings.traits.default_ephemeral_gib * GIB


def eni_limited_pods(facts: InstanceTypeFacts, reserved_enis: int, efa_only: int = 0) -> int:
    """ENIs x (IPv4 addresses per ENI - 1) + 2, on the default network card only; `efa_only`
    EFA-only interfaces listed there take an ENI each and carry no pod addresses."""
    usable = max(facts.default_network_interfaces - reserved_enis - efa_only, 0)
    if usable == 0:
        return 0
    return usable * (facts.ipv4_per_interface - 1) + 2


def _efa_only_on_first_card(settings: NodeSettings) -> int:
    return sum(1 for card, _, kind in settings.network_interfaces or ()
               if card == 0 and kind == "efa-only")


def max_pods(facts: InstanceTypeFacts, settings: NodeSettings) -> int:
    traits = settings.traits
    if settings.max_pods is not None:
        count = settings.max_pods
    elif traits.eni_limited_pod_density:
        count = eni_limited_pods(facts, settings.reserved_enis, _efa_only_on_first_card(settings))
    else:
        count = DEFAULT_MAX_PODS
    if settings.pods_per_core and traits.pods_per_core_enabled:
        count = min(settings.pods_per_core * facts.vcpus, count)
    return count


def kube_reserved(cpu_millis: int, pods: int, overrides: Mapping[str, int]) -> Resources:
    reserved_cpu = 0
    for start, end, share in _CPU_RESERVATION_RANGES:
        if cpu_millis >= start:
            span = (cpu_millis if cpu_millis < end else end) - start
            reserved_cpu += int(float(span) * share)
    reserved: Resources = {
        CPU: reserved_cpu,
        MEMORY: (11 * pods + 255) * MIB * 1000,
        EPHEMERAL_STORAGE: GIB * 1000,
    }
    reserved.update(overrides)
    return reserved


def eviction_threshold(
    memory_bytes: int, storage_bytes: int, settings: NodeSettings
) -> Resources:
    threshold: Resources = {
        MEMORY: 100 * MIB * 1000,
        EPHEMERAL_STORAGE: math.ceil(float(storage_bytes) / 100 * 10) * 1000,
    }
    hard = settings.eviction_hard
    if MEMORY_AVAILABLE in hard:
        threshold[MEMORY] = _eviction_signal(memory_bytes, hard[MEMORY_AVAILABLE])
    if NODEFS_AVAILABLE in hard:
        threshold[EPHEMERAL_STORAGE] = _eviction_signal(storage_bytes, hard[NODEFS_AVAILABLE])
    return threshold


def _eviction_signal(capacity_bytes: int, value: str) -> int:
    """Millis held back by one hard eviction signal ("500Mi" or a percentage of capacity)."""
    if value.endswith("%"):
        percent = float(value[:-1])
        if percent == 100:  # kubelet reads 100 % as "threshold disabled"
            percent = 0
        return math.ceil(float(capacity_bytes) / 100 * percent) * 1000
    return parse_quantity(value)


def _check_eviction_value(signal: str, value: str) -> None:
    path = ("spec", "kubelet", "evictionHard", signal)
    if value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            raise SettingsError(path, f"{value!r} is not a percentage") from None
        if not 0 <= percent <= 100:
            raise SettingsError(path, f"{value!r} must be between 0% and 100%")
        return
    try:
        parse_quantity(value)
    except ValueError as error:
        raise SettingsError(path, str(error)) from None


def _parse_map(field_name: str, values: Mapping[Any, str] | None) -> Resources:
    parsed: Resources = {}
    for key, value in (values or {}).items():
        try:
            parsed[str(key)] = parse_quantity(value)
        except ValueError as error:
            raise SettingsError(("spec", "kubelet", field_name, str(key)), str(error)) from None
    return parsed


def _with_storage(settings: NodeSettings, node_class: EC2NodeClass) -> NodeSettings:
    spec = node_class.spec
    raid0 = spec.instance_store_policy == "RAID0"
    size = _block_device_storage(node_class, settings.traits)
    return NodeSettings(
        ami_family=settings.ami_family, ephemeral_storage=size, instance_store_raid0=raid0
    )


def _block_device_storage(node_class: EC2NodeClass, traits: AMIFamilyTraits) -> int | None:
    """The ephemeral volume size the node class asks for, or None for the family default."""
    mappings = node_class.spec.block_device_mappings or []
    if not mappings:
        return None

    def size_of(index: int) -> int | None:
        ebs = mappings[index].ebs
        if ebs is None or ebs.volume_size is None:
            return None
        try:
            return parse_quantity(ebs.volume_size) // 1000
        except ValueError as error:
            raise SettingsError(
                ("spec", "blockDeviceMappings", index, "ebs", "volumeSize"), str(error)
            ) from None

    for index, mapping in enumerate(mappings):
        if mapping.root_volume and size_of(index) is not None:
            return size_of(index)
    if traits.name == "Custom":
        return size_of(len(mappings) - 1)
    for index, mapping in enumerate(mappings):
        if mapping.device_name == traits.ephemeral_device:
            return size_of(index)
    return None
