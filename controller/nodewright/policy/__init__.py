"""Policy rules for NodePools and EC2NodeClasses, shared by the CrossGuard pack and the CLI."""

from nodewright.policy.check import MANIFEST_RULES, check_documents
from nodewright.policy.config import (
    PolicyConfig,
    PolicyConfigError,
    load_policy_config,
    parse_policy_config,
)
from nodewright.policy.rule import (
    Enforcement,
    Rule,
    RuleContext,
    RuleInfo,
    StackResource,
    StackRule,
    Violation,
    is_production,
)

__all__ = [
    "MANIFEST_RULES",
    "Enforcement",
    "PolicyConfig",
    "PolicyConfigError",
    "Rule",
    "RuleContext",
    "RuleInfo",
    "StackResource",
    "StackRule",
    "Violation",
    "check_documents",
    "is_production",
    "load_policy_config",
    "parse_policy_config",
]
