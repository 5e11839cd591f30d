"""IAM rules: no unconditioned wildcards, and workload roles trusted by one service account."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.policy.fields import dig, items_of, mapping_of, strings_of
from nodewright.policy.rule import Enforcement, FieldPath, Rule, RuleContext, Violation
from nodewright_policies.iam_documents import (
    DocumentError,
    actions,
    has_condition,
    is_allow,
    label,
    parse_document,
    resources,
    statements,
)

POLICY = "aws:iam/policy:Policy"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
USER_POLICY = "aws:iam/userPolicy:UserPolicy"
GROUP_POLICY = "aws:iam/groupPolicy:GroupPolicy"
ROLE = "aws:iam/role:Role"

WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"
POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
# Conditions that tie a Pod Identity trust to this account's clusters; the
# PodIdentityAssociation then binds the role to exactly one service account.
POD_IDENTITY_SCOPING_KEYS = frozenset({"aws:SourceAccount", "aws:SourceArn"})


def policy_documents(props: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Any]]:
    """Every permission document of an IAM resource, with the property it lives in."""
    if "policy" in props:
        yield ("policy",), props["policy"]
    for index, inline in items_of(props.get("inlinePolicies")):
        if dig(inline, "policy") is not None:
            yield ("inlinePolicies", index, "policy"), dig(inline, "policy")


def _wildcard_problems(
    statement: Mapping[str, Any], unscoped_actions: set[str]
) -> list[str]:
    named = actions(statement)
    problems: list[str] = []
    if any(action in {"*", "*:*"} for action in named):
        return ["allows every action (Action: *)"]
    if statement.get("NotAction") is not None or statement.get("NotResource") is not None:
        problems.append("uses NotAction/NotResource, which grants everything not listed")
    wildcard_actions = [action for action in named if "*" in action]
    if wildcard_actions:
        problems.append(f"allows wildcard action(s) {', '.join(wildcard_actions)}")
    if "*" in resources(statement) and not (named and set(named) <= unscoped_actions):
        problems.append("applies to every resource (Resource: *)")
    return problems


def check_wildcards(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    unscoped = set(strings_of(context.option("unscopedActions")))
    for path, raw in policy_documents(props):
        try:
            document = parse_document(raw)
        except DocumentError as error:
            yield Violation(f"{'.'.join(map(str, path))}: {error}.", path)
            continue
        for index, statement in statements(document):
            if not is_allow(statement) or has_condition(statement):
                continue
            problems = _wildcard_problems(statement, unscoped)
            if problems:
                yield Violation(
                    f"{label(index, statement)} {' and '.join(problems)} without a Condition.",
                    path,
                )


def _trusts_web_identity(statement: Mapping[str, Any]) -> bool:
    return WEB_IDENTITY in actions(statement)


def _trusts_pod_identity(statement: Mapping[str, Any]) -> bool:
    return POD_IDENTITY_SERVICE in strings_of(dig(statement, "Principal", "Service"))


def _web_identity_subjects(statement: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The `:sub` values the statement pins, and whether any comes from a pattern operator."""
    subjects: list[str] = []
    patterned = False
    for operator, entries in mapping_of(statement.get("Condition")).items():
        for key, values in mapping_of(entries).items():
            if str(key).endswith(":sub"):
                subjects.extend(strings_of(values))
                patterned = patterned or "Like" in str(operator)
    return subjects, patterned


def check_trust(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    path: FieldPath = ("assumeRolePolicy",)
    if props.get("assumeRolePolicy") is None:
        return
    try:
        document = parse_document(props["assumeRolePolicy"])
    except DocumentError as error:
        yield Violation(f"assumeRolePolicy: {error}.", path)
        return
    for index, statement in statements(document):
        if not is_allow(statement):
            continue
        if _trusts_web_identity(statement):
            subjects, patterned = _web_identity_subjects(statement)
            if len(subjects) != 1 or patterned or "*" in subjects[0]:
                found = ", ".join(subjects) or "none"
                yield Violation(
                    f"{label(index, statement)} lets web identities assume the role without "
                    f"pinning exactly one service account (StringEquals <issuer>:sub; found: "
                    f"{found}).",
                    path,
                )
        elif _trusts_pod_identity(statement):
            keys = {
                str(key)
                for entries in mapping_of(statement.get("Condition")).values()
                for key in mapping_of(entries)
            }
            if not keys & POD_IDENTITY_SCOPING_KEYS:
                yield Violation(
                    f"{label(index, statement)} trusts {POD_IDENTITY_SERVICE} from any account "
                    "or cluster (no aws:SourceAccount / aws:SourceArn condition).",
                    path,
                )


NO_WILDCARDS = Rule(
    name="iam-no-unconditioned-wildcards",
    description=(
        "IAM policies do not allow `*` actions, wildcard actions or `*` resources without a "
        "Condition (e.g. ec2:Describe* is fine under aws:RequestedRegion); Action: * is never "
        "allowed without a Condition."
    ),
    remediation=(
        "name the actions and resource ARNs the workload needs, or add a Condition that "
        "scopes the statement (aws:RequestedRegion, aws:ResourceTag/..., aws:RequestTag/...). "
        "Actions with no resource-level permissions can be listed in unscopedActions."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_wildcards,
    resource_types=(POLICY, ROLE_POLICY, USER_POLICY, GROUP_POLICY, ROLE),
    options={
        "unscopedActions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": [
                "pricing:GetProducts",
                "pricing:DescribeServices",
                "pricing:GetAttributeValues",
                "iam:ListInstanceProfiles",
            ],
            "description": "Actions AWS cannot scope to resources: a statement made only of "
            "these may use Resource: * without a Condition.",
        }
    },
)

TRUST_ONE_SERVICE_ACCOUNT = Rule(
    name="iam-workload-trust-one-service-account",
    description=(
        "Roles assumed by Kubernetes workloads trust exactly one service account: IRSA trust "
        "policies pin <issuer>:sub to one system:serviceaccount:<namespace>:<name> with "
        "StringEquals; Pod Identity trust policies carry aws:SourceAccount or aws:SourceArn "
        "(the PodIdentityAssociation binds them to one service account)."
    ),
    remediation=(
        "add Condition {StringEquals: {\"<issuer>:sub\": "
        "\"system:serviceaccount:<namespace>:<name>\", \"<issuer>:aud\": \"sts.amazonaws.com\"}} "
        "for IRSA, or {StringEquals: {\"aws:SourceAccount\": \"<account>\"}, ArnEquals: "
        "{\"aws:SourceArn\": \"<cluster ARN>\"}} for Pod Identity."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_trust,
    resource_types=(ROLE,),
)

IAM_RULES: tuple[Rule, ...] = (NO_WILDCARDS, TRUST_ONE_SERVICE_ACCOUNT)
