"""IAM rules: no unscoped wildcards, and workload roles trusted by one service account."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from nodewright.policy.fields import dig, items_of, mapping_of, strings_of
from nodewright.policy.rule import Enforcement, FieldPath, Rule, RuleContext, Violation
from nodewright_policies.iam_documents import (
    DocumentError,
    actions,
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


EVERY_ACTION = frozenset({"*", "*:*"})


def condition_keys(condition: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(operator, key) for every key a Condition block tests."""
    return [
        (str(operator), str(key))
        for operator, entries in condition.items()
        for key in mapping_of(entries)
    ]


def _restricts(operator: str, values: Any) -> bool:
    """Whether a test with `operator` fails when its key is absent from the request.

    ...IfExists and ForAllValues: pass when the key is missing, negated operators
    (StringNotEquals, ArnNotLike, ...) admit everything but what they list, and
    Null only restricts when it requires the key to be present (false).
    """
    if operator.endswith("IfExists") or operator.startswith("ForAllValues:"):
        return False
    if operator == "Null":
        tested = values if isinstance(values, list) else [values]
        return bool(tested) and all(str(value).strip().lower() == "false" for value in tested)
    return "Not" not in operator


def scoping_keys(condition: Mapping[str, Any], patterns: list[str]) -> list[str]:
    """The condition keys that scope the statement: they match one of `patterns`
    (case-insensitive, `*` for any text) under an operator that requires them."""
    lowered = [pattern.lower() for pattern in patterns]
    found: list[str] = []
    for operator, entries in condition.items():
        for key, values in mapping_of(entries).items():
            if not _restricts(str(operator), values):
                continue
            if any(fnmatchcase(str(key).lower(), pattern) for pattern in lowered):
                found.append(str(key))
    return found


def _never_acceptable(statement: Mapping[str, Any]) -> list[str]:
    """Grants no Condition can make acceptable: every action, or every action of a service."""
    named = actions(statement)
    if any(action in EVERY_ACTION for action in named):
        return ["allows every action (Action: *)"]
    problems: list[str] = []
    services = [action for action in named if action.endswith(":*")]
    if services:
        problems.append(f"allows every action of a service ({', '.join(services)})")
    if statement.get("NotAction") is not None:
        problems.append("uses NotAction, which allows every action not listed")
    return problems


def _needs_scope(statement: Mapping[str, Any], unscoped_actions: set[str]) -> list[str]:
    """Grants acceptable only under a scoping Condition: wildcard actions, every resource."""
    named = actions(statement)
    if any(action in EVERY_ACTION for action in named):
        return []  # reported by _never_acceptable alone
    problems: list[str] = []
    wildcard_actions = [
        action for action in named if "*" in action and not action.endswith(":*")
    ]
    if wildcard_actions:
        problems.append(f"allows wildcard action(s) {', '.join(wildcard_actions)}")
    if "*" in resources(statement) and not (named and set(named) <= unscoped_actions):
        problems.append("applies to every resource (Resource: *)")
    if statement.get("NotResource") is not None:
        problems.append("uses NotResource, which applies to every resource not listed")
    return problems


def wildcard_message(
    statement: Mapping[str, Any], unscoped_actions: set[str], scoping_patterns: list[str]
) -> str | None:
    """What is wrong with an Allow statement's wildcards, or None when nothing is."""
    condition = mapping_of(statement.get("Condition"))
    never = _never_acceptable(statement)
    needs_scope = _needs_scope(statement, unscoped_actions)
    if not condition:
        problems = never + needs_scope
        return f"{' and '.join(problems)} without a Condition" if problems else None
    parts: list[str] = []
    if never:
        parts.append(f"{' and '.join(never)}, which no Condition makes acceptable")
    if needs_scope and not scoping_keys(condition, scoping_patterns):
        tested = ", ".join(f"{operator} {key}" for operator, key in condition_keys(condition))
        parts.append(
            f"{' and '.join(needs_scope)} under a Condition that does not scope it "
            f"({tested or 'no keys'}; it needs a scoping key such as aws:RequestedRegion, "
            "aws:ResourceTag/..., aws:RequestTag/... or iam:PassedToService)"
        )
    return "; ".join(parts) or None


def check_wildcards(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    unscoped = set(strings_of(context.option("unscopedActions")))
    scoping = strings_of(context.option("scopingConditionKeys"))
    for path, raw in policy_documents(props):
        try:
            document = parse_document(raw)
        except DocumentError as error:
            yield Violation(f"{'.'.join(map(str, path))}: {error}.", path)
            continue
        for index, statement in statements(document):
            if not is_allow(statement):
                continue
            message = wildcard_message(statement, unscoped, scoping)
            if message:
                yield Violation(f"{label(index, statement)} {message}.", path)


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


SCOPING_CONDITION_KEYS = (
    "aws:RequestedRegion",
    "ec2:Region",
    "aws:ResourceTag/*",
    "aws:RequestTag/*",
    "aws:PrincipalTag/*",
    "*:ResourceTag/*",
    "iam:PassedToService",
    "iam:AWSServiceName",
    "aws:SourceArn",
    "aws:SourceAccount",
    "aws:ResourceAccount",
    "aws:ResourceOrgID",
    "aws:ResourceOrgPaths",
    # ARC zonal shift has no resource-level permissions; this key names the one resource.
    "arc-zonal-shift:ResourceIdentifier",
)

NO_WILDCARDS = Rule(
    name="iam-no-unconditioned-wildcards",
    description=(
        "IAM policies never allow every action (Action: *), every action of a service "
        "(svc:*) or NotAction, whatever their Condition; wildcard actions (ec2:Describe*), "
        "Resource: * and NotResource are allowed only under a Condition on a scoping key "
        "(aws:RequestedRegion, aws:ResourceTag/..., aws:RequestTag/..., iam:PassedToService, "
        "aws:SourceArn, ...): a Condition such as Bool aws:SecureTransport does not scope."
    ),
    remediation=(
        "name the actions and resource ARNs the workload needs (Action: *, service:* and "
        "NotAction are never accepted), or scope the statement with a Condition on a scoping "
        "key (aws:RequestedRegion, aws:ResourceTag/..., aws:RequestTag/..., "
        "iam:PassedToService, aws:SourceArn; see scopingConditionKeys) under a positive "
        "operator (not ...IfExists, ForAllValues: or a Not operator). Actions with no "
        "resource-level permissions can be listed in unscopedActions."
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
        },
        "scopingConditionKeys": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": list(SCOPING_CONDITION_KEYS),
            "description": "Condition keys that scope a statement with wildcard actions or "
            "Resource: * (case-insensitive; * matches any text, e.g. *:ResourceTag/*).",
        },
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
