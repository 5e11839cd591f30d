"""The offline EC2 data set: the DescribeInstanceTypes and per-zone offerings shipped in the
package (`instance_data`, generated from moto's data set by tools/generate_instance_data.py).

Parsed files and built catalogs are cached for the life of the process: the CLI builds one
catalog per call and tests build many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodewright.scheduling import instance_data
from nodewright.scheduling.allocatable import NodeSettings
from nodewright.scheduling.catalog import InstanceType, UnavailableOfferings, build_catalog
from nodewright.scheduling.pricing import OfflinePriceSource, PriceSource

DEFAULT_ZONE_COUNT = 3
_CACHED_CATALOGS = 16
# Built catalogs by (region, zones, node settings); instance types are shared, so read-only.
_CATALOGS: dict[tuple[object, ...], tuple[InstanceType, ...]] = {}


def build_offline_catalog(
    region: str,
    zones: Sequence[str] | None,
    settings: NodeSettings,
    prices: PriceSource | None,
    unavailable: UnavailableOfferings | None,
) -> list[InstanceType]:
    chosen = resolve_zones(region, zones)
    if prices is not None or unavailable is not None:
        return _build(region, chosen, settings, prices, unavailable)
    key = (region, chosen, settings.cache_key())
    if key not in _CATALOGS:
        if len(_CATALOGS) >= _CACHED_CATALOGS:
            _CATALOGS.pop(next(iter(_CATALOGS)))
        _CATALOGS[key] = tuple(_build(region, chosen, settings, None, None))
    return list(_CATALOGS[key])


def regions() -> list[str]:
    """Regions the bundled data has offerings for."""
    return instance_data.regions()


def region_zones(region: str) -> list[str]:
    """Zone names of a region that have at least one offering, sorted."""
    return sorted({str(entry["Location"]) for entry in offerings(region)})


def resolve_zones(region: str, zones: Sequence[str] | None) -> tuple[str, ...]:
    """Full zone names: "a" -> "us-east-1a"; default the region's first three zones.

    ValueError names the zone and the region's zones when a zone is not in the region.
    """
    known = region_zones(region)
    if zones is None:
        return tuple(known[:DEFAULT_ZONE_COUNT])
    resolved: list[str] = []
    for zone in zones:
        name = zone.strip()
        full = name if name.startswith(region) else f"{region}{name}"
        if full not in known:
            raise ValueError(
                f"zone {name!r} is not a zone of {region} (known: {', '.join(known)})"
            )
        if full not in resolved:
            resolved.append(full)
    return tuple(resolved)


def zone_ids(region: str) -> dict[str, str]:
    """Zone name -> zone id, as moto assigns them (use1-az6 for us-east-1a, ...)."""
    return instance_data.zone_ids(region)


def instance_types() -> list[dict[str, Any]]:
    """Every DescribeInstanceTypes entry in the data set."""
    return instance_data.instance_types()


def offerings(region: str) -> list[dict[str, Any]]:
    """DescribeInstanceTypeOfferings entries (LocationType availability-zone) of a region."""
    return instance_data.offerings(region)


def _build(
    region: str,
    zones: tuple[str, ...],
    settings: NodeSettings,
    prices: PriceSource | None,
    unavailable: UnavailableOfferings | None,
) -> list[InstanceType]:
    wanted = {entry["InstanceType"] for entry in offerings(region)}
    return build_catalog(
        [info for info in instance_types() if info["InstanceType"] in wanted],
        offerings(region),
        region,
        prices if prices is not None else OfflinePriceSource(),
        settings=settings,
        zone_ids=zone_ids(region),
        zones=zones,
        unavailable=unavailable,
    )
