"""`nodewright snapshot`: read a cluster (list and get only) and write it as one scenario
file that `nodewright simulate` starts from."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from nodewright.cluster.api import ApiError, ClusterAPI, UnreachableError

ClusterFactory = Callable[[argparse.Namespace], ClusterAPI]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "snapshot",
        description=(
            "Read a cluster through a kubeconfig, with get and list only (see --print-rbac), "
            "and write one self-contained scenario file: NodePools, EC2NodeClasses, "
            "NodeClaims (as nodeClaims with their age and launch hashes), unmanaged Nodes, "
            "workloads with their running pods (boundPods), PDBs, volumes, NodeOverlays, "
            "CapacityBuffers and pending pods. Secrets and ConfigMaps are never read; "
            "environment values, commands and secret volumes are left out. Run it with "
            "`nodewright simulate FILE`."
        ),
    )
    add_cluster_options(parser)
    parser.add_argument("-o", "--output", metavar="FILE", type=Path,
                        help="write the scenario here (default: standard output)")
    parser.add_argument("--redact", action="store_true",
                        help="replace names, label values, images and tags with stable "
                             "hashes, for sharing")
    parser.add_argument("--as-nodepools", metavar="FILE", type=Path, dest="as_nodepools",
                        help="also write NodePools that would take over the unmanaged "
                             "nodes' node groups (use with simulate --compare FILE)")
    parser.add_argument("--print-rbac", action="store_true", dest="print_rbac",
                        help="print the read-only ClusterRole the snapshot needs and exit")
    parser.set_defaults(func=run)


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then "
                                             "$KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="the kubeconfig context (default: its current one)")


class CannotConnect(Exception):
    pass


def kube_cluster(args: argparse.Namespace) -> ClusterAPI:
    # Imported here: the Kubernetes client is slow to import and only this path needs it.
    from lightkube import Client
    from lightkube.config.kubeconfig import KubeConfig

    from nodewright.cluster.kube.cluster import FIELD_MANAGER, KubeCluster

    try:
        config = (KubeConfig.from_file(args.kubeconfig) if args.kubeconfig
                  else KubeConfig.from_env())
        if args.context:
            config = config.get(context_name=args.context)  # type: ignore[assignment]
        client = Client(config, field_manager=FIELD_MANAGER)
    except Exception as error:  # lightkube's config errors have no common base of ours
        where = args.kubeconfig or "the in-cluster service account or $KUBECONFIG"
        raise CannotConnect(f"cannot read the cluster's address from {where}"
                            f"{f' (context {args.context})' if args.context else ''}: "
                            f"{error}") from None
    return KubeCluster(client, cached_kinds=())


def run(args: argparse.Namespace, cluster_factory: ClusterFactory = kube_cluster,
        now: datetime | None = None) -> int:
    from nodewright.sim.snapshot.rbac import role_yaml

    if args.print_rbac:
        sys.stdout.write(role_yaml())
        return 0
    try:
        cluster = cluster_factory(args)
        return write_snapshot(cluster, args, now or datetime.now(UTC), sys.stdout,
                              sys.stderr)
    except CannotConnect as error:
        print(f"nodewright snapshot: {error}", file=sys.stderr)
        return 2
    except UnreachableError as error:
        print(f"nodewright snapshot: {error.message}", file=sys.stderr)
        return 2
    except ApiError as error:
        print(f"nodewright snapshot: the cluster answered {error.status} {error.reason}: "
              f"{error.message} (see `nodewright snapshot --print-rbac` for the access it "
              "needs)", file=sys.stderr)
        return 2


def write_snapshot(cluster: ClusterAPI, args: argparse.Namespace, now: datetime,
                   out: TextIO, err: TextIO) -> int:
    from nodewright.sim.snapshot.nodegroups import default_node_class, propose
    from nodewright.sim.snapshot.read import take_snapshot
    from nodewright.sim.snapshot.redact import redact

    source = f"context {args.context}" if getattr(args, "context", None) else "the cluster"
    snapshot = take_snapshot(cluster, now, source=source)
    document = redact(snapshot.document) if args.redact else snapshot.document
    text = dump(document)
    for warning in snapshot.warnings:
        err.write(f"nodewright snapshot: warning: {warning}\n")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    else:
        out.write(text)
    counts = snapshot.counts
    err.write(f"nodewright snapshot: {counts['nodeClaims']} NodeClaims, "
              f"{counts['unmanagedNodes']} unmanaged nodes, {counts['boundPods']} running "
              f"pods, {counts['manifests']} manifests"
              f"{f' written to {args.output}' if args.output else ''}\n")
    if args.as_nodepools is not None:
        classes = [m for m in snapshot.document["manifests"] if m["kind"] == "EC2NodeClass"]
        documents: list[dict[str, Any]] = []
        class_name = str(classes[0]["metadata"]["name"]) if classes else "default"
        if not classes:
            documents.append(default_node_class())
        documents += propose(snapshot.unmanaged_nodes, class_name)
        if args.redact:
            documents = [redact_manifest(d) for d in documents]
        args.as_nodepools.parent.mkdir(parents=True, exist_ok=True)
        args.as_nodepools.write_text(yaml.dump_all(documents, Dumper=_Dumper,
                                                   sort_keys=False), encoding="utf-8")
        pools = sum(1 for d in documents if d["kind"] == "NodePool")
        err.write(f"nodewright snapshot: {pools} NodePools proposed for the unmanaged nodes' "
                  f"node groups, written to {args.as_nodepools} (compare with: nodewright "
                  f"simulate {args.output or 'SNAPSHOT.yaml'} --compare "
                  f"{args.as_nodepools})\n")
    return 0


def redact_manifest(document: dict[str, Any]) -> dict[str, Any]:
    from nodewright.sim.snapshot.redact import redact

    wrapped = redact({"manifests": [document]})
    return dict(wrapped["manifests"][0])


def dump(document: dict[str, Any]) -> str:
    header = ("# A cluster snapshot as a nodewright scenario (docs/scenarios.md). "
              "Simulate it with:\n#   nodewright simulate THIS-FILE.yaml [--report r.html]\n")
    return header + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=100)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Writes shared values out in full (no YAML anchors and aliases)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True
