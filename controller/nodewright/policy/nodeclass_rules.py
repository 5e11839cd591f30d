"""Rules for EC2NodeClass (karpenter.k8s.aws/v1): instance metadata, disks, network, tags, AMIs.

Each check takes the object as Kubernetes carries it (apiVersion, kind,
metadata, spec; camelCase) and reports the field path of what is wrong.
Fields left unset fall back to Karpenter's defaults, which are safe
(httpTokens required, hop limit 1, encrypted default root volume), so only
values written explicitly can violate those rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.policy.fields import dig, is_true, items_of, mapping_of, strings_of
from nodewright.policy.rule import Enforcement, Rule, RuleContext, Violation

KIND = "EC2NodeClass"
PULUMI_TYPE = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def check_imds(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    options_path = ("spec", "metadataOptions")
    tokens = dig(body, *options_path, "httpTokens")
    if tokens is not None and tokens != "required":
        yield Violation(
            f"metadataOptions.httpTokens is {tokens!r}: pods could read the node role's "
            "credentials through IMDSv1.",
            (*options_path, "httpTokens"),
        )
    hop_limit = dig(body, *options_path, "httpPutResponseHopLimit")
    maximum = int(context.option("maxHopLimit"))
    is_number = isinstance(hop_limit, int | float) and not isinstance(hop_limit, bool)
    if is_number and hop_limit > maximum:
        yield Violation(
            f"metadataOptions.httpPutResponseHopLimit is {hop_limit:g}, above the allowed "
            f"{maximum}: containers would reach the instance metadata service.",
            (*options_path, "httpPutResponseHopLimit"),
        )


def check_block_devices(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    mappings_path = ("spec", "blockDeviceMappings")
    for index, mapping in items_of(dig(body, *mappings_path)):
        device = dig(mapping, "deviceName") or f"#{index}"
        encrypted = dig(mapping, "ebs", "encrypted")
        if not is_true(encrypted):
            state = "not set" if encrypted is None else repr(encrypted)
            yield Violation(
                f"block device {device} is not encrypted (ebs.encrypted is {state}).",
                (*mappings_path, index, "ebs", "encrypted"),
            )


def check_public_ip(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    path = ("spec", "associatePublicIPAddress")
    if is_true(dig(body, *path)):
        yield Violation(
            "associatePublicIPAddress is true: nodes would get public IP addresses.", path
        )


def check_required_tags(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    tags = mapping_of(dig(body, "spec", "tags"))
    missing = [
        key
        for key in strings_of(context.option("requiredTags"))
        if not str(tags.get(key) or "").strip()
    ]
    if missing:
        yield Violation(
            f"spec.tags lacks the required tag(s) {', '.join(missing)}; instances, volumes "
            "and network interfaces could not be attributed.",
            ("spec", "tags") if "tags" in mapping_of(dig(body, "spec")) else ("spec",),
        )


def check_pinned_ami(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    if not context.production:
        return
    terms_path = ("spec", "amiSelectorTerms")
    for index, term in items_of(dig(body, *terms_path)):
        alias = dig(term, "alias")
        if isinstance(alias, str) and alias.strip().endswith("@latest"):
            yield Violation(
                f"amiSelectorTerms alias {alias!r} follows the newest AMI: every AMI release "
                f"would drift and replace the {context.environment} nodes.",
                (*terms_path, index, "alias"),
            )


IMDS = Rule(
    name="ec2nodeclass-imdsv2-required",
    description=(
        "EC2NodeClass instance metadata requires IMDSv2 tokens (httpTokens: required) and a "
        "PUT response hop limit no higher than allowed (1 by default, configurable up to 2)."
    ),
    remediation=(
        "set spec.metadataOptions.httpTokens: required and "
        "spec.metadataOptions.httpPutResponseHopLimit: 1 (or remove metadataOptions to get "
        "Karpenter's defaults, which are exactly these)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_imds,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "maxHopLimit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 2,
            "default": 1,
            "description": "The highest httpPutResponseHopLimit allowed (2 for pods that "
            "must reach IMDS from a container network namespace).",
        }
    },
)

BLOCK_DEVICES = Rule(
    name="ec2nodeclass-ebs-encrypted",
    description="Every block device an EC2NodeClass maps is an encrypted EBS volume.",
    remediation=(
        "set ebs.encrypted: true on every entry of spec.blockDeviceMappings (add "
        "ebs.kmsKeyID to use your own KMS key)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_block_devices,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

PUBLIC_IP = Rule(
    name="ec2nodeclass-no-public-ip",
    description="EC2NodeClass does not give nodes public IP addresses.",
    remediation=(
        "remove spec.associatePublicIPAddress or set it to false, and launch nodes in "
        "private subnets (reach the internet through a NAT gateway)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_public_ip,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

REQUIRED_TAGS = Rule(
    name="ec2nodeclass-required-tags",
    description="EC2NodeClass tags carry every required tag key with a non-empty value.",
    remediation="add the missing keys under spec.tags, e.g. team: payments, cost-center: \"1234\".",
    enforcement=Enforcement.ADVISORY,
    concern="convention",
    check=check_required_tags,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "requiredTags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": ["team", "cost-center"],
            "description": "Tag keys every EC2NodeClass must set in spec.tags.",
        }
    },
)

PINNED_AMI = Rule(
    name="ec2nodeclass-ami-pinned-in-production",
    description=(
        "In production, EC2NodeClass AMIs are pinned: no amiSelectorTerms alias ends in @latest."
    ),
    remediation=(
        "pin the alias to a release, e.g. al2023@v20240807, or select the AMI by id; roll "
        "new AMIs out by changing the pin after testing them in a lower environment."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_pinned_ami,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

NODECLASS_RULES: tuple[Rule, ...] = (IMDS, BLOCK_DEVICES, PUBLIC_IP, REQUIRED_TAGS, PINNED_AMI)
