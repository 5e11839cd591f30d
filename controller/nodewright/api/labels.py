"""Which label keys a NodePool may set or require (Karpenter's restricted domains)."""

from __future__ import annotations

import re

# Labels in restricted domains that users may still set or select on.
WELL_KNOWN_KUBERNETES_LABELS = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)
WELL_KNOWN_KARPENTER_LABELS = frozenset({"karpenter.sh/capacity-type"})
WELL_KNOWN_AWS_LABELS = frozenset(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-category",
        "instance-family",
        "instance-generation",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-hypervisor",
        "instance-encryption-in-transit-supported",
        "instance-local-nvme",
        "instance-network-bandwidth",
        "instance-ebs-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
        "capacity-reservation-id",
        "capacity-reservation-type",
    )
)
# Keys that Karpenter sets itself and that may never be written by a user.
FORBIDDEN_LABELS = frozenset({"kubernetes.io/hostname", "karpenter.sh/nodepool"})

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def restricted_label_problem(key: str, *, in_requirement: bool) -> str | None:
    """Why `key` may not be used, or None when it may.

    Requirements may select on karpenter.sh/nodepool (to pin a pool); template
    labels may not set it.
    """
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    if key == "karpenter.sh/nodepool":
        return None if in_requirement else 'label "karpenter.sh/nodepool" is restricted'
    domain = _domain(key)
    if domain.endswith("karpenter.k8s.aws") and key not in WELL_KNOWN_AWS_LABELS:
        return 'label domain "karpenter.k8s.aws" is restricted'
    if domain.endswith("karpenter.sh") and key not in WELL_KNOWN_KARPENTER_LABELS:
        return 'label domain "karpenter.sh" is restricted'
    if domain.endswith("kubernetes.io") and not (
        key in WELL_KNOWN_KUBERNETES_LABELS
        or domain.endswith("node.kubernetes.io")
        or domain.endswith("node-restriction.kubernetes.io")
    ):
        return 'label domain "kubernetes.io" is restricted'
    if domain.endswith("k8s.io") and not domain.endswith("kops.k8s.io"):
        return 'label domain "k8s.io" is restricted'
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"label value {value!r} is longer than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            f"label value {value!r} must be empty or start and end with an alphanumeric "
            "character, with only '-', '_', '.' and alphanumerics between"
        )
    return None
