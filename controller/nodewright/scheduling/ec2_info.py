"""The hardware facts of one EC2 instance type, read from a DescribeInstanceTypes entry.

The entry is the dict shape boto3 returns (`InstanceTypes[i]`), which is also the shape of the
data set moto ships, so live and offline catalogs share this reader.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.scheduling import karpenter_tables

# EC2 architecture names -> Kubernetes architecture names (others are not schedulable).
KUBE_ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}

_CATEGORY_GENERATION = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.")


@dataclass(frozen=True, slots=True)
class Device:
    """One kind of GPU or accelerator fitted to an instance type."""

    name: str
    manufacturer: str
    count: int
    memory_mib: int


@dataclass(frozen=True, slots=True)
class InstanceTypeFacts:
    """What DescribeInstanceTypes says about one type, reduced to what scheduling needs."""

    name: str
    vcpus: int
    memory_mib: int
    architecture: str  # Kubernetes name (amd64, arm64) or "" when unsupported
    first_architecture: str  # EC2 name of the first listed architecture (arm64 memory rule)
    usage_classes: tuple[str, ...]
    default_network_interfaces: int
    ipv4_per_interface: int
    cpu_manufacturer: str | None
    sustained_clock_mhz: int | None
    hypervisor: str | None
    encryption_in_transit: bool
    # Karpenter's generated bandwidth table (scheduling/karpenter_tables.py), not EC2's.
    network_bandwidth_mbps: int | None
    ebs_bandwidth_mbps: int | None
    local_nvme_gb: int | None
    instance_storage_gb: int | None
    gpus: tuple[Device, ...]
    inference_accelerators: tuple[Device, ...]
    neuron_devices: tuple[Device, ...]
    neuron_cores: int
    efa_interfaces: int
    bare_metal: bool
    # ProcessorInfo.SupportedFeatures ("nested-virtualization", "amd-sev-snp").
    processor_features: tuple[str, ...] = ()
    # NetworkInfo.EnaSupport is not "unsupported".
    ena_supported: bool = True
    # (NetworkCardIndex, MaximumNetworkInterfaces) of each network card.
    network_cards: tuple[tuple[int, int], ...] = ()
    # PlacementGroupInfo.SupportedStrategies (cluster, partition, spread).
    placement_strategies: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.name.split(".", 1)[1] if "." in self.name else ""

    def gpu_count(self, manufacturer: str) -> int:
        return sum(gpu.count for gpu in self.gpus if gpu.manufacturer == manufacturer)


def read_instance_type(info: Mapping[str, Any]) -> InstanceTypeFacts:
    """Read one DescribeInstanceTypes entry; ValueError names the type and the missing field."""
    name = info.get("InstanceType")
    if not isinstance(name, str) or not name:
        raise ValueError("InstanceType: missing or not a string")
    reader = _Reader(name, info)
    architectures = [
        str(a) for a in reader.optional(("ProcessorInfo", "SupportedArchitectures"), [])
    ]
    architecture = next(
        (KUBE_ARCHITECTURES[a] for a in architectures if a in KUBE_ARCHITECTURES), ""
    )
    clock = reader.optional(("ProcessorInfo", "SustainedClockSpeedInGhz"), None)
    manufacturer = reader.optional(("ProcessorInfo", "Manufacturer"), None)
    storage_gb = reader.optional(("InstanceStorageInfo", "TotalSizeInGB"), None)
    nvme = reader.optional(("InstanceStorageInfo", "NvmeSupport"), "unsupported")
    neuron_devices = tuple(_devices(reader.optional(("NeuronInfo", "NeuronDevices"), []), "AWS"))
    neuron_cores = sum(
        int(device.get("Count", 0)) * int(device.get("CoreInfo", {}).get("Count", 0))
        for device in reader.optional(("NeuronInfo", "NeuronDevices"), [])[:1]
    )
    hypervisor = reader.optional(("Hypervisor",), None)
    return InstanceTypeFacts(
        name=name,
        vcpus=int(reader.required(("VCpuInfo", "DefaultVCpus"))),
        memory_mib=int(reader.required(("MemoryInfo", "SizeInMiB"))),
        architecture=architecture,
        first_architecture=architectures[0] if architectures else "",
        usage_classes=tuple(str(u) for u in reader.optional(("SupportedUsageClasses",), [])),
        default_network_interfaces=_default_card_interfaces(reader),
        ipv4_per_interface=int(reader.optional(("NetworkInfo", "Ipv4AddressesPerInterface"), 0)),
        # Karpenter labels any type with ProcessorInfo, "" when EC2 names no manufacturer.
        cpu_manufacturer=(_kebab(str(manufacturer or ""))
                          if "ProcessorInfo" in info else None),
        # A processor without a published clock speed is labelled 0, as Karpenter does.
        sustained_clock_mhz=(
            _go_round(float(clock or 0) * 1000) if "ProcessorInfo" in info else None
        ),
        hypervisor=str(hypervisor) if hypervisor else None,
        encryption_in_transit=bool(
            reader.optional(("NetworkInfo", "EncryptionInTransitSupported"), False)
        ),
        network_bandwidth_mbps=karpenter_tables.network_bandwidth_megabits(name),
        ebs_bandwidth_mbps=_ebs_bandwidth(reader),
        local_nvme_gb=int(storage_gb) if storage_gb is not None and nvme != "unsupported" else None,
        instance_storage_gb=int(storage_gb) if storage_gb is not None else None,
        gpus=tuple(_devices(reader.optional(("GpuInfo", "Gpus"), []), None)),
        inference_accelerators=tuple(
            _devices(reader.optional(("InferenceAcceleratorInfo", "Accelerators"), []), None)
        ),
        neuron_devices=neuron_devices,
        neuron_cores=neuron_cores,
        efa_interfaces=int(reader.optional(("NetworkInfo", "EfaInfo", "MaximumEfaInterfaces"), 0)),
        bare_metal=bool(reader.optional(("BareMetal",), False)),
        processor_features=tuple(
            str(f) for f in reader.optional(("ProcessorInfo", "SupportedFeatures"), [])),
        ena_supported=reader.optional(("NetworkInfo", "EnaSupport"), "supported") != "unsupported",
        network_cards=tuple(
            (int(card.get("NetworkCardIndex", 0)), int(card.get("MaximumNetworkInterfaces", 0)))
            for card in reader.optional(("NetworkInfo", "NetworkCards"), None) or []),
        placement_strategies=tuple(str(s) for s in reader.optional(
            ("PlacementGroupInfo", "SupportedStrategies"), [])),
    )


def category_and_generation(name: str) -> tuple[str, str] | None:
    """("c", "5") for c5.large, ("u", "1") for u-6tb1.metal; None when the name has no digits."""
    match = _CATEGORY_GENERATION.match(name)
    return (match[1], match[3]) if match else None


def _go_round(value: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() takes them to even)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _default_card_interfaces(reader: _Reader) -> int:
    # The VPC CNI only uses the default network card, so only its interfaces count for pods.
    cards = reader.optional(("NetworkInfo", "NetworkCards"), None)
    default_index = reader.optional(("NetworkInfo", "DefaultNetworkCardIndex"), 0)
    if cards:
        for card in cards:
            if card.get("NetworkCardIndex", 0) == default_index:
                return int(card.get("MaximumNetworkInterfaces", 0))
        return int(cards[0].get("MaximumNetworkInterfaces", 0))
    return int(reader.optional(("NetworkInfo", "MaximumNetworkInterfaces"), 0))


def _ebs_bandwidth(reader: _Reader) -> int | None:
    # Only types that are EBS-optimized by default publish a meaningful maximum bandwidth;
    # Karpenter labels them whenever EbsOptimizedInfo is there (0 without a maximum).
    if reader.optional(("EbsInfo", "EbsOptimizedSupport"), None) != "default":
        return None
    if reader.optional(("EbsInfo", "EbsOptimizedInfo"), None) is None:
        return None
    maximum = reader.optional(("EbsInfo", "EbsOptimizedInfo", "MaximumBandwidthInMbps"), 0)
    return int(maximum)


def _devices(entries: list[Mapping[str, Any]], manufacturer: str | None) -> list[Device]:
    return [
        Device(
            name=str(entry.get("Name", "")),
            manufacturer=manufacturer or str(entry.get("Manufacturer", "")),
            count=int(entry.get("Count", 0)),
            memory_mib=int(entry.get("MemoryInfo", {}).get("SizeInMiB", 0)),
        )
        for entry in entries
    ]


def _kebab(text: str) -> str:
    return text.lower().replace(" ", "-")


class _Reader:
    """Looks up nested fields of one entry, naming the type and field path when one is missing."""

    def __init__(self, name: str, info: Mapping[str, Any]) -> None:
        self._name = name
        self._info = info

    def optional(self, path: tuple[str, ...], default: Any) -> Any:
        node: Any = self._info
        for key in path:
            if not isinstance(node, Mapping) or key not in node or node[key] is None:
                return default
            node = node[key]
        return node

    def required(self, path: tuple[str, ...]) -> Any:
        value = self.optional(path, None)
        if value is None:
            raise ValueError(f"{self._name}: {'.'.join(path)}: missing from the instance type data")
        return value
