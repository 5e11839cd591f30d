"""EKS cluster rules: control-plane logs, secrets encryption, no world-open public endpoint.

Both the pulumi-eks component (eks:index:Cluster) and the plain
aws:eks/cluster:Cluster are covered; their property names differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.policy.fields import dig, items_of, strings_of
from nodewright.policy.rule import Enforcement, FieldPath, Rule, RuleContext, Violation

EKS_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
WORLD = frozenset({"0.0.0.0/0", "::/0"})


def _is_component(props: Mapping[str, Any]) -> bool:
    """pulumi-eks takes flat inputs; aws.eks.Cluster always has a vpcConfig block."""
    return "vpcConfig" not in props and "encryptionConfig" not in props


def check_logging(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    enabled = set(strings_of(props.get("enabledClusterLogTypes")))
    required = strings_of(context.option("requiredLogTypes"))
    missing = [kind for kind in required if kind not in enabled]
    if missing:
        yield Violation(
            f"control-plane log type(s) {', '.join(missing)} are not enabled.",
            ("enabledClusterLogTypes",),
        )


def _encrypts_secrets(props: Mapping[str, Any]) -> bool:
    if props.get("encryptionConfigKeyArn"):
        return True
    configs = props.get("encryptionConfig")
    entries = [configs] if isinstance(configs, Mapping) else [c for _, c in items_of(configs)]
    return any(
        "secrets" in strings_of(dig(entry, "resources")) and dig(entry, "provider", "keyArn")
        for entry in entries
    )


def check_secrets_encryption(
    props: Mapping[str, Any], context: RuleContext
) -> Iterator[Violation]:
    if not _encrypts_secrets(props):
        yield Violation(
            "Kubernetes secrets are not envelope-encrypted with a KMS key.",
            ("encryptionConfigKeyArn",) if _is_component(props) else ("encryptionConfig",),
        )


def check_public_endpoint(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    if not context.production:
        return
    component = _is_component(props)
    prefix: FieldPath = () if component else ("vpcConfig",)
    public = dig(props, *prefix, "endpointPublicAccess")
    if public is False:
        return
    cidrs = dig(props, *prefix, "publicAccessCidrs")
    # Both default to a public endpoint open to 0.0.0.0/0 when unset.
    open_to = sorted(set(strings_of(cidrs)) & WORLD) if cidrs is not None else ["0.0.0.0/0"]
    if open_to:
        yield Violation(
            f"the public API endpoint is open to {', '.join(open_to)} in the "
            f"{context.environment} environment.",
            (*prefix, "publicAccessCidrs"),
        )


CLUSTER_TYPES = (EKS_COMPONENT, EKS_CLUSTER)

CONTROL_PLANE_LOGGING = Rule(
    name="eks-control-plane-logging",
    description="EKS clusters send the required control-plane log types to CloudWatch.",
    remediation=(
        "set enabled_cluster_log_types to include every required type, e.g. [\"api\", \"audit\", "
        "\"authenticator\", \"controllerManager\", \"scheduler\"]."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_logging,
    resource_types=CLUSTER_TYPES,
    options={
        "requiredLogTypes": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": ["api", "audit", "authenticator"],
            "description": "Control-plane log types that must be enabled.",
        }
    },
)

SECRETS_ENCRYPTION = Rule(
    name="eks-secrets-encryption",
    description="EKS clusters envelope-encrypt Kubernetes secrets with a KMS key.",
    remediation=(
        "create an aws.kms.Key with rotation and pass its ARN as encryption_config_key_arn "
        "(pulumi-eks) or encryption_config={resources: [\"secrets\"], provider: {key_arn: ...}} "
        "(aws.eks.Cluster)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_secrets_encryption,
    resource_types=CLUSTER_TYPES,
)

NO_OPEN_PUBLIC_ENDPOINT = Rule(
    name="eks-no-open-public-endpoint-in-production",
    description=(
        "In production, the EKS API endpoint is private or its public access is limited to "
        "known CIDR blocks (never 0.0.0.0/0)."
    ),
    remediation=(
        "set endpoint_public_access=False (reach the API from inside the VPC), or set "
        "public_access_cidrs to your office/VPN ranges."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_public_endpoint,
    resource_types=CLUSTER_TYPES,
)

EKS_RULES: tuple[Rule, ...] = (CONTROL_PLANE_LOGGING, SECRETS_ENCRYPTION, NO_OPEN_PUBLIC_ENDPOINT)
