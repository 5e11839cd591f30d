"""Stack-wide rules: NodePools resolve their EC2NodeClass, interruption handling is complete,
and exactly one security group is tagged for discovery."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nodewright.cloud.aws.interruption_events import DETAIL_TYPES
from nodewright.policy.fields import dig, mapping_of, strings_of
from nodewright.policy.nodeclass_rules import PULUMI_TYPE as NODECLASS_TYPE
from nodewright.policy.nodepool_rules import PULUMI_TYPE as NODEPOOL_TYPE
from nodewright.policy.rule import Enforcement, RuleContext, StackResource, StackRule, Violation
from nodewright_policies.network_rules import SECURITY_GROUP
from nodewright_policies.sqs_rules import QUEUE

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
EC2_TAG = "aws:ec2/tag:Tag"
DISCOVERY_TAG = "karpenter.sh/discovery"
NODECLASS_GROUP = "karpenter.k8s.aws"


def _of_type(resources: Sequence[StackResource], *types: str) -> list[StackResource]:
    return [resource for resource in resources if resource.resource_type in types]


def _object_name(resource: StackResource) -> str | None:
    name = dig(resource.props, "metadata", "name")
    return name if isinstance(name, str) and name else None


def check_node_class_refs(
    resources: Sequence[StackResource], context: RuleContext
) -> Iterator[Violation]:
    classes = {
        name for resource in _of_type(resources, NODECLASS_TYPE)
        if (name := _object_name(resource))
    }
    for pool in _of_type(resources, NODEPOOL_TYPE):
        ref = mapping_of(dig(pool.props, "spec", "template", "spec", "nodeClassRef"))
        pool_name = _object_name(pool) or pool.name
        if ref.get("group") != NODECLASS_GROUP or ref.get("kind") != "EC2NodeClass":
            yield Violation(
                f"NodePool {pool_name} refers to {ref.get('group')}/{ref.get('kind')}, not "
                f"{NODECLASS_GROUP}/EC2NodeClass.",
                ("spec", "template", "spec", "nodeClassRef"),
                pool.urn,
            )
        elif ref.get("name") not in classes:
            known = ", ".join(sorted(classes)) or "none"
            yield Violation(
                f"NodePool {pool_name} refers to EC2NodeClass {ref.get('name')!r}, which this "
                f"stack does not define (EC2NodeClasses with a metadata.name: {known}).",
                ("spec", "template", "spec", "nodeClassRef", "name"),
                pool.urn,
            )


def _controller_deployed(resources: Sequence[StackResource], marker: str) -> bool:
    for resource in _of_type(resources, DEPLOYMENT, HELM_RELEASE):
        names = (resource.name, _object_name(resource) or "", str(resource.props.get("name", "")))
        if any(marker in name for name in names):
            return True
    return False


def _covered_events(rule: StackResource) -> set[tuple[str, str]]:
    raw = rule.props.get("eventPattern")
    try:
        pattern = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return set()
    sources = strings_of(mapping_of(pattern).get("source"))
    details = strings_of(mapping_of(pattern).get("detail-type"))
    return {(source, detail) for source in sources for detail in details}


def check_interruption(
    resources: Sequence[StackResource], context: RuleContext
) -> Iterator[Violation]:
    if not _controller_deployed(resources, str(context.option("controllerName"))):
        return
    if not _of_type(resources, QUEUE):
        yield Violation("the controller is deployed but the stack has no interruption queue.")
    covered: set[tuple[str, str]] = set()
    for rule in _of_type(resources, EVENT_RULE):
        covered |= _covered_events(rule)
    missing = [f"{source} {detail!r}" for source, detail in DETAIL_TYPES
               if (source, detail) not in covered]
    if missing:
        yield Violation(
            "no EventBridge rule forwards these interruption events: " + "; ".join(missing) + "."
        )


def _discovery_tagged(resources: Sequence[StackResource]) -> list[StackResource]:
    groups = [
        group for group in _of_type(resources, SECURITY_GROUP)
        if DISCOVERY_TAG in mapping_of(group.props.get("tags"))
    ]
    # Standalone tags put the discovery tag on the EKS-created cluster security group; the
    # same resource type also tags subnets, which are told apart by their id.
    tags = [
        tag for tag in _of_type(resources, EC2_TAG)
        if tag.props.get("key") == DISCOVERY_TAG
        and not str(tag.props.get("resourceId") or "").startswith("subnet-")
    ]
    return groups + tags


def check_discovery_security_group(
    resources: Sequence[StackResource], context: RuleContext
) -> Iterator[Violation]:
    if not _of_type(resources, NODECLASS_TYPE, NODEPOOL_TYPE) and not _controller_deployed(
        resources, str(context.option("controllerName"))
    ):
        return
    tagged = _discovery_tagged(resources)
    if len(tagged) != 1:
        names = ", ".join(resource.name for resource in tagged) or "none"
        yield Violation(
            f"{len(tagged)} security groups carry the {DISCOVERY_TAG} tag ({names}); nodes "
            "must join exactly one."
        )


CONTROLLER_NAME_OPTION: Mapping[str, Any] = {
    "type": "string",
    "minLength": 1,
    "default": "nodewright",
    "description": "A Deployment or Helm release whose name contains this is the controller.",
}

NODE_CLASS_REFS = StackRule(
    name="stack-nodeclassref-resolves",
    description=(
        "Every NodePool's spec.template.spec.nodeClassRef names an EC2NodeClass "
        "(karpenter.k8s.aws) defined in the same stack."
    ),
    remediation=(
        "define the EC2NodeClass in the stack with an explicit metadata.name, or correct "
        "nodeClassRef (group: karpenter.k8s.aws, kind: EC2NodeClass, name: <that name>)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_node_class_refs,
)

INTERRUPTION = StackRule(
    name="stack-interruption-handling",
    description=(
        "When the controller is deployed, the stack has the interruption queue and EventBridge "
        "rules for all five interruption events (spot interruption warning, AWS Health event, "
        "instance state change, rebalance recommendation, capacity reservation interruption)."
    ),
    remediation=(
        "enable interruption handling (nodewright:interruption true) so infra/ creates the "
        "SQS queue and its five EventBridge rules, or add the missing rules."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_interruption,
    options={"controllerName": CONTROLLER_NAME_OPTION},
)

DISCOVERY_SECURITY_GROUP = StackRule(
    name="stack-one-discovery-security-group",
    description=(
        "Exactly one security group in the stack carries the karpenter.sh/discovery tag, so "
        "securityGroupSelectorTerms resolve to one group."
    ),
    remediation=(
        "tag only the cluster security group with karpenter.sh/discovery=<cluster> and remove "
        "the tag from the others (or select groups by id in the EC2NodeClass)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_discovery_security_group,
    options={"controllerName": CONTROLLER_NAME_OPTION},
)

STACK_RULES: tuple[StackRule, ...] = (NODE_CLASS_REFS, INTERRUPTION, DISCOVERY_SECURITY_GROUP)
