"""Resolving amiSelectorTerms to one image per architecture.

Aliases (al2023@latest, al2@v20240807, bottlerocket@1.20.1) go through the public SSM
parameters that EKS and Bottlerocket publish for each Kubernetes version and architecture;
the other terms (id, name, owner, tags, ssmParameter) go through DescribeImages. Of all the
images found, the newest non-deprecated one per architecture wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws.discovery import UnmatchedTerm, tag_filters
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ssm import SSMClient

    from nodewright.api.ec2nodeclass import AMISelectorTerm

# EC2's architecture names -> kubernetes.io/arch
ARCHITECTURES: Final[dict[str, str]] = {"x86_64": "amd64", "arm64": "arm64"}
# Owners searched when a term names an image but no owner (as Karpenter does).
DEFAULT_OWNERS: Final[tuple[str, ...]] = ("self", "amazon")


@dataclass(frozen=True)
class Image:
    id: str
    name: str
    architecture: str  # kubernetes.io/arch value: amd64 | arm64
    creation_date: str
    deprecated: bool


class AliasError(ValueError):
    pass


def alias_parameters(alias: str, kubernetes_version: str) -> dict[str, str]:
    """kubernetes.io/arch -> the SSM parameter holding the image id for this alias."""
    family, _, version = alias.partition("@")
    k8s = kubernetes_version
    if family == "al2023":

        def al2023(arch: str) -> str:
            leaf = (
                "recommended"
                if version == "latest"
                else f"amazon-eks-node-al2023-{arch}-standard-{k8s}-{version}"
            )
            base = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023"
            return f"{base}/{arch}/standard/{leaf}/image_id"

        return {"amd64": al2023("x86_64"), "arm64": al2023("arm64")}
    if family == "al2":

        def al2(variant: str, node_prefix: str) -> str:
            leaf = (
                "recommended"
                if version == "latest"
                else f"amazon-eks-{node_prefix}node-{k8s}-{version}"
            )
            return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2{variant}/{leaf}/image_id"

        return {"amd64": al2("", ""), "arm64": al2("-arm64", "arm64-")}
    if family == "bottlerocket":
        release = "latest" if version == "latest" else version.removeprefix("v")
        return {
            "amd64": f"/aws/service/bottlerocket/aws-k8s-{k8s}/x86_64/{release}/image_id",
            "arm64": f"/aws/service/bottlerocket/aws-k8s-{k8s}/arm64/{release}/image_id",
        }
    raise AliasError(
        f"alias {alias!r}: family {family!r} has no Linux SSM parameters here "
        "(supported: al2023, al2, bottlerocket)"
    )


def _parameter(ssm: SSMClient, name: str, resource: str) -> str | None:
    try:
        with aws_call("ssm:GetParameter", f"{resource} ({name})"):
            return ssm.get_parameter(Name=name)["Parameter"].get("Value")
    except CloudProviderError as error:
        if error.code == "ParameterNotFound":
            return None
        raise


def _image_of(raw: Any, now: datetime) -> Image | None:
    arch = ARCHITECTURES.get(str(raw.get("Architecture", "")))
    if arch is None:
        return None
    deprecation = raw.get("DeprecationTime")
    deprecated = False
    if deprecation:
        when = datetime.fromisoformat(str(deprecation).replace("Z", "+00:00"))
        deprecated = when <= now
    return Image(
        id=raw["ImageId"],
        name=str(raw.get("Name", "")),
        architecture=arch,
        creation_date=str(raw.get("CreationDate", "")),
        deprecated=deprecated,
    )


def _describe(ec2: EC2Client, resource: str, now: datetime, **request: Any) -> list[Image]:
    images: list[Image] = []
    with aws_call("ec2:DescribeImages", resource):
        for page in ec2.get_paginator("describe_images").paginate(**request):
            for raw in page.get("Images", []):
                image = _image_of(raw, now)
                if image is not None:
                    images.append(image)
    return images


def newest_per_architecture(images: Sequence[Image]) -> list[Image]:
    """Non-deprecated beats deprecated; then the newest creation date; then the id."""
    best: dict[str, Image] = {}
    for image in images:
        current = best.get(image.architecture)
        rank = (not image.deprecated, image.creation_date, image.id)
        if current is None or rank > (not current.deprecated, current.creation_date, current.id):
            best[image.architecture] = image
    return [best[arch] for arch in sorted(best)]


def resolve_amis(
    ec2: EC2Client,
    ssm: SSMClient,
    terms: Sequence[AMISelectorTerm],
    kubernetes_version: str,
    now: datetime | None = None,
) -> tuple[list[Image], list[UnmatchedTerm]]:
    now = now or datetime.now(UTC)
    found: list[Image] = []
    unmatched: list[UnmatchedTerm] = []
    for index, term in enumerate(terms):
        where = f"amiSelectorTerms[{index}]"
        images: list[Image] = []
        if term.alias:
            ids = [
                image_id
                for parameter in alias_parameters(term.alias, kubernetes_version).values()
                if (image_id := _parameter(ssm, parameter, f"{where} alias {term.alias}"))
            ]
            if ids:
                images = _describe(ec2, f"{where} alias {term.alias}", now, ImageIds=ids)
        elif term.ssm_parameter:
            image_id = _parameter(ssm, term.ssm_parameter, f"{where} {term.ssm_parameter}")
            if image_id:
                images = _describe(ec2, where, now, ImageIds=[image_id])
        else:
            request: dict[str, Any] = {}
            filters = tag_filters(term.tags or {})
            if term.id:
                request["ImageIds"] = [term.id]
            if term.name:
                filters.append({"Name": "name", "Values": [term.name]})
            if term.owner:
                request["Owners"] = [term.owner]
            elif term.name:
                request["Owners"] = list(DEFAULT_OWNERS)
            if filters:
                request["Filters"] = filters
            images = _describe(ec2, where, now, **request)
        if not images:
            unmatched.append(
                UnmatchedTerm(where, term.model_dump(by_alias=True, exclude_none=True))
            )
        found.extend(images)
    return newest_per_architecture(found), unmatched
