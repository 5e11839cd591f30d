"""`nodewright simulate SCENARIO.yaml`: run the controllers against a simulated cluster and
EC2 on a virtual clock, as the scenario file says (docs/scenarios.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

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
    parser.add_argument("scenario", metavar="SCENARIO.yaml")
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


def run(args: argparse.Namespace) -> int:
    request = SimulationRequest(
        scenario=args.scenario,
        compare=tuple(args.compare),
        report=args.report,
        json_path=args.json_path,
        quiet=args.quiet,
    )
    return simulate(request, sys.stdout, sys.stderr)
