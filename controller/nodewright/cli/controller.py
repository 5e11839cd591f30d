"""`nodewright controller`: run the controllers against a Kubernetes cluster."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nodewright.operator.config import ConfigError, add_arguments, load


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "controller",
        description=(
            "Run Nodewright's controllers against the cluster of the kubeconfig (in a pod: "
            "its service account). Every option also reads the environment variable named "
            "in its help, as Karpenter's chart sets them; a flag wins over its variable. "
            "With --cloud sim no AWS account is used: simulated instances become Nodes that "
            "this process registers and keeps alive, so any cluster can try NodePools. "
            "Serves Prometheus metrics on METRICS_PORT and /healthz and /readyz on "
            "HEALTH_PROBE_PORT; SIGTERM stops it cleanly and releases the leader Lease."
        ),
        epilog=(
            "Also read: POD_NAME (the leader identity, default the host name), POD_NAMESPACE "
            "(the leader Lease's namespace), AWS_DEFAULT_REGION, and the AWS SDK's "
            "credential chain. A bad value exits with status 2 naming the variable or flag."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load(args)
    except ConfigError as error:
        print(f"nodewright controller: {error}", file=sys.stderr)
        return 2
    # Imported here: the AWS SDK and the Kubernetes client are slow to import, and the
    # other sub-commands need neither.
    from nodewright.operator.main import run as run_controller

    return run_controller(config)
