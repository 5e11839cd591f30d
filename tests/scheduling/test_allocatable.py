"""Allocatable resources, computed the way Karpenter does, checked against its published table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.api.quantity import format_resources, parse_quantity
from nodewright.scheduling import offline_data
from nodewright.scheduling.allocatable import NodeSettings, node_settings
from nodewright.scheduling.catalog import InstanceType, build_catalog, offline_catalog
from tests.conftest import shared_path

# moto's data for these types lists fewer interfaces on the default network card (8 and 12)
# than the data Karpenter's table was generated from (15 and 24 on one card). We follow
# Karpenter's rule (default card only), so pods and the memory reserved per pod differ.
DATA_DIFFERS = frozenset({"i7ie.48xlarge", "i7ie.metal-48xl", "i8ge.48xlarge", "i8ge.metal-48xl"})
COMPARED = ("cpu", "memory", "pods")


def every_moto_type(settings: NodeSettings | None = None) -> dict[str, InstanceType]:
    """Every instance type in moto's data set, offered in one made-up zone."""
    infos = offline_data.instance_types()
    offerings = [{"InstanceType": info["InstanceType"], "Location": "zone-a"} for info in infos]
    catalog = build_catalog(infos, offerings, "us-east-1", settings=settings)
    return {instance_type.name: instance_type for instance_type in catalog}


def reference_types() -> dict[str, Any]:
    path = shared_path("data", "reference", "karpenter-instance-types.json")
    types: dict[str, Any] = json.loads(path.read_text())["instanceTypes"]
    return types


def allocatable_of(name: str, **kubelet: Any) -> dict[str, str]:
    config = KubeletConfiguration.model_validate(kubelet) if kubelet else None
    catalog = offline_catalog("us-east-1", kubelet=config)
    return format_resources(next(it for it in catalog if it.name == name).allocatable)


def test_allocatable_matches_karpenters_table_for_every_shared_type() -> None:
    reference = reference_types()
    ours = every_moto_type()
    shared = sorted(set(ours) & set(reference))
    mismatched = sorted(
        name
        for name in shared
        for expected in [reference[name]["resources"]]
        if any(
            ours[name].allocatable[resource] != parse_quantity(expected[resource])
            for resource in COMPARED
        )
    )
    rate = 1 - len(mismatched) / len(shared)
    print(f"allocatable cpu/memory/pods match Karpenter for {len(shared) - len(mismatched)}"
          f" of {len(shared)} instance types ({rate:.2%}); differing: {mismatched}")
    assert len(shared) > 1300
    assert set(mismatched) <= DATA_DIFFERS
    assert rate >= 1 - len(DATA_DIFFERS) / len(shared)


def test_workshop_instance_types() -> None:
    assert allocatable_of("m5.large") == {
        "cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": "17Gi", "pods": "29",
        "vpc.amazonaws.com/pod-eni": "9",
    }
    assert allocatable_of("c5.large")["memory"] == "3114Mi"
    assert allocatable_of("c5.large")["cpu"] == "1930m"
    assert allocatable_of("c5.large")["pods"] == "29"
    assert allocatable_of("r5.large")["memory"] == "14481Mi"


def test_graviton_loses_64_mib_and_gpus_show_up_as_capacity() -> None:
    catalog = {it.name: it for it in offline_catalog("us-east-1")}
    m6g, m6i = catalog["m6g.large"], catalog["m6i.large"]
    assert m6i.capacity["memory"] - m6g.capacity["memory"] == 64 * 2**20 * 1000 - (
        # the 7.5 % VM overhead is taken after the 64 MiB, so it shrinks by 5 MiB too
        5 * 2**20 * 1000
    )
    assert format_resources(catalog["g5.xlarge"].allocatable)["nvidia.com/gpu"] == "1"
    assert "nvidia.com/gpu" not in catalog["m5.large"].capacity


def test_max_pods_override_changes_pods_but_not_the_memory_reserved_per_pod() -> None:
    # AL2023 reserves memory for the ENI-limited pod count whatever maxPods says.
    assert allocatable_of("m5.large", maxPods=110) == {
        "cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": "17Gi", "pods": "110",
        "vpc.amazonaws.com/pod-eni": "9",
    }


def test_pods_per_core_caps_max_pods() -> None:
    assert allocatable_of("m5.large", podsPerCore=4)["pods"] == "8"
    assert allocatable_of("m5.large", podsPerCore=100)["pods"] == "29"


def test_kube_and_system_reserved_override_the_defaults() -> None:
    allocatable = allocatable_of(
        "m5.large",
        kubeReserved={"cpu": "200m", "memory": "1Gi"},
        systemReserved={"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
    )
    assert allocatable["cpu"] == "1700m"
    assert allocatable["memory"] == f"{7577 - 1024 - 100 - 100}Mi"
    assert allocatable["ephemeral-storage"] == "16Gi"


def test_eviction_hard_accepts_quantities_and_percentages() -> None:
    assert allocatable_of("m5.large", evictionHard={"memory.available": "500Mi"})["memory"] == (
        f"{7577 - 574 - 500}Mi"
    )
    # 5 % of 7577 MiB, rounded up to the byte
    five_percent = allocatable_of("m5.large", evictionHard={"memory.available": "5%"})["memory"]
    assert parse_quantity(five_percent) == (7577 - 574) * 2**20 * 1000 - (
        -(-7577 * 2**20 * 5 // 100) * 1000
    )
    # 100 % means "disabled", and 10 % of nodefs is what the default already is
    assert allocatable_of("m5.large", evictionHard={"memory.available": "100%"})["memory"] == (
        f"{7577 - 574}Mi"
    )
    assert allocatable_of("m5.large", evictionHard={"nodefs.available": "10%"})[
        "ephemeral-storage"
    ] == "17Gi"


def node_class(spec: dict[str, Any]) -> EC2NodeClass:
    base = {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
    }
    return EC2NodeClass.model_validate(
        {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
         "metadata": {"name": "default"}, "spec": base | spec}
    )


def test_root_volume_size_becomes_ephemeral_storage() -> None:
    settings = node_settings(node_class=node_class({"blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}
    ]}))
    m5 = every_moto_type(settings)["m5.large"]
    assert format_resources(m5.allocatable)["ephemeral-storage"] == "89Gi"  # 100 - 1 - 10


def test_bottlerocket_reserves_memory_for_max_pods_and_ignores_pods_per_core() -> None:
    bottlerocket = node_class({
        "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
        "kubelet": {"maxPods": 110, "podsPerCore": 2},
    })
    m5 = every_moto_type(node_settings(node_class=bottlerocket))["m5.large"]
    allocatable = format_resources(m5.allocatable)
    assert allocatable["pods"] == "110"
    assert allocatable["memory"] == f"{7577 - (11 * 110 + 255) - 100}Mi"


def test_windows_uses_kubelets_default_of_110_pods_and_only_amd64_types() -> None:
    windows = node_class({"amiSelectorTerms": [{"alias": "windows2022@latest"}]})
    catalog = every_moto_type(node_settings(node_class=windows))
    assert format_resources(catalog["m5.large"].allocatable)["pods"] == "110"
    assert catalog["m5.large"].labels["kubernetes.io/os"] == "windows"
    assert "m6g.large" not in catalog


def test_a_bad_kubelet_value_names_the_field() -> None:
    config = KubeletConfiguration.model_construct(eviction_hard={"memory.available": "lots%"})
    with pytest.raises(ValueError, match=r"spec\.kubelet\.evictionHard\.memory\.available"):
        node_settings(config)


def test_reservations_and_max_pods_of_a_node_class_reach_allocatable() -> None:
    plain = every_moto_type(node_settings(node_class=node_class({})))["m5.large"]
    tuned = every_moto_type(node_settings(node_class=node_class({"kubelet": {
        "maxPods": 20, "cpuCFSQuota": True,
        "kubeReserved": {"cpu": "500m", "memory": "1Gi"}, "systemReserved": {"memory": "512Mi"},
        "evictionHard": {"memory.available": "1Gi"},
    }})))["m5.large"]
    assert format_resources(tuned.allocatable)["pods"] == "20"
    assert format_resources(tuned.allocatable)["cpu"] == "1500m"
    assert format_resources(tuned.allocatable)["memory"] == f"{7577 - 1024 - 512 - 1024}Mi"
    assert tuned.allocatable["memory"] < plain.allocatable["memory"]


def test_a_mistyped_kubelet_field_of_a_node_class_names_it() -> None:
    with pytest.raises(ValueError, match=r"kubelet\.podsPerCore"):
        node_settings(node_class=node_class({"kubelet": {"podsPerCore": "four"}}))
