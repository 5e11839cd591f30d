"""`nodewright crds`: print the CustomResourceDefinitions as multi-document YAML."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nodewright.api.crds import render_crds_yaml


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "crds",
        description="Print the CRDs generated from the API models (apply with kubectl apply -f -).",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render_crds_yaml())
    return 0
