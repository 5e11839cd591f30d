"""The offline EC2 data shipped in the package: DescribeInstanceTypes entries, the instance
types each zone offers, and zone ids, for every region.

`tools/generate_instance_data.py` writes `data/instance-types.json.gz` from the data set
moto bundles (its source and date are recorded in the file), so neither the image nor
`pip install nodewright` needs moto. Read once per process.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).resolve().parent / "data" / "instance-types.json.gz"


@functools.cache
def _data() -> dict[str, Any]:
    try:
        with gzip.open(DATA_FILE) as unzipped:
            loaded: dict[str, Any] = json.load(unzipped)
    except FileNotFoundError:
        raise RuntimeError(
            f"{DATA_FILE} is missing: run tools/generate_instance_data.py") from None
    return loaded


def source() -> str:
    """Where the data came from, and when it was generated."""
    data = _data()
    return f"{data['source']} (generated {data['generated']})"


def instance_types() -> list[dict[str, Any]]:
    """Every DescribeInstanceTypes entry (the dict shape boto3 returns)."""
    entries: list[dict[str, Any]] = _data()["instanceTypes"]
    return entries


def regions() -> list[str]:
    return sorted(_data()["offerings"])


@functools.cache
def offerings(region: str) -> list[dict[str, Any]]:
    """DescribeInstanceTypeOfferings entries (LocationType availability-zone) of a region,
    shared: read-only. ValueError names the region and the known ones."""
    by_zone = _data()["offerings"].get(region)
    if by_zone is None:
        raise ValueError(
            f"region {region!r} is not in the offline data (known: {', '.join(regions())})")
    return [
        {"InstanceType": name, "LocationType": "availability-zone", "Location": zone}
        for zone, names in by_zone.items() for name in names
    ]


def zone_ids(region: str) -> dict[str, str]:
    """Zone name -> zone id (use1-az6 for us-east-1a, ...)."""
    return dict(_data()["zoneIds"].get(region, {}))
