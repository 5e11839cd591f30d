"""Instance type labels and capacity as Karpenter v1.14.1 computes them from the same data.

Karpenter's AWS provider (aws/karpenter-provider-aws v1.14.1) builds each instance type in
pkg/providers/instancetype/types.go: computeRequirements (lines 163-311) for the labels,
computeCapacity (lines 332-350) for the capacity. These stories pin the corners the ported
suite does not reach: the pod-eni table of that release, and how a label is written when
EC2's answer lacks a field or has a clock speed on a half.
"""

from __future__ import annotations

import copy
from typing import Any

from nodewright.scheduling import offline_data
from nodewright.scheduling.catalog import InstanceType, build_catalog, offline_catalog
from nodewright.scheduling.pricing import OfflinePriceSource

POD_ENI = "vpc.amazonaws.com/pod-eni"
CPU_MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
CLOCK_SPEED = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
EBS_BANDWIDTH = "karpenter.k8s.aws/instance-ebs-bandwidth"


def entry(name: str) -> dict[str, Any]:
    """The DescribeInstanceTypes entry of `name` in moto's data, a copy to change."""
    return copy.deepcopy(next(info for info in offline_data.instance_types()
                              if info["InstanceType"] == name))


def built(info: dict[str, Any]) -> InstanceType:
    """One instance type built from one (possibly changed) DescribeInstanceTypes entry."""
    offerings = [{"InstanceType": info["InstanceType"], "LocationType": "availability-zone",
                  "Location": "us-east-1a"}]
    (instance_type,) = build_catalog([info], offerings, "us-east-1", OfflinePriceSource())
    return instance_type


def test_pod_enis_are_offered_on_the_trunking_types_of_karpenters_release() -> None:
    """awsPodENI (types.go lines 407-414) reads the VPC limits table compiled into v1.14.1
    (zz_generated.vpclimits.go): a type missing from it (c9g.large, hpc7g.8xlarge,
    m8gn.metal-24xl: newer than the table) or listed as not trunking-compatible
    (i4i.large) offers no pod-eni, so a pod asking for one never lands there; m5.large
    offers its 9 branch interfaces."""
    catalog = {it.name: it for it in offline_catalog("us-east-1")}
    for name in ("c9g.large", "hpc7g.8xlarge", "m8gn.metal-24xl", "i4i.large"):
        assert POD_ENI not in catalog[name].capacity, name
    assert catalog["m5.large"].capacity[POD_ENI] == 9 * 1000
    assert catalog["c6g.xlarge"].capacity[POD_ENI] == 18 * 1000


def test_a_clock_speed_on_a_half_megahertz_rounds_away_from_zero() -> None:
    """computeRequirements (types.go lines 299-303) labels the sustained clock speed with
    Go's math.Round(GHz * 1000), which takes halves away from zero: 2.0625 GHz is 2062.5
    MHz, labelled 2063 (Python's round() would say 2062); 3.1 GHz stays 3100."""
    odd = entry("m5.large")
    odd["ProcessorInfo"]["SustainedClockSpeedInGhz"] = 2.0625
    assert built(odd).labels[CLOCK_SPEED] == "2063"
    assert built(entry("m5.large")).labels[CLOCK_SPEED] == "3100"


def test_a_processor_without_a_manufacturer_is_labelled_with_an_empty_one() -> None:
    """computeRequirements (types.go lines 295-298) sets instance-cpu-manufacturer whenever
    EC2 describes the processor, to lowerKabobCase(aws.ToString(nil)) = "" when it names
    no manufacturer: the node carries the label, empty, as it carries an empty hypervisor."""
    unnamed = entry("m5.large")
    del unnamed["ProcessorInfo"]["Manufacturer"]
    assert built(unnamed).labels[CPU_MANUFACTURER] == ""
    assert built(entry("m5.large")).labels[CPU_MANUFACTURER] == "intel"


def test_an_ebs_optimized_type_without_a_maximum_bandwidth_is_labelled_zero() -> None:
    """computeRequirements (types.go lines 304-307) labels instance-ebs-bandwidth for every
    type EBS-optimized by default that has EbsOptimizedInfo, with
    fmt.Sprint(lo.FromPtr(MaximumBandwidthInMbps)): "0" when the maximum is missing. A
    type not optimized by default has no label."""
    unknown = entry("m5.large")
    del unknown["EbsInfo"]["EbsOptimizedInfo"]["MaximumBandwidthInMbps"]
    assert built(unknown).labels[EBS_BANDWIDTH] == "0"
    assert built(entry("m5.large")).labels[EBS_BANDWIDTH] == "4750"
    optional = entry("m5.large")
    optional["EbsInfo"]["EbsOptimizedSupport"] = "supported"
    assert EBS_BANDWIDTH not in built(optional).labels
