"""`nodewright explain node NAME` and `nodewright explain pod NAMESPACE/NAME`: why a node
is or is not being disrupted, and why a pod is pending, read from a cluster."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nodewright.cluster.api import ApiError, ClusterAPI, UnreachableError

ClusterFactory = Callable[[argparse.Namespace], ClusterAPI]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "explain",
        description=(
            "Read a cluster (the kubeconfig's, or in a pod its service account) and explain "
            "one object. For a node: what blocks its disruption now (a do-not-disrupt pod or "
            "annotation, a PodDisruptionBudget, ...), its NodePool's budgets per reason with "
            "their schedule windows, when consolidateAfter and expireAfter let it go, the "
            "last decision the controller recorded, and the disruption Events. For a "
            "pending pod: what the solver answers for it against every NodePool."
        ),
    )
    parser.add_argument("kind", choices=("node", "pod"), help="what to explain")
    parser.add_argument("name", help="a Node (or NodeClaim) name, or NAMESPACE/NAME of a pod")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then "
                                             "$KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--region", help="AWS region of the offline catalog used to explain "
                                         "a pending pod (default: the nodes' region label)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default text)")
    parser.set_defaults(func=run)


class CannotConnect(Exception):
    pass


def kube_cluster(args: argparse.Namespace) -> ClusterAPI:
    # Imported here: the Kubernetes client is slow to import and only this path needs it.
    from nodewright.cluster.kube.cluster import KubeCluster, connect

    try:
        client = connect(args.kubeconfig)
    except Exception as error:  # lightkube's config errors have no common base of ours
        where = args.kubeconfig or "the in-cluster service account or $KUBECONFIG"
        raise CannotConnect(f"cannot read the cluster's address from {where}: {error}") from None
    return KubeCluster(client, cached_kinds=())


def run(args: argparse.Namespace, cluster_factory: ClusterFactory = kube_cluster,
        now: datetime | None = None) -> int:
    from nodewright.controllers.disruption.why_from_cluster import (
        ExplainError,
        OfflineCatalog,
        explain_node,
        explain_pod,
    )

    moment = now or datetime.now(UTC)
    if args.kind == "pod":
        namespace, slash, name = str(args.name).partition("/")
        if not slash or not namespace or not name:
            print(f"nodewright explain: pod {args.name!r}: expected NAMESPACE/NAME",
                  file=sys.stderr)
            return 2
    try:
        cluster = cluster_factory(args)
        if args.kind == "node":
            explanation = explain_node(cluster, args.name, moment)
        else:
            cloud = OfflineCatalog(args.region) if args.region else None
            explanation = explain_pod(cluster, namespace, name, moment, cloud)
    except ExplainError as error:
        print(f"nodewright explain: {error}", file=sys.stderr)
        return 1
    except CannotConnect as error:
        print(f"nodewright explain: {error}", file=sys.stderr)
        return 2
    except UnreachableError as error:
        print(f"nodewright explain: {error.message}", file=sys.stderr)
        return 2
    except ApiError as error:
        print(f"nodewright explain: the cluster answered {error.status} {error.reason}: "
              f"{error.message}", file=sys.stderr)
        return 2
    if args.format == "json":
        json.dump(explanation.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(explanation.render() + "\n")
    return 0
