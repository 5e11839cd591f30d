"""`nodewright aws`: debug an EC2NodeClass's selectors and a node's user data against AWS
(or any AWS-compatible endpoint: boto3 honours AWS_ENDPOINT_URL)."""

from __future__ import annotations

import argparse
import base64
import binascii
import ipaddress
import json
import os
import re
import sys
from typing import Any, TypeVar
from urllib.parse import urlsplit

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.manifests import load_documents
from nodewright.api.nodepool import NodePool
from nodewright.api.validation import parse_document
from nodewright.cli.output import add_format_option
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.cluster_info import describe_cluster
from nodewright.cloud.aws.node_class_resolution import Resolution, resolve_node_class
from nodewright.cloud.aws.node_identity import bootstrap_for_nodepool
from nodewright.cloud.aws.userdata import ClusterInfo, render_user_data
from nodewright.cloud.provider import CloudProviderError

ModelT = TypeVar("ModelT", EC2NodeClass, NodePool)


class InputError(Exception):
    """Bad input, already phrased for the user."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("aws")
    commands = parser.add_subparsers(dest="aws_command", metavar="COMMAND", required=True)

    discover = commands.add_parser(
        "discover", help="print the subnets, security groups and AMIs an EC2NodeClass selects"
    )
    discover.add_argument("--nodeclass", required=True, help="file holding the EC2NodeClass")
    discover.add_argument("--cluster", required=True, help="EKS cluster name")
    discover.add_argument("--region", help="AWS region (default: AWS_REGION/AWS_DEFAULT_REGION)")
    discover.add_argument(
        "--kubernetes-version",
        help="Kubernetes version for AMI aliases (default: from eks:DescribeCluster)",
    )
    add_format_option(discover)
    discover.set_defaults(func=run_discover)

    userdata = commands.add_parser("userdata", help="print the user data a node would boot with")
    userdata.add_argument("--nodeclass", required=True, help="file holding the EC2NodeClass")
    userdata.add_argument("--nodepool", help="file holding the NodePool (labels, taints)")
    userdata.add_argument("--cluster", required=True, help="EKS cluster name")
    userdata.add_argument(
        "--endpoint", required=True, type=https_url, help="API server endpoint (https URL)"
    )
    userdata.add_argument(
        "--ca-bundle",
        required=True,
        type=ca_bundle,
        help="cluster CA bundle: base64 of the PEM certificate(s), as eks:DescribeCluster gives it",
    )
    userdata.add_argument(
        "--service-cidr",
        default="10.100.0.0/16",
        help="cluster service CIDR (AL2023 needs it; default 10.100.0.0/16)",
    )
    userdata.add_argument(
        "--kube-dns-ip",
        type=ip_address,
        help="the kube-dns Service's cluster IP, which the controller reads at start-up: the "
        "nodes' cluster DNS unless spec.kubelet.clusterDNS is set (an IPv6 one makes an IPv6 "
        "cluster)",
    )
    userdata.add_argument("--instance-type", help="fill max pods from this instance type")
    userdata.add_argument(
        "--region",
        default="us-east-1",
        help="region whose catalog gives --instance-type's max pods",
    )
    userdata.set_defaults(func=run_userdata)


def ip_address(value: str) -> str:
    """argparse type: an IPv4 or IPv6 address."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an IP address") from None


def https_url(value: str) -> str:
    """argparse type: an https URL with a host (what bootstrap.sh, nodeadm and Bottlerocket
    need to reach the API server)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{value!r} is not a URL: {error}") from error
    if parts.scheme != "https" or not host or any(c.isspace() for c in value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an https URL "
            "(expected the cluster's endpoint, e.g. https://ABCDEF.gr7.us-west-2.eks.amazonaws.com)"
        )
    return value


_PEM_CERTIFICATE = re.compile(
    r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL
)


def ca_bundle(value: str) -> str:
    """argparse type: base64 of one or more PEM certificates."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    try:
        pem = base64.b64decode(value.strip(), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(
            f"not base64 of a PEM certificate ({error}); pass the cluster's "
            "certificateAuthority.data from eks:DescribeCluster"
        ) from error
    blocks = _PEM_CERTIFICATE.findall(pem)
    if not blocks:
        raise argparse.ArgumentTypeError(
            "decodes to no PEM certificate (no -----BEGIN CERTIFICATE----- block); pass the "
            "cluster's certificateAuthority.data from eks:DescribeCluster"
        )
    for number, block in enumerate(blocks, start=1):
        body = "".join(block.split())
        try:
            if not base64.b64decode(body, validate=True):
                raise binascii.Error("empty")
        except binascii.Error as error:
            raise argparse.ArgumentTypeError(
                f"certificate {number} of the decoded PEM is not base64 DER ({error})"
            ) from error
    return value.strip()


def _load(path: str, model_type: type[ModelT]) -> ModelT:
    kind = model_type.__name__
    documents, problems = load_documents([path])
    if problems:
        raise InputError("\n".join(problem.format() for problem in problems))
    matching = [document for document in documents if document.kind == kind]
    if len(matching) != 1:
        raise InputError(f"{path}: expected exactly one {kind}, found {len(matching)}")
    model, problems = parse_document(matching[0])
    if problems or not isinstance(model, model_type):
        raise InputError("\n".join(problem.format() for problem in problems))
    return model


def _region(requested: str | None) -> str:
    region = requested or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise InputError("--region: no region given and AWS_REGION is not set")
    return region


def _discovery_json(resolution: Resolution) -> dict[str, Any]:
    return {
        "subnets": [
            {"id": s.id, "zone": s.zone, "zoneID": s.zone_id, "freeIPs": s.free_ips}
            for s in resolution.subnets
        ],
        "securityGroups": [{"id": g.id, "name": g.name} for g in resolution.security_groups],
        "amis": [
            {"id": i.id, "name": i.name, "architecture": i.architecture, "deprecated": i.deprecated}
            for i in resolution.images
        ],
        "unmatched": [{"field": t.field, "term": dict(t.term)} for t in resolution.unmatched],
        "problems": dict(sorted(resolution.problems.items())),
    }


def _discovery_text(resolution: Resolution) -> str:
    lines = [f"Subnets ({len(resolution.subnets)}):"]
    lines += [
        f"  {s.id}  {s.zone}  {s.zone_id}  free IPs: {s.free_ips}" for s in resolution.subnets
    ]
    lines.append(f"Security groups ({len(resolution.security_groups)}):")
    lines += [f"  {g.id}  {g.name}" for g in resolution.security_groups]
    lines.append(f"AMIs ({len(resolution.images)}):")
    lines += [
        f"  {i.id}  {i.architecture}  {i.name}{'  (deprecated)' if i.deprecated else ''}"
        for i in resolution.images
    ]
    if resolution.unmatched:
        lines.append("Selector terms that matched nothing:")
        lines += [f"  {term.describe()}" for term in resolution.unmatched]
    for kind, problem in sorted(resolution.problems.items()):
        lines.append(f"Not ready: {kind}: {problem}")
    return "\n".join(lines) + "\n"


def run_discover(args: argparse.Namespace) -> int:
    try:
        node_class = _load(args.nodeclass, EC2NodeClass)
        clients = AwsClients.create(_region(args.region))
        version = (
            args.kubernetes_version
            or describe_cluster(clients.eks, args.cluster).kubernetes_version
        )
        resolution = resolve_node_class(
            clients,
            node_class,
            cluster=args.cluster,
            kubernetes_version=version,
            with_instance_profile=False,
        )
    except (InputError, CloudProviderError) as error:
        sys.stderr.write(f"error: {error}\n")
        return 1
    if args.format == "json":
        sys.stdout.write(json.dumps(_discovery_json(resolution), indent=2) + "\n")
    else:
        sys.stdout.write(_discovery_text(resolution))
    complete = resolution.subnets and resolution.security_groups and resolution.images
    return 0 if complete else 1


def _max_pods(instance_type: str | None, region: str, node_class: EC2NodeClass) -> int | None:
    if instance_type is None:
        return None
    from nodewright.api.quantity import PODS
    from nodewright.scheduling.catalog import offline_catalog

    for candidate in offline_catalog(region, node_class=node_class):
        if candidate.name == instance_type:
            pods = candidate.capacity.get(PODS)
            return pods // 1000 if pods is not None else None
    raise InputError(f"--instance-type: {instance_type} is not offered in {region}")


def run_userdata(args: argparse.Namespace) -> int:
    try:
        node_class = _load(args.nodeclass, EC2NodeClass)
        nodepool = _load(args.nodepool, NodePool) if args.nodepool else None
        cluster = ClusterInfo(args.cluster, args.endpoint, args.ca_bundle, args.service_cidr,
                              dns_ip=args.kube_dns_ip)
        bootstrap = bootstrap_for_nodepool(
            cluster, node_class, nodepool, _max_pods(args.instance_type, args.region, node_class)
        )
        try:
            text = render_user_data(node_class.resolved_ami_family(), bootstrap)
        except ValueError as error:  # the node class's spec.userData: say which file
            raise InputError(f"{args.nodeclass}: {error}") from error
    except (InputError, ValueError) as error:
        sys.stderr.write(f"error: {error}\n")
        return 1
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return 0
