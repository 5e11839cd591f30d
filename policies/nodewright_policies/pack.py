"""Every rule of the pack, and the pulumi_policy objects built from them."""

from __future__ import annotations

from pulumi_policy import Policy

from nodewright.policy import MANIFEST_RULES, Rule, StackRule
from nodewright_policies.adapters import resource_policy, stack_policy
from nodewright_policies.eks_rules import EKS_RULES
from nodewright_policies.iam_rules import IAM_RULES
from nodewright_policies.karpenter_rules import KARPENTER_STACK_RULES
from nodewright_policies.network_rules import NETWORK_RULES
from nodewright_policies.sqs_rules import SQS_RULES
from nodewright_policies.stack_rules import STACK_RULES

PACK_NAME = "nodewright"
RESOURCE_RULES: tuple[Rule, ...] = (
    *MANIFEST_RULES,
    *EKS_RULES,
    *IAM_RULES,
    *SQS_RULES,
    *NETWORK_RULES,
)
ALL_STACK_RULES: tuple[StackRule, ...] = (*STACK_RULES, *KARPENTER_STACK_RULES)


def build_policies() -> list[Policy]:
    return [
        *(resource_policy(rule) for rule in RESOURCE_RULES),
        *(stack_policy(rule) for rule in ALL_STACK_RULES),
    ]
