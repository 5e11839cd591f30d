"""`nodewright catalog [NAME...]`: the offline instance catalog with allocatable and prices."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.manifests import load_documents
from nodewright.api.problems import Problem
from nodewright.api.quantity import format_quantity, format_resources
from nodewright.api.validation import parse_document
from nodewright.cli.output import add_format_option, print_problems
from nodewright.scheduling.allocatable import SettingsError, node_settings
from nodewright.scheduling.catalog import ON_DEMAND, SPOT, InstanceType, Offering, offline_catalog

_TABLE_COLUMNS = (
    "NAME", "ARCH", "CPU", "MEMORY", "ALLOC CPU", "ALLOC MEMORY", "PODS", "GPU",
    "ON-DEMAND $/H", "SPOT $/H",
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "catalog",
        description=(
            "Show the instance catalog built from the EC2 data bundled with moto: labels, "
            "capacity, allocatable (Karpenter's math, for an EC2NodeClass's kubelet settings "
            "with --nodeclass) and offerings with hourly prices. Prices marked * are estimates "
            "(see docs/pricing.md). NAME may be a glob such as 'm5.*'; with names, each type "
            "is shown in full."
        ),
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="instance types or globs")
    parser.add_argument("--region", default="us-east-1", help="AWS region (default us-east-1)")
    parser.add_argument(
        "--zones", help="comma-separated zones, as letters or names (default: first three)"
    )
    parser.add_argument(
        "--nodeclass", metavar="FILE", help="YAML file with the EC2NodeClass to compute for"
    )
    add_format_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    node_class: EC2NodeClass | None = None
    if args.nodeclass:
        node_class, problems = load_node_class(args.nodeclass)
        if problems:
            print_problems(problems, args.format)
            return 1
    zones = [z for z in args.zones.split(",") if z.strip()] if args.zones else None
    try:
        catalog = offline_catalog(args.region, zones, node_class=node_class)
    except ValueError as error:
        print(f"nodewright catalog: {error}", file=sys.stderr)
        return 1
    selected, unmatched = select(catalog, args.names)
    if unmatched:
        print(
            f"nodewright catalog: no instance type in {args.region} matches "
            f"{', '.join(unmatched)}",
            file=sys.stderr,
        )
        return 1
    if args.format == "json":
        document = {
            "region": args.region,
            "nodeClass": node_class.name if node_class else None,
            "instanceTypes": [to_json(instance_type) for instance_type in selected],
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.names:
        sys.stdout.write("\n\n".join(describe(it) for it in selected) + "\n")
    else:
        sys.stdout.write(table(selected))
    return 0


def load_node_class(path: str) -> tuple[EC2NodeClass | None, list[Problem]]:
    """The one EC2NodeClass in a file, or the problems that stop us from using it."""
    documents, problems = load_documents([path])
    if problems:
        return None, problems
    candidates = [d for d in documents if d.kind == "EC2NodeClass"]
    if len(candidates) != 1:
        found = ", ".join(d.name or "?" for d in candidates) or "none"
        return None, [
            Problem(
                file=path, line=1, kind="", name="", path="",
                message=f"expected exactly one EC2NodeClass in the file, found {found}",
                severity="error",
            )
        ]
    model, problems = parse_document(candidates[0])
    errors = [p for p in problems if p.severity == "error"]
    if errors or not isinstance(model, EC2NodeClass):
        return None, errors or problems
    try:
        node_settings(node_class=model)
    except SettingsError as error:
        return None, [candidates[0].problem(error.path, error.detail)]
    return model, []


def select(catalog: list[InstanceType], names: list[str]) -> tuple[list[InstanceType], list[str]]:
    if not names:
        return catalog, []
    unmatched = [n for n in names if not any(fnmatch.fnmatchcase(it.name, n) for it in catalog)]
    chosen = [it for it in catalog if any(fnmatch.fnmatchcase(it.name, n) for n in names)]
    return chosen, unmatched


def to_json(instance_type: InstanceType) -> dict[str, Any]:
    return {
        "name": instance_type.name,
        "labels": instance_type.labels,
        "capacity": format_resources(instance_type.capacity),
        "overhead": {
            "kubeReserved": format_resources(instance_type.overhead.kube_reserved),
            "systemReserved": format_resources(instance_type.overhead.system_reserved),
            "evictionThreshold": format_resources(instance_type.overhead.eviction_threshold),
        },
        "allocatable": format_resources(instance_type.allocatable),
        "offerings": [
            {
                "zone": o.zone,
                "zoneID": o.zone_id,
                "capacityType": o.capacity_type,
                "price": o.price,
                "priceEstimated": o.price_estimated,
                "available": o.available,
            }
            for o in instance_type.offerings
        ],
    }


def describe(instance_type: InstanceType) -> str:
    """One type in full: labels, resources per kind, and every offering."""
    lines = [f"{instance_type.name}", "  labels:"]
    lines += [f"    {key}={value}" for key, value in instance_type.labels.items()]
    lines.append(f"  {'RESOURCE':<28} {'CAPACITY':>12} {'OVERHEAD':>12} {'ALLOCATABLE':>12}")
    total = instance_type.overhead.total
    for name, amount in instance_type.capacity.items():
        lines.append(
            f"  {name:<28} {format_quantity(amount, name):>12} "
            f"{format_quantity(total.get(name, 0), name):>12} "
            f"{format_quantity(instance_type.allocatable[name], name):>12}"
        )
    lines.append(f"  {'ZONE':<16} {'ZONE ID':<10} {'CAPACITY TYPE':<14} {'$/H':>10}  AVAILABLE")
    for o in instance_type.offerings:
        lines.append(
            f"  {o.zone:<16} {o.zone_id or '-':<10} {o.capacity_type:<14} "
            f"{_price(o):>10}  {'yes' if o.available else 'no'}"
        )
    if any(o.price_estimated for o in instance_type.offerings):
        lines.append(f"  {ESTIMATED}")
    return "\n".join(lines)


def table(catalog: list[InstanceType]) -> str:
    rows = [_TABLE_COLUMNS] + [_row(it) for it in catalog]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_TABLE_COLUMNS))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if index < 2 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    footer = f"{len(catalog)} instance type(s); {ESTIMATED}"
    return "\n".join(lines) + "\n" + footer + "\n"


def _row(it: InstanceType) -> tuple[str, ...]:
    gpus = sum(
        amount for name, amount in it.capacity.items() if name.endswith(("/gpu", "/neuron"))
    )
    return (
        it.name,
        it.labels.get("kubernetes.io/arch", ""),
        format_quantity(it.capacity["cpu"], "cpu"),
        format_quantity(it.capacity["memory"], "memory"),
        format_quantity(it.allocatable["cpu"], "cpu"),
        format_quantity(it.allocatable["memory"], "memory"),
        format_quantity(it.allocatable["pods"], "pods"),
        format_quantity(gpus, "gpu") if gpus else "-",
        _cheapest(it, ON_DEMAND),
        _cheapest(it, SPOT),
    )


def _cheapest(instance_type: InstanceType, capacity_type: str) -> str:
    offering = instance_type.cheapest_offering(capacity_types={capacity_type})
    return _price(offering) if offering is not None else "-"


ESTIMATED = ("* estimated price: no published price is known offline, so it is estimated "
             "(docs/pricing.md)")


def _price(offering: Offering) -> str:
    return f"{offering.price:.4f}" + ("*" if offering.price_estimated else "")
