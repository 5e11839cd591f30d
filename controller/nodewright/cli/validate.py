"""`nodewright validate PATH...`: check the manifests of the kinds Nodewright serves
(NodePool, NodeClaim, EC2NodeClass, NodeOverlay, CapacityBuffer)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nodewright.api.manifests import load_documents
from nodewright.api.problems import Problem
from nodewright.api.validation import KINDS, is_karpenter_kind, validate_documents
from nodewright.cli.output import add_format_option, print_problems


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        description=(
            f"Validate every {_kind_list()} in the given YAML files "
            "or directories (other kinds are ignored). One line per problem: "
            "FILE:LINE: Kind/name: field.path: message. Exit 1 on any error."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    add_format_option(parser)
    parser.set_defaults(func=run)


def _kind_list() -> str:
    """"NodePool, NodeClaim, ... or CapacityBuffer": the kinds `validate` checks."""
    *first, last = KINDS
    return f"{', '.join(first)} or {last}"


def run(args: argparse.Namespace) -> int:
    documents, problems = load_documents(args.paths)
    models, found = validate_documents(documents)
    problems.extend(found)
    if not problems and not any(is_karpenter_kind(d) or d.kind in KINDS for d in documents):
        where = ", ".join(str(path) for path in args.paths)
        problems.append(Problem(
            where, 0, "", "", "",
            f"nothing to validate: no {_kind_list()} found "
            f"({len(documents)} other document(s) read)",
        ))
    print_problems(problems, args.format)
    errors = [p for p in problems if p.severity == "error"]
    if args.format == "text":
        summary = (
            f"{len(models)} object(s) valid, {len(errors)} error(s), "
            f"{len(problems) - len(errors)} warning(s)"
        )
        print(summary, file=sys.stderr)
    return 1 if errors else 0
