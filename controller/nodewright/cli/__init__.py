"""The `nodewright` command: one module per sub-command, each exposing `register`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# Each module defines `register(subparsers)`, which adds its sub-command and sets
# `func` (taking the parsed namespace, returning the exit code) as the default.
COMMAND_MODULES: tuple[str, ...] = (
    "nodewright.cli.validate",
    "nodewright.cli.crds",
    "nodewright.cli.policy",
    "nodewright.cli.catalog",
    "nodewright.cli.plan",
    "nodewright.cli.aws",
    "nodewright.cli.controller",
    "nodewright.cli.manifests",
    "nodewright.cli.simulate",
    "nodewright.cli.explain",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nodewright",
        description="Group-less node autoscaling for Amazon EKS (Karpenter v1 API).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
