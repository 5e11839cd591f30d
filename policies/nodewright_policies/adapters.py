"""Thin pulumi_policy adapters: a `Rule` becomes a ResourceValidationPolicy, a `StackRule` a
StackValidationPolicy. All the judgement lives in the rules; this only translates.
"""

from __future__ import annotations

import os

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodewright.policy.rule import Enforcement, Rule, RuleInfo, StackResource, StackRule

LEVELS = {
    Enforcement.MANDATORY: EnforcementLevel.MANDATORY,
    Enforcement.ADVISORY: EnforcementLevel.ADVISORY,
    Enforcement.DISABLED: EnforcementLevel.DISABLED,
}


def stack_environment() -> str:
    """The stack name the Pulumi CLI gives the analyzer; rules use it when no environment is set."""
    return os.environ.get("PULUMI_STACK", "")


def _schema(rule: RuleInfo) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=rule.config_schema())


def resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in rule.resource_types:
            return
        context = rule.context(args.get_config(), stack_environment())
        for violation in rule.run(args.props, context):
            report_violation(rule.explain(violation), None)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=LEVELS[rule.enforcement],
        config_schema=_schema(rule),
        remediation_steps=rule.remediation,
    )


def stack_policy(rule: StackRule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [
            StackResource(resource.resource_type, resource.name, resource.urn, resource.props)
            for resource in args.resources
        ]
        context = rule.context(args.get_config(), stack_environment())
        for violation in rule.run(resources, context):
            report_violation(rule.explain(violation), violation.subject)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=LEVELS[rule.enforcement],
        config_schema=_schema(rule),
        remediation_steps=rule.remediation,
    )
