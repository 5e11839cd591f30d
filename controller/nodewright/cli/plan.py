"""`nodewright plan PATH...`: what the solver would launch for the given manifests."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from nodewright.api.manifests import Document, load_documents
from nodewright.api.problems import Problem
from nodewright.cli.output import add_format_option, print_problems
from nodewright.scheduling.planning import offline_catalogs, plan
from nodewright.scheduling.pods import MAX_REPLICAS, WORKLOAD_KINDS, replicas_of
from nodewright.scheduling.solver import SchedulingResult


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        description=(
            "Read NodePools, EC2NodeClasses, Pods, Deployments/ReplicaSets/StatefulSets/Jobs "
            "(one pod per replica), DaemonSets and existing Nodes (with pods bound through "
            "spec.nodeName) from files or directories, solve against the offline catalog and "
            "print the NodeClaims that would launch, the pods placed on existing nodes and "
            "every pod that cannot be placed, with the reason."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--region", default="us-east-1", help="AWS region (default us-east-1)")
    parser.add_argument(
        "--zones", help="comma-separated zones, as letters or names (default: first three)"
    )
    parser.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="NAME=N",
        help="override spec.replicas of the workload NAME (repeatable)",
    )
    add_format_option(parser)
    parser.set_defaults(func=run)


def parse_replicas(values: list[str]) -> tuple[dict[str, int], list[Problem]]:
    replicas: dict[str, int] = {}
    problems: list[Problem] = []
    for value in values:
        name, _, count = value.partition("=")
        if not name or not count.isascii() or not count.isdigit():
            problems.append(
                Problem("<command line>", 0, "", "", "--replicas",
                        f"expected NAME=N with N a whole number, got {value!r}")
            )
            continue
        if int(count) > MAX_REPLICAS:
            problems.append(
                Problem("<command line>", 0, "", "", "--replicas",
                        f"{count} is more than the {MAX_REPLICAS} pods a plan can take")
            )
            continue
        replicas[name] = int(count)
    return replicas, problems


def run(args: argparse.Namespace) -> int:
    replicas, problems = parse_replicas(args.replicas)
    if problems:
        print_problems(problems, args.format)
        return 2
    zones = [z.strip() for z in args.zones.split(",") if z.strip()] if args.zones else None
    documents, problems = load_documents(args.paths)
    if any(p.severity == "error" for p in problems):
        print_problems(problems, args.format)
        return 1
    if not any(document.kind for document in documents):
        print(f"nodewright plan: no Kubernetes objects (documents with apiVersion and kind) "
              f"in {', '.join(args.paths)}", file=sys.stderr)
        return 1
    try:
        result, found = plan(documents, offline_catalogs(args.region, zones), replicas)
    except ValueError as error:
        # The catalog refuses unknown regions or zones with a message naming them.
        print(f"nodewright plan: {error}", file=sys.stderr)
        return 2
    problems.extend(found)
    if result is None:
        print_problems(problems, args.format)
        return 1
    for problem in problems:
        print(problem.format(), file=sys.stderr)
    if args.format == "json":
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(result, idle_workloads(documents, replicas)))
    return 0


def idle_workloads(documents: Sequence[Document], overrides: dict[str, int]) -> list[str]:
    """`Kind/name` of the workloads that stand for no pod (0 replicas)."""
    idle = []
    for document in documents:
        if document.kind not in WORKLOAD_KINDS:
            continue
        count = overrides.get(document.name)
        if count is None:
            try:
                count = replicas_of(document.body)
            except ValueError:
                continue
        if count == 0:
            idle.append(f"{document.kind}/{document.name}")
    return idle


def render_text(result: SchedulingResult, idle: Sequence[str] = ()) -> str:
    lines: list[str] = []
    if not (result.nodeclaims or result.existing or result.unschedulable):
        lines.append("No pending pods: nothing to place.")
        if idle:
            lines.append(f"{', '.join(idle)} ha{'ve' if len(idle) > 1 else 's'} 0 replicas; "
                         f"plan with --replicas {idle[0].split('/', 1)[1]}=N to see their "
                         "nodes.")
        return "\n".join(lines) + "\n"
    if result.nodeclaims:
        rows = [("NODEPOOL", "INSTANCE TYPE", "CAPACITY", "ZONE", "$/HOUR", "PODS", "ALSO FITS")]
        for claim in result.nodeclaims:
            others = [name for name, _ in claim.instance_types[1:]]
            also = ", ".join(others[:3]) + (f" (+{len(others) - 3})" if len(others) > 3 else "")
            rows.append((
                claim.nodepool, claim.instance_type, claim.capacity_type, claim.zone or "any",
                f"{claim.price:.4f}" + ("*" if claim.price_estimated else ""),
                str(len(claim.pods)), also or "-",
            ))
        lines.append(f"New nodes ({len(result.nodeclaims)}):")
        lines.extend(_table(rows))
    else:
        lines.append("New nodes: none")
    if result.existing:
        lines.append("")
        lines.append("Placed on existing nodes:")
        lines.extend(_table([("NODE", "PODS")] + [
            (node, str(len(pods))) for node, pods in result.existing
        ]))
    if result.unschedulable:
        lines.append("")
        lines.append(f"Unschedulable pods ({len(result.unschedulable)}):")
        lines.extend(f"  {pod}: {reason}" for pod, reason in result.unschedulable)
    lines.append("")
    estimated = any(claim.price_estimated for claim in result.nodeclaims)
    lines.append(
        f"Hourly cost of new nodes: ${result.hourly_cost:.4f}"
        + ("; * estimated price (docs/pricing.md)" if estimated else "")
    )
    return "\n".join(lines) + "\n"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]
