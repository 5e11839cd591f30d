"""SQS rules for the interruption queue: encrypted at rest, reachable only over TLS."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.policy.fields import is_true, mapping_of
from nodewright.policy.rule import Enforcement, Rule, RuleContext, Violation
from nodewright_policies.iam_documents import DocumentError, parse_document, statements

QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
SECURE_TRANSPORT = "aws:SecureTransport"


def check_encryption(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    if is_true(props.get("sqsManagedSseEnabled")) or str(props.get("kmsMasterKeyId") or ""):
        return
    yield Violation(
        "the queue is not encrypted at rest (neither sqsManagedSseEnabled nor kmsMasterKeyId "
        "is set).",
        ("sqsManagedSseEnabled",),
    )


def _denies_insecure_transport(statement: Mapping[str, Any]) -> bool:
    if statement.get("Effect") != "Deny":
        return False
    for operator, entries in mapping_of(statement.get("Condition")).items():
        if operator != "Bool":
            continue
        value = mapping_of(entries).get(SECURE_TRANSPORT)
        values = value if isinstance(value, list) else [value]
        if any(str(item).lower() == "false" for item in values):
            return True
    return False


def check_tls_only(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    raw = props.get("policy")
    if raw is None:
        # A Queue without an inline policy gets one from a QueuePolicy, checked there.
        return
    try:
        document = parse_document(raw)
    except DocumentError as error:
        yield Violation(f"policy: {error}.", ("policy",))
        return
    if not any(_denies_insecure_transport(statement) for _, statement in statements(document)):
        yield Violation(
            "the queue policy does not deny requests made without TLS.", ("policy",)
        )


QUEUE_ENCRYPTED = Rule(
    name="sqs-queue-encrypted",
    description="SQS queues are encrypted at rest (SQS-managed SSE or a KMS key).",
    remediation=(
        "set sqs_managed_sse_enabled=True on the queue (or kms_master_key_id with a key that "
        "lets events.amazonaws.com use it)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_encryption,
    resource_types=(QUEUE,),
)

QUEUE_TLS_ONLY = Rule(
    name="sqs-queue-policy-denies-insecure-transport",
    description=(
        "SQS queue policies deny every request made without TLS (a Deny statement with "
        "Bool aws:SecureTransport false)."
    ),
    remediation=(
        "add a statement {Effect: Deny, Principal: \"*\", Action: \"sqs:*\", Resource: "
        "<queue ARN>, Condition: {Bool: {\"aws:SecureTransport\": \"false\"}}} to the policy."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_tls_only,
    resource_types=(QUEUE, QUEUE_POLICY),
)

SQS_RULES: tuple[Rule, ...] = (QUEUE_ENCRYPTED, QUEUE_TLS_ONLY)
