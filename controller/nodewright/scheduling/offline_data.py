"""The offline EC2 data set: the DescribeInstanceTypes and per-zone offerings moto ships.

Parsed files and built catalogs are cached for the life of the process: the CLI builds one
catalog per call and tests build many.
"""

from __future__ import annotations

import ast
import functools
import gzip
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    folder = _resources().joinpath("instance_type_offerings", "availability-zone")
    return sorted(entry.name.removesuffix(".json.gz") for entry in folder.iterdir())


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
    return dict(_all_zone_ids().get(region, {}))


@functools.cache
def _all_zone_ids() -> dict[str, dict[str, str]]:
    # Importing moto.ec2 costs most of a second, so read moto's zone table from its source:
    # the Zone(region_name=..., name=..., zone_id=...) literals in availability_zones_and_regions.
    source = _moto_root().joinpath("ec2", "models", "availability_zones_and_regions.py")
    result: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Zone":
            fields = {
                keyword.arg: keyword.value.value
                for keyword in node.keywords
                if isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)
            }
            if {"region_name", "name", "zone_id"} <= fields.keys():
                result.setdefault(fields["region_name"], {})[fields["name"]] = fields["zone_id"]
    return result


@functools.cache
def instance_types() -> list[dict[str, Any]]:
    """Every DescribeInstanceTypes entry in the data set."""
    path = _resources().joinpath("instance_types.json.gz")
    data: dict[str, dict[str, Any]] = _read_gzip_json(path)
    return list(data.values())


@functools.cache
def offerings(region: str) -> list[dict[str, Any]]:
    """DescribeInstanceTypeOfferings entries (LocationType availability-zone) of a region."""
    folder = _resources().joinpath("instance_type_offerings", "availability-zone")
    path = folder.joinpath(f"{region}.json.gz")
    if not path.is_file():
        raise ValueError(
            f"region {region!r} is not in the offline data (known: {', '.join(regions())})"
        )
    entries: list[dict[str, Any]] = _read_gzip_json(path)
    return entries


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


def _resources() -> Path:
    return _moto_root().joinpath("ec2", "resources")


@functools.cache
def _moto_root() -> Path:
    # find_spec locates the installed package without importing moto.ec2 (slow to import).
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the offline catalog needs the 'moto' package (pip install moto[ec2])")
    return Path(next(iter(spec.submodule_search_locations)))


def _read_gzip_json(path: Path) -> Any:
    with path.open("rb") as raw, gzip.open(raw) as unzipped:
        return json.load(unzipped)
