"""The instance profile a node class launches with: the given one, or one we create for the
node class's role (tagged like Karpenter's, so IAM conditions and garbage collection can
recognise it)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_iam import IAMClient

PATH_ROOT: Final = "/nodewright/"


def profile_path(cluster: str) -> str:
    return f"{PATH_ROOT}{cluster}/"


def profile_name(cluster: str, region: str, node_class: str) -> str:
    digest = hashlib.sha256(f"{region}/{node_class}".encode()).hexdigest()[:20]
    return f"{cluster}_{digest}"[:128]


def role_name(role: str) -> str:
    """A role name from a name, a path and name, or an ARN (arn:aws:iam::123:role/path/name
    and path/name -> name): IAM's AddRoleToInstanceProfile takes the bare name, as
    Karpenter strips the path before it."""
    return role.rsplit("/", 1)[-1]


def profile_tags(cluster: str, region: str, node_class: str) -> dict[str, str]:
    return {
        **tag_keys.ownership_tags(cluster),
        tag_keys.REGION: region,
        tag_keys.NODECLASS: node_class,
    }


def _get(iam: IAMClient, name: str) -> Mapping[str, Any] | None:
    try:
        with aws_call("iam:GetInstanceProfile", f"instance profile {name}"):
            return iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    except CloudProviderError as error:
        if error.code == "NoSuchEntity":
            return None
        raise


def ensure_instance_profile(
    iam: IAMClient,
    *,
    cluster: str,
    region: str,
    node_class: str,
    role: str | None,
    instance_profile: str | None,
) -> str:
    """The profile name to launch with. Raises CloudProviderError naming what is missing."""
    if instance_profile:
        if _get(iam, instance_profile) is None:
            raise CloudProviderError(
                f"spec.instanceProfile: instance profile {instance_profile} does not exist",
                call="iam:GetInstanceProfile",
                resource=f"instance profile {instance_profile}",
                code="NoSuchEntity",
            )
        return instance_profile
    if not role:
        raise CloudProviderError("spec: neither role nor instanceProfile is set")
    name = profile_name(cluster, region, node_class)
    wanted = role_name(role)
    try:
        _create_with_role(iam, cluster, region, node_class, name, wanted)
    except CloudProviderError as error:
        # Another writer (a second replica, or a previous attempt whose answer was lost)
        # got there first: what counts is whether the profile now carries the role.
        if error.code not in RACED_CODES:
            raise
        profile = _get(iam, name)
        if profile is None or [str(r["RoleName"]) for r in profile.get("Roles", [])] != [wanted]:
            raise
    return name


# IAM's answers when a concurrent writer created the profile or attached a role first.
RACED_CODES: Final = frozenset({"EntityAlreadyExists", "LimitExceeded"})


def _create_with_role(iam: IAMClient, cluster: str, region: str, node_class: str, name: str,
                      wanted: str) -> None:
    resource = f"instance profile {name}"
    profile = _get(iam, name)
    if profile is None:
        with aws_call("iam:CreateInstanceProfile", resource):
            profile = iam.create_instance_profile(
                InstanceProfileName=name,
                Path=profile_path(cluster),
                Tags=[
                    {"Key": k, "Value": v}
                    for k, v in sorted(profile_tags(cluster, region, node_class).items())
                ],
            )["InstanceProfile"]
    attached = [str(r["RoleName"]) for r in profile.get("Roles", [])]
    if attached == [wanted]:
        return
    for other in attached:
        with aws_call("iam:RemoveRoleFromInstanceProfile", resource):
            iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=other)
    with aws_call("iam:AddRoleToInstanceProfile", f"{resource} role {wanted}"):
        iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=wanted)


@dataclass(frozen=True)
class OwnedProfile:
    name: str
    node_class: str
    roles: tuple[str, ...]


def list_cluster_profiles(iam: IAMClient, cluster: str) -> list[OwnedProfile]:
    """Profiles we created for this cluster: found by path, confirmed by the cluster's
    ownership tag. IAM's ListInstanceProfiles answers without tags (its listings return a
    subset of each resource), so each profile's tags are read with GetInstanceProfile."""
    found: list[OwnedProfile] = []
    owner = tag_keys.ownership_tags(cluster)
    with aws_call("iam:ListInstanceProfiles", f"path {profile_path(cluster)}"):
        paginator = iam.get_paginator("list_instance_profiles")
        listed = [raw for page in paginator.paginate(PathPrefix=profile_path(cluster))
                  for raw in page.get("InstanceProfiles", [])]
    for raw in listed:
        described = _get(iam, raw["InstanceProfileName"])
        if described is None:  # deleted since it was listed
            continue
        tagged = {t["Key"]: t["Value"] for t in described.get("Tags", []) or []}
        if any(tagged.get(key) != value for key, value in owner.items()):
            continue
        found.append(
            OwnedProfile(
                name=str(described["InstanceProfileName"]),
                node_class=tagged.get(tag_keys.NODECLASS, ""),
                roles=tuple(str(r["RoleName"]) for r in described.get("Roles", [])),
            )
        )
    return found


def delete_profile(iam: IAMClient, profile: OwnedProfile) -> None:
    resource = f"instance profile {profile.name}"
    try:
        for role in profile.roles:
            with aws_call("iam:RemoveRoleFromInstanceProfile", resource):
                iam.remove_role_from_instance_profile(
                    InstanceProfileName=profile.name, RoleName=role
                )
        with aws_call("iam:DeleteInstanceProfile", resource):
            iam.delete_instance_profile(InstanceProfileName=profile.name)
    except CloudProviderError as error:
        if error.code != "NoSuchEntity":
            raise
