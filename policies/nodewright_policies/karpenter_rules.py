"""Stack rules for what Karpenter's getting-started CloudFormation (v1.14.1) sets up besides
the controller's permissions: the interruption queue (MessageRetentionPeriod 300, a queue
policy letting EventBridge send) and the node role (the four managed policies, the EC2
trust, the EC2_LINUX access entry nodes join with).

Values another resource computes (an ARN during a first preview) are unknown: reading one
makes pulumi_policy skip the rule for that preview with a note; a value of a shape the rules
cannot read is not judged either (they pass rather than guess).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nodewright.policy.fields import dig, items_of, mapping_of, strings_of
from nodewright.policy.nodeclass_rules import PULUMI_TYPE as NODECLASS_TYPE
from nodewright.policy.rule import Enforcement, RuleContext, StackResource, StackRule, Violation
from nodewright_policies.iam_documents import (
    DocumentError,
    actions,
    is_allow,
    parse_document,
    resources,
    statements,
)
from nodewright_policies.sqs_rules import QUEUE, QUEUE_POLICY
from nodewright_policies.stack_rules import CONTROLLER_NAME_OPTION, DEPLOYMENT

ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
EVENTS_SERVICE = "events.amazonaws.com"
QUEUE_ENV = "INTERRUPTION_QUEUE"
# What SQS keeps a message for when the queue does not say: four days.
SQS_DEFAULT_RETENTION_SECONDS = 345_600
NODE_ACCESS_ENTRY_TYPES = frozenset({"EC2_LINUX", "EC2_WINDOWS"})
EC2_SERVICES = frozenset({"ec2.amazonaws.com", "ec2.amazonaws.com.cn"})
# Karpenter's KarpenterNodeRole ManagedPolicyArns.
KARPENTER_NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
# A managed policy that grants at least as much as a required one.
BROADER_POLICIES: Mapping[str, tuple[str, ...]] = {
    "AmazonEC2ContainerRegistryPullOnly": ("AmazonEC2ContainerRegistryReadOnly",),
}


def _of_type(resources: Sequence[StackResource], *types: str) -> list[StackResource]:
    return [resource for resource in resources if resource.resource_type in types]


def _document(raw: Any) -> Mapping[str, Any] | None:
    """A policy document, or None when it is unknown or unreadable (judged elsewhere)."""
    if not isinstance(raw, str | Mapping):
        return None
    try:
        return parse_document(raw)
    except DocumentError:
        return None


# -- The interruption queue ------------------------------------------------------------------


def _queue_names(resources: Sequence[StackResource], marker: str) -> list[tuple[str, str]]:
    """(controller, queue name) for each controller Deployment that reads a queue."""
    found: list[tuple[str, str]] = []
    for deployment in _of_type(resources, DEPLOYMENT):
        name = str(dig(deployment.props, "metadata", "name") or deployment.name)
        if marker not in name and marker not in deployment.name:
            continue
        for _, container in items_of(dig(deployment.props, "spec", "template", "spec",
                                         "containers")):
            for _, variable in items_of(mapping_of(container).get("env")):
                entry = mapping_of(variable)
                value = entry.get("value")
                if entry.get("name") == QUEUE_ENV and isinstance(value, str) and value:
                    found.append((name, value))
    return found


def _names_queue(resource: Any, queue: str) -> bool:
    text = str(resource)
    return text == "*" or text.endswith(f":{queue}")


def _lets_eventbridge_send(document: Mapping[str, Any], queue: str) -> bool:
    for _, statement in statements(document):
        if not is_allow(statement):
            continue
        principals = strings_of(dig(statement, "Principal", "Service"))
        granted = actions(statement)
        if (EVENTS_SERVICE in principals
                and any(a.lower() in ("sqs:sendmessage", "sqs:*") for a in granted)
                and any(_names_queue(r, queue) for r in resources(statement))):
            return True
    return False


def _seconds(value: Any) -> int | None:
    """A whole number of seconds, or None when it is not known (yet)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def check_interruption_queue(
    resources: Sequence[StackResource], context: RuleContext
) -> Iterator[Violation]:
    limit = int(context.option("maxMessageRetentionSeconds"))
    for controller, name in _queue_names(resources, str(context.option("controllerName"))):
        queues = [q for q in _of_type(resources, QUEUE) if q.props.get("name") == name]
        if not queues:
            yield Violation(
                f"the controller {controller} reads the interruption queue {name!r}, which "
                "this stack does not define."
            )
            continue
        queue = queues[0]
        retention = _seconds(
            queue.props.get("messageRetentionSeconds", SQS_DEFAULT_RETENTION_SECONDS))
        if retention is not None and retention > limit:
            yield Violation(
                f"the interruption queue {name!r} keeps messages for {retention} s, more "
                f"than {limit} s: an interruption event is stale within minutes, and old "
                "ones delay the fresh ones behind them.",
                ("messageRetentionSeconds",), queue.urn,
            )
        documents = [queue.props.get("policy")] + [
            policy.props.get("policy") for policy in _of_type(resources, QUEUE_POLICY)]
        known = [document for raw in documents
                 if raw is not None and (document := _document(raw)) is not None]
        if len(known) < len([raw for raw in documents if raw is not None]):
            continue  # a policy not yet known (first preview): cannot tell
        if not any(_lets_eventbridge_send(document, name) for document in known):
            yield Violation(
                f"no queue policy lets EventBridge ({EVENTS_SERVICE}) send messages to the "
                f"interruption queue {name!r}: its rules would deliver nothing.",
                ("policy",), queue.urn,
            )


INTERRUPTION_QUEUE = StackRule(
    name="stack-interruption-queue",
    description=(
        "The queue the controller reads (its INTERRUPTION_QUEUE) is in the stack, keeps "
        "messages at most maxMessageRetentionSeconds (Karpenter's MessageRetentionPeriod, "
        "300 s) and has a queue policy that lets events.amazonaws.com send messages to it."
    ),
    remediation=(
        "create the queue with message_retention_seconds=300 and an aws.sqs.QueuePolicy "
        "allowing {Principal: {Service: [\"events.amazonaws.com\", \"sqs.amazonaws.com\"]}, "
        "Action: \"sqs:SendMessage\", Resource: <queue ARN>} (infra/ does both when "
        "nodewright:interruption is true)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_interruption_queue,
    options={
        "controllerName": CONTROLLER_NAME_OPTION,
        "maxMessageRetentionSeconds": {
            "type": "integer",
            "minimum": 60,
            "maximum": 1_209_600,
            "default": 300,
            "description": "The longest the interruption queue may keep a message (seconds).",
        },
    },
)


# -- The node role ---------------------------------------------------------------------------


def _role_names(resources: Sequence[StackResource]) -> set[str]:
    """The roles the stack's EC2NodeClasses name (a name, or the last part of an ARN)."""
    names: set[str] = set()
    for node_class in _of_type(resources, NODECLASS_TYPE):
        role = dig(node_class.props, "spec", "role")
        if isinstance(role, str) and role:
            names.add(role.rsplit("/", 1)[-1])
    return names


def _trusts_ec2(role: StackResource) -> bool | None:
    document = _document(role.props.get("assumeRolePolicy"))
    if document is None:
        return None
    return any(
        is_allow(statement) and "sts:AssumeRole" in actions(statement)
        and bool(EC2_SERVICES & set(strings_of(dig(statement, "Principal", "Service"))))
        for _, statement in statements(document)
    )


def _attached(resources: Sequence[StackResource], role: str) -> set[str] | None:
    """Names of the managed policies attached to `role`, None when one is not known yet."""
    names: set[str] = set()
    for attachment in _of_type(resources, ATTACHMENT):
        if attachment.props.get("role") != role:
            continue
        arn = attachment.props.get("policyArn")
        if not isinstance(arn, str):
            return None
        names.add(arn.rsplit("/", 1)[-1])
    for role_resource in _of_type(resources, ROLE):
        if role_resource.props.get("name") == role:
            names.update(str(arn).rsplit("/", 1)[-1]
                         for arn in strings_of(role_resource.props.get("managedPolicyArns")))
    return names


def _may_join(resources: Sequence[StackResource], role: str) -> bool:
    """An EC2_LINUX/EC2_WINDOWS access entry for the role (or one whose principal is not
    known yet), or no access entries at all (a cluster that maps roles in aws-auth)."""
    entries = _of_type(resources, ACCESS_ENTRY)
    if not entries:
        return True
    for entry in entries:
        principal = entry.props.get("principalArn")
        kind = entry.props.get("type")
        if kind is not None and kind not in NODE_ACCESS_ENTRY_TYPES:
            continue
        if not isinstance(principal, str) or principal.endswith(f":role/{role}") \
                or principal.endswith(f"/{role}"):
            return True
    return False


def check_node_role(
    resources: Sequence[StackResource], context: RuleContext
) -> Iterator[Violation]:
    required = strings_of(context.option("requiredManagedPolicies"))
    for name in sorted(_role_names(resources)):
        roles = [role for role in _of_type(resources, ROLE) if role.props.get("name") == name]
        if not roles:
            continue  # a role made outside the stack: nothing here to judge
        role = roles[0]
        if _trusts_ec2(role) is False:
            yield Violation(
                f"the node role {name} does not let EC2 assume it (sts:AssumeRole for "
                "ec2.amazonaws.com): nodes would have no credentials.",
                ("assumeRolePolicy",), role.urn,
            )
        attached = _attached(resources, name)
        if attached is not None:
            missing = [policy for policy in required if policy not in attached
                       and not set(BROADER_POLICIES.get(policy, ())) & attached]
            if missing:
                yield Violation(
                    f"the node role {name} lacks the managed policies {', '.join(missing)}.",
                    ("managedPolicyArns",), role.urn,
                )
        if not _may_join(resources, name):
            yield Violation(
                f"the node role {name} has no EC2_LINUX (or EC2_WINDOWS) access entry: its "
                "nodes could not join the cluster.",
                subject=role.urn,
            )


NODE_ROLE = StackRule(
    name="stack-node-role",
    description=(
        "Each role an EC2NodeClass of the stack names, when the stack creates it, is "
        "Karpenter's KarpenterNodeRole: EC2 may assume it, it has the required managed "
        "policies (AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, "
        "AmazonEC2ContainerRegistryPullOnly, AmazonSSMManagedInstanceCore) and an EC2_LINUX "
        "or EC2_WINDOWS access entry when the cluster uses access entries."
    ),
    remediation=(
        "trust {Service: ec2.amazonaws.com} with sts:AssumeRole, attach the managed policies "
        "with aws.iam.RolePolicyAttachment and add aws.eks.AccessEntry(type=\"EC2_LINUX\", "
        "principal_arn=<role ARN>); infra/'s node role does all three."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_node_role,
    options={
        "requiredManagedPolicies": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": list(KARPENTER_NODE_POLICIES),
            "description": "AWS managed policy names every node role needs "
            "(AmazonEC2ContainerRegistryReadOnly also satisfies PullOnly).",
        },
    },
)

KARPENTER_STACK_RULES: tuple[StackRule, ...] = (INTERRUPTION_QUEUE, NODE_ROLE)

