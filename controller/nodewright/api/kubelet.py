"""EC2NodeClass spec.kubelet: Karpenter v1.14.1's typed KubeletConfiguration.

Eleven kubelet settings, each checked by the API server when the EC2NodeClass is applied
(aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/ec2nodeclass.go and its CRD): reservation
keys and eviction signals from fixed lists, quantities and percentages by pattern, no
negative reservation, image-GC high above low, and every soft eviction threshold paired
with a grace period. Any other field is not part of the schema (the API server prunes it;
`nodewright validate` names it). Karpenter's unreleased `main` opens spec.kubelet to every
upstream KubeletConfiguration field; v1.14.1 does not, and neither does Nodewright.

The one thing the CRD leaves unchecked is the form of evictionSoftGracePeriod's values (a
metav1.Duration, stored as a plain string): `kubelet_problems` finds a value that is not a
duration, which sets ValidationSucceeded=False on the node class rather than launching
nodes whose kubelet would not start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Final, Literal, get_args

from pydantic import Field, JsonValue, StringConstraints

from nodewright.api.base import CelRule, KubeModel, cel_extra
from nodewright.api.formats import PERCENT_OR_QUANTITY_PATTERN, QUANTITY_PATTERN, parse_duration
from nodewright.api.problems import FieldPath

EvictionSignal = Literal[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
]
ReservedResource = Literal["cpu", "memory", "ephemeral-storage", "pid"]
EVICTION_SIGNALS: Final = get_args(EvictionSignal)
RESERVED_RESOURCES: Final = get_args(ReservedResource)

# Karpenter's CRD types these values as strings with a pattern (not int-or-string).
ReservedQuantity = Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)]
Threshold = Annotated[str, StringConstraints(pattern=PERCENT_OR_QUANTITY_PATTERN)]
Int32 = Annotated[int, Field(ge=-(1 << 31), le=(1 << 31) - 1)]

Finding = tuple[FieldPath, str]


def _not_negative(field: str) -> dict[str, JsonValue]:
    return cel_extra([{
        "rule": "self.all(x, !self[x].startsWith('-'))",
        "message": f"{field} value cannot be a negative resource quantity",
    }])


class KubeletConfiguration(KubeModel):
    """Kubelet settings for the nodes of this class: a subset of the upstream
    KubeletConfiguration, with the upstream names and types."""

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: Int32 | None = Field(default=None, ge=0)
    pods_per_core: Int32 | None = Field(default=None, ge=0)
    # Each map holds at most one entry per key it allows: a bound Karpenter's CRD leaves out,
    # which no valid object can exceed, so that its rules never read an unbounded map.
    system_reserved: dict[ReservedResource, ReservedQuantity] | None = Field(
        default=None, max_length=len(RESERVED_RESOURCES),
        json_schema_extra=_not_negative("systemReserved"))
    kube_reserved: dict[ReservedResource, ReservedQuantity] | None = Field(
        default=None, max_length=len(RESERVED_RESOURCES),
        json_schema_extra=_not_negative("kubeReserved"))
    eviction_hard: dict[EvictionSignal, Threshold] | None = Field(
        default=None, max_length=len(EVICTION_SIGNALS))
    eviction_soft: dict[EvictionSignal, Threshold] | None = Field(
        default=None, max_length=len(EVICTION_SIGNALS))
    eviction_soft_grace_period: dict[EvictionSignal, str] | None = Field(
        default=None, max_length=len(EVICTION_SIGNALS))
    eviction_max_pod_grace_period: Int32 | None = None
    image_gc_high_threshold_percent: Int32 | None = Field(
        default=None, ge=0, le=100, alias="imageGCHighThresholdPercent")
    image_gc_low_threshold_percent: Int32 | None = Field(
        default=None, ge=0, le=100, alias="imageGCLowThresholdPercent")
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")

    cel_rules = (
        CelRule(
            "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ? "
            " self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        ),
        CelRule(
            "has(self.evictionSoft) ? self.evictionSoft.all(e, "
            "(e in self.evictionSoftGracePeriod)):true",
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        ),
        CelRule(
            "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
            "(e in self.evictionSoft)):true",
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
        ),
    )


def admission_problems(kubelet: KubeletConfiguration) -> Iterator[Finding]:
    """The CRD's rules that span a map or two fields (its CEL rules), for `nodewright
    validate`: the field types and patterns are the model's own."""
    here: FieldPath = ("spec", "kubelet")
    for field, reserved in (("systemReserved", kubelet.system_reserved),
                            ("kubeReserved", kubelet.kube_reserved)):
        for resource, quantity in sorted((reserved or {}).items()):
            if quantity.startswith("-"):
                yield (*here, field, resource), (
                    f"{field} value cannot be a negative resource quantity")
    high, low = kubelet.image_gc_high_threshold_percent, kubelet.image_gc_low_threshold_percent
    if high is not None and low is not None and high <= low:
        yield here, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
    soft = set(kubelet.eviction_soft or {})
    grace = set(kubelet.eviction_soft_grace_period or {})
    if kubelet.eviction_soft is not None and soft - grace:
        yield here, "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"
    if kubelet.eviction_soft_grace_period is not None and grace - soft:
        yield here, "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft"


def kubelet_problems(kubelet: KubeletConfiguration | None) -> list[Finding]:
    """What the API server lets through but no kubelet takes: a grace period that is not a
    non-negative duration (Karpenter decodes it into a metav1.Duration)."""
    if kubelet is None:
        return []
    findings: list[Finding] = []
    for signal, period in sorted((kubelet.eviction_soft_grace_period or {}).items()):
        here: FieldPath = ("spec", "kubelet", "evictionSoftGracePeriod", signal)
        try:
            if parse_duration(period, allow_negative=True) < 0:
                findings.append((here, f"{period!r} can't be a negative duration"))
        except ValueError as error:
            findings.append((here, str(error)))
    return findings
