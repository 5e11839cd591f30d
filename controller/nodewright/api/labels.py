"""Which label keys a NodePool may set or require (Karpenter's restricted domains)."""

from __future__ import annotations

import re

# Karpenter's WellKnownLabels in the restricted domains: what a NodePool may require or set
# and a pod may select there. The AWS provider's are those its pkg/apis/v1/labels.go
# (v1.14.1) init() inserts; the node class label is not one of them.
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
        "capacity-reservation-interruptible",
        "instance-tenancy",
        "placement-group-id",
        "placement-group-partition",
    )
)
NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
# The karpenter.k8s.aws keys the CRDs (karpenter.sh_nodepools.yaml, _nodeclaims.yaml) let
# through: the well-known ones and the node class label, which the controller writes on
# every NodeClaim. A NodePool naming the node class label still fails RuntimeValidate, and
# a pod selecting it is ignored (`runtime_restricted_label`).
CRD_AWS_LABELS = WELL_KNOWN_AWS_LABELS | {NODECLASS_LABEL}
# Keys that Karpenter sets itself and that may never be written by a user.
FORBIDDEN_LABELS = frozenset({"kubernetes.io/hostname", "karpenter.sh/nodepool"})
# Karpenter's WellKnownLabels (core pkg/apis/v1/labels.go and the AWS provider's init()).
WELL_KNOWN_LABELS = frozenset({
    "karpenter.sh/nodepool",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "node.kubernetes.io/windows-build",
    "topology.k8s.aws/zone-id",
}) | WELL_KNOWN_KARPENTER_LABELS | WELL_KNOWN_AWS_LABELS
RESTRICTED_LABEL_DOMAINS = ("karpenter.k8s.aws", "karpenter.sh")
RESTRICTED_LABELS = frozenset({"kubernetes.io/hostname"})

CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TENANCY = "karpenter.k8s.aws/instance-tenancy"
# Karpenter's WellKnownValuesForRequirements: labels whose values are known.
WELL_KNOWN_VALUES: dict[str, frozenset[str]] = {
    CAPACITY_TYPE: frozenset({"on-demand", "spot", "reserved"}),
    # The AWS provider adds its tenancies (aws pkg/apis/v1/labels.go init).
    INSTANCE_TENANCY: frozenset({"dedicated", "default"}),
}


def well_known_values_problem(key: str, operator: str, values: list[str],
                              min_values: int | None = None) -> str | None:
    """Karpenter's validateWellKnownValues: an `In` on a label with known values must name
    at least one of them (and, with minValues, that many)."""
    known = WELL_KNOWN_VALUES.get(key)
    if known is None or operator != "In":
        return None
    valid = [value for value in values if value in known]
    invalid = [value for value in values if value not in known]
    expected = " ".join(sorted(known))
    if not valid:
        return (f"no valid values found in [{' '.join(values)}] for {key}, expected one of: "
                f"[{expected}], got: [{' '.join(invalid)}]")
    if min_values is not None and len(valid) < min_values:
        return (f"not enough valid values found in [{' '.join(values)}] for {key}, expected "
                f"at least {min_values} valid values from: [{expected}], got: {len(valid)}")
    return None


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def restricted_label_problem(key: str, *, allow_nodepool: bool = False) -> str | None:
    """Why `key` may not be used, or None when it may.

    Only a NodeClaim may name karpenter.sh/nodepool (the controller writes it there);
    NodePool labels and requirements may not.
    """
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    if key == "karpenter.sh/nodepool":
        return None if allow_nodepool else 'label "karpenter.sh/nodepool" is restricted'
    domain = _domain(key)
    if domain.endswith("karpenter.k8s.aws") and key not in CRD_AWS_LABELS:
        return 'label domain "karpenter.k8s.aws" is restricted'
    if domain.endswith("karpenter.sh") and key not in WELL_KNOWN_KARPENTER_LABELS:
        return 'label domain "karpenter.sh" is restricted'
    # Karpenter v1 lets NodePools set labels in the kubernetes.io and k8s.io domains (its
    # CRDs restrict only the two domains above and the hostname and nodepool labels).
    return None


def runtime_restricted_label(key: str) -> str | None:
    """Karpenter's IsRestrictedLabel (RuntimeValidate of a NodePool's labels and
    requirements, and the provisioner's check of a pod's): a key in a restricted domain
    that is not well-known, or kubernetes.io/hostname, with Karpenter's message."""
    if key in WELL_KNOWN_LABELS:
        return None
    domain = _domain(key)
    restricted = key in RESTRICTED_LABELS or any(
        domain == name or domain.endswith(f".{name}") for name in RESTRICTED_LABEL_DOMAINS)
    if not restricted:
        return None
    known = " ".join(sorted(WELL_KNOWN_LABELS))
    return (f"using label {key} is not allowed as it might interfere with the internal "
            f"provisioning logic; specify a well known label: [{known}], or a custom label "
            f"that does not use a restricted domain: "
            f"[{' '.join(sorted(RESTRICTED_LABEL_DOMAINS))}]")


MAX_KEY_PREFIX = 253
MAX_KEY_NAME = 63


def key_length_problem(key: str) -> str | None:
    """Kubernetes' IsQualifiedName bounds, which Karpenter's RuntimeValidate checks on label,
    taint and requirement keys (the CRDs' patterns do not bound the parts)."""
    prefix, _, name = key.rpartition("/")
    if len(prefix) > MAX_KEY_PREFIX:
        return (f"key {key!r}: the prefix before '/' must be at most {MAX_KEY_PREFIX} "
                "characters")
    if len(name) > MAX_KEY_NAME:
        return f"key {key!r}: the name after any '/' must be at most {MAX_KEY_NAME} characters"
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


def _domain_cel(subject: str) -> str:
    return f'{subject}.find("^([^/]+)")'


def label_key_cel_rules(subject: str, *, allow_nodepool: bool = False) -> list[dict[str, str]]:
    """The same restrictions as CEL over `subject` (a key expression such as `self.key`)."""
    domain = _domain_cel(subject)
    karpenter_keys = WELL_KNOWN_KARPENTER_LABELS | {"karpenter.sh/nodepool"}

    def listed(keys: frozenset[str]) -> str:
        return "[" + ", ".join(f"'{key}'" for key in sorted(keys)) + "]"

    rules = [
        {
            "message": 'label "kubernetes.io/hostname" is restricted',
            "rule": f"{subject} != 'kubernetes.io/hostname'",
        },
        {
            "message": 'label domain "karpenter.sh" is restricted',
            "rule": f"{subject} in {listed(karpenter_keys)} || "
            f"!{domain}.endsWith('karpenter.sh')",
        },
        {
            "message": 'label domain "karpenter.k8s.aws" is restricted',
            "rule": f"{subject} in {listed(CRD_AWS_LABELS)} || "
            f"!{domain}.endsWith('karpenter.k8s.aws')",
        },
    ]
    if not allow_nodepool:
        rules.append({
            "message": 'label "karpenter.sh/nodepool" is restricted',
            "rule": f"{subject} != 'karpenter.sh/nodepool'",
        })
    return rules


def map_key_cel_rules() -> list[dict[str, str]]:
    """The restrictions for every key of a label map (NodePool template labels)."""
    return [
        {"message": rule["message"], "rule": f"self.all(x, {rule['rule']})"}
        for rule in label_key_cel_rules("x")
    ]
