"""`nodewright simulate SCENARIO.yaml`: run the controllers against a simulated cluster and
EC2 on a virtual clock, as the scenario file says (docs/scenarios.md)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from nodewright.cli.snapshot import ClusterFactory, add_cluster_options, kube_cluster
from nodewright.cli.snapshot import run as snapshot_command
from nodewright.sim.session import SimulationRequest, simulate


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        description=(
            "Run the real controllers against an in-memory cluster and a simulated EC2 on a "
            "virtual clock, following the steps of SCENARIO (see docs/scenarios.md). Prints "
            "the timeline as it runs, one line per expect step and a summary. Exit 0 when "
            "every expectation held, 1 when one failed, 2 when the scenario is invalid "
            "(every problem printed as FILE:LINE: path: message; nothing is run)."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO.yaml", nargs="?",
                        help="the scenario, or a cluster's snapshot (nodewright snapshot)")
    parser.add_argument("--from-cluster", action="store_true", dest="from_cluster",
                        help="snapshot the kubeconfig's cluster (read-only) and simulate it: "
                             "what the controllers would do to it")
    parser.add_argument("--save-snapshot", metavar="FILE", type=Path, dest="save_snapshot",
                        help="with --from-cluster: keep the snapshot taken in FILE")
    add_cluster_options(parser)
    parser.add_argument("--report", metavar="REPORT.html", type=Path,
                        help="write a self-contained HTML report with charts")
    parser.add_argument("--json", metavar="TIMELINE.json", type=Path, dest="json_path",
                        help="write the timeline and summary as JSON (the same scenario and "
                             "seed give the same bytes)")
    parser.add_argument("--compare", metavar="MANIFEST", nargs="+", default=[],
                        help="also run the scenario with these manifests replacing objects of "
                             "the same kind and name, and compare the two runs")
    parser.add_argument("--quiet", action="store_true",
                        help="print no timeline and no progress, only expectations and the "
                             "summary")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, cluster_factory: ClusterFactory = kube_cluster,
        now: datetime | None = None) -> int:
    """`now`: when the snapshot is taken (default the wall clock; tests give the time of
    the in-memory cluster they read)."""
    if args.from_cluster == (args.scenario is not None):
        print("nodewright simulate: give a SCENARIO.yaml or --from-cluster (not both)",
              file=sys.stderr)
        return 2
    if args.from_cluster:
        with tempfile.TemporaryDirectory(prefix="nodewright-snapshot-") as folder:
            path = args.save_snapshot or Path(folder) / "snapshot.yaml"
            taken = snapshot_command(argparse.Namespace(
                **{**vars(args), "output": path, "redact": False, "as_nodepools": None,
                   "print_rbac": False}), cluster_factory, now)
            if taken != 0:
                return taken
            return _simulate(args, str(path))
    return _simulate(args, args.scenario)


def _simulate(args: argparse.Namespace, scenario: str) -> int:
    request = SimulationRequest(
        scenario=scenario,
        compare=tuple(args.compare),
        report=args.report,
        json_path=args.json_path,
        quiet=args.quiet,
    )
    return simulate(request, sys.stdout, sys.stderr)
