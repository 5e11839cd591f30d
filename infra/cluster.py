"""The EKS cluster (pulumi-eks), its secrets-encryption key and the system node group.

The cluster uses API authentication (access entries, no aws-auth ConfigMap), an OIDC
provider, every control-plane log type and envelope encryption of secrets with a KMS key.
pulumi-eks' own node security groups are skipped: nodes use the EKS-created cluster
security group, and that is the one security group tagged for discovery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from infra.config import StackSettings
from infra.iam_roles import node_trust_policy, worker_policy_arns
from infra.naming import (
    DISCOVERY_TAG,
    SYSTEM_NODE_LABEL,
    SYSTEM_NODE_TAINT_KEY,
    system_node_role_name,
)
from infra.network import Network

CONTROL_PLANE_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
_GRAVITON_FAMILY = re.compile(r"^[a-z]+\d+g[a-z]*\.")


@dataclass(frozen=True)
class Cluster:
    name: str
    eks_cluster: eks.Cluster
    endpoint: pulumi.Output[str]
    kubeconfig_json: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    system_node_group: aws.eks.NodeGroup
    kubernetes: k8s.Provider


def build_cluster(settings: StackSettings, network: Network) -> Cluster:
    name = settings.cluster_name
    secrets_key = aws.kms.Key(
        "secrets-key",
        description=f"Envelope encryption of Kubernetes secrets in EKS cluster {name}",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        tags=settings.tags,
    )
    aws.kms.Alias("secrets-key", name=f"alias/eks/{name}", target_key_id=secrets_key.key_id)

    access = settings.endpoint_access
    cluster = eks.Cluster(
        "cluster",
        name=name,
        version=settings.kubernetes_version,
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        public_subnet_ids=network.public_subnet_ids or None,
        node_associate_public_ip_address=False,
        authentication_mode=eks.AuthenticationMode.API,
        create_oidc_provider=True,
        enabled_cluster_log_types=list(CONTROL_PLANE_LOG_TYPES),
        encryption_config_key_arn=secrets_key.arn,
        endpoint_private_access=access.private,
        endpoint_public_access=access.public,
        public_access_cidrs=list(access.public_cidrs) if access.public else None,
        skip_default_node_group=True,
        skip_default_security_groups=True,
        tags=settings.tags,
    )
    # With skip_default_security_groups this is the security group EKS creates and attaches to
    # the control plane and to managed nodes; Nodewright's nodes join it through discovery.
    aws.ec2.Tag(
        "cluster-security-group-discovery",
        resource_id=cluster.cluster_security_group_id,
        key=DISCOVERY_TAG,
        value=name,
    )
    _grant_admins(settings, cluster)
    system_node_group = _system_node_group(settings, network, cluster)
    kubernetes = k8s.Provider(
        "cluster",
        kubeconfig=cluster.kubeconfig_json,
        opts=pulumi.ResourceOptions(depends_on=[system_node_group]),
    )
    return Cluster(
        name=name,
        eks_cluster=cluster,
        endpoint=cluster.core.apply(lambda core: core.endpoint),
        kubeconfig_json=pulumi.Output.secret(cluster.kubeconfig_json),
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        security_group_id=cluster.cluster_security_group_id,
        system_node_group=system_node_group,
        kubernetes=kubernetes,
    )


def _grant_admins(settings: StackSettings, cluster: eks.Cluster) -> None:
    policy = (
        f"arn:{settings.partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )
    for index, principal in enumerate(settings.admin_role_arns):
        entry = aws.eks.AccessEntry(
            f"admin-{index}",
            cluster_name=settings.cluster_name,
            principal_arn=principal,
            type="STANDARD",
            opts=pulumi.ResourceOptions(depends_on=[cluster]),
        )
        aws.eks.AccessPolicyAssociation(
            f"admin-{index}",
            cluster_name=settings.cluster_name,
            principal_arn=principal,
            policy_arn=policy,
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=pulumi.ResourceOptions(depends_on=[entry]),
        )


def _system_node_group(
    settings: StackSettings, network: Network, cluster: eks.Cluster
) -> aws.eks.NodeGroup:
    """A managed node group for the controller and add-ons, tainted to keep other pods off.

    It has its own role: a managed node group creates the EC2_LINUX access entry for its role
    itself, so sharing the Nodewright node role (which has an explicit entry) would collide.
    """
    name = settings.cluster_name
    role = aws.iam.Role(
        "system-node-role",
        name=system_node_role_name(name),
        assume_role_policy=node_trust_policy(settings.partition),
        tags=settings.tags,
    )
    attachments = [
        aws.iam.RolePolicyAttachment(f"system-node-{short}", role=role.name, policy_arn=arn)
        for short, arn in worker_policy_arns(settings.partition).items()
    ]
    group = settings.system_node_group
    graviton = all(_GRAVITON_FAMILY.match(kind) for kind in group.instance_types)
    return aws.eks.NodeGroup(
        "system",
        cluster_name=name,
        node_group_name="system",
        node_role_arn=role.arn,
        subnet_ids=network.private_subnet_ids,
        instance_types=list(group.instance_types),
        ami_type="AL2023_ARM_64_STANDARD" if graviton else "AL2023_x86_64_STANDARD",
        capacity_type="ON_DEMAND",
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=group.min_size, desired_size=group.desired_size, max_size=group.max_size
        ),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
        labels={SYSTEM_NODE_LABEL: "true"},
        taints=[
            aws.eks.NodeGroupTaintArgs(key=SYSTEM_NODE_TAINT_KEY, value="true",
                                       effect="NO_SCHEDULE")
        ],
        tags=settings.tags,
        opts=pulumi.ResourceOptions(depends_on=[cluster, *attachments]),
    )
