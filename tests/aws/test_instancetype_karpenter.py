"""Instance types as the AWS provider builds them: capacity, overhead, max pods, labels,
offerings. Ported from karpenter-provider-aws v1.14.1 pkg/providers/instancetype/suite_test.go;
each test names the It/Entry it comes from.

Karpenter builds one instance type with `NewInstanceType(info, nodeClass.Spec.Kubelet, ...)`;
here the same description of a type from moto's EC2 data goes through `build_catalog` with
the node class's settings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.manifests import parse_documents
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.quantity import parse_quantity
from nodewright.cloud.aws.capacity_reservations import (
    Availability,
    Reservation,
    with_reserved_offerings,
)
from nodewright.cloud.aws.catalog import DESCRIBE_CACHE_SECONDS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.launch_templates import block_devices_of
from nodewright.cloud.aws.offerings import tenancy_for
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling import offline_data
from nodewright.scheduling.allocatable import (
    ProviderSettings,
    eni_limited_pods,
    node_settings,
    pod_eni,
)
from nodewright.scheduling.catalog import InstanceType, build_catalog
from nodewright.scheduling.ec2_info import read_instance_type
from nodewright.scheduling.karpenter_tables import ipv4_per_interface
from nodewright.scheduling.planning import offline_catalogs, plan
from nodewright.scheduling.solver import SchedulingResult
from tests.aws.conftest import CallRecorder
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.offering_metrics import publish
from tests.aws.test_launch import fleet_overrides
from tests.aws.world import CLUSTER, FakeClock, node_class, nodeclaim
from tests.controllers.metric_samples import samples
from tests.support.scheduling import available_offerings, single_values

REGION = "us-west-2"
ZONE = "us-west-2a"
_INFOS = {info["InstanceType"]: info for info in offline_data.instance_types()}


def q(quantity: str) -> int:
    return parse_quantity(quantity)


def built(
    name: str, provider: ProviderSettings | None = None, **spec: Any
) -> InstanceType:
    """One instance type, offered in one zone, for a node class with `spec`."""
    return built_all([name], provider, **spec)[name]


def built_all(
    names: list[str] | None = None, provider: ProviderSettings | None = None, **spec: Any
) -> dict[str, InstanceType]:
    settings = node_settings(node_class=node_class(**spec), provider=provider)
    infos = [_INFOS[name] for name in names] if names else list(_INFOS.values())
    offerings = [{"InstanceType": info["InstanceType"], "Location": ZONE} for info in infos]
    catalog = build_catalog(infos, offerings, REGION, settings=settings)
    return {instance_type.name: instance_type for instance_type in catalog}


# --- Overhead: system reserved, kube reserved ---------------------------------------------


def test_system_reserved_defaults_to_nothing() -> None:
    """Overhead / System Reserved Resources: "should use defaults when no kubelet is specified"."""
    m5 = built("m5.xlarge", kubelet={})
    assert m5.overhead.system_reserved.get("cpu", 0) == 0
    assert m5.overhead.system_reserved.get("memory", 0) == 0
    assert m5.overhead.system_reserved.get("ephemeral-storage", 0) == 0


def test_system_reserved_overrides() -> None:
    """Overhead / System Reserved Resources: "should override system reserved cpus when
    specified"."""
    m5 = built("m5.xlarge", kubelet={"systemReserved": {
        "cpu": "2", "memory": "20Gi", "ephemeral-storage": "10Gi"}})
    assert m5.overhead.system_reserved["cpu"] == q("2")
    assert m5.overhead.system_reserved["memory"] == q("20Gi")
    assert m5.overhead.system_reserved["ephemeral-storage"] == q("10Gi")


def test_kube_reserved_defaults() -> None:
    """Overhead / Kube Reserved Resources: "should use defaults when no kubelet is specified"."""
    m5 = built("m5.xlarge", kubelet={})
    assert m5.overhead.kube_reserved["cpu"] == q("80m")
    assert m5.overhead.kube_reserved["memory"] == q("893Mi")  # 11 * 58 pods + 255
    assert m5.overhead.kube_reserved["ephemeral-storage"] == q("1Gi")


def test_kube_reserved_overrides() -> None:
    """Overhead / Kube Reserved Resources: "should override kube reserved when specified"."""
    m5 = built("m5.xlarge", kubelet={
        "systemReserved": {"cpu": "1", "memory": "20Gi", "ephemeral-storage": "1Gi"},
        "kubeReserved": {"cpu": "2", "memory": "10Gi", "ephemeral-storage": "2Gi"},
    })
    assert m5.overhead.kube_reserved["cpu"] == q("2")
    assert m5.overhead.kube_reserved["memory"] == q("10Gi")
    assert m5.overhead.kube_reserved["ephemeral-storage"] == q("2Gi")


# --- Overhead: eviction thresholds (VM memory overhead 0, as Karpenter's context sets) -----

NO_VM_OVERHEAD = ProviderSettings(vm_memory_overhead_percent=0)
RESERVED = {"systemReserved": {"memory": "20Gi"}, "kubeReserved": {"memory": "10Gi"}}


def eviction_memory(alias: str = "al2023@latest", **kubelet: Any) -> tuple[int, int]:
    """(memory eviction threshold, memory capacity) of an m5.xlarge."""
    m5 = built("m5.xlarge", NO_VM_OVERHEAD, amiSelectorTerms=[{"alias": alias}],
               kubelet=RESERVED | kubelet)
    return m5.overhead.eviction_threshold["memory"], m5.capacity["memory"]


def test_eviction_hard_quantity() -> None:
    """Eviction Hard: "should override eviction threshold when specified as a quantity"."""
    assert eviction_memory(evictionHard={"memory.available": "500Mi"})[0] == q("500Mi")


def test_eviction_hard_percentage() -> None:
    """Eviction Hard: "should override eviction threshold when specified as a percentage
    value"."""
    threshold, capacity = eviction_memory(evictionHard={"memory.available": "10%"})
    assert abs(threshold - capacity * 0.1) <= 10 * 1000


def test_eviction_hard_100_percent_is_disabled() -> None:
    """Eviction Hard: "should consider the eviction threshold disabled when specified as
    100%"."""
    assert eviction_memory(evictionHard={"memory.available": "100%"})[0] == 0


def test_default_memory_eviction_without_eviction_hard() -> None:
    """Eviction Hard: "should used default eviction threshold for memory when evictionHard not
    specified"."""
    assert eviction_memory(evictionSoft={"memory.available": "50Mi"})[0] == q("100Mi")


def test_eviction_soft_alone_keeps_the_default() -> None:
    """Eviction Soft: "should use default threshold when only evictionSoft is specified"."""
    assert eviction_memory(evictionSoft={"memory.available": "500Mi"})[0] == q("100Mi")


def test_eviction_hard_percentage_wins_over_soft_percentage() -> None:
    """Eviction Soft: "should use evictionHard percentage and ignore evictionSoft
    percentage"."""
    threshold, capacity = eviction_memory(
        evictionHard={"memory.available": "5%"}, evictionSoft={"memory.available": "10%"})
    assert abs(threshold - capacity * 0.05) <= 10 * 1000


def test_eviction_soft_100_percent_is_ignored() -> None:
    """Eviction Soft: "should use default threshold when evictionSoft is 100% (ignored)"."""
    assert eviction_memory(evictionSoft={"memory.available": "100%"})[0] == q("100Mi")


def test_bottlerocket_uses_eviction_hard_only() -> None:
    """Eviction Soft: "should ignore eviction threshold when using Bottlerocket AMI"."""
    threshold, _ = eviction_memory(
        "bottlerocket@latest",
        evictionHard={"memory.available": "1Gi"}, evictionSoft={"memory.available": "10Gi"})
    assert threshold == q("1Gi")


def test_default_eviction_threshold() -> None:
    """Eviction Thresholds: "should take the default eviction threshold when none is
    specified"."""
    m5 = built("m5.xlarge", NO_VM_OVERHEAD, kubelet={})
    threshold = m5.overhead.eviction_threshold
    assert threshold.get("cpu", 0) == 0
    assert threshold["memory"] == q("100Mi")
    assert threshold["ephemeral-storage"] == pytest.approx(q("2Gi"), rel=0.01)


def test_eviction_hard_quantity_wins_over_soft() -> None:
    """Eviction Thresholds: "should use only evictionHard for overhead, ignoring
    evictionSoft"."""
    threshold, _ = eviction_memory(
        evictionHard={"memory.available": "1Gi"}, evictionSoft={"memory.available": "3Gi"})
    assert threshold == q("1Gi")


def test_eviction_hard_percentage_wins_over_a_smaller_soft_one() -> None:
    """Eviction Thresholds: "should use only evictionHard percentage for overhead, ignoring
    evictionSoft"."""
    threshold, capacity = eviction_memory(
        evictionHard={"memory.available": "5%"}, evictionSoft={"memory.available": "2%"})
    assert abs(threshold - capacity * 0.05) <= 10 * 1000


def test_eviction_hard_value_wins_over_a_soft_percentage() -> None:
    """Eviction Thresholds: "should use only evictionHard value with mixed percentage/value
    types"."""
    threshold, _ = eviction_memory(
        evictionHard={"memory.available": "1Gi"}, evictionSoft={"memory.available": "10%"})
    assert threshold == q("1Gi")


# --- Overhead: max pods --------------------------------------------------------------------


def pods(instance_type: InstanceType) -> int:
    return instance_type.capacity["pods"] // 1000


def test_max_pods_default_to_the_eni_limit() -> None:
    """Overhead: "should default max pods based off of network interfaces"."""
    types = built_all(["t3.large", "m6idn.32xlarge"], kubelet={})
    assert pods(types["t3.large"]) == 35
    assert pods(types["m6idn.32xlarge"]) == 394


def test_max_pods_set_by_the_user() -> None:
    """Overhead: "should set max-pods to user-defined value if specified" (the It)."""
    types = built_all(kubelet={"maxPods": 10})
    assert len(types) > 500
    assert {pods(it) for it in types.values()} == {10}


FAMILIES = [
    # (Entry text, amiSelectorTerms, amiFamily)
    ("al2 (latest)", [{"alias": "al2@latest"}], "AL2"),
    ("al2023 (latest)", [{"alias": "al2023@latest"}], "AL2023"),
    ("bottlerocket (latest)", [{"alias": "bottlerocket@latest"}], "Bottlerocket"),
    ("windows2019 (latest)", [{"alias": "windows2019@latest"}], "Windows2019"),
    ("windows2022 (latest)", [{"alias": "windows2022@latest"}], "Windows2022"),
    ("windows2025 (latest)", [{"alias": "windows2025@latest"}], "Windows2025"),
    ("custom", [{"id": "ami-0123456789abcdef0"}], "Custom"),
]
MAX_PODS_10 = {"al2 (latest)": "640Mi", "al2023 (latest)": "640Mi",
               "bottlerocket (latest)": "365Mi", "windows2019 (latest)": "365Mi",
               "windows2022 (latest)": "365Mi", "windows2025 (latest)": "365Mi",
               "custom": "640Mi"}


def family_spec(terms: list[dict[str, str]], family: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"amiSelectorTerms": terms}
    if family == "Custom":
        spec["amiFamily"] = family
    return spec


@pytest.mark.parametrize(("entry", "terms", "family"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_max_pods_set_by_the_user_per_family(
    entry: str, terms: list[dict[str, str]], family: str
) -> None:
    """DescribeTable "should set max-pods to user-defined value if specified", each Entry:
    t3.large with maxPods 10; kube-reserved memory is 11 x pods + 255 MiB, where AL2, AL2023
    and Custom count the ENI-limited 35 pods and the rest count the 10."""
    t3 = built("t3.large", kubelet={"maxPods": 10}, **family_spec(terms, family))
    assert pods(t3) == 10
    assert t3.overhead.kube_reserved["memory"] == q(MAX_PODS_10[entry])


def test_max_pods_override() -> None:
    """Overhead: "should override max-pods value"."""
    types = built_all(kubelet={"maxPods": 10})
    assert all(pods(it) == 10 for it in types.values())


RESERVED_ENI = {"al2 (latest)": (24, "640Mi"), "al2023 (latest)": (24, "640Mi"),
                "bottlerocket (latest)": (24, "519Mi"),
                "windows2019 (latest)": (110, "1465Mi"),
                "windows2022 (latest)": (110, "1465Mi"),
                "windows2025 (latest)": (110, "1465Mi"), "custom": (24, "640Mi")}


@pytest.mark.parametrize(("entry", "terms", "family"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_reserved_enis_lower_max_pods_per_family(
    entry: str, terms: list[dict[str, str]], family: str
) -> None:
    """DescribeTable "should reserve ENIs when aws.reservedENIs is set and use it in max-pods
    calculation", each Entry: t3.large (3 ENIs of 12 addresses) with one ENI reserved."""
    t3 = built("t3.large", ProviderSettings(reserved_enis=1), kubelet={},
               **family_spec(terms, family))
    expected_pods, memory = RESERVED_ENI[entry]
    assert pods(t3) == expected_pods
    assert t3.overhead.kube_reserved["memory"] == q(memory)


def test_reserved_enis_never_go_below_zero() -> None:
    """Overhead: "should reserve ENIs when aws.reservedENIs is set and not go below 0 ENIs in
    max-pods calculation"."""
    t3 = built("t3.large", ProviderSettings(reserved_enis=1_000_000), kubelet={})
    assert pods(t3) == 0


def test_pods_per_core() -> None:
    """Overhead: "should override pods-per-core value"."""
    types = built_all(kubelet={"podsPerCore": 1})
    plain = built_all(kubelet={})
    # Karpenter's test data has no type with fewer ENI-limited pods than vCPUs; moto's has a
    # dozen (p5.48xlarge: 100 pods, 192 vCPUs), where the ENI limit stays the cap.
    assert all(pods(it) == min(_INFOS[name]["VCpuInfo"]["DefaultVCpus"], pods(plain[name]))
               for name, it in types.items())
    assert pods(types["m5.large"]) == 2


def test_minimum_of_pods_per_core_and_max_pods() -> None:
    """Overhead: "should take the minimum of pods-per-core and max-pods"."""
    types = built_all(kubelet={"podsPerCore": 4, "maxPods": 20})
    assert all(pods(it) == min(20, 4 * _INFOS[name]["VCpuInfo"]["DefaultVCpus"])
               for name, it in types.items())


def test_bottlerocket_ignores_pods_per_core() -> None:
    """Overhead: "should ignore pods-per-core when using Bottlerocket AMI"."""
    types = built_all(amiSelectorTerms=[{"alias": "bottlerocket@latest"}],
                      kubelet={"podsPerCore": 1})
    assert all(pods(it) == eni_limited_pods(read_instance_type(_INFOS[name]), 0)
               for name, it in types.items())


def test_pods_per_core_zero_keeps_the_eni_limit() -> None:
    """Overhead: "should take limited pod density to be the default pods number when
    pods-per-core is 0"."""
    types = built_all(["t3.large", "m6idn.32xlarge"], kubelet={"podsPerCore": 0})
    assert pods(types["t3.large"]) == 35
    assert pods(types["m6idn.32xlarge"]) == 394


def test_allocatable_never_exceeds_what_kubelet_reports() -> None:
    """Overhead: "shouldn't report more resources than are actually available on instances"
    (kubelet's reported allocatable of launched nodes, from Karpenter's test)."""
    reported = {"t4g.small": ("1408312Ki", "1930m"), "t4g.medium": ("3377496Ki", "1930m"),
                "t4g.xlarge": ("15136012Ki", "3920m"), "m5.large": ("7220184Ki", "1930m")}
    types = built_all(list(reported))
    for name, (memory, cpu) in reported.items():
        assert types[name].allocatable["memory"] <= q(memory), name
        assert types[name].allocatable["cpu"] <= q(cpu), name


# --- Scheduling pods against the catalog (Karpenter's ExpectProvisioned) --------------------


def pod_manifest(
    name: str, selector: dict[str, str] | None = None, requests: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {"requests": requests, "limits": requests} if requests else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": selector or {},
                     "containers": [{"name": "app", "image": "app", "resources": resources}]}}


def provisioned(
    pods: list[dict[str, Any]],
    requirements: list[dict[str, Any]] | None = None,
    extra_types: list[dict[str, Any]] | None = None,
    **node_class_spec: Any,
) -> SchedulingResult:
    """Karpenter's suite NodePool (on-demand only unless `requirements` replace it) and
    EC2NodeClass, planned against us-west-2's catalog (plus `extra_types`, DescribeInstanceTypes
    entries offered in us-west-2a)."""
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                "metadata": {"name": "default"},
                "spec": {"template": {"spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": "default"},
                    "requirements": requirements if requirements is not None else [
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["on-demand"]}]}}}}
    nodeclass = node_class(**node_class_spec).model_dump(by_alias=True, exclude_none=True)
    nodeclass.pop("status", None)
    text = "---\n".join(yaml.safe_dump(doc) for doc in [nodepool, nodeclass, *pods])
    documents, problems = parse_documents(text, "<story>")
    assert problems == []
    catalogs = base = offline_catalogs(REGION, None)
    if extra_types:
        def with_extra(node_class: EC2NodeClass | None) -> list[InstanceType]:
            settings = node_settings(node_class=node_class)
            offerings = [{"InstanceType": info["InstanceType"], "Location": ZONE}
                         for info in extra_types]
            return [*base(node_class), *build_catalog(
                extra_types, offerings, REGION, settings=settings,
                zone_ids=offline_data.zone_ids(REGION))]
        catalogs = with_extra
    result, problems = plan(documents, catalogs, {})
    assert [p.format() for p in problems if p.severity == "error"] == []
    assert result is not None
    return result


def placed(result: SchedulingResult) -> dict[str, str]:
    """pod name -> instance type of the node claim it went to."""
    return {pod.split("/")[1]: claim.instance_type
            for claim in result.nodeclaims for pod in claim.pods}


AWS_LABELS_OF_G4DN_8XLARGE = {
    "karpenter.k8s.aws/instance-tenancy": "default",
    "karpenter.k8s.aws/instance-hypervisor": "nitro",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported": "true",
    "karpenter.k8s.aws/instance-category": "g",
    "karpenter.k8s.aws/instance-capability-flex": "false",
    "karpenter.k8s.aws/instance-generation": "4",
    "karpenter.k8s.aws/instance-family": "g4dn",
    "karpenter.k8s.aws/instance-size": "8xlarge",
    "karpenter.k8s.aws/instance-cpu": "32",
    "karpenter.k8s.aws/instance-cpu-manufacturer": "intel",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz": "2500",
    "karpenter.k8s.aws/instance-memory": "131072",
    "karpenter.k8s.aws/instance-ebs-bandwidth": "9500",
    "karpenter.k8s.aws/instance-network-bandwidth": "50000",
    "karpenter.k8s.aws/instance-gpu-name": "t4",
    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    "karpenter.k8s.aws/instance-gpu-count": "1",
    "karpenter.k8s.aws/instance-gpu-memory": "16384",
    "karpenter.k8s.aws/instance-local-nvme": "900",
}
WELL_KNOWN_OF_G4DN_8XLARGE = {
    "karpenter.sh/nodepool": "default",
    "topology.kubernetes.io/region": REGION,
    "topology.kubernetes.io/zone": ZONE,
    "node.kubernetes.io/instance-type": "g4dn.8xlarge",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "karpenter.sh/capacity-type": "on-demand",
    "topology.k8s.aws/zone-id": "usw2-az2",
    # deprecated labels, normalized to the ones above
    "failure-domain.beta.kubernetes.io/region": REGION,
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "beta.kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "beta.kubernetes.io/instance-type": "g4dn.8xlarge",
    "topology.ebs.csi.aws.com/zone": ZONE,
}


def test_each_instance_type_label_alone_schedules() -> None:
    """"should support individual instance type labels" (the Windows build label is covered
    by tests/aws/test_windows.py)."""
    selectors = WELL_KNOWN_OF_G4DN_8XLARGE | AWS_LABELS_OF_G4DN_8XLARGE
    pods = [pod_manifest(f"pod-{n}", {key: value})
            for n, (key, value) in enumerate(selectors.items())]
    result = provisioned(pods)
    assert result.unschedulable == ()
    assert len(placed(result)) == len(selectors)


def test_all_instance_type_labels_together_schedule() -> None:
    """"should support combined instance type labels"."""
    selector = WELL_KNOWN_OF_G4DN_8XLARGE | AWS_LABELS_OF_G4DN_8XLARGE
    result = provisioned([pod_manifest("pod", selector)])
    assert placed(result) == {"pod": "g4dn.8xlarge"}
    assert [claim.zone for claim in result.nodeclaims] == [ZONE]


def test_accelerator_labels_schedule() -> None:
    """"should support instance type labels with accelerator"."""
    selector = {
        "karpenter.sh/nodepool": "default", "topology.kubernetes.io/zone": ZONE,
        "node.kubernetes.io/instance-type": "inf2.xlarge", "kubernetes.io/arch": "amd64",
        "karpenter.k8s.aws/instance-category": "inf",
        "karpenter.k8s.aws/instance-generation": "2",
        "karpenter.k8s.aws/instance-family": "inf2",
        "karpenter.k8s.aws/instance-size": "xlarge",
        "karpenter.k8s.aws/instance-cpu": "4",
        "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz": "3600",
        "karpenter.k8s.aws/instance-cpu-manufacturer": "amd",
        "karpenter.k8s.aws/instance-memory": "16384",
        "karpenter.k8s.aws/instance-ebs-bandwidth": "10000",
        "karpenter.k8s.aws/instance-network-bandwidth": "2083",
        "karpenter.k8s.aws/instance-accelerator-name": "inferentia2",
        "karpenter.k8s.aws/instance-accelerator-manufacturer": "aws",
        "karpenter.k8s.aws/instance-accelerator-count": "1",
        "topology.k8s.aws/zone-id": "usw2-az2",
    }
    assert placed(provisioned([pod_manifest("pod", selector)])) == {"pod": "inf2.xlarge"}


def test_no_pod_eni_on_a_t3() -> None:
    """"should not launch AWS Pod ENI on a t3"."""
    result = provisioned([pod_manifest("pod", {"node.kubernetes.io/instance-type": "t3.large"},
                                       {"vpc.amazonaws.com/pod-eni": "1"})])
    assert placed(result) == {}
    assert len(result.unschedulable) == 1


def test_pod_eni_lands_on_a_trunking_type() -> None:
    """"should launch vpc.amazonaws.com/pod-eni on a compatible instance type"."""
    result = provisioned([pod_manifest("pod", requests={"vpc.amazonaws.com/pod-eni": "1"})])
    (name,) = placed(result).values()
    assert pod_eni(name) > 0


def test_a_pod_may_ask_for_flex_types() -> None:
    """"should launch pod in flex instance type"."""
    (name,) = placed(provisioned([pod_manifest(
        "pod", {"karpenter.k8s.aws/instance-capability-flex": "true"})])).values()
    assert "flex" in name


def test_flex_types_disallowed_by_the_nodepool() -> None:
    """"should not launch pod when flex instances are disallowed"."""
    result = provisioned(
        [pod_manifest("pod", {"karpenter.k8s.aws/instance-capability-flex": "true"})],
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-capability-flex", "operator": "NotIn",
             "values": ["true"]},
        ])
    assert placed(result) == {}
    assert len(result.unschedulable) == 1


def test_a_pod_may_ask_for_non_flex_types() -> None:
    """"should launch pod in non-flex instances"."""
    (name,) = placed(provisioned([pod_manifest(
        "pod", {"karpenter.k8s.aws/instance-capability-flex": "false"})])).values()
    assert "flex" not in name


# Two types of Karpenter's fake EC2 data that moto's data set lacks (DescribeInstanceTypes
# shape, from karpenter-provider-aws v1.14.1 pkg/fake/zz_generated.describe_instance_types.go).
DL1_24XLARGE: dict[str, Any] = {
    "InstanceType": "dl1.24xlarge", "SupportedUsageClasses": ["on-demand", "spot"],
    "BareMetal": False, "Hypervisor": "nitro",
    "ProcessorInfo": {"Manufacturer": "Intel", "SupportedArchitectures": ["x86_64"],
                      "SustainedClockSpeedInGhz": 3.0},
    "VCpuInfo": {"DefaultCores": 48, "DefaultVCpus": 96},
    "MemoryInfo": {"SizeInMiB": 786432},
    "EbsInfo": {"EbsOptimizedInfo": {"BaselineBandwidthInMbps": 19000}},
    "GpuInfo": {"Gpus": [{"Name": "Gaudi HL-205", "Manufacturer": "Habana", "Count": 8,
                          "MemoryInfo": {"SizeInMiB": 32768}}]},
    "InstanceStorageInfo": {"NvmeSupport": "required", "TotalSizeInGB": 4000},
    "NetworkInfo": {
        "EfaInfo": {"MaximumEfaInterfaces": 4}, "EfaSupported": True,
        "MaximumNetworkInterfaces": 60, "Ipv4AddressesPerInterface": 50,
        "EncryptionInTransitSupported": True, "DefaultNetworkCardIndex": 0,
        "NetworkCards": [{"NetworkCardIndex": card, "MaximumNetworkInterfaces": 15}
                         for card in range(4)]},
    "PlacementGroupInfo": {"SupportedStrategies": ["cluster", "partition", "spread"]},
}
G4AD_16XLARGE: dict[str, Any] = {
    "InstanceType": "g4ad.16xlarge", "SupportedUsageClasses": ["on-demand", "spot"],
    "BareMetal": False, "Hypervisor": "nitro",
    "ProcessorInfo": {"Manufacturer": "AMD", "SupportedArchitectures": ["x86_64"],
                      "SustainedClockSpeedInGhz": 3.0},
    "VCpuInfo": {"DefaultCores": 32, "DefaultVCpus": 64},
    "MemoryInfo": {"SizeInMiB": 262144},
    "EbsInfo": {"EbsOptimizedInfo": {"BaselineBandwidthInMbps": 6300}},
    "GpuInfo": {"Gpus": [{"Name": "Radeon Pro V520", "Manufacturer": "AMD", "Count": 4,
                          "MemoryInfo": {"SizeInMiB": 8192}}]},
    "InstanceStorageInfo": {"NvmeSupport": "required", "TotalSizeInGB": 2400},
    "NetworkInfo": {
        "MaximumNetworkInterfaces": 8, "Ipv4AddressesPerInterface": 30,
        "EncryptionInTransitSupported": True, "DefaultNetworkCardIndex": 0,
        "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 8}]},
    "PlacementGroupInfo": {"SupportedStrategies": ["cluster", "partition", "spread"]},
}


def only_types(*names: str) -> list[dict[str, Any]]:
    """Karpenter's suite NodePool, narrowed to the types its fake data offers for a test."""
    return [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(names)}]


def nodes_and_types(result: SchedulingResult) -> tuple[int, set[str]]:
    assert result.unschedulable == ()
    return len(result.nodeclaims), {claim.instance_type for claim in result.nodeclaims}


def accelerator_pods(resource: str, counts: list[int]) -> list[dict[str, Any]]:
    return [pod_manifest(f"pod-{n}", requests={resource: str(count)})
            for n, count in enumerate(counts)]


def test_nvidia_gpu_requests() -> None:
    """"should launch instances for nvidia.com/gpu resource requests": the 1- and 2-GPU pods
    share a g5.12xlarge (Karpenter's fake data's only NVIDIA type with 4), the 4-GPU one gets
    its own."""
    result = provisioned(accelerator_pods("nvidia.com/gpu", [1, 2, 4]),
                         requirements=only_types("g5.12xlarge"))
    assert nodes_and_types(result) == (2, {"g5.12xlarge"})


def test_habana_gaudi_requests() -> None:
    """"should launch instances for habana.ai/gaudi resource requests"."""
    result = provisioned(accelerator_pods("habana.ai/gaudi", [1, 2, 4]),
                         extra_types=[DL1_24XLARGE])
    assert nodes_and_types(result) == (1, {"dl1.24xlarge"})


def test_neuron_requests() -> None:
    """"should launch instances for aws.amazon.com/neuron resource requests": inf2.24xlarge
    has 6 Inferentia devices; 2 + 2 share one, 4 needs another."""
    result = provisioned(accelerator_pods("aws.amazon.com/neuron", [2, 2, 4]),
                         requirements=only_types("inf2.24xlarge"))
    assert nodes_and_types(result) == (2, {"inf2.24xlarge"})


def test_trn1_for_neuron_requests() -> None:
    """"should launch trn1 instances for aws.amazon.com/neuron resource requests"."""
    result = provisioned(accelerator_pods("aws.amazon.com/neuron", [1]),
                         requirements=only_types("trn1.2xlarge"))
    assert nodes_and_types(result) == (1, {"trn1.2xlarge"})


def test_inf2_for_neuroncore_requests() -> None:
    """"should launch inf2 instances for aws.amazon.com/neuroncore resource requests"."""
    result = provisioned(accelerator_pods("aws.amazon.com/neuroncore", [2]),
                         requirements=only_types("inf2.xlarge"))
    assert nodes_and_types(result) == (1, {"inf2.xlarge"})


def test_efa_requests() -> None:
    """"should launch instances for vpc.amazonaws.com/efa resource requests"."""
    result = provisioned(accelerator_pods("vpc.amazonaws.com/efa", [1, 2]),
                         requirements=only_types("dl1.24xlarge"), extra_types=[DL1_24XLARGE])
    assert nodes_and_types(result) == (1, {"dl1.24xlarge"})


def test_amd_gpu_requests() -> None:
    """"should launch instances for amd.com/gpu resource requests"."""
    result = provisioned(accelerator_pods("amd.com/gpu", [1, 2, 4]),
                         extra_types=[G4AD_16XLARGE])
    assert nodes_and_types(result) == (2, {"g4ad.16xlarge"})


def test_ephemeral_storage_beyond_the_root_volume_is_refused() -> None:
    """"should not launch instances w/ instance storage for ephemeral storage resource requests
    when exceeding blockDeviceMapping"."""
    result = provisioned([pod_manifest("pod", requests={"ephemeral-storage": "5000Gi"})])
    assert placed(result) == {}
    assert len(result.unschedulable) == 1


def test_raid0_instance_store_counts_as_ephemeral_storage() -> None:
    """"should launch instances w/ instance storage for ephemeral storage resource requests
    when disks are mounted for ephemeral-storage": Karpenter's fake data picks m6idn.32xlarge
    (7600G of NVMe); from moto's data the cheapest type with 5000Gi of NVMe is picked."""
    result = provisioned([pod_manifest("pod", requests={"ephemeral-storage": "5000Gi"})],
                         instanceStorePolicy="RAID0")
    (name,) = placed(result).values()
    assert _INFOS[name]["InstanceStorageInfo"]["TotalSizeInGB"] * 10**9 >= 5000 * 2**30
    m6idn = built("m6idn.32xlarge", instanceStorePolicy="RAID0")
    assert m6idn.capacity["ephemeral-storage"] == q("7600G")


def test_eni_based_density_never_uses_110() -> None:
    """"should not set pods to 110 if using ENI-based pod density"."""
    types = built_all(kubelet={})
    # moto's data, unlike Karpenter's fake data, has types whose ENI limit is exactly 110
    exactly_110 = {name for name, info in _INFOS.items()
                   if eni_limited_pods(read_instance_type(info), 0) == 110}
    assert all(pods(it) != 110 for name, it in types.items() if name not in exactly_110)
    assert pods(types["m5.large"]) == 29


def test_windows_uses_110_pods() -> None:
    """"should set pods to 110 if AMI Family doesn't support" (ENI-limited density)."""
    types = built_all(kubelet={}, amiSelectorTerms=[{"alias": "windows2022@latest"}])
    assert len(types) > 300
    assert {pods(it) for it in types.values()} == {110}


def test_metal_when_asked_for() -> None:
    """"should launch on metal"."""
    result = provisioned(
        [pod_manifest("pod", {"karpenter.k8s.aws/instance-size": "metal"}, {"cpu": "1"})],
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "Exists"}])
    (name,) = placed(result).values()
    assert name.endswith("metal") or "metal-" in name


def test_private_ipv4_address_on_windows() -> None:
    """"should launch vpc.amazonaws.com/PrivateIPv4Address on a compatible instance type"."""
    result = provisioned(
        [pod_manifest("pod", requests={"vpc.amazonaws.com/PrivateIPv4Address": "1"})],
        amiSelectorTerms=[{"alias": "windows2022@latest"}])
    (name,) = placed(result).values()
    assert ipv4_per_interface(name)


def test_private_ipv4_address_not_offered_by_a_type_the_vpc_limits_lack() -> None:
    """"should not launch instance type for vpc.amazonaws.com/PrivateIPv4Address if VPC
    resource controller doesn't advertise it": EC2 gives the type IPv4 addresses, but the
    VPC limits table does not list it, so a Windows node of it offers none."""
    test_type = {
        "InstanceType": "test", "SupportedUsageClasses": ["on-demand", "spot"],
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "VCpuInfo": {"DefaultCores": 1, "DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8192},
        "NetworkInfo": {"Ipv4AddressesPerInterface": 10, "DefaultNetworkCardIndex": 0,
                        "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 3}]},
    }
    result = provisioned(
        [pod_manifest("pod", requests={"vpc.amazonaws.com/PrivateIPv4Address": "1"})],
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["test"]}],
        extra_types=[test_type], amiSelectorTerms=[{"alias": "windows2022@latest"}])
    assert placed(result) == {}
    assert len(result.unschedulable) == 1


# --- Tenancy and capacity type ------------------------------------------------------------


def claim_labels(result: SchedulingResult) -> dict[str, str]:
    (claim,) = result.nodeclaims
    return single_values(claim.requirements) | {"karpenter.sh/capacity-type":
                                                  claim.capacity_type}


def tenancy_of(result: SchedulingResult) -> str:
    """The tenancy the NodeClaim launches with (its launch template's Placement.Tenancy)."""
    (claim,) = result.nodeclaims
    return tenancy_for(claim.requirements)


def test_default_tenancy_without_a_requirement() -> None:
    """Tenancy: "Should use default tenancy when no requirement is given for tenancy"."""
    assert tenancy_of(provisioned([pod_manifest("pod")])) == "default"


def test_default_tenancy_when_both_are_allowed() -> None:
    """Tenancy: "Should use default tenancy if tenancy requirement specifies both default and
    dedicated tenancies"."""
    result = provisioned([pod_manifest("pod")], requirements=[
        {"key": "karpenter.k8s.aws/instance-tenancy", "operator": "In",
         "values": ["default", "dedicated"]}])
    assert tenancy_of(result) == "default"


def test_default_tenancy_when_required() -> None:
    """Tenancy: "Should launch with default tenancy when required"."""
    result = provisioned([pod_manifest("pod", {"karpenter.k8s.aws/instance-tenancy": "default"})])
    assert tenancy_of(result) == "default"


def test_dedicated_tenancy_when_required() -> None:
    """Tenancy: "Should launch with dedicated tenancy when required"."""
    result = provisioned([pod_manifest("pod",
                                       {"karpenter.k8s.aws/instance-tenancy": "dedicated"})])
    assert tenancy_of(result) == "dedicated"


@pytest.mark.parametrize(("nodepool_tenancy", "pod_tenancy"),
                         [("dedicated", "default"), ("default", "dedicated")],
                         ids=["dedicated np", "default np"])
def test_tenancy_violations_are_refused(nodepool_tenancy: str, pod_tenancy: str) -> None:
    """Tenancy: DescribeTable "does not allow tenancy violations", each Entry."""
    result = provisioned(
        [pod_manifest("pod", {"karpenter.k8s.aws/instance-tenancy": pod_tenancy})],
        requirements=[{"key": "karpenter.k8s.aws/instance-tenancy", "operator": "In",
                       "values": [nodepool_tenancy]}])
    assert placed(result) == {}
    assert len(result.unschedulable) == 1


def test_capacity_type_defaults_to_on_demand() -> None:
    """CapacityType: "should default to on-demand"."""
    assert claim_labels(provisioned([pod_manifest("pod")]))[
        "karpenter.sh/capacity-type"] == "on-demand"


def test_spot_when_flexible() -> None:
    """CapacityType: "should launch spot capacity if flexible to both spot and on demand"."""
    result = provisioned([pod_manifest("pod")], requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In",
         "values": ["spot", "on-demand"]}])
    assert claim_labels(result)["karpenter.sh/capacity-type"] == "spot"


# --- Network interfaces -------------------------------------------------------------------


def test_max_pods_without_efa_only_interfaces_on_card_0() -> None:
    """Network Interfaces: "should calculate max pods according when no EFA-only interfaces
    used on NC 0"."""
    m6idn = built("m6idn.32xlarge", networkInterfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}])
    assert pods(m6idn) == 394  # 8 ENIs x 49 + 2


def test_max_pods_less_the_efa_only_interfaces_on_card_0() -> None:
    """Network Interfaces: "should calculate max pods according to EFA-only interfaces
    used"."""
    m6idn = built("m6idn.32xlarge", networkInterfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}])
    assert pods(m6idn) == 345  # (8 - 1) ENIs x 49 + 2


def dl1_with(**spec: Any) -> list[InstanceType]:
    settings = node_settings(node_class=node_class(**spec))
    return [it for it in build_catalog([DL1_24XLARGE], [{"InstanceType": "dl1.24xlarge",
                                                         "Location": ZONE}],
                                       REGION, settings=settings)]


def test_dl1_keeps_its_offerings_with_interfaces_it_supports() -> None:
    """Instance Type and NodeClass Compatibility / Network Interfaces: "should mark instance
    type offering as available when it supports network interface configuration"."""
    before = dl1_with()
    after = dl1_with(networkInterfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}])
    assert [len(available_offerings(it)) for it in after] == [
        len(available_offerings(it)) for it in before] == [2]


def test_dl1_cannot_launch_with_more_efa_interfaces_than_it_has() -> None:
    """Instance Type and NodeClass Compatibility / Network Interfaces: "should mark instance
    type offering as unavailable when it does not support network interface configuration"
    (Karpenter keeps the type with every offering unavailable; Nodewright leaves it out of
    the catalog, so nothing can launch it either way)."""
    types = dl1_with(networkInterfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        *({"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"}
          for card in range(1, 5))])
    assert [o for it in types for o in available_offerings(it)] == []


def test_an_empty_interface_list_is_a_list_of_interfaces() -> None:
    """Karpenter keeps `networkInterfaces: []` apart from a missing list (a nil slice in
    types.go efas and compatibility.go networkInterfaceCheck): the types' EFA devices are
    not advertised, and a type without ENA support (c4) is not compatible."""
    plain = built_all(["c6in.32xlarge", "c4.large"])
    empty = built_all(["c6in.32xlarge", "c4.large"], networkInterfaces=[])
    assert plain["c6in.32xlarge"].capacity["vpc.amazonaws.com/efa"] == 2_000
    assert "vpc.amazonaws.com/efa" not in empty["c6in.32xlarge"].capacity
    assert "c4.large" in plain and "c4.large" not in empty


# --- The provider's instance types (moto world: us-west-2a, b and c) ------------------------


def of(types: list[InstanceType], name: str) -> InstanceType:
    (found,) = [it for it in types if it.name == name]
    return found


def available(it: InstanceType) -> set[tuple[str, str]]:
    return {(o.zone, o.capacity_type) for o in available_offerings(it)}


def test_marked_offerings_are_unavailable(provider: AwsCloudProvider) -> None:
    """Insufficient Capacity Error Cache: "should not return an offering when marking an
    offering as unavailable in the Insufficient Capacity Error Cache"."""
    m5 = of(provider.get_instance_types(node_class()), "m5.large")
    assert len(available(m5)) == 6
    for zone in ("us-west-2a", "us-west-2b"):
        provider.unavailable.mark_unavailable("m5.xlarge", zone, "spot", "test")
    m5 = of(provider.get_instance_types(node_class()), "m5.large")
    assert len(available(m5)) == 6
    provider.unavailable.mark_unavailable("m5.large", "us-west-2a", "spot", "test")
    m5 = of(provider.get_instance_types(node_class()), "m5.large")
    assert len(available(m5)) == 5 and ("us-west-2a", "spot") not in available(m5)
    for zone in ("us-west-2b", "us-west-2c"):
        provider.unavailable.mark_unavailable("m5.large", zone, "on-demand", "test")
    m5 = of(provider.get_instance_types(node_class()), "m5.large")
    assert available(m5) == {("us-west-2a", "on-demand"), ("us-west-2b", "spot"),
                             ("us-west-2c", "spot")}


def test_a_capacity_type_marked_unavailable(provider: AwsCloudProvider) -> None:
    """Insufficient Capacity Error Cache: "should not return a capacity type when marking a
    capacity type as unavailable in the Insufficient Capacity Error Cache"."""
    def capacity_types() -> set[str]:
        return {ct for it in provider.get_instance_types(node_class())
                for _, ct in available(it)}

    assert capacity_types() == {"on-demand", "spot"}
    provider.unavailable.mark_capacity_type_unavailable("spot", "test")
    assert capacity_types() == {"on-demand"}


def test_a_type_without_available_offerings_is_still_listed(provider: AwsCloudProvider) -> None:
    """Insufficient Capacity Error Cache: "should return all instance types, even though with
    no offerings due to Insufficient Capacity Error"."""
    for zone in ("us-west-2a", "us-west-2b", "us-west-2c"):
        for capacity_type in ("on-demand", "spot"):
            provider.unavailable.mark_unavailable("m5.xlarge", zone, capacity_type, "ICE")
    m5 = of(provider.get_instance_types(node_class()), "m5.xlarge")
    assert m5.offerings and available(m5) == set()


def test_one_offering_per_pool(provider: AwsCloudProvider) -> None:
    """Offerings: "should create a single offering per instance pool" (twice: cache miss and
    hit)."""
    for _ in range(2):
        pools = [(it.name, o.zone, o.capacity_type)
                 for it in provider.get_instance_types(node_class()) for o in it.offerings]
        assert len(pools) == len(set(pools)) > 0


def test_same_types_without_changes(provider: AwsCloudProvider) -> None:
    """Provider Cache: "should return the same set of instance types from the cache when no
    changes are made" (ExpectSameInstanceTypeLists: the very same capacity, overhead and
    labels, built once)."""
    first = provider.get_instance_types(node_class())
    built = provider.catalog.types_built
    second = provider.get_instance_types(node_class())
    assert provider.catalog.types_built == built
    assert identical_lists(first, second)


def identical_lists(first: list[InstanceType], second: list[InstanceType]) -> bool:
    """Karpenter's ExpectSameInstanceTypeLists / ExpectIdenticalInstanceTypes: the same
    names, each with the same (not merely equal) capacity, overhead and labels."""
    return [it.name for it in first] == [it.name for it in second] and all(
        a.capacity is b.capacity and a.overhead is b.overhead and a.labels is b.labels
        for a, b in zip(first, second, strict=True))


def test_kubelet_changes_change_the_types(provider: AwsCloudProvider) -> None:
    """Provider Cache: "changes to kubelet configuration fields should result in a different
    set of instances types"."""
    base: dict[str, Any] = {
        "kubeReserved": {"cpu": "1"}, "systemReserved": {"cpu": "1"},
        "evictionHard": {"memory.available": "5%"}, "evictionSoft": {"nodefs.available": "10%"},
        "evictionSoftGracePeriod": {"nodefs.available": "1m"}, "maxPods": 10}
    changes: list[dict[str, Any]] = [
        {}, {"kubeReserved": {"cpu": "20"}}, {"systemReserved": {"memory": "10Gi"}},
        {"evictionHard": {"memory.available": "52%"}}, {"maxPods": 20}]
    kubelet = dict(base)
    results = []
    for change in changes:
        kubelet |= change
        results.append(provider.get_instance_types(node_class(kubelet=dict(kubelet))))
    assert all_different(results)


def test_node_class_changes_change_the_types(provider: AwsCloudProvider) -> None:
    """Provider Cache: "changes to nodeclass fields should result in a different set of
    instances types"."""
    xvda_20 = {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20G"}, "rootVolume": False}
    specs: list[dict[str, Any]] = [
        {"blockDeviceMappings": [xvda_20]},
        {"blockDeviceMappings": [xvda_20], "instanceStorePolicy": "RAID0"},
        {"blockDeviceMappings": [xvda_20],
         "amiSelectorTerms": [{"alias": "bottlerocket@latest"}]},
        {"blockDeviceMappings": [xvda_20, {"deviceName": "/dev/sda1",
                                           "ebs": {"volumeSize": "10G"}, "rootVolume": True}]},
        {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "15G"},
                                  "rootVolume": False}]},
        {"blockDeviceMappings": [{"deviceName": "/dev/yvda", "ebs": {"volumeSize": "25G"},
                                  "rootVolume": True}]},
    ]
    assert all_different([provider.get_instance_types(node_class(**spec))
                          for spec in specs])


def all_different(results: list[list[InstanceType]]) -> bool:
    """Karpenter's ExpectUniqueInstanceTypeLists: no two lists are the same."""
    return all(results[i] != results[j]
               for i in range(len(results)) for j in range(i + 1, len(results)))


def test_ice_changes_only_that_type(provider: AwsCloudProvider) -> None:
    """Provider Cache: "returning an ICE error only results in a cache miss for that instance
    type"."""
    before = {it.name: it for it in provider.get_instance_types(node_class())}
    provider.unavailable.mark_unavailable("m5.xlarge", "us-west-2a", "spot", "test")
    after = {it.name: it for it in provider.get_instance_types(node_class())}
    assert after.keys() == before.keys()
    assert [name for name in after if after[name] != before[name]] == ["m5.xlarge"]
    # Only m5.xlarge is built again: every other type keeps its very offerings.
    assert not set(map(id, after["m5.xlarge"].offerings)) & set(
        map(id, before["m5.xlarge"].offerings))
    assert all(after[name].offerings[i] is offering
               for name in after if name != "m5.xlarge"
               for i, offering in enumerate(before[name].offerings))


def test_capacity_type_ice_changes_every_type(provider: AwsCloudProvider) -> None:
    """Provider Cache: "returning an ICE error for capacity type results in a cache miss for
    every instance type" (its zone part: MarkSubnetUnavailable for each subnet of
    test-zone-1a is a zone marked out for a capacity type here)."""
    def offerings_shared(first: dict[str, InstanceType],
                         second: dict[str, InstanceType]) -> bool:
        return any(a is b for name in second
                   for a in first[name].offerings for b in second[name].offerings)

    before = {it.name: it for it in provider.get_instance_types(node_class())}
    provider.unavailable.mark_capacity_type_unavailable("spot", "test")
    after = {it.name: it for it in provider.get_instance_types(node_class())}
    assert after.keys() == before.keys()
    assert all(after[name] != before[name] for name in after
               if any(o.capacity_type == "spot" for o in before[name].offerings))
    assert not offerings_shared(before, after)
    provider.unavailable.mark_zone_unavailable("us-west-2a", "on-demand", "test")
    third = {it.name: it for it in provider.get_instance_types(node_class())}
    assert third.keys() == after.keys()
    assert not offerings_shared(after, third)


def test_listing_from_many_threads_agrees(provider: AwsCloudProvider) -> None:
    """"should not cause data races when calling List() simultaneously" (50 threads, not
    10000: the order and uniqueness of names is what is checked)."""
    node_class_ = node_class()
    provider.get_instance_types(node_class_)

    def names() -> list[str]:
        return sorted(it.name for it in provider.get_instance_types(node_class_))

    with ThreadPoolExecutor(max_workers=8) as pool:
        lists = list(pool.map(lambda _: names(), range(50)))
    assert all(len(set(names_)) == len(names_) for names_ in lists)
    assert all(names_ == lists[0] for names_ in lists)


# --- What a launch asks CreateFleet for ----------------------------------------------------


def launch_overrides(
    provider: AwsCloudProvider, recorder: CallRecorder, *requirements: dict[str, Any]
) -> list[tuple[str, str]]:
    """The (instance type, zone) overrides of the CreateFleet a NodeClaim with
    `requirements` (and a request of 1 cpu) launches with."""
    body = nodeclaim(requirements=list(requirements)).model_dump(by_alias=True,
                                                                exclude_none=True)
    body["spec"]["resources"] = {"requests": {"cpu": "1"}}
    claim = NodeClaim.model_validate(body)
    provider.create(claim, node_class())
    (request,) = recorder.calls_of("ec2:CreateFleet")
    return fleet_overrides(request)


ON_DEMAND_ONLY = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
SPOT_AND_ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In",
                      "values": ["spot", "on-demand"]}


def test_the_cheapest_types_are_asked_for(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """"should order the instance types by price and only consider the cheapest ones": every
    type of the fleet request is among the 100 cheapest, and there are at most 60."""
    types = provider.get_instance_types(node_class())
    asked = {name for name, _ in launch_overrides(provider, recorder, ON_DEMAND_ONLY)}

    def price(it: InstanceType) -> float:
        offering = it.cheapest_offering(capacity_types=["on-demand"])
        return offering.price if offering is not None else float("inf")

    # Karpenter's fake types all fit the pod's 1 cpu; of moto's, the 1-vCPU ones do not.
    fitting = [it for it in types if it.allocatable["cpu"] >= q("1")]
    cheapest = {it.name for it in sorted(fitting, key=lambda it: (price(it), it.name))[:100]}
    assert len(asked) == 60
    assert asked <= cheapest


def test_spot_types_are_cheaper_than_the_cheapest_on_demand(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """"should order the instance types by price and only consider the spot types that are
    cheaper than the cheapest on-demand"."""
    overrides = launch_overrides(provider, recorder, SPOT_AND_ON_DEMAND)
    types = {it.name: it for it in provider.get_instance_types(node_class())}

    def price_of(name: str, zone: str, capacity_type: str) -> float:
        offering = types[name].cheapest_offering(zones=[zone], capacity_types=[capacity_type])
        assert offering is not None
        return offering.price

    cheapest_on_demand = min(price_of(name, zone, "on-demand") for name, zone in overrides)
    assert all(price_of(name, zone, "spot") < cheapest_on_demand for name, zone in overrides)


def test_min_values_keeps_expensive_metal(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """"should not remove expensive metal instanceTypeOptions if any of the requirement with
    minValues is provided" (narrowed to a few types, as small as Karpenter's fake data, so
    the cut to the 60 cheapest types does not drop the metal one first)."""
    overrides = launch_overrides(provider, recorder, {
        "key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"],
        "minValues": 1}, M5_SIZES)
    assert any("metal" in name for name, _ in overrides)


def test_without_min_values_metal_goes(provider: AwsCloudProvider,
                                       recorder: CallRecorder) -> None:
    """The counterpart of the test above: the same types without minValues leave metal out
    (Karpenter's "should de-prioritize metal", on the narrowed types)."""
    overrides = launch_overrides(provider, recorder, {
        "key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}, M5_SIZES)
    assert overrides and not any("metal" in name for name, _ in overrides)


M5_SIZES = {"key": "node.kubernetes.io/instance-type", "operator": "In",
            "values": ["m5.large", "m5.xlarge", "m5.metal"]}


def test_metal_is_left_out(provider: AwsCloudProvider, recorder: CallRecorder) -> None:
    """"should de-prioritize metal"."""
    overrides = launch_overrides(provider, recorder, ON_DEMAND_ONLY)
    assert overrides and not any("metal" in name for name, _ in overrides)


def test_gpu_types_are_left_out(provider: AwsCloudProvider, recorder: CallRecorder) -> None:
    """"should de-prioritize gpu types" (Karpenter's fake data's GPU types are the g ones;
    here: no type with a GPU)."""
    overrides = launch_overrides(provider, recorder, ON_DEMAND_ONLY)
    gpus = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "aws.amazon.com/neuron")
    types = {it.name: it for it in provider.get_instance_types(node_class())}
    assert overrides and not any(types[name].capacity.get(gpu, 0) > 0
                                 for name, _ in overrides for gpu in gpus)


# --- Ephemeral storage and metadata options of the launch template --------------------------

SNAPSHOT_ROOT = {"deviceName": "/dev/xvda",
                 "ebs": {"snapshotID": "snap-xxxxxxxx", "volumeInitializationRate": 100}}
EPHEMERAL_CASES = [
    # (It text, node class spec)
    ("for custom AMIs", {"amiFamily": "Custom", "amiSelectorTerms": [{"tags": {"*": "*"}}]}),
    ("for AL2 Root volume", {"amiSelectorTerms": [{"alias": "al2@latest"}]}),
    ("for AL2023 Root volume", {"amiSelectorTerms": [{"alias": "al2023@latest"}]}),
    ("for Bottlerocket Root volume", {"amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
                                      "device": "/dev/xvdb"}),
]


@pytest.mark.parametrize(("case", "spec"), EPHEMERAL_CASES, ids=[c for c, _ in EPHEMERAL_CASES])
def test_ebs_defaults_without_a_volume_size(case: str, spec: dict[str, Any]) -> None:
    """Ephemeral Storage: "should default to EBS defaults when volumeSize is not defined in
    blockDeviceMappings <case>": 20Gi of ephemeral storage, and the launch template's one
    mapping keeps the snapshot and initialization rate."""
    spec = dict(spec)
    mapping = SNAPSHOT_ROOT | {"deviceName": spec.pop("device", "/dev/xvda")}
    nc = node_class(**spec, blockDeviceMappings=[mapping])
    it = build_catalog([_INFOS["m5.large"]], [{"InstanceType": "m5.large", "Location": ZONE}],
                       REGION, settings=node_settings(node_class=nc))[0]
    assert it.capacity["ephemeral-storage"] == q("20Gi")
    (device,) = block_devices_of(nc.spec.block_device_mappings, nc.resolved_ami_family())
    assert device["DeviceName"] == mapping["deviceName"]
    assert device["Ebs"]["SnapshotId"] == "snap-xxxxxxxx"
    assert device["Ebs"]["VolumeInitializationRate"] == 100


def launched_metadata_options(
    provider: AwsCloudProvider, recorder: CallRecorder, **spec: Any
) -> list[dict[str, Any]]:
    provider.create(nodeclaim(), node_class(**spec))
    templates = recorder.calls_of("ec2:CreateLaunchTemplate")
    assert templates
    return [t["LaunchTemplateData"]["MetadataOptions"] for t in templates]


def test_metadata_options_default(provider: AwsCloudProvider, recorder: CallRecorder) -> None:
    """Metadata Options: "should default metadata options on generated launch template"."""
    for options in launched_metadata_options(provider, recorder):
        assert options["HttpEndpoint"] == "enabled"
        assert options["HttpProtocolIpv6"] == "disabled"
        assert options["HttpPutResponseHopLimit"] == 1
        assert options["HttpTokens"] == "required"


def test_metadata_options_from_the_node_class(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """Metadata Options: "should set metadata options on generated launch template from
    nodePool configuration"."""
    for options in launched_metadata_options(provider, recorder, metadataOptions={
            "httpEndpoint": "disabled", "httpProtocolIPv6": "enabled",
            "httpPutResponseHopLimit": 1, "httpTokens": "optional"}):
        assert options["HttpEndpoint"] == "disabled"
        assert options["HttpProtocolIpv6"] == "enabled"
        assert options["HttpPutResponseHopLimit"] == 1
        assert options["HttpTokens"] == "optional"


# --- Refreshes of DescribeInstanceTypes and DescribeInstanceTypeOfferings ---------------------


def test_changed_instance_type_info_changes_the_types(
    provider: AwsCloudProvider, clients: AwsClients, clock: FakeClock
) -> None:
    """Provider Cache: "updates to the instanceTypeInfo should result in a different set of
    instance types": unchanged until the five-minute refresh, then one type fewer."""
    first = provider.get_instance_types(node_class())
    clock.advance(DESCRIBE_CACHE_SECONDS + 1)
    assert identical_lists(provider.get_instance_types(node_class()), first)
    dropped: list[str] = []

    def drop_one(parsed: dict[str, Any], **_: Any) -> None:
        # One the catalog lists (an AL2023 catalog has no a1 type to drop).
        listed = [i for i, t in enumerate(parsed.get("InstanceTypes", []))
                  if not t["InstanceType"].startswith("a1.")]
        if not dropped and listed:
            dropped.append(parsed["InstanceTypes"].pop(listed[0])["InstanceType"])

    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypes", drop_one)
    clock.advance(DESCRIBE_CACHE_SECONDS + 1)
    third = provider.get_instance_types(node_class())
    assert third != first
    assert dropped and dropped[0] not in {it.name for it in third}


def test_changed_offering_info_changes_the_types(
    provider: AwsCloudProvider, clients: AwsClients, clock: FakeClock
) -> None:
    """Provider Cache: "updates to the instanceTypeOfferingInfo should result in a different
    set of instance types" (Karpenter adds an offering; here one is taken away)."""
    first = provider.get_instance_types(node_class())
    clock.advance(DESCRIBE_CACHE_SECONDS + 1)
    assert identical_lists(provider.get_instance_types(node_class()), first)

    def drop_m5_xlarge_in_c(parsed: dict[str, Any], **_: Any) -> None:
        parsed["InstanceTypeOfferings"] = [
            o for o in parsed.get("InstanceTypeOfferings", [])
            if (o["InstanceType"], o["Location"]) != ("m5.xlarge", "us-west-2c")]

    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypeOfferings",
                                     drop_m5_xlarge_in_c)
    clock.advance(DESCRIBE_CACHE_SECONDS + 1)
    third = provider.get_instance_types(node_class())
    assert third != first
    assert "us-west-2c" not in of(third, "m5.xlarge").zones()


def test_spot_launches_where_zonal_availability_exists() -> None:
    """CapacityType: "should succeed to launch spot instance when zonal availability
    exists"."""
    result = provisioned([pod_manifest("pod")], requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}])
    assert placed(result) == {"pod": "m5.large"}
    assert [claim.nodepool for claim in result.nodeclaims] == ["default"]


def test_spot_cannot_launch_in_a_zone_without_a_spot_price(
    clients: AwsClients, world: object, clock: FakeClock
) -> None:
    """CapacityType: "should fail to launch capacity when there is no zonal availability for
    spot": the spot price history lists m5.large in us-west-2a only, so with live prices its
    spot offerings elsewhere are unavailable (a pod needing spot m5.large in us-west-2b
    cannot be placed)."""
    fake = FakeEC2.attach(clients.ec2)
    try:
        fake.respond("DescribeSpotPriceHistory", {"SpotPriceHistory": [{
            "AvailabilityZone": "us-west-2a", "InstanceType": "m5.large",
            "SpotPrice": "0.004", "Timestamp": datetime.now(UTC)}]})
        live = AwsCloudProvider(clients, CLUSTER, clock=clock)
        m5 = of(live.get_instance_types(node_class()), "m5.large")
    finally:
        fake.detach()
    spot = {o.zone: o.available for o in m5.offerings if o.capacity_type == "spot"}
    # us-west-2d has no subnet: listed, unavailable, as Karpenter lists every zone.
    assert spot == {"us-west-2a": True, "us-west-2b": False, "us-west-2c": False,
                    "us-west-2d": False}
    assert all(o.available for o in m5.offerings
               if o.capacity_type == "on-demand" and not o.no_subnet)


A1_MEDIUM = {
    "InstanceType": "a1.medium", "SupportedUsageClasses": ["on-demand", "spot"],
    "ProcessorInfo": {"SupportedArchitectures": ["arm64"]},
    "VCpuInfo": {"DefaultCores": 1, "DefaultVCpus": 1}, "MemoryInfo": {"SizeInMiB": 2048},
    "NetworkInfo": {"Ipv4AddressesPerInterface": 4, "DefaultNetworkCardIndex": 0,
                    "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 2}]},
}


def test_a1_is_available_with_bottlerocket() -> None:
    """AMI Compatibility: DescribeTable "should mark availability of a1 instance type
    offerings based on AMI", Entry "when AMI is BottleRocket"."""
    nc = node_class(amiSelectorTerms=[{"alias": "bottlerocket@latest"}])
    (a1,) = build_catalog([A1_MEDIUM], [{"InstanceType": "a1.medium", "Location": z}
                                        for z in ("us-west-2a", "us-west-2b")],
                          REGION, settings=node_settings(node_class=nc))
    assert a1.offerings and all(o.available for o in a1.offerings)


# --- Capacity blocks ----------------------------------------------------------------------

BLOCK_START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("state", "end"), [
    ("active", BLOCK_START + timedelta(hours=2)),
    ("expiring", BLOCK_START + timedelta(minutes=39)),
], ids=["when the capacity block is active", "when the capacity block is expiring"])
def test_an_offering_for_a_capacity_block(state: str, end: datetime) -> None:
    """Capacity Blocks: DescribeTable "should create an offering for a capacity block", each
    Entry (a block is expiring from 40 minutes before its end)."""
    block = Reservation(id="cr-123", instance_type="c6g.large", zone=ZONE, owner_id="",
                        match_criteria="targeted", reservation_type="capacity-block",
                        available_count=1, end_time=end)
    counts = Availability()
    counts.sync([block])
    catalog = with_reserved_offerings(list(built_all(["c6g.large"]).values()), [block], counts,
                                      BLOCK_START)
    (c6g,) = catalog
    (reserved,) = [o for o in c6g.offerings if o.capacity_type == "reserved"]
    assert reserved.zone == ZONE
    assert reserved.reservation_type == "capacity-block"
    assert reserved.reservation_id == "cr-123"
    assert reserved.available == (state != "expiring")
    assert reserved.reservation_capacity == 1


# --- Metrics ------------------------------------------------------------------------------


def published_offerings(provider: AwsCloudProvider) -> list[InstanceType]:
    """The offering metrics controller's pass over a NodePool of the world's node class."""
    return publish(provider, node_class())


def test_vcpu_metrics(provider: AwsCloudProvider) -> None:
    """Metrics: "should expose vcpu metrics for instance types"."""
    types = published_offerings(provider)
    assert types
    cores = samples_by_type("karpenter_cloudprovider_instance_type_cpu_cores")
    for it in types:
        assert cores.get(it.name, 0) > 0, it.name


def test_memory_metrics(provider: AwsCloudProvider) -> None:
    """Metrics: "should expose memory metrics for instance types"."""
    types = published_offerings(provider)
    assert types
    memory = samples_by_type("karpenter_cloudprovider_instance_type_memory_bytes")
    for it in types:
        # Karpenter's raw SizeInMiB x 2^20 (metrics.go), not the capacity less the VM overhead.
        mib = int(it.labels["karpenter.k8s.aws/instance-memory"])
        assert memory.get(it.name, 0) == mib * 2**20 > it.capacity["memory"] / 1000, it.name


def samples_by_type(metric: str) -> dict[str, float]:
    """The metric's value per instance_type label, read in one collection of the registry
    (one get_sample_value per type would collect it again a thousand times)."""
    return {sample.labels["instance_type"]: sample.value
            for sample in samples(metric)
            if "instance_type" in sample.labels}
