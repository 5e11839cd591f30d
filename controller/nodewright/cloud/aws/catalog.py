"""The live instance catalog: DescribeInstanceTypes and DescribeInstanceTypeOfferings (read
again every 12 hours, as Karpenter's instance type controller refreshes them), prices, and the
unavailable-offerings cache, fed through the scheduling engine's `build_catalog`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.scheduling.allocatable import ProviderSettings, node_settings
from nodewright.scheduling.catalog import InstanceType, build_catalog
from nodewright.scheduling.pricing import PriceSource

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import EC2NodeClass

DESCRIBE_CACHE_SECONDS: Final = 12 * 3600.0
# Karpenter's DescribeInstanceTypes filters: HVM types of the architectures Kubernetes runs.
INSTANCE_TYPE_FILTERS: Final = (
    {"Name": "supported-virtualization-type", "Values": ["hvm"]},
    {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
)


@dataclass
class LiveCatalog:
    ec2: EC2Client
    region: str
    prices: PriceSource
    unavailable: UnavailableOfferings
    clock: Seconds = system_clock
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    _described: TTLCache[str, list[Mapping[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self._described = TTLCache(DESCRIBE_CACHE_SECONDS, self.clock)

    def instance_types(
        self,
        node_class: EC2NodeClass | None,
        zones: Collection[str] | None = None,
        zone_ids: Mapping[str, str] | None = None,
        placement_strategy: str | None = None,
        placement_group: str | None = None,
    ) -> list[InstanceType]:
        """`zones`: the zones of the node class's subnets. As Karpenter, every zone EC2 offers
        a type in is listed, unavailable (but priced) where there is no subnet; the type's
        zones stay the subnets' (`InstanceType.zones`). `placement_strategy`: the strategy
        of the node class's placement group, which keeps the types that support it;
        capacity errors inside `placement_group` count for it too."""
        settings = replace(node_settings(None, node_class, self.provider),
                           placement_strategy=placement_strategy)
        return build_catalog(
            self._instance_type_data(),
            self._offering_data(),
            self.region,
            self.prices,
            settings=settings,
            subnet_zones=zones,
            zone_ids=zone_ids,
            unavailable=lambda name, zone, capacity_type: self.unavailable.is_unavailable(
                name, zone, capacity_type, placement_group),
        )

    def _instance_type_data(self) -> list[Mapping[str, Any]]:
        cached = self._described.get("types")
        if cached is not None:
            return cached
        found: list[Mapping[str, Any]] = []
        with aws_call("ec2:DescribeInstanceTypes", f"region {self.region}"):
            pages = self.ec2.get_paginator("describe_instance_types").paginate(
                Filters=[dict(f) for f in INSTANCE_TYPE_FILTERS],  # type: ignore[misc]
                PaginationConfig={"PageSize": 100})
            for page in pages:
                found.extend(page.get("InstanceTypes", []))
        self._described.put("types", found)
        return found

    def _offering_data(self) -> list[Mapping[str, Any]]:
        cached = self._described.get("offerings")
        if cached is not None:
            return cached
        found: list[Mapping[str, Any]] = []
        with aws_call("ec2:DescribeInstanceTypeOfferings", f"region {self.region}"):
            paginator = self.ec2.get_paginator("describe_instance_type_offerings")
            for page in paginator.paginate(LocationType="availability-zone"):
                found.extend(page.get("InstanceTypeOfferings", []))
        self._described.put("offerings", found)
        return found
