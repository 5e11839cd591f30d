"""The instance catalog: labels, offerings and prices, offline and from live-shaped data."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from nodewright.scheduling import offline_data
from nodewright.scheduling.catalog import InstanceType, build_catalog, offline_catalog
from tests.conftest import shared_path
from tests.support.scheduling import available_offerings


def by_name(catalog: list[InstanceType]) -> dict[str, InstanceType]:
    return {instance_type.name: instance_type for instance_type in catalog}


def moto_entry(name: str) -> dict[str, Any]:
    entries = offline_data.instance_types()
    return copy.deepcopy(next(info for info in entries if info["InstanceType"] == name))


class FixedPrices:
    """A price source the way the AWS provider will back it: live prices for some types."""

    def on_demand(self, instance_type: str, region: str) -> float | None:
        return {"m5.large": 0.2}.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return 0.05 if zone.endswith("a") else None


def test_offline_catalog_has_three_zones_and_both_capacity_types_by_default() -> None:
    m5 = by_name(offline_catalog("us-east-1"))["m5.large"]
    assert m5.zones() == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert m5.capacity_types() == ["on-demand", "spot"]
    assert len(m5.offerings) == 6
    on_demand = m5.cheapest_offering(capacity_types={"on-demand"})
    assert on_demand is not None
    assert on_demand.price == 0.096
    assert not on_demand.price_estimated
    assert on_demand.zone_id == "use1-az6"


def test_well_known_labels_of_a_gpu_type() -> None:
    g5 = by_name(offline_catalog("us-east-1"))["g5.xlarge"]
    assert g5.labels["node.kubernetes.io/instance-type"] == "g5.xlarge"
    assert g5.labels["kubernetes.io/arch"] == "amd64"
    assert g5.labels["kubernetes.io/os"] == "linux"
    assert g5.labels["topology.kubernetes.io/region"] == "us-east-1"
    assert g5.labels["karpenter.k8s.aws/instance-category"] == "g"
    assert g5.labels["karpenter.k8s.aws/instance-family"] == "g5"
    assert g5.labels["karpenter.k8s.aws/instance-generation"] == "5"
    assert g5.labels["karpenter.k8s.aws/instance-size"] == "xlarge"
    assert g5.labels["karpenter.k8s.aws/instance-cpu"] == "4"
    assert g5.labels["karpenter.k8s.aws/instance-memory"] == "16384"
    assert g5.labels["karpenter.k8s.aws/instance-gpu-name"] == "a10g"
    assert g5.labels["karpenter.k8s.aws/instance-gpu-manufacturer"] == "nvidia"
    assert g5.labels["karpenter.k8s.aws/instance-gpu-count"] == "1"
    assert g5.labels["karpenter.k8s.aws/instance-local-nvme"] == "250"
    assert "topology.kubernetes.io/zone" not in g5.labels  # zones vary per offering


def test_accelerator_and_graviton_labels() -> None:
    catalog = by_name(offline_catalog("us-east-1"))
    inf1 = catalog["inf1.xlarge"].labels
    assert inf1["karpenter.k8s.aws/instance-accelerator-name"] == "inferentia"
    assert inf1["karpenter.k8s.aws/instance-accelerator-manufacturer"] == "aws"
    assert inf1["karpenter.k8s.aws/instance-accelerator-count"] == "1"
    m6g = catalog["m6g.large"].labels
    assert m6g["kubernetes.io/arch"] == "arm64"
    assert m6g["karpenter.k8s.aws/instance-cpu-manufacturer"] == "aws"


def test_labels_match_karpenters_table_for_the_labels_derived_from_ec2_data() -> None:
    reference = json.loads(
        shared_path("data", "reference", "karpenter-instance-types.json").read_text()
    )["instanceTypes"]
    catalog = by_name(offline_catalog("us-east-1"))
    exact = ("kubernetes.io/arch", "karpenter.k8s.aws/instance-family",
             "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
             "karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-gpu-name",
             "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation")
    for name in sorted(set(catalog) & set(reference)):
        for key in exact:
            assert catalog[name].labels.get(key) == reference[name]["labels"].get(key), (name, key)


def test_zones_can_be_chosen_by_letter_and_unknown_zones_are_refused() -> None:
    m5 = by_name(offline_catalog("us-west-2", zones=["b", "us-west-2c"]))["m5.large"]
    assert m5.zones() == ["us-west-2b", "us-west-2c"]
    with pytest.raises(ValueError, match=r"'z' is not a zone of us-west-2 \(known: us-west-2a"):
        offline_catalog("us-west-2", zones=["z"])
    with pytest.raises(ValueError, match="region 'mars-1' is not in the offline data"):
        offline_catalog("mars-1")


def test_unavailable_offerings_are_kept_but_marked() -> None:
    catalog = by_name(
        offline_catalog("us-east-1", unavailable={("m5.large", "us-east-1a", "spot")})
    )
    m5 = catalog["m5.large"]
    unavailable = [o for o in m5.offerings if not o.available]
    assert [(o.zone, o.capacity_type) for o in unavailable] == [("us-east-1a", "spot")]
    assert len(available_offerings(m5)) == 5
    cheapest = m5.cheapest_offering()
    assert cheapest is not None
    assert cheapest.zone != "us-east-1a" or cheapest.capacity_type != "spot"


def test_live_shaped_responses_build_the_same_kind_of_catalog() -> None:
    response = {"InstanceTypes": [moto_entry("m5.large"), moto_entry("c5.large")]}
    offerings = {
        "InstanceTypeOfferings": [
            {"InstanceType": "m5.large", "LocationType": "availability-zone", "Location": "eu-1a"},
            {"InstanceType": "m5.large", "LocationType": "availability-zone", "Location": "eu-1b"},
        ]
    }
    catalog = build_catalog(
        response, offerings, "eu-1", FixedPrices(),
        zone_ids={"eu-1a": "eu1-az1"},
        unavailable=lambda name, zone, capacity_type: zone == "eu-1b",
    )
    assert [it.name for it in catalog] == ["m5.large"]  # c5.large has no offering
    offers = {(o.zone, o.capacity_type): o for o in catalog[0].offerings}
    assert offers[("eu-1a", "on-demand")].price == 0.2
    assert offers[("eu-1a", "spot")].price == 0.05
    assert not offers[("eu-1a", "spot")].price_estimated
    assert offers[("eu-1b", "spot")].price_estimated  # no live spot price there
    assert offers[("eu-1a", "on-demand")].zone_id == "eu1-az1"
    assert offers[("eu-1b", "on-demand")].zone_id is None
    assert not offers[("eu-1b", "on-demand")].available


def test_bad_live_data_names_the_entry_and_field() -> None:
    broken = moto_entry("m5.large")
    del broken["VCpuInfo"]
    offerings = [{"InstanceType": "m5.large", "Location": "eu-1a"}]
    with pytest.raises(ValueError, match=r"InstanceTypes\[0\]: m5.large: VCpuInfo.DefaultVCpus"):
        build_catalog([broken], offerings, "eu-1")
    with pytest.raises(ValueError, match=r"InstanceTypeOfferings\[0\]: expected InstanceType"):
        build_catalog([moto_entry("m5.large")], [{"Location": "eu-1a"}], "eu-1")


def test_spot_only_and_arm_types_are_kept_and_unknown_architectures_dropped() -> None:
    odd = moto_entry("m5.large")
    odd["InstanceType"] = "x9.large"
    odd["ProcessorInfo"] = {"SupportedArchitectures": ["i386"]}
    spot_only = moto_entry("m6g.large")
    spot_only["SupportedUsageClasses"] = ["spot"]
    offerings = [{"InstanceType": n, "Location": "eu-1a"} for n in ("x9.large", "m6g.large")]
    catalog = build_catalog([odd, spot_only], offerings, "eu-1")
    assert [(it.name, it.capacity_types()) for it in catalog] == [("m6g.large", ["spot"])]


def test_the_offline_catalog_is_cached_per_settings() -> None:
    first = offline_catalog("us-east-1")
    assert offline_catalog("us-east-1")[0] is first[0]
    assert len(first) > 1000
