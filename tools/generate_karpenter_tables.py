"""Write the instance-type facts Nodewright takes from Karpenter's generated tables.

Karpenter's AWS provider ships three generated tables that DescribeInstanceTypes does not
give: the network bandwidth of each type (labels), the VPC limits (Windows private IPv4
addresses) and the static on-demand prices it starts from (and keeps in isolated VPCs and
GovCloud). The facts carry over, so this reads those Go files at a release tag and writes
them as data, controller/nodewright/scheduling/data/karpenter-tables.json.gz:

    python tools/generate_karpenter_tables.py            # rewrite the file
    python tools/generate_karpenter_tables.py --check    # exit 1 if it is out of date

It needs a clone of aws/karpenter-provider-aws (--repo, a git directory); the controller
only reads the generated file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

OUTPUT = (Path(__file__).resolve().parents[1] / "controller" / "nodewright" / "scheduling"
          / "data" / "karpenter-tables.json.gz")
DEFAULT_REPO = Path("/work/.mirror/aws+karpenter-provider-aws/repo")
DEFAULT_TAG = "v1.14.1"
BANDWIDTH = "pkg/providers/instancetype/zz_generated.bandwidth.go"
VPC_LIMITS = "pkg/providers/instancetype/zz_generated.vpclimits.go"
PRICES = (
    "pkg/providers/pricing/zz_generated.pricing_aws.go",
    "pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go",
    "pkg/providers/pricing/zz_generated.pricing_aws_cn.go",
)

_ENTRY = re.compile(r'"([a-z0-9.-]+)":\s*([0-9.]+)')
_REGION = re.compile(r'^\t"([a-z0-9-]+)": \{$')
_LIMIT_TYPE = re.compile(r'^\t"([a-z0-9.-]+)": \{$')
_IPV4 = re.compile(r"^\t\tIPv4PerInterface:\s*(\d+),")


def show(repo: Path, tag: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", "show", f"{tag}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def code_lines(text: str) -> list[str]:
    """The lines outside comments (the bandwidth table comments out types it lacks)."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("//")]


def bandwidth(text: str) -> dict[str, int]:
    return {name: int(value) for line in code_lines(text) for name, value in _ENTRY.findall(line)}


def ipv4_per_interface(text: str) -> dict[str, int]:
    found: dict[str, int] = {}
    current: str | None = None
    for line in text.splitlines():
        started = _LIMIT_TYPE.match(line)
        if started:
            current = started[1]
            continue
        limit = _IPV4.match(line)
        if limit and current is not None:
            found[current] = int(limit[1])
    return found


def prices(texts: list[str]) -> dict[str, dict[str, float]]:
    regions: dict[str, dict[str, float]] = {}
    for text in texts:
        region: str | None = None
        for line in code_lines(text):
            started = _REGION.match(line)
            if started:
                region = started[1]
                continue
            if region is not None:
                for name, value in _ENTRY.findall(line):
                    regions.setdefault(region, {})[name] = float(value)
    return regions


def tables(repo: Path, tag: str) -> dict[str, Any]:
    commit = subprocess.run(["git", f"--git-dir={repo}", "rev-parse", f"{tag}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    return {
        "source": f"aws/karpenter-provider-aws {tag} ({commit}): {BANDWIDTH} "
                  f"(InstanceTypeBandwidthMegabits), {VPC_LIMITS} (Limits[*].IPv4PerInterface), "
                  f"{', '.join(PRICES)} (InitialOnDemandPrices*)",
        "networkBandwidthMegabits": dict(sorted(bandwidth(show(repo, tag, BANDWIDTH)).items())),
        "ipv4PerInterface": dict(sorted(ipv4_per_interface(show(repo, tag, VPC_LIMITS)).items())),
        "onDemandPrices": {
            region: dict(sorted(table.items()))
            for region, table in sorted(prices([show(repo, tag, p) for p in PRICES]).items())
        },
    }


def encode(data: dict[str, Any]) -> bytes:
    text = json.dumps(data, separators=(",", ":"), sort_keys=False).encode()
    return gzip.compress(text, mtime=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=DEFAULT_REPO)
    parser.add_argument("--tag", default=DEFAULT_TAG)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    wanted = encode(tables(args.repo, args.tag))
    if args.check:
        current = OUTPUT.read_bytes() if OUTPUT.exists() else b""
        if gzip.decompress(current or gzip.compress(b"")) != gzip.decompress(wanted):
            print(f"{OUTPUT} is out of date; run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_bytes(wanted)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
