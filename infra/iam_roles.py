"""Trust policies and managed-policy ARNs for the roles the stack creates (pure functions)."""

from __future__ import annotations

import json


def url_suffix(partition: str) -> str:
    """CloudFormation's AWS::URLSuffix: the domain of the partition's service endpoints."""
    return "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"


def node_trust_policy(partition: str) -> str:
    """EC2 instances may assume the role (nodes launched by Nodewright or the system group):
    the partition's EC2 principal, `ec2.${AWS::URLSuffix}` as Karpenter's KarpenterNodeRole."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": f"ec2.{url_suffix(partition)}"},
            "Action": "sts:AssumeRole",
        }],
    })


def worker_policy_arns(partition: str) -> dict[str, str]:
    """The AWS-managed policies every EKS worker node needs, by a short resource-name suffix."""
    names = {
        "worker": "AmazonEKSWorkerNodePolicy",
        "cni": "AmazonEKS_CNI_Policy",
        "ecr-pull": "AmazonEC2ContainerRegistryPullOnly",
        "ssm": "AmazonSSMManagedInstanceCore",
    }
    return {short: f"arn:{partition}:iam::aws:policy/{name}" for short, name in names.items()}


def irsa_trust_policy(
    oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str
) -> str:
    """Only the controller's service account, through the cluster's OIDC provider.

    `oidc_issuer` is the issuer URL without its scheme (oidc.eks.<region>.amazonaws.com/id/X).
    """
    issuer = oidc_issuer.removeprefix("https://")
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Federated": oidc_provider_arn},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                    f"{issuer}:aud": "sts.amazonaws.com",
                }
            },
        }],
    })


# EKS Pod Identity's service principal is the same in every partition: the EKS user guide of
# the China regions (docs.amazonaws.cn, "Create IAM role with trust policy required by EKS Pod
# Identity") trusts pods.eks.amazonaws.com too, unlike EC2's ec2.amazonaws.com.cn there.
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"


def pod_identity_trust_policy(account_id: str, cluster_arn: str) -> str:
    """EKS Pod Identity; the association binds the role to the one service account.

    The source conditions stop another account's or cluster's agent from using the role.
    """
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {"aws:SourceAccount": account_id},
                "ArnEquals": {"aws:SourceArn": cluster_arn},
            },
        }],
    })
