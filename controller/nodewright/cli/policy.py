"""`nodewright policy check PATH...`: the pack's NodePool and EC2NodeClass rules on manifests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nodewright.api.manifests import load_documents
from nodewright.cli.output import add_format_option, print_problems
from nodewright.policy import (
    MANIFEST_RULES,
    PolicyConfig,
    PolicyConfigError,
    check_documents,
    load_policy_config,
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "policy",
        description="Policy-as-code checks shared with the CrossGuard pack in policies/.",
    )
    actions = parser.add_subparsers(dest="policy_command", metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="run the NodePool and EC2NodeClass rules on YAML manifests",
        description=(
            "Run the policy pack's NodePool and EC2NodeClass rules on the given YAML files or "
            "directories, as `pulumi preview --policy-pack policies` would on a stack. One line "
            "per violation: FILE:LINE: Kind/name: field.path: [rule, level] message How to "
            "fix: ... Exit 1 when a mandatory rule is violated (or a file cannot be read), "
            "0 otherwise; advisory violations are printed as warnings."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument(
        "--environment",
        default="",
        metavar="NAME",
        help="environment the manifests are for (prod, production and prod-* are production; "
        "default: none, i.e. not production)",
    )
    check.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="policy configuration (JSON or YAML, the format of pulumi's --policy-pack-config)",
    )
    add_format_option(check)
    check.set_defaults(func=run_check)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_check(args: argparse.Namespace) -> int:
    config = PolicyConfig()
    if args.config is not None:
        try:
            config = load_policy_config(args.config, MANIFEST_RULES)
        except PolicyConfigError as error:
            print(f"nodewright policy check: {error}", file=sys.stderr)
            return 2
        for name in config.ignored:
            print(
                f"{args.config}: note: {name!r} is not a NodePool/EC2NodeClass rule; it only "
                "applies in the Pulumi policy pack",
                file=sys.stderr,
            )
    documents, problems = load_documents(args.paths)
    problems.extend(check_documents(documents, config, args.environment))
    print_problems(problems, args.format)
    errors = [problem for problem in problems if problem.severity == "error"]
    if args.format == "text":
        checked = sum(1 for d in documents if d.kind in {"NodePool", "EC2NodeClass"})
        print(
            f"{checked} NodePool/EC2NodeClass object(s) checked, {len(errors)} mandatory "
            f"violation(s) or error(s), {len(problems) - len(errors)} advisory",
            file=sys.stderr,
        )
    return 1 if errors else 0
