"""Well-known node labels and the values an instance type gives them."""

from __future__ import annotations

from nodewright.scheduling.ec2_info import InstanceTypeFacts, category_and_generation

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONE_ID = "topology.k8s.aws/zone-id"
# The partition of a partition placement group: an offering's label, like the zone.
PLACEMENT_GROUP_PARTITION = "karpenter.k8s.aws/placement-group-partition"
# A reserved offering's capacity reservation: its id, type (default or capacity-block) and
# whether EC2 may reclaim it. On-demand and spot offerings have none of the three.
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"
RESERVATION_INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
HOSTNAME = "kubernetes.io/hostname"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
# The build of Windows Server each Windows AMI family runs (Karpenter's table): its nodes
# carry it as node.kubernetes.io/windows-build, which its alias images require.
WINDOWS_BUILDS = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}

# Deprecated keys and their current names: a requirement on the old key is read as one on
# the new key, as Karpenter's NormalizedLabels does (nodes carry both).
NORMALIZED = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    # The EBS CSI driver's topology key: its volumes' node affinity names the zone so
    # (Karpenter's AWS provider adds the same entry).
    "topology.ebs.csi.aws.com/zone": ZONE,
}


def normalized(key: str) -> str:
    """The current name of a label key (deprecated beta keys are mapped)."""
    return NORMALIZED.get(key, key)

_AWS = "karpenter.k8s.aws/instance-"
INSTANCE_CATEGORY = _AWS + "category"
INSTANCE_FAMILY = _AWS + "family"
INSTANCE_GENERATION = _AWS + "generation"
INSTANCE_SIZE = _AWS + "size"
INSTANCE_CPU = _AWS + "cpu"
INSTANCE_CPU_MANUFACTURER = _AWS + "cpu-manufacturer"
INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ = _AWS + "cpu-sustained-clock-speed-mhz"
INSTANCE_MEMORY = _AWS + "memory"
INSTANCE_HYPERVISOR = _AWS + "hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED = _AWS + "encryption-in-transit-supported"
INSTANCE_LOCAL_NVME = _AWS + "local-nvme"
INSTANCE_NETWORK_BANDWIDTH = _AWS + "network-bandwidth"
INSTANCE_EBS_BANDWIDTH = _AWS + "ebs-bandwidth"
INSTANCE_CAPABILITY_FLEX = _AWS + "capability-flex"
INSTANCE_GPU_NAME = _AWS + "gpu-name"
INSTANCE_GPU_MANUFACTURER = _AWS + "gpu-manufacturer"
INSTANCE_GPU_COUNT = _AWS + "gpu-count"
INSTANCE_GPU_MEMORY = _AWS + "gpu-memory"
INSTANCE_ACCELERATOR_NAME = _AWS + "accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = _AWS + "accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = _AWS + "accelerator-count"
INSTANCE_TENANCY = _AWS + "tenancy"

# Labels every instance type offers several values of (the launch picks one): a
# requirement on them fits a type when it allows one of these. Tenancy: shared hardware
# ("default") unless only "dedicated" is allowed.
OFFERED_VALUES: dict[str, tuple[str, ...]] = {INSTANCE_TENANCY: ("default", "dedicated")}

# Labels a NodePool may not set itself: the provider decides them per instance type/offering.
WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        INSTANCE_TYPE, ZONE, REGION, ZONE_ID, ARCH, OS, CAPACITY_TYPE, NODEPOOL,
        INSTANCE_CATEGORY, INSTANCE_FAMILY, INSTANCE_GENERATION, INSTANCE_SIZE, INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER, INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, INSTANCE_MEMORY,
        INSTANCE_HYPERVISOR, INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED, INSTANCE_LOCAL_NVME,
        INSTANCE_NETWORK_BANDWIDTH, INSTANCE_EBS_BANDWIDTH, INSTANCE_CAPABILITY_FLEX,
        INSTANCE_GPU_NAME, INSTANCE_GPU_MANUFACTURER, INSTANCE_GPU_COUNT, INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME, INSTANCE_ACCELERATOR_MANUFACTURER, INSTANCE_ACCELERATOR_COUNT,
    }
)


def instance_type_labels(facts: InstanceTypeFacts, region: str, ami_family: str) -> dict[str, str]:
    """The labels every node of this type carries, whatever zone or capacity type it runs in."""
    labels = {
        INSTANCE_TYPE: facts.name,
        ARCH: facts.architecture,
        OS: "windows" if ami_family.startswith("Windows") else "linux",
        REGION: region,
        INSTANCE_CPU: str(facts.vcpus),
        INSTANCE_MEMORY: str(facts.memory_mib),
        INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: str(facts.encryption_in_transit).lower(),
        INSTANCE_CAPABILITY_FLEX: str("-flex" in facts.family).lower(),
        # Always set, as Karpenter's requirement is: "" when EC2 names no hypervisor (metal).
        INSTANCE_HYPERVISOR: facts.hypervisor or "",
    }
    if ami_family in WINDOWS_BUILDS:
        labels[WINDOWS_BUILD] = WINDOWS_BUILDS[ami_family]
    parts = category_and_generation(facts.name)
    if parts is not None:
        labels[INSTANCE_CATEGORY], labels[INSTANCE_GENERATION] = parts
    if "." in facts.name:
        labels[INSTANCE_FAMILY] = facts.family
        labels[INSTANCE_SIZE] = facts.size
    optional = {
        INSTANCE_CPU_MANUFACTURER: facts.cpu_manufacturer,
        INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ: facts.sustained_clock_mhz,
        INSTANCE_LOCAL_NVME: facts.local_nvme_gb,
        INSTANCE_NETWORK_BANDWIDTH: facts.network_bandwidth_mbps,
        INSTANCE_EBS_BANDWIDTH: facts.ebs_bandwidth_mbps,
    }
    labels.update({key: str(value) for key, value in optional.items() if value is not None})
    # Device labels only describe a type fitted with exactly one kind of device.
    if len(facts.gpus) == 1:
        gpu = facts.gpus[0]
        labels[INSTANCE_GPU_NAME] = _kebab(gpu.name)
        labels[INSTANCE_GPU_MANUFACTURER] = _kebab(gpu.manufacturer)
        labels[INSTANCE_GPU_COUNT] = str(gpu.count)
        labels[INSTANCE_GPU_MEMORY] = str(gpu.memory_mib)
    accelerators = facts.neuron_devices or facts.inference_accelerators
    if len(accelerators) == 1:
        device = accelerators[0]
        labels[INSTANCE_ACCELERATOR_NAME] = _kebab(device.name)
        labels[INSTANCE_ACCELERATOR_MANUFACTURER] = _kebab(device.manufacturer)
        labels[INSTANCE_ACCELERATOR_COUNT] = str(device.count)
    return dict(sorted(labels.items()))


def _kebab(text: str) -> str:
    return text.lower().replace(" ", "-")
