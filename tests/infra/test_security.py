"""The security-relevant inputs: controller policy, trust policies, queue, event rules."""

from __future__ import annotations

import json
from typing import Any

from infra_harness import ProgramRun

from nodewright.cloud.aws.actions import AWS_ACTIONS


def policy_statements(run: ProgramRun) -> dict[str, dict[str, Any]]:
    """The statements of every controller managed policy, by Sid."""
    return {
        statement["Sid"]: statement
        for policy in run.of_type("aws:iam/policy:Policy")
        for statement in json.loads(policy.inputs["policy"])["Statement"]
    }


def actions_of(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def test_every_action_the_provider_calls_is_granted_and_nothing_else(prod: ProgramRun) -> None:
    granted = {a for s in policy_statements(prod).values() for a in actions_of(s)}
    assert granted == {use.action for use in AWS_ACTIONS}
    assert all(s["Effect"] == "Allow" for s in policy_statements(prod).values())


def test_creating_requires_the_cluster_request_tags(prod: ProgramRun) -> None:
    for sid in ("AllowScopedCreationWithTags", "AllowTaggingOnCreation"):
        condition = policy_statements(prod)[sid]["Condition"]
        assert condition["StringEquals"][
            "aws:RequestTag/kubernetes.io/cluster/nodewright-prod"] == "owned"
        assert condition["StringEquals"][
            "aws:RequestTag/eks:eks-cluster-name"] == "nodewright-prod"
        assert condition["StringLike"]["aws:RequestTag/karpenter.sh/nodepool"] == "*"
    creation = policy_statements(prod)["AllowScopedCreationWithTags"]
    assert set(actions_of(creation)) == {
        "ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"
    }
    on_create = policy_statements(prod)["AllowTaggingOnCreation"]["Condition"]["StringEquals"]
    assert set(on_create["ec2:CreateAction"]) == {
        "RunInstances", "CreateFleet", "CreateLaunchTemplate"
    }


def test_deleting_and_retagging_require_the_cluster_resource_tags(prod: ProgramRun) -> None:
    statements = policy_statements(prod)
    deletion = statements["AllowScopedDeletion"]
    assert set(actions_of(deletion)) == {"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"}
    assert "AllowTaggingOwnedInstances" not in statements  # nothing retags an instance
    for sid in ("AllowScopedDeletion", "AllowLaunchWithOwnedLaunchTemplates"):
        condition = statements[sid]["Condition"]
        assert condition["StringEquals"][
            "aws:ResourceTag/kubernetes.io/cluster/nodewright-prod"] == "owned"
        assert condition["StringLike"]["aws:ResourceTag/karpenter.sh/nodepool"] == "*"


def test_launching_uses_only_existing_shared_resources_without_tags(prod: ProgramRun) -> None:
    shared = policy_statements(prod)["AllowLaunchWithExistingResources"]
    assert "Condition" not in shared
    kinds = {arn.split(":")[5].split("/")[0] for arn in shared["Resource"]}
    assert kinds == {"image", "snapshot", "security-group", "subnet", "capacity-reservation",
                     "placement-group"}
    assert all(":eu-west-1:" in arn for arn in shared["Resource"])


def test_instance_profiles_pass_role_cluster_queue_and_reads_are_scoped(prod: ProgramRun) -> None:
    statements = policy_statements(prod)
    pass_role = statements["AllowPassingNodeRole"]
    assert pass_role["Resource"] == "arn:aws:iam::123456789012:role/NodewrightNode-nodewright-prod"
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    for sid in ("AllowScopedInstanceProfileCreation", "AllowScopedInstanceProfileTagging",
                "AllowScopedInstanceProfileActions"):
        condition = statements[sid]["Condition"]
        owner_keys = [key for key in condition["StringEquals"]
                      if key.endswith("kubernetes.io/cluster/nodewright-prod")]
        assert owner_keys
        assert any(key.endswith("karpenter.k8s.aws/ec2nodeclass")
                   for key in condition["StringLike"])
    assert statements["AllowClusterDiscovery"]["Resource"] == (
        "arn:aws:eks:eu-west-1:123456789012:cluster/nodewright-prod"
    )
    assert statements["AllowInterruptionQueueActions"]["Resource"] == (
        "arn:aws:sqs:eu-west-1:123456789012:nodewright-prod-interruption"
    )
    assert statements["AllowRegionalReadActions"]["Condition"] == {
        "StringEquals": {"aws:RequestedRegion": "eu-west-1"}
    }
    assert statements["AllowPublicParameterReads"]["Resource"] == (
        "arn:aws:ssm:eu-west-1::parameter/aws/service/*"
    )


def test_irsa_trusts_only_the_controller_service_account(prod: ProgramRun) -> None:
    trust = json.loads(prod.one("aws:iam/role:Role", "controller-role").inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    issuer = "oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLE"
    assert statement["Principal"] == {
        "Federated": f"arn:aws:iam::123456789012:oidc-provider/{issuer}"
    }
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {"StringEquals": {
        f"{issuer}:sub": "system:serviceaccount:nodewright:nodewright",
        f"{issuer}:aud": "sts.amazonaws.com",
    }}


def test_pod_identity_trusts_the_eks_pods_service_of_this_cluster(dev: ProgramRun) -> None:
    trust = json.loads(dev.one("aws:iam/role:Role", "controller-role").inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"]["ArnEquals"] == {
        "aws:SourceArn": "arn:aws:eks:us-west-2:123456789012:cluster/nodewright-dev"
    }


def test_the_queue_is_encrypted_short_lived_and_refuses_plain_http(dev: ProgramRun) -> None:
    queue = dev.one("aws:sqs/queue:Queue").inputs
    assert queue["sqsManagedSseEnabled"] is True
    assert queue["messageRetentionSeconds"] == 300
    policy = json.loads(dev.one("aws:sqs/queuePolicy:QueuePolicy").inputs["policy"])
    allow, deny = policy["Statement"]
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    assert allow["Action"] == "sqs:SendMessage"
    assert deny["Effect"] == "Deny"
    assert deny["Principal"] == "*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert allow["Resource"] == deny["Resource"] == (
        "arn:aws:sqs:us-west-2:123456789012:nodewright-dev-interruption"
    )


def test_each_event_rule_forwards_one_interruption_event_to_the_queue(dev: ProgramRun) -> None:
    patterns = {
        rule.name: json.loads(rule.inputs["eventPattern"])
        for rule in dev.of_type("aws:cloudwatch/eventRule:EventRule")
    }
    assert patterns == {
        "spot-interruption": {"source": ["aws.ec2"],
                              "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
        "instance-state-change": {"source": ["aws.ec2"],
                                  "detail-type": ["EC2 Instance State-change Notification"]},
        "rebalance": {"source": ["aws.ec2"],
                      "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        "capacity-reservation": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
        },
    }
    for target in dev.of_type("aws:cloudwatch/eventTarget:EventTarget"):
        assert target.inputs["arn"] == (
            "arn:aws:sqs:us-west-2:123456789012:nodewright-dev-interruption"
        )


def test_the_controller_pod_is_locked_down_and_kept_off_managed_nodes(prod: ProgramRun) -> None:
    spec = prod.one("kubernetes:apps/v1:Deployment").inputs["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "runAsNonRoot": True, "privileged": False, "capabilities": {"drop": ["ALL"]},
    }
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"},
                                      "limits": {"memory": "1Gi"}}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["CLUSTER_NAME"] == "nodewright-prod"
    assert env["CLUSTER_ENDPOINT"].startswith("https://")
    assert env["INTERRUPTION_QUEUE"] == "nodewright-prod-interruption"
    assert env["LEADER_ELECT"] == "true"
    (spread,) = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert pod["nodeSelector"]["nodewright.io/system-node"] == "true"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
    ]
    budget = prod.one("kubernetes:policy/v1:PodDisruptionBudget").inputs["spec"]
    assert budget["maxUnavailable"] == 1


def test_rbac_grants_no_wildcards_and_no_secrets(prod: ProgramRun) -> None:
    rules = [
        *prod.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
                  "nodewright").inputs["rules"],
        *(rule for role in prod.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
          for rule in role.inputs["rules"]),
    ]
    for rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
        assert "secrets" not in rule["resources"]
    # Pods are read, evicted (pods/eviction) and, past a NodeClaim's terminationGracePeriod,
    # deleted; never created, updated or patched.
    pod_verbs = {verb for r in rules if "pods" in r["resources"] for verb in r["verbs"]}
    assert pod_verbs == {"get", "list", "watch", "delete"}
    role = prod.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "nodewright").inputs
    assert role["metadata"]["namespace"] == "nodewright"
    assert role["rules"][0]["resources"] == ["leases"]
    # kube-system: the kube-dns Service alone, read by name.
    dns = prod.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "nodewright-dns").inputs
    assert dns["metadata"]["namespace"] == "kube-system"
    assert dns["rules"] == [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"],
                             "resourceNames": ["kube-dns"]}]
