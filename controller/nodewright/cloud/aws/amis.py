"""Resolving amiSelectorTerms to the images nodes boot.

Aliases (al2023@latest, al2@v20240807, bottlerocket@1.20.1, windows2022@latest) go through
the public SSM parameters that EKS, Bottlerocket and Windows publish for each Kubernetes
version, architecture and variant: the standard image, and the accelerated ones (AL2023
nvidia and neuron, Bottlerocket nvidia, the AL2 GPU image) that carry the drivers GPU and
Inferentia/Trainium instance types need. Each alias image is tied to the instance types its
variants support (`image_for`), as Karpenter does; a Windows image to the types labelled
`kubernetes.io/os: windows` with its `node.kubernetes.io/windows-build`. The other terms
(id, name, owner, tags, ssmParameter) go through DescribeImages and serve every instance type
of their architecture. Of all the images found, the newest non-deprecated one per
architecture and variant wins."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws.discovery import UnmatchedTerm, tag_filters
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.ssm_parameters import ParameterCache
from nodewright.scheduling.labels import WINDOWS_BUILDS

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ssm import SSMClient

    from nodewright.api.ec2nodeclass import AMISelectorTerm

ARCH_LABEL: Final = "kubernetes.io/arch"
OS_LABEL: Final = "kubernetes.io/os"
WINDOWS_BUILD_LABEL: Final = "node.kubernetes.io/windows-build"
WINDOWS_YEARS: Final = ("2019", "2022", "2025")
# Windows Server 2025 images are published from this Kubernetes minor version on.
WINDOWS_2025_MIN_MINOR: Final = 35
# EKS publishes no AL2 images from this Kubernetes minor version on.
AL2_LAST_MINOR: Final = 32
UNSUPPORTED_ALIAS: Final = "UnsupportedAlias"
AVAILABLE: Final = "available"
AMI_NOT_FOUND: Final = "AMINotFound"
# EC2's architecture names -> kubernetes.io/arch
ARCHITECTURES: Final[dict[str, str]] = {"x86_64": "amd64", "arm64": "arm64"}
# Owners searched when a term names an image but no owner (as Karpenter does).
DEFAULT_OWNERS: Final[tuple[str, ...]] = ("self", "amazon")


STANDARD: Final = "standard"
NVIDIA: Final = "nvidia"
NEURON: Final = "neuron"
GPU_COUNT_LABEL: Final = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR_COUNT_LABEL: Final = "karpenter.k8s.aws/instance-accelerator-count"


@dataclass(frozen=True)
class Image:
    id: str
    name: str
    architecture: str  # kubernetes.io/arch value: amd64 | arm64
    creation_date: str
    deprecated: bool
    # The instance types an alias image is for: standard (no GPU, no accelerator), nvidia
    # (GPUs), neuron (AWS accelerators). Empty for images selected by id, name or tags, which
    # serve every instance type of their architecture.
    variants: tuple[str, ...] = ()
    # A Windows alias image: the build it runs, which the instance type's
    # node.kubernetes.io/windows-build label must name (and kubernetes.io/os be windows).
    windows_build: str | None = None

    def supports(self, labels: Mapping[str, str]) -> bool:
        """Whether an instance type with these labels may boot this image."""
        if labels.get(ARCH_LABEL) != self.architecture:
            return False
        if self.windows_build is not None and (
            labels.get(OS_LABEL) != "windows"
            or labels.get(WINDOWS_BUILD_LABEL) != self.windows_build
        ):
            return False
        if not self.variants:
            return True
        gpus = bool(labels.get(GPU_COUNT_LABEL))
        accelerators = bool(labels.get(ACCELERATOR_COUNT_LABEL))
        return any(
            (variant == STANDARD and not gpus and not accelerators)
            or (variant == NVIDIA and gpus)
            or (variant == NEURON and accelerators)
            for variant in self.variants
        )



def variant_requirements(variant: str) -> list[tuple[str, str]]:
    """(label key, operator) pairs that say which instance types a variant is for, as
    Karpenter writes them in the EC2NodeClass status."""
    if variant == STANDARD:
        return [(ACCELERATOR_COUNT_LABEL, "DoesNotExist"), (GPU_COUNT_LABEL, "DoesNotExist")]
    if variant == NVIDIA:
        return [(GPU_COUNT_LABEL, "Exists")]
    if variant == NEURON:
        return [(ACCELERATOR_COUNT_LABEL, "Exists")]
    return []


def image_for(labels: Mapping[str, str], images: Sequence[Image]) -> Image | None:
    """The image an instance type boots: the newest of those that support it, an image made
    for its accelerators before a general one. None when no image supports it."""
    fitting = [image for image in images if image.supports(labels)]
    if not fitting:
        return None
    return max(
        fitting,
        key=lambda i: (bool(i.variants) and STANDARD not in i.variants, not i.deprecated,
                       i.creation_date, i.id),
    )


@dataclass(frozen=True)
class AliasParameter:
    """One public SSM parameter of an alias: the image for an architecture and variants."""

    name: str
    architecture: str
    variants: tuple[str, ...]
    windows_build: str | None = None


class AliasError(ValueError):
    """An alias that cannot resolve; `reason` is the AMIsReady condition's."""

    def __init__(self, message: str, reason: str = AMI_NOT_FOUND) -> None:
        super().__init__(message)
        self.reason = reason


log = logging.getLogger(__name__)


def _minor(kubernetes_version: str) -> int | None:
    parts = kubernetes_version.split(".")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _windows_parameters(year: str, version: str, k8s: str) -> list[AliasParameter]:
    """The one Windows parameter: EKS publishes only the latest Core image per Kubernetes
    version (x86_64), so a Windows alias can only be `@latest`."""
    if version != "latest":
        raise AliasError(f"alias windows{year}@{version}: windows families may only specify "
                         "version 'latest'")
    minor = _minor(k8s)
    if year == "2025" and minor is not None and minor < WINDOWS_2025_MIN_MINOR:
        raise AliasError(f"alias windows2025@latest: Windows Server 2025 requires EKS version "
                         f"1.{WINDOWS_2025_MIN_MINOR} or higher, current version: {k8s}",
                         UNSUPPORTED_ALIAS)
    name = (f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
            f"EKS_Optimized-{k8s}/image_id")
    return [AliasParameter(name, "amd64", (), WINDOWS_BUILDS[f"Windows{year}"])]


def alias_parameter_list(alias: str, kubernetes_version: str) -> list[AliasParameter]:
    """Every SSM parameter of the alias, standard and accelerated (Karpenter's list)."""
    family, _, version = alias.partition("@")
    k8s = kubernetes_version
    latest = version == "latest"
    if family == "al2023":

        def al2023(arch: str, variant: str) -> str:
            leaf = (
                "recommended"
                if latest
                else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
            )
            base = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023"
            return f"{base}/{arch}/{variant}/{leaf}/image_id"

        return [
            AliasParameter(al2023(arch, variant), ARCHITECTURES[arch], (variant,))
            for arch, variants in (("x86_64", (STANDARD, NVIDIA, NEURON)),
                                   ("arm64", (STANDARD, NVIDIA)))
            for variant in variants
        ]
    if family == "al2":
        minor = _minor(k8s)
        if minor is not None and minor > AL2_LAST_MINOR:
            raise AliasError(
                f"alias {alias}: AL2 aliases are no longer supported on EKS 1.33+ (see "
                "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions-standard"
                ".html#kubernetes-1-33)", UNSUPPORTED_ALIAS)

        def al2(variant: str, node_prefix: str) -> str:
            leaf = "recommended" if latest else f"amazon-eks-{node_prefix}node-{k8s}-{version}"
            return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2{variant}/{leaf}/image_id"

        return [
            AliasParameter(al2("", ""), "amd64", (STANDARD,)),
            AliasParameter(al2("-arm64", "arm64-"), "arm64", (STANDARD,)),
            AliasParameter(al2("-gpu", "gpu-"), "amd64", (NEURON, NVIDIA)),
        ]
    if family == "bottlerocket":
        # Bottlerocket versions are written with a v on GitHub and without one in SSM.
        release = "latest" if latest else version.removeprefix("v")

        def bottlerocket(flavour: str, arch: str) -> str:
            return f"/aws/service/bottlerocket/aws-k8s-{k8s}{flavour}/{arch}/{release}/image_id"

        return [
            AliasParameter(bottlerocket("", "x86_64"), "amd64", (STANDARD, NEURON)),
            AliasParameter(bottlerocket("", "arm64"), "arm64", (STANDARD,)),
            AliasParameter(bottlerocket("-nvidia", "x86_64"), "amd64", (NVIDIA,)),
            AliasParameter(bottlerocket("-nvidia", "arm64"), "arm64", (NVIDIA,)),
        ]
    year = family.removeprefix("windows")
    if family.startswith("windows") and year in WINDOWS_YEARS:
        return _windows_parameters(year, version, k8s)
    raise AliasError(
        f"alias {alias!r}: family {family!r} has no SSM parameters "
        "(supported: al2023, al2, bottlerocket, windows2019, windows2022, windows2025)"
    )


def _image_of(raw: Any, now: datetime) -> Image | None:
    arch = ARCHITECTURES.get(str(raw.get("Architecture", "")))
    if arch is None or raw.get("State", AVAILABLE) != AVAILABLE:
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
        paginator = ec2.get_paginator("describe_images")
        # Only images that can launch (pending, failed, deregistered... are left out).
        filters = [*request.pop("Filters", []), {"Name": "state", "Values": [AVAILABLE]}]
        for page in paginator.paginate(IncludeDeprecated=True, Filters=filters, **request):
            for raw in page.get("Images", []):
                image = _image_of(raw, now)
                if image is not None:
                    images.append(image)
    return images


def newest_per_architecture(images: Sequence[Image]) -> list[Image]:
    """One image per architecture and variants: non-deprecated beats deprecated; then the
    newest creation date; then the greater name (Karpenter's compareAMI); then the id."""
    best: dict[tuple[str, tuple[str, ...], str], Image] = {}

    def rank(image: Image) -> tuple[bool, str, str, str]:
        return (not image.deprecated, image.creation_date, image.name, image.id)

    for image in images:
        key = (image.architecture, image.variants, image.windows_build or "")
        current = best.get(key)
        if current is None or rank(image) > rank(current):
            best[key] = image
    return [best[key] for key in sorted(best)]


def resolve_amis(
    ec2: EC2Client,
    ssm: SSMClient,
    terms: Sequence[AMISelectorTerm],
    kubernetes_version: str,
    now: datetime | None = None,
    parameters: ParameterCache | None = None,
) -> tuple[list[Image], list[UnmatchedTerm]]:
    """`parameters`: the SSM cache to read through (a fresh one reads every parameter)."""
    now = now or datetime.now(UTC)
    parameters = parameters or ParameterCache(ssm)
    found: list[Image] = []
    unmatched: list[UnmatchedTerm] = []
    for index, term in enumerate(terms):
        where = f"amiSelectorTerms[{index}]"
        images: list[Image] = []
        if term.alias:
            variants: dict[str, tuple[str, ...]] = {}
            builds: dict[str, str] = {}
            # A `latest` alias's parameters change with each release (invalidated when
            # their image is deprecated); a pinned version's never do.
            mutable = term.alias.endswith("@latest")
            for parameter in alias_parameter_list(term.alias, kubernetes_version):
                image_id = parameters.get(parameter.name, custom=False, mutable=mutable,
                                          resource=f"{where} alias {term.alias}")
                if image_id:
                    variants[image_id] = (*variants.get(image_id, ()), *parameter.variants)
                    if parameter.windows_build is not None:
                        builds[image_id] = parameter.windows_build
            if variants:
                described = _describe(
                    ec2, f"{where} alias {term.alias}", now,
                    Filters=[{"Name": "image-id", "Values": sorted(variants)}],
                )
                images = [
                    replace(image, variants=tuple(sorted(set(variants[image.id]))),
                            windows_build=builds.get(image.id))
                    for image in described
                ]
        elif term.ssm_parameter and not term.id:  # Karpenter: an id wins over the parameter
            image_id = parameters.get(term.ssm_parameter, custom=True,
                                      resource=f"{where} {term.ssm_parameter}")
            if image_id and not image_id.startswith("ami-"):
                # As Karpenter: a value that is no image id matches nothing.
                log.warning("%s: ssm parameter %s holds %r, not an AMI id; skipped", where,
                            term.ssm_parameter, image_id)
            elif image_id:
                images = _describe(ec2, where, now,
                                   Filters=[{"Name": "image-id", "Values": [image_id]}])
        else:
            request: dict[str, Any] = {}
            filters = tag_filters(term.tags or {})
            if term.id:
                # A filter, as Karpenter queries ids: an id that does not exist (or is not
                # an id) matches nothing instead of failing the whole resolution.
                filters.append({"Name": "image-id", "Values": [term.id]})
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
