"""Write the offline EC2 data the package ships: instance types, per-zone offerings and
zone ids, read from the data set moto bundles (DescribeInstanceTypes and
DescribeInstanceTypeOfferings as recorded by moto's maintainers).

    python tools/generate_instance_data.py            # rewrite the file
    python tools/generate_instance_data.py --check    # exit 1 if it is out of date

moto is a test dependency (requirements-dev.txt), never a runtime one: the controller's
image and `pip install nodewright` read only the generated file,
controller/nodewright/scheduling/data/instance-types.json.gz. Run this after upgrading
moto to pick up new instance types.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import importlib.metadata
import importlib.util
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OUTPUT = (Path(__file__).resolve().parents[1] / "controller" / "nodewright" / "scheduling"
          / "data" / "instance-types.json.gz")


def moto_root() -> Path:
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("moto is not installed (pip install -r requirements-dev.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def read_gzip_json(path: Path) -> Any:
    with gzip.open(path) as unzipped:
        return json.load(unzipped)


def zone_ids(root: Path) -> dict[str, dict[str, str]]:
    """moto's Zone(region_name=..., name=..., zone_id=...) literals, read from its source
    (importing moto.ec2 is slow and pulls half of moto in)."""
    source = root / "ec2" / "models" / "availability_zones_and_regions.py"
    found: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Zone":
            fields = {k.arg: k.value.value for k in node.keywords
                      if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
            if {"region_name", "name", "zone_id"} <= fields.keys():
                found.setdefault(fields["region_name"], {})[fields["name"]] = fields["zone_id"]
    return {region: dict(sorted(zones.items())) for region, zones in sorted(found.items())}


def offerings(root: Path) -> dict[str, dict[str, list[str]]]:
    """region -> zone -> instance types offered there."""
    folder = root / "ec2" / "resources" / "instance_type_offerings" / "availability-zone"
    result: dict[str, dict[str, list[str]]] = {}
    for path in sorted(folder.glob("*.json.gz")):
        by_zone: dict[str, set[str]] = {}
        for entry in read_gzip_json(path):
            by_zone.setdefault(str(entry["Location"]), set()).add(str(entry["InstanceType"]))
        region = path.name.removesuffix(".json.gz")
        result[region] = {zone: sorted(types) for zone, types in sorted(by_zone.items())}
    return result


def build() -> dict[str, Any]:
    root = moto_root()
    types = read_gzip_json(root / "ec2" / "resources" / "instance_types.json.gz")
    return {
        "source": f"moto {importlib.metadata.version('moto')}: ec2/resources "
                  "(instance_types.json.gz, instance_type_offerings/availability-zone) and "
                  "ec2/models/availability_zones_and_regions.py",
        "instanceTypes": [types[name] for name in sorted(types)],
        "offerings": offerings(root),
        "zoneIds": zone_ids(root),
    }


def encode(data: dict[str, Any], generated: str) -> bytes:
    body = json.dumps({"generated": generated, **data}, sort_keys=True,
                      separators=(",", ":")).encode()
    # mtime=0: the same data always gives the same bytes.
    return gzip.compress(body, compresslevel=9, mtime=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the shipped file differs from moto's data")
    args = parser.parse_args()
    data = build()
    if args.check:
        shipped = read_gzip_json(OUTPUT) if OUTPUT.exists() else {}
        current = {key: value for key, value in shipped.items() if key != "generated"}
        if current != json.loads(json.dumps(data)):
            print(f"{OUTPUT} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_bytes(encode(data, datetime.now(UTC).strftime("%Y-%m-%d")))
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size // 1024} KiB, "
          f"{len(data['instanceTypes'])} instance types, {len(data['offerings'])} regions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
