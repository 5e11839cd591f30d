"""Every AWS API action the AWS cloud provider can call, with why and how it is scoped.

This tuple is the single source of truth for the controller's IAM policy: infra/ builds
the policy statements from it, and tests/aws checks that every call the provider makes
(observed through botocore events) appears here. Adding a call means adding it here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

ActionScope = Literal[
    "describe",
    "create-tagged",
    "mutate-tagged",
    "pass-role",
    "instance-profile",
    "cluster",
    "queue",
    "ssm",
    "pricing",
    "zonal-shift",
]

ACTION_SCOPES: Final[tuple[ActionScope, ...]] = get_args(ActionScope)


@dataclass(frozen=True)
class ActionUse:
    """One IAM action ("service:Operation"), the scope its permission is limited to, and why.

    Scopes, as infra/ turns them into policy statements:
    - describe: read-only EC2 calls, limited by aws:RequestedRegion.
    - create-tagged: creates resources; allowed only with the cluster's request tags.
    - mutate-tagged: changes or deletes resources that carry the cluster's tags.
    - pass-role: iam:PassRole for the node role, only to ec2.amazonaws.com.
    - instance-profile: instance-profile management, scoped by the cluster's tags.
    - cluster: eks calls on the one cluster.
    - queue: the one interruption queue.
    - ssm: public parameters under /aws/service/*.
    - pricing: the Pricing API (no resource-level scoping exists).
    - zonal-shift: ARC zonal shift status of the one EKS cluster (ENABLE_ZONAL_SHIFT).
    """

    action: str
    scope: ActionScope
    why: str

    @property
    def service(self) -> str:
        return self.action.split(":", 1)[0]


AWS_ACTIONS: Final[tuple[ActionUse, ...]] = (
    # Catalog, prices and discovery (read-only).
    ActionUse("ec2:DescribeInstanceTypes", "describe", "instance type catalog (cpu, memory, ENIs)"),
    ActionUse(
        "ec2:DescribeInstanceTypeOfferings", "describe", "which instance types each zone offers"
    ),
    ActionUse("ec2:DescribeSpotPriceHistory", "describe", "current spot prices per zone"),
    ActionUse("ec2:DescribeSubnets", "describe", "resolve subnetSelectorTerms, free IPs"),
    ActionUse("ec2:DescribeSecurityGroups", "describe", "resolve securityGroupSelectorTerms"),
    ActionUse("ec2:DescribeImages", "describe", "resolve amiSelectorTerms, architecture"),
    ActionUse(
        "ec2:DescribeCapacityReservations", "describe",
        "resolve capacityReservationSelectorTerms, instances left per reservation",
    ),
    ActionUse("ec2:DescribePlacementGroups", "describe", "resolve placementGroupSelector"),
    ActionUse("ec2:DescribeInstances", "describe", "get/list instances, idempotency, drift, GC"),
    ActionUse("ec2:DescribeLaunchTemplates", "describe", "reuse and garbage-collect templates"),
    ActionUse(
        "ec2:DescribeInstanceStatus", "describe",
        "instance status health checks: impaired instances and scheduled events",
    ),
    # Launching (allowed only with the cluster's request tags).
    ActionUse("ec2:CreateFleet", "create-tagged", "launch one instance per NodeClaim"),
    ActionUse("ec2:RunInstances", "create-tagged", "CreateFleet launches through RunInstances"),
    ActionUse("ec2:CreateLaunchTemplate", "create-tagged", "one template per launch config"),
    ActionUse("ec2:CreateTags", "create-tagged", "tag fleets, instances, volumes and ENIs; "
              "a NodeClaim's own tags on its instance of a shared (batched) fleet, and its "
              "Node's name once registered (the NodeClaim tagging controller)"),
    # Cleaning up what we own (only resources carrying the cluster's tags).
    ActionUse("ec2:TerminateInstances", "mutate-tagged", "delete NodeClaims, garbage collection"),
    ActionUse("ec2:DeleteLaunchTemplate", "mutate-tagged", "drop unreferenced launch templates"),
    # Node identity.
    ActionUse("iam:PassRole", "pass-role", "launch instances with the node role's profile"),
    ActionUse("iam:GetInstanceProfile", "instance-profile", "find the profile for a role"),
    ActionUse("iam:CreateInstanceProfile", "instance-profile", "profile for EC2NodeClass.role"),
    ActionUse("iam:TagInstanceProfile", "instance-profile", "tag profiles we create"),
    ActionUse("iam:AddRoleToInstanceProfile", "instance-profile", "attach the node role"),
    ActionUse("iam:RemoveRoleFromInstanceProfile", "instance-profile", "before deleting a profile"),
    ActionUse("iam:DeleteInstanceProfile", "instance-profile", "drop unreferenced profiles"),
    ActionUse(
        "iam:ListInstanceProfiles",
        "instance-profile",
        "find our profiles for garbage collection (cannot be tag-scoped; path-scoped instead)",
    ),
    # Cluster facts for user data.
    ActionUse("eks:DescribeCluster", "cluster", "endpoint, CA bundle, version, service CIDR"),
    # Interruption queue.
    ActionUse("sqs:GetQueueUrl", "queue", "find the interruption queue by name"),
    ActionUse("sqs:ReceiveMessage", "queue", "long-poll interruption events"),
    ActionUse("sqs:DeleteMessage", "queue", "acknowledge handled interruption events"),
    # AMI aliases.
    ActionUse("ssm:GetParameter", "ssm", "resolve AMI aliases via public EKS parameters"),
    # On-demand prices.
    ActionUse("pricing:GetProducts", "pricing", "on-demand list prices"),
    # ENABLE_ZONAL_SHIFT.
    ActionUse("arc-zonal-shift:GetManagedResource", "zonal-shift",
              "the EKS cluster's active zonal shifts, every 30 s"),
)
