"""Printing problems the same way in every sub-command."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from nodewright.api.problems import Problem


def print_problems(problems: Sequence[Problem], output_format: str) -> None:
    ordered = sorted(problems, key=lambda p: (p.file, p.line, p.path, p.message))
    if output_format == "json":
        json.dump([problem.to_dict() for problem in ordered], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    for problem in ordered:
        sys.stdout.write(problem.format() + "\n")


def add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
