"""IAM for Nodewright: the node role (with its EC2_LINUX access entry) and the controller role.

The controller role is trusted either through IRSA (the cluster's OIDC provider, one service
account) or EKS Pod Identity (pods.eks.amazonaws.com plus an association to that account).
Its permissions are generated from the AWS provider's action list (see controller_policy)
and come, as Karpenter's, in six managed policies (NodeLifecycle, IAMIntegration,
EKSIntegration, Interruption, ResourceDiscovery, ZonalShift): in one they would exceed IAM's
6,144-character quota from a 19-character cluster name on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

import pulumi
import pulumi_aws as aws

from infra.cluster import Cluster
from infra.config import StackSettings
from infra.controller_policy import PolicyTarget, controller_policy_documents
from infra.iam_roles import (
    irsa_trust_policy,
    node_trust_policy,
    pod_identity_trust_policy,
    worker_policy_arns,
)
from infra.naming import (
    controller_policy_name,
    controller_role_name,
    node_role_name,
)

# Pulumi resource names of the controller's managed policies (and their attachments).
_POLICY_RESOURCE_NAMES = {
    "NodeLifecycle": "controller-node-lifecycle",
    "IAMIntegration": "controller-iam-integration",
    "EKSIntegration": "controller-eks-integration",
    "Interruption": "controller-interruption",
    "ResourceDiscovery": "controller-resource-discovery",
    "ZonalShift": "controller-zonal-shift",
}

POD_IDENTITY_AGENT_ADDON = "eks-pod-identity-agent"


@dataclass(frozen=True)
class NodeRole:
    role: aws.iam.Role
    name: str
    arn: pulumi.Output[str]


@dataclass(frozen=True)
class ControllerIdentity:
    role: aws.iam.Role
    arn: pulumi.Output[str]
    # Set for IRSA: the service account needs the eks.amazonaws.com/role-arn annotation.
    service_account_annotations: dict[str, pulumi.Output[str]]


def build_node_role(settings: StackSettings, cluster: Cluster) -> NodeRole:
    name = node_role_name(settings.cluster_name)
    role = aws.iam.Role(
        "node-role",
        name=name,
        description=f"Nodes launched by Nodewright in EKS cluster {settings.cluster_name}",
        assume_role_policy=node_trust_policy(settings.partition),
        tags=settings.tags,
    )
    for short, arn in worker_policy_arns(settings.partition).items():
        aws.iam.RolePolicyAttachment(f"node-{short}", role=role.name, policy_arn=arn)
    aws.eks.AccessEntry(
        "node-role",
        cluster_name=settings.cluster_name,
        principal_arn=role.arn,
        type="EC2_LINUX",
        opts=pulumi.ResourceOptions(depends_on=[cluster.eks_cluster]),
    )
    return NodeRole(role=role, name=name, arn=role.arn)


def build_controller_identity(
    settings: StackSettings,
    cluster: Cluster,
    node_role: NodeRole,
    account_id: str,
    queue_arn: pulumi.Output[str] | None,
) -> ControllerIdentity:
    controller = settings.controller
    cluster_arn = (
        f"arn:{settings.partition}:eks:{settings.region}:{account_id}:cluster/{cluster.name}"
    )
    if settings.identity == "irsa":
        trust = pulumi.Output.all(cluster.oidc_provider_arn, cluster.oidc_issuer).apply(
            lambda values: irsa_trust_policy(
                values[0], values[1], controller.namespace, controller.service_account
            )
        )
    else:
        trust = pulumi.Output.from_input(pod_identity_trust_policy(account_id, cluster_arn))
    role = aws.iam.Role(
        "controller-role",
        name=controller_role_name(settings.cluster_name),
        description=f"The Nodewright controller of EKS cluster {settings.cluster_name}",
        assume_role_policy=trust,
        tags=settings.tags,
    )

    def target(node_role_arn: str, queue: str | None) -> PolicyTarget:
        return PolicyTarget(
            cluster_name=settings.cluster_name,
            region=settings.region,
            partition=settings.partition,
            account_id=account_id,
            node_role_arn=node_role_arn,
            queue_arn=queue,
        )

    # Which policies there are depends only on whether there is a queue, not on the ARNs.
    groups = controller_policy_documents(target("", "" if queue_arn is not None else None))

    def document(group: str, values: list[str | None]) -> str:
        node_role_arn, queue = values
        assert node_role_arn is not None  # an IAM role always has an ARN
        return json.dumps(controller_policy_documents(target(node_role_arn, queue))[group])

    for group in groups:
        resource_name = _POLICY_RESOURCE_NAMES[group]
        policy = aws.iam.Policy(
            resource_name,
            name=controller_policy_name(settings.cluster_name, group),
            description=f"Least-privilege permissions of the Nodewright controller ({group})",
            policy=pulumi.Output.all(node_role.arn, queue_arn).apply(partial(document, group)),
            tags=settings.tags,
        )
        aws.iam.RolePolicyAttachment(resource_name, role=role.name, policy_arn=policy.arn)

    if settings.identity == "irsa":
        return ControllerIdentity(
            role=role,
            arn=role.arn,
            service_account_annotations={"eks.amazonaws.com/role-arn": role.arn},
        )
    agent = aws.eks.Addon(
        "pod-identity-agent",
        cluster_name=settings.cluster_name,
        addon_name=POD_IDENTITY_AGENT_ADDON,
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="OVERWRITE",
        opts=pulumi.ResourceOptions(depends_on=[cluster.system_node_group]),
    )
    aws.eks.PodIdentityAssociation(
        "controller",
        cluster_name=settings.cluster_name,
        namespace=controller.namespace,
        service_account=controller.service_account,
        role_arn=role.arn,
        opts=pulumi.ResourceOptions(depends_on=[agent]),
    )
    return ControllerIdentity(role=role, arn=role.arn, service_account_annotations={})
