"""Each pack policy with a passing input (what infra/ really registers, through the bridge)
and a violating one (the same resource, broken), judged as the Pulumi engine would."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from nodewright.policy.schema_check import schema_errors
from nodewright_policies.pack import ALL_STACK_RULES, RESOURCE_RULES
from tests.conftest import REPO_ROOT
from tests.policies.bridge import infra_resources, of_type
from tests.policies.engine import POLICIES, Finding, PackResource, evaluate


def only(resource: PackResource, policy: str, stack: str = "dev", **config: Any) -> list[str]:
    findings = evaluate([resource], stack, {policy: config} if config else None, only=policy)
    return [finding.message for finding in findings]


def changed(resource: PackResource, **props: Any) -> PackResource:
    return replace(resource, props={**resource.props, **props})


def without(resource: PackResource, *names: str) -> PackResource:
    return replace(resource, props={k: v for k, v in resource.props.items() if k not in names})


def infra(stack: str, resource_type: str, name: str | None = None) -> PackResource:
    found = [r for r in of_type(infra_resources(stack), resource_type) if name in (None, r.name)]
    assert len(found) == 1, f"expected one {resource_type} {name or ''} in {stack}"
    return found[0]


def add_statement(resource: PackResource, statement: dict[str, Any]) -> PackResource:
    document = json.loads(resource.props["policy"])
    document["Statement"] = [*document["Statement"], statement]
    return changed(resource, policy=json.dumps(document))


# -- SQS -------------------------------------------------------------------------------------


def test_the_interruption_queue_is_encrypted_and_an_unencrypted_queue_is_not() -> None:
    queue = infra("dev", "aws:sqs/queue:Queue")

    assert only(queue, "sqs-queue-encrypted") == []
    assert only(without(queue, "sqsManagedSseEnabled"), "sqs-queue-encrypted") == [
        "the queue is not encrypted at rest (neither sqsManagedSseEnabled nor kmsMasterKeyId is "
        "set). How to fix: set sqs_managed_sse_enabled=True on the queue (or kms_master_key_id "
        "with a key that lets events.amazonaws.com use it)."
    ]
    assert only(changed(queue, kmsMasterKeyId="alias/sqs"), "sqs-queue-encrypted") == []


def test_the_queue_policy_denies_requests_without_tls() -> None:
    policy = infra("dev", "aws:sqs/queuePolicy:QueuePolicy")
    document = json.loads(policy.props["policy"])
    allows_only = {**document, "Statement": [
        statement for statement in document["Statement"] if statement["Effect"] != "Deny"
    ]}

    assert only(policy, "sqs-queue-policy-denies-insecure-transport") == []
    tls_rule = "sqs-queue-policy-denies-insecure-transport"
    [message] = only(changed(policy, policy=json.dumps(allows_only)), tls_rule)
    assert message.startswith("the queue policy does not deny requests made without TLS.")
    assert "How to fix: add a statement {Effect: Deny" in message
    inline = changed(infra("dev", "aws:sqs/queue:Queue"), policy=json.dumps(allows_only))
    assert len(only(inline, "sqs-queue-policy-denies-insecure-transport")) == 1


# -- IAM -------------------------------------------------------------------------------------


def discovery_policy() -> PackResource:
    """The controller's managed policy with its Resource "*" statements (regional reads,
    pricing) in the dev stack."""
    return infra("dev", "aws:iam/policy:Policy", "controller-resource-discovery")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_controller_policy_has_no_unconditioned_wildcard(stack: str) -> None:
    for policy in of_type(infra_resources(stack), "aws:iam/policy:Policy"):
        assert only(policy, "iam-no-unconditioned-wildcards") == [], policy.name


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (
            {"Sid": "Everything", "Effect": "Allow", "Action": "*", "Resource": "*"},
            "statement 'Everything' allows every action (Action: *) without a Condition.",
        ),
        (
            {"Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
            "allows wildcard action(s) ec2:Describe* and applies to every resource (Resource: *) "
            "without a Condition.",
        ),
        (
            {"Effect": "Allow", "Action": "sqs:DeleteMessage", "Resource": "*"},
            "applies to every resource (Resource: *) without a Condition.",
        ),
    ],
)
def test_a_wildcard_iam_statement_is_denied(statement: dict[str, Any], problem: str) -> None:
    policy = add_statement(discovery_policy(), statement)

    [message] = only(policy, "iam-no-unconditioned-wildcards")

    assert problem in message
    assert "How to fix: name the actions and resource ARNs" in message


REGION = {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}
TLS_ONLY = {"Bool": {"aws:SecureTransport": "true"}}
NEVER_ACCEPTABLE = "which no Condition makes acceptable"
NOT_SCOPED = "under a Condition that does not scope it"


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (
            {"Sid": "Admin", "Effect": "Allow", "Action": "*", "Resource": "*",
             "Condition": TLS_ONLY},
            f"statement 'Admin' allows every action (Action: *), {NEVER_ACCEPTABLE}.",
        ),
        (
            {"Effect": "Allow", "Action": "*:*", "Resource": "*", "Condition": REGION},
            f"allows every action (Action: *), {NEVER_ACCEPTABLE}.",
        ),
        (
            {"Effect": "Allow", "Action": ["sqs:*", "ec2:DescribeInstances"],
             "Resource": "arn:aws:sqs:eu-west-1:123456789012:nodewright",
             "Condition": {"StringEquals": {"aws:ResourceTag/team": "platform"}}},
            f"allows every action of a service (sqs:*), {NEVER_ACCEPTABLE}.",
        ),
        (
            {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*", "Condition": REGION},
            f"uses NotAction, which allows every action not listed, {NEVER_ACCEPTABLE}.",
        ),
        (
            {"Effect": "Allow", "Action": "sqs:DeleteMessage", "Resource": "*",
             "Condition": TLS_ONLY},
            f"applies to every resource (Resource: *) {NOT_SCOPED} (Bool aws:SecureTransport; "
            "it needs a scoping key such as aws:RequestedRegion",
        ),
        (
            {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*",
             "Condition": {"StringEqualsIfExists": {"aws:RequestedRegion": "eu-west-1"}}},
            "allows wildcard action(s) ec2:Describe* and applies to every resource (Resource: *) "
            f"{NOT_SCOPED} (StringEqualsIfExists aws:RequestedRegion;",
        ),
        (
            {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
             "Condition": {"StringNotEquals": {"aws:RequestedRegion": "us-east-1"}}},
            f"applies to every resource (Resource: *) {NOT_SCOPED}",
        ),
        (
            {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
             "Condition": {"Null": {"aws:ResourceTag/team": "true"}}},
            f"applies to every resource (Resource: *) {NOT_SCOPED}",
        ),
        (
            {"Effect": "Allow", "Action": "ec2:TerminateInstances",
             "NotResource": "arn:aws:ec2:eu-west-1:123456789012:instance/i-0",
             "Condition": TLS_ONLY},
            f"uses NotResource, which applies to every resource not listed {NOT_SCOPED}",
        ),
        (
            {"Effect": "Allow", "Action": ["s3:*", "ec2:Get*"], "Resource": "*",
             "Condition": TLS_ONLY},
            f"allows every action of a service (s3:*), {NEVER_ACCEPTABLE}; allows wildcard "
            f"action(s) ec2:Get* and applies to every resource (Resource: *) {NOT_SCOPED}",
        ),
    ],
)
def test_a_condition_does_not_excuse_a_wildcard_it_does_not_scope(
    statement: dict[str, Any], problem: str
) -> None:
    policy = add_statement(discovery_policy(), statement)

    [message] = only(policy, "iam-no-unconditioned-wildcards")

    assert problem in message
    assert "How to fix: name the actions and resource ARNs" in message


@pytest.mark.parametrize(
    "statement",
    [
        {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*",
         "Condition": {"StringEquals": {"AWS:REQUESTEDREGION": "eu-west-1"}}},
        {"Effect": "Allow", "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         "Resource": "*", "Condition": {
             "StringLike": {"ec2:ResourceTag/karpenter.sh/nodepool": "*"}, **TLS_ONLY}},
        {"Effect": "Allow", "Action": "ec2:RunInstances", "Resource": "*",
         "Condition": {"StringEquals": {"aws:RequestTag/team": "platform"}}},
        {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*",
         "Condition": {"Null": {"aws:ResourceTag/team": "false"}}},
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*",
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*",
         "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:events:eu-west-1:1:rule/x"}}},
        {"Effect": "Deny", "Action": "*", "Resource": "*", "Condition": TLS_ONLY},
    ],
)
def test_wildcards_under_a_scoping_condition_are_allowed(statement: dict[str, Any]) -> None:
    policy = add_statement(discovery_policy(), statement)

    assert only(policy, "iam-no-unconditioned-wildcards") == []


def test_scoping_condition_keys_are_configurable() -> None:
    from_vpc = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceVpc": "vpc-1"}}}
    policy = add_statement(discovery_policy(), from_vpc)

    [message] = only(policy, "iam-no-unconditioned-wildcards")
    assert f"{NOT_SCOPED} (StringEquals aws:SourceVpc;" in message
    # (arc-zonal-shift:ResourceIdentifier scopes the zonal shift statement.)
    assert only(policy, "iam-no-unconditioned-wildcards",
                scopingConditionKeys=["aws:RequestedRegion", "aws:SourceVpc",
                                      "arc-zonal-shift:ResourceIdentifier"]) == []
    [regional] = only(discovery_policy(), "iam-no-unconditioned-wildcards",
                      scopingConditionKeys=["aws:SourceVpc", "arc-zonal-shift:ResourceIdentifier"])
    assert regional.startswith("statement 'AllowRegionalReadActions' applies to every resource")


def test_conditioned_or_unscopable_statements_are_allowed() -> None:
    policy = discovery_policy()
    regional = {
        "Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*",
        "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}},
    }
    pricing = {"Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*"}

    assert only(add_statement(policy, regional), "iam-no-unconditioned-wildcards") == []
    assert only(add_statement(policy, pricing), "iam-no-unconditioned-wildcards") == []
    [unlisted] = only(policy, "iam-no-unconditioned-wildcards", unscopedActions=[])
    assert unlisted.startswith("statement 'AllowPricingReads' applies to every resource")


def test_inline_role_policies_and_broken_documents_are_checked() -> None:
    role = infra("dev", "aws:iam/role:Role", "node-role")
    admin = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})

    assert only(role, "iam-no-unconditioned-wildcards") == []
    inline = changed(role, inlinePolicies=[{"name": "admin", "policy": admin}])
    assert len(only(inline, "iam-no-unconditioned-wildcards")) == 1
    broken = changed(discovery_policy(), policy="{not json")
    [message] = only(broken, "iam-no-unconditioned-wildcards")
    assert message.startswith("policy: the policy document is not valid JSON")


@pytest.mark.parametrize("stack", ["dev", "prod"])  # Pod Identity in dev, IRSA in prod
def test_the_controller_role_trusts_one_service_account(stack: str) -> None:
    for role in of_type(infra_resources(stack), "aws:iam/role:Role"):
        assert only(role, "iam-workload-trust-one-service-account") == [], role.name


def _irsa_trust(condition: dict[str, Any] | None) -> str:
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/oidc.example/id/X"},
        "Action": "sts:AssumeRoleWithWebIdentity",
    }
    if condition is not None:
        statement["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.mark.parametrize(
    "condition",
    [
        None,
        {"StringLike": {"oidc.example/id/X:sub": "system:serviceaccount:kube-system:*"}},
        {"StringEquals": {"oidc.example/id/X:sub": [
            "system:serviceaccount:nodewright:nodewright", "system:serviceaccount:default:ci",
        ]}},
    ],
)
def test_a_trust_policy_open_to_several_service_accounts(condition: dict[str, Any] | None) -> None:
    role = changed(infra("prod", "aws:iam/role:Role", "controller-role"),
                   assumeRolePolicy=_irsa_trust(condition))

    [message] = only(role, "iam-workload-trust-one-service-account")

    assert "lets web identities assume the role without pinning exactly one service" in message
    assert "How to fix: add Condition {StringEquals:" in message


def test_a_pod_identity_trust_without_source_conditions() -> None:
    role = infra("dev", "aws:iam/role:Role", "controller-role")
    document = json.loads(role.props["assumeRolePolicy"])
    del document["Statement"][0]["Condition"]

    [message] = only(changed(role, assumeRolePolicy=json.dumps(document)),
                     "iam-workload-trust-one-service-account")

    assert "trusts pods.eks.amazonaws.com from any account or cluster" in message


# -- EKS -------------------------------------------------------------------------------------


def test_control_plane_logging() -> None:
    cluster = infra("dev", "eks:index:Cluster")

    assert only(cluster, "eks-control-plane-logging") == []
    [message] = only(changed(cluster, enabledClusterLogTypes=["api"]), "eks-control-plane-logging")
    assert message.startswith("control-plane log type(s) audit, authenticator are not enabled.")


def test_secrets_encryption() -> None:
    cluster = infra("prod", "eks:index:Cluster")
    plain = PackResource(
        "aws:eks/cluster:Cluster", "plain",
        {"vpcConfig": {"subnetIds": ["subnet-1"]}, "encryptionConfig": {
            "resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:eu-west-1:1:key/k"}}},
    )

    assert only(cluster, "eks-secrets-encryption") == []
    assert only(plain, "eks-secrets-encryption") == []
    [message] = only(without(cluster, "encryptionConfigKeyArn"), "eks-secrets-encryption")
    assert message.startswith("Kubernetes secrets are not envelope-encrypted with a KMS key.")
    assert len(only(without(plain, "encryptionConfig"), "eks-secrets-encryption")) == 1


def test_a_world_open_api_endpoint_is_refused_in_production_only() -> None:
    open_cluster = infra("dev", "eks:index:Cluster")  # public, 0.0.0.0/0 by default
    plain = PackResource("aws:eks/cluster:Cluster", "plain", {"vpcConfig": {"subnetIds": ["s"]}})

    assert only(infra("prod", "eks:index:Cluster"), "eks-no-open-public-endpoint-in-production",
                stack="prod") == []
    assert only(open_cluster, "eks-no-open-public-endpoint-in-production", stack="dev") == []
    [message] = only(open_cluster, "eks-no-open-public-endpoint-in-production", stack="prod")
    assert message.startswith("the public API endpoint is open to 0.0.0.0/0 in the prod")
    assert len(only(plain, "eks-no-open-public-endpoint-in-production", stack="production")) == 1
    assert len(only(plain, "eks-no-open-public-endpoint-in-production",
                    environment="prod-eu")) == 1


# -- Security groups (infra/ uses the EKS-created group, so these inputs are hand-made) -----


NODE_GROUP = PackResource("aws:ec2/securityGroup:SecurityGroup", "nodes", {
    "vpcId": "vpc-1",
    "ingress": [{"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["10.0.0.0/16"]}],
})


def test_security_groups_admit_no_ingress_from_the_internet() -> None:
    world = {"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]}
    rule = PackResource("aws:ec2/securityGroupRule:SecurityGroupRule", "ssh", {
        "type": "ingress", "protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"],
    })
    ingress = PackResource("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "https", {
        "ipProtocol": "tcp", "fromPort": 443, "toPort": 443, "cidrIpv4": "0.0.0.0/0",
    })

    assert only(NODE_GROUP, "security-group-no-public-ingress") == []
    [message] = only(changed(NODE_GROUP, ingress=[*NODE_GROUP.props["ingress"], world]),
                     "security-group-no-public-ingress")
    assert message.startswith("ingress from 0.0.0.0/0 is allowed on port 22. How to fix:")
    assert only(rule, "security-group-no-public-ingress")[0].startswith(
        "ingress from ::/0 is allowed on all ports."
    )
    assert len(only(ingress, "security-group-no-public-ingress")) == 1


# -- NodePool and EC2NodeClass custom resources ----------------------------------------------


def test_nodepool_and_ec2nodeclass_rules_run_on_the_custom_resources() -> None:
    pool = infra("dev", "kubernetes:karpenter.sh/v1:NodePool", "general")
    node_class = infra("dev", "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    spec = {key: value for key, value in pool.props["spec"].items() if key != "limits"}
    open_class = {**node_class.props["spec"], "metadataOptions": {"httpTokens": "optional"}}

    assert only(pool, "nodepool-limits") == []
    assert len(only(changed(pool, spec=spec), "nodepool-limits")) == 2
    # A static NodePool may not set cpu or memory limits (Karpenter's rule): its replicas
    # bound it.
    static = {**spec, "replicas": 3, "limits": {"nodes": "5"}}
    assert only(changed(pool, spec=static), "nodepool-limits") == []
    assert only(node_class, "ec2nodeclass-imdsv2-required") == []
    [message] = only(changed(node_class, spec=open_class), "ec2nodeclass-imdsv2-required")
    assert message.startswith("metadataOptions.httpTokens is 'optional'")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_an_empty_budget_list_on_a_nodepool_is_refused(stack: str) -> None:
    pool = infra(stack, "kubernetes:karpenter.sh/v1:NodePool", "general")
    disruption = pool.props["spec"]["disruption"]
    with_budgets = {**pool.props["spec"], "disruption": {**disruption, "budgets": [
        {"nodes": "10%"}]}}
    empty = {**pool.props["spec"], "disruption": {**disruption, "budgets": []}}
    missing = {**pool.props["spec"], "disruption": {
        key: value for key, value in disruption.items() if key != "budgets"}}

    assert only(pool, "nodepool-disruption-budgets-not-empty", stack) == []
    assert only(changed(pool, spec=with_budgets), "nodepool-disruption-budgets-not-empty",
                stack) == []
    assert only(changed(pool, spec=missing), "nodepool-disruption-budgets-not-empty", stack) == []
    assert len(only(changed(pool, spec=missing), "nodepool-disruption-budgets", stack)) == 1
    findings = evaluate([changed(pool, spec=empty)], stack)
    [finding] = [finding for finding in findings if "budgets" in finding.policy]
    assert (finding.policy, finding.level.value) == (
        "nodepool-disruption-budgets-not-empty", "mandatory")
    assert finding.message.startswith("spec.disruption.budgets is an empty list: Karpenter then "
                                      "applies no disruption budget at all")
    assert "How to fix: put at least one budget in spec.disruption.budgets" in finding.message


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_production_refuses_the_instance_categories_dev_refuses(stack: str) -> None:
    pool = infra(stack, "kubernetes:karpenter.sh/v1:NodePool", "general")
    template = pool.props["spec"]["template"]
    requirements = [
        {**requirement, "values": ["p", "x"]}
        if requirement["key"] == "karpenter.k8s.aws/instance-category" else requirement
        for requirement in template["spec"]["requirements"]
    ]
    accelerated = {**pool.props["spec"], "template": {
        **template, "spec": {**template["spec"], "requirements": requirements}}}

    assert only(pool, "nodepool-instance-allow-list", stack) == []
    [message] = only(changed(pool, spec=accelerated), "nodepool-instance-allow-list", stack)
    assert message.startswith(
        f"instance categories are not limited to those allowed in the {stack} environment "
        "(c, m, r, t)."
    )


def test_configuration_changes_enforcement_like_the_engine() -> None:
    queue = without(infra("dev", "aws:sqs/queue:Queue"), "sqsManagedSseEnabled")

    [advisory] = evaluate([queue], "dev", {"sqs-queue-encrypted": {"enforcementLevel": "advisory"}},
                          only="sqs-queue-encrypted")
    assert advisory.level.value == "advisory"
    assert evaluate([queue], "dev", {"sqs-queue-encrypted": {"enforcementLevel": "disabled"}},
                    only="sqs-queue-encrypted") == []


# -- Convention versus safety ----------------------------------------------------------------

PROD_PACK_CONFIG = REPO_ROOT / "policies" / "config.prod.json"


def test_rules_that_judge_convention_are_advisory_by_default() -> None:
    rules = [*RESOURCE_RULES, *ALL_STACK_RULES]
    convention = {rule.name for rule in rules if rule.concern == "convention"}

    assert {"nodepool-team-taint", "ec2nodeclass-required-tags"} <= convention
    assert {rule.name: rule.enforcement.value for rule in rules if rule.name in convention} == {
        name: "advisory" for name in convention
    }


def test_a_convention_rule_cannot_be_declared_mandatory() -> None:
    team_taint = next(rule for rule in RESOURCE_RULES if rule.name == "nodepool-team-taint")
    with pytest.raises(ValueError, match="judges convention is advisory by default"):
        replace(team_taint, enforcement=team_taint.enforcement.MANDATORY)


def _untainted_team_pool(stack: str) -> PackResource:
    pool = infra(stack, "kubernetes:karpenter.sh/v1:NodePool", "general")
    template = pool.props["spec"]["template"]
    labelled = {**pool.props["spec"], "template": {
        **template, "metadata": {"labels": {"team": "data"}},
        "spec": {key: value for key, value in template["spec"].items() if key != "taints"}}}
    return changed(pool, spec=labelled)


def test_a_team_label_for_cost_allocation_warns_but_does_not_fail_the_preview() -> None:
    [finding] = evaluate([_untainted_team_pool("dev")], "dev", only="nodepool-team-taint")

    assert finding.level.value == "advisory"
    assert "belongs to team 'data'" in finding.message


def test_the_prod_pack_config_makes_the_convention_rules_mandatory() -> None:
    config = json.loads(PROD_PACK_CONFIG.read_text())
    [finding] = evaluate(
        [_untainted_team_pool("prod")], "prod", config, only="nodepool-team-taint"
    )

    assert finding.level.value == "mandatory"
    assert config["ec2nodeclass-required-tags"] == {"enforcementLevel": "mandatory"}


def test_the_prod_stack_passes_its_own_pack_config() -> None:
    config = json.loads(PROD_PACK_CONFIG.read_text())
    findings = evaluate(infra_resources("prod"), "prod", config)

    assert [(f.policy, f.message) for f in findings if f.level.value == "mandatory"] == []


# -- Stack rules -----------------------------------------------------------------------------


def _stack_findings(resources: list[PackResource], policy: str) -> list[Finding]:
    return evaluate(resources, "dev", only=policy)


def test_every_nodepool_resolves_its_ec2nodeclass() -> None:
    resources = list(infra_resources("dev"))
    node_classes = [r for r in resources if r.resource_type.endswith(":EC2NodeClass")]
    orphaned = [r for r in resources if r not in node_classes]

    assert _stack_findings(resources, "stack-nodeclassref-resolves") == []
    findings = _stack_findings(orphaned, "stack-nodeclassref-resolves")
    assert {finding.urn.rsplit("::", 1)[-1] for finding in findings if finding.urn} == {
        "general", "team-data"
    }
    assert "refers to EC2NodeClass 'default', which this stack does not define" in (
        findings[0].message
    )


def test_interruption_handling_is_complete_when_the_controller_runs() -> None:
    resources = list(infra_resources("dev"))
    no_rebalance = [r for r in resources if r.name != "rebalance"]
    no_queue = [r for r in resources if r.resource_type != "aws:sqs/queue:Queue"]
    no_controller = [r for r in no_queue if r.resource_type != "kubernetes:apps/v1:Deployment"]

    assert _stack_findings(resources, "stack-interruption-handling") == []
    [missing_rule] = _stack_findings(no_rebalance, "stack-interruption-handling")
    assert missing_rule.message.startswith(
        "no EventBridge rule forwards these interruption events: "
        "aws.ec2 'EC2 Instance Rebalance Recommendation'."
    )
    [missing_queue] = _stack_findings(no_queue, "stack-interruption-handling")
    assert missing_queue.message.startswith("the controller is deployed but the stack has no")
    assert _stack_findings(no_controller, "stack-interruption-handling") == []


def test_exactly_one_security_group_carries_the_discovery_tag() -> None:
    resources = list(infra_resources("dev"))
    tagged = changed(NODE_GROUP, tags={"karpenter.sh/discovery": "nodewright-dev"})
    untagged = [r for r in resources if r.resource_type != "aws:ec2/tag:Tag"]

    assert _stack_findings(resources, "stack-one-discovery-security-group") == []
    [two] = _stack_findings([*resources, tagged], "stack-one-discovery-security-group")
    assert two.message.startswith("2 security groups carry the karpenter.sh/discovery tag")
    [none] = _stack_findings(untagged, "stack-one-discovery-security-group")
    assert none.message.startswith("0 security groups carry the karpenter.sh/discovery tag (none)")


# -- The pack itself -------------------------------------------------------------------------


def test_every_policy_is_documented_and_configurable() -> None:
    rules = [*RESOURCE_RULES, *ALL_STACK_RULES]

    assert len({rule.name for rule in rules}) == len(rules) == len(POLICIES)
    for rule in rules:
        policy = POLICIES[rule.name]
        assert policy.description and policy.remediation_steps == rule.remediation
        assert policy.enforcement_level is not None
        assert policy.config_schema is not None
        assert "environment" in policy.config_schema.properties
        schema = {"type": "object", "properties": rule.config_schema()}
        assert list(schema_errors(rule.defaults(), schema, rule.name)) == []


def test_every_policy_is_in_the_documentation() -> None:
    documentation = (REPO_ROOT / "docs" / "policies.md").read_text()

    missing = [name for name in POLICIES if f"### `{name}`" not in documentation]
    assert missing == []
