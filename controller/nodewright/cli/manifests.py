"""`nodewright manifests`: print the install YAML (the same objects infra/ declares)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from nodewright.install import InstallSettings, render_yaml
from nodewright.install.settings import DEFAULT_IMAGE, DEFAULT_NAMESPACE
from nodewright.operator.config import LOG_LEVELS, parse_cluster_name, parse_endpoint

_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_QUEUE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
# An image reference: no blanks, no scheme (registry/name[:tag][@digest]).
_IMAGE = re.compile(r"^[\w.-]+(:\d+)?(/[\w.-]+)*(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$")

# Why --cloud sim runs one replica, said where a GitOps reviewer reads it: the YAML itself.
SIM_HEADER = (
    "# nodewright --cloud sim: {replicas} replica(s). The simulated EC2 instances live in the\n"
    "# leader's memory, so a second replica taking over would start with none of them (their\n"
    "# Nodes would be left behind as unknown instances); one replica is the honest setup.\n"
)


def _checked(parse: Any, what: str) -> Any:
    """An argparse type that turns ValueError into 'argument --x: invalid ...'."""

    def check(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None

    check.__name__ = what
    return check


def _matching(pattern: re.Pattern[str], what: str) -> Any:
    def parse(text: str) -> str:
        if not pattern.match(text):
            raise ValueError(f"not {what}")
        return text

    return _checked(parse, what)


def _replicas(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10:
        raise ValueError("a number from 1 to 10")
    return int(text)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "manifests",
        description=(
            "Print everything a cluster needs to run Nodewright, as multi-document YAML for "
            "kubectl apply -f - or a GitOps repository: the CRDs, the namespace, the "
            "ServiceAccount, RBAC as narrow as Karpenter's (and, as its chart, a "
            "ClusterRole aggregated into admin for NodePools, NodeClaims and "
            "EC2NodeClasses), the controller Deployment (two "
            "replicas behind leader election; one with --cloud sim), its PodDisruptionBudget "
            "and the metrics Service. infra/ (pulumi up) declares the same objects from the "
            "same code."
        ),
        epilog="Try it on any cluster: nodewright manifests --cluster-name demo --cloud sim "
               "| kubectl apply -f -",
    )
    parser.add_argument("--cluster-name", required=True, metavar="NAME",
                        type=_checked(parse_cluster_name, "cluster name"),
                        help="the EKS cluster's name (CLUSTER_NAME of the controller)")
    parser.add_argument("--cloud", choices=("aws", "sim"), default="aws",
                        help="aws: launch EC2 instances; sim: the simulated EC2, no AWS account "
                             "(default aws)")
    parser.add_argument("--queue", metavar="NAME", type=_matching(_QUEUE, "an SQS queue name"),
                        help="the interruption queue's name (INTERRUPTION_QUEUE)")
    parser.add_argument("--role-arn", metavar="ARN",
                        type=_matching(_ROLE_ARN, "an IAM role ARN"),
                        help="IAM role for the controller (IRSA: annotates the ServiceAccount)")
    parser.add_argument("--image", default=DEFAULT_IMAGE, metavar="IMAGE",
                        type=_matching(_IMAGE, "an image reference (registry/name:tag)"),
                        help=f"controller image (default {DEFAULT_IMAGE})")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NAMESPACE",
                        type=_matching(_DNS_LABEL, "a namespace name"),
                        help=f"namespace of the controller (default {DEFAULT_NAMESPACE})")
    parser.add_argument("--region", metavar="REGION",
                        type=_matching(_REGION, "an AWS region name (us-west-2)"),
                        help="AWS region (the controller's AWS_REGION; needed unless the "
                             "pod's environment has one, as the IRSA webhook injects)")
    parser.add_argument("--cluster-endpoint", metavar="URL",
                        type=_checked(parse_endpoint, "URL"),
                        help="API server URL nodes join (default: eks:DescribeCluster)")
    parser.add_argument("--replicas", type=_checked(_replicas, "replicas"), metavar="N",
                        help="controller replicas (default 2; 1 with --cloud sim, whose "
                             "simulated instances live in the leader's memory)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                        help="controller log level (default info)")
    parser.add_argument("--skip-crds", action="store_true",
                        help="leave the CRDs out (they are managed separately)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    replicas = args.replicas or (1 if args.cloud == "sim" else 2)
    settings = InstallSettings(
        cluster_name=args.cluster_name,
        cloud=args.cloud,
        image=args.image,
        namespace=args.namespace,
        replicas=replicas,
        log_level=args.log_level,
        cluster_endpoint=args.cluster_endpoint,
        interruption_queue=args.queue,
        region=args.region,
        service_account_annotations=(
            InstallSettings.role_annotation(args.role_arn) if args.role_arn else {}),
    )
    if args.cloud == "sim":
        sys.stdout.write(SIM_HEADER.format(replicas=replicas))
    sys.stdout.write(render_yaml(settings, include_crds=not args.skip_crds))
    return 0
