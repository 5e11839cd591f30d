"""The `nodewright` command: one module per sub-command, each exposing `register`.

Only the module of the command being run is imported: the others would pull in pydantic,
boto3 or the simulator for nothing, and `nodewright --help` or `--version` would take a
second instead of a few milliseconds. The one-line summaries `--help` lists live in
`COMMANDS`, and each module's `register` receives its parser's help from there.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from nodewright import __version__

# name -> (module, summary). Each module defines `register(subparsers)`, which adds its
# sub-command and sets `func` (taking the parsed namespace, returning the exit code).
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("nodewright.cli.validate",
                 "validate Karpenter manifests (files or directories)"),
    "crds": ("nodewright.cli.crds", "print the NodePool, NodeClaim and EC2NodeClass CRDs"),
    "policy": ("nodewright.cli.policy",
               "check manifests against the policy pack's NodePool/EC2NodeClass rules"),
    "catalog": ("nodewright.cli.catalog",
                "list instance types with capacity, allocatable and prices (offline data)"),
    "plan": ("nodewright.cli.plan",
             "show the nodes the solver would launch for the given manifests"),
    "aws": ("nodewright.cli.aws", "debug selectors and user data against AWS"),
    "controller": ("nodewright.cli.controller",
                   "run the controllers against a cluster (what the Deployment runs)"),
    "manifests": ("nodewright.cli.manifests",
                  "print the install YAML: CRDs, namespace, RBAC, Deployment, PDB, "
                  "metrics Service"),
    "simulate": ("nodewright.cli.simulate",
                 "run a scenario against simulated EC2 on a virtual clock"),
    "snapshot": ("nodewright.cli.snapshot",
                 "write a live cluster as a scenario file (read-only: get and list)"),
    "explain": ("nodewright.cli.explain",
                "why a node is (not) disrupted, or why a pod is pending"),
}


class _Commands:
    """The sub-parsers action, handing each command its summary from `COMMANDS`."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser:
        options.setdefault("help", COMMANDS[name][1])
        parser: argparse.ArgumentParser = self._subparsers.add_parser(name, **options)
        return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with the full options of `command` (every command's when None); the
    others are listed by their summary only."""
    parser = argparse.ArgumentParser(
        prog="nodewright",
        description="Group-less node autoscaling for Amazon EKS (Karpenter v1 API).",
    )
    parser.add_argument("--version", action="version", version=f"nodewright {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = _Commands(subparsers)
    for name, (module_name, summary) in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module_name).register(commands)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def _command_in(argv: Sequence[str]) -> str:
    """The sub-command named on the line ('' when there is none yet)."""
    for argument in argv:
        if not argument.startswith("-"):
            return argument if argument in COMMANDS else ""
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_in(arguments))
    args = parser.parse_args(arguments)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # a bug of ours: say so in one line, not a traceback
        if os.environ.get("NODEWRIGHT_DEBUG"):
            raise
        print(
            f"nodewright {args.command}: internal error: {type(error).__name__}: {error} "
            "(set NODEWRIGHT_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
