"""Running the pack's policies the way the Pulumi engine does, without the Pulumi CLI.

Resource policies get one `ResourceValidationArgs` per resource and stack policies one
`StackValidationArgs` with every resource; `report_violation` calls are collected as
`Finding`s with the enforcement level the engine would apply (configuration first, then
the policy's own level). The stack name reaches the pack through PULUMI_STACK, as the
Pulumi CLI passes it to policy analyzers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodewright_policies.pack import build_policies

POLICIES: dict[str, Policy] = {policy.name: policy for policy in build_policies()}


@dataclass(frozen=True)
class PackResource:
    """A resource as the pack sees it: type, name and camelCase properties."""

    resource_type: str
    name: str
    props: Mapping[str, Any]

    @property
    def urn(self) -> str:
        return f"urn:pulumi:test::nodewright::{self.resource_type}::{self.name}"


@dataclass(frozen=True)
class Finding:
    policy: str
    level: EnforcementLevel
    message: str
    urn: str | None


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], False, [], PolicyCustomTimeouts(0, 0, 0), [], None)


@contextmanager
def _stack(name: str) -> Iterator[None]:
    with mock.patch.dict(os.environ, {"PULUMI_STACK": name}):
        yield


def _level(policy: Policy, config: Mapping[str, Any]) -> EnforcementLevel:
    entry = config.get(policy.name)
    if isinstance(entry, Mapping) and "enforcementLevel" in entry:
        return EnforcementLevel(entry["enforcementLevel"])
    return policy.enforcement_level or EnforcementLevel.ADVISORY


def _settings(policy: Policy, config: Mapping[str, Any]) -> dict[str, Any]:
    entry = config.get(policy.name)
    if not isinstance(entry, Mapping):
        return {}
    return {key: value for key, value in entry.items() if key != "enforcementLevel"}


def _collector(
    findings: list[Finding], policy: str, level: EnforcementLevel, resource_urn: str | None
) -> Any:
    def report(message: str, urn: str | None = None) -> None:
        findings.append(Finding(policy, level, message, urn or resource_urn))

    return report


def evaluate(
    resources: Sequence[PackResource],
    stack: str = "dev",
    config: Mapping[str, Any] | None = None,
    only: str | None = None,
) -> list[Finding]:
    """Every finding of the pack (or of policy `only`) on these resources."""
    chosen = config or {}
    findings: list[Finding] = []
    policies = [POLICIES[only]] if only else list(POLICIES.values())
    with _stack(stack):
        for policy in policies:
            level = _level(policy, chosen)
            if level is EnforcementLevel.DISABLED:
                continue
            settings = _settings(policy, chosen)
            if isinstance(policy, ResourceValidationPolicy):
                for resource in resources:
                    args = ResourceValidationArgs(
                        resource.resource_type, resource.props, resource.urn, resource.name,
                        _options(), None, settings,
                    )
                    policy.validate(args, _collector(findings, policy.name, level, resource.urn))
            elif isinstance(policy, StackValidationPolicy):
                stack_resources = [
                    PolicyResource(
                        resource.resource_type, resource.props, resource.urn, resource.name,
                        _options(), None, None, [], {},
                    )
                    for resource in resources
                ]
                stack_args = StackValidationArgs(stack_resources, settings)
                policy.validate(stack_args, _collector(findings, policy.name, level, None))
    return findings


def mandatory(findings: Sequence[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.level is EnforcementLevel.MANDATORY]
