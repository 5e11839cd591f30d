"""The instance profile a node class launches with: the given one, or one we create for the
node class's role (tagged like Karpenter's, so IAM conditions and garbage collection can
recognise it).

As Karpenter v1.14.1: a node class keeps the profile its status names while that profile
carries its role; when `spec.role` changes, a new profile is created for the new role and
the old one is left to the nodes running with it (garbage collection deletes it once no
node class names it, no NodeClaim was launched with it and its protection has lapsed).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_iam import IAMClient

log = logging.getLogger(__name__)

PATH_ROOT: Final = "/nodewright/"
# The NodeClaim annotation naming the profile its instance was launched with (Karpenter's
# karpenter.k8s.aws/instance-profile-name): garbage collection keeps such profiles.
PROFILE_ANNOTATION: Final = "karpenter.k8s.aws/instance-profile-name"
# Karpenter's ProtectedProfilesTTL: a profile just created, or just replaced by a new one,
# is not garbage collected for this long (status writes and NodeClaims just launched
# with it may not be visible yet).
PROTECTED_SECONDS: Final = 3600.0
# Karpenter's role-not-found cache (its DefaultCleanupInterval): a role IAM does not know
# is not tried again for this long, so a node class naming a missing role does not create
# (and delete) a profile at every resolution.
MISSING_ROLE_SECONDS: Final = 60.0


def profile_path(cluster: str) -> str:
    return f"{PATH_ROOT}{cluster}/"


def profile_name(cluster: str, region: str, node_class: str, *, uid: str = "",
                 generation: int = 0, role: str = "") -> str:
    """A new profile's name. Karpenter draws a random one at each role change; ours is a
    digest of the node class (uid and generation) and the role, so it is as new at each
    change (A, B, then A again: three names), while a resolution repeated before the
    status was written, by this replica or another, finds the profile it created instead of
    creating another (Karpenter's one-minute recreation cache)."""
    seed = f"{region}/{node_class}/{uid}/{generation}/{role}"
    digest = hashlib.sha256(seed.encode()).hexdigest()[:20]
    return f"{cluster}_{digest}"[:128]


def role_name(role: str) -> str:
    """A role name from a name, a path and name, or an ARN (arn:aws:iam::123:role/path/name
    and path/name -> name): IAM's AddRoleToInstanceProfile takes the bare name, as
    Karpenter strips the path before it."""
    return role.rsplit("/", 1)[-1]


def profile_tags(cluster: str, region: str, node_class: str,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The node class's spec.tags, then ours, which they cannot replace (Karpenter's
    InstanceProfileTags)."""
    return {
        **(extra or {}),
        **tag_keys.ownership_tags(cluster),
        tag_keys.REGION: region,
        tag_keys.NODECLASS: node_class,
    }


@dataclass
class ProfileMemory:
    """What the provider remembers between resolutions: profiles protected from garbage
    collection (an hour) and roles IAM said do not exist (a minute)."""

    clock: Seconds = system_clock
    protected: TTLCache[str, bool] = field(init=False)
    missing_roles: TTLCache[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.protected = TTLCache(PROTECTED_SECONDS, self.clock)
        self.missing_roles = TTLCache(MISSING_ROLE_SECONDS, self.clock)

    def protect(self, name: str | None) -> None:
        if name:
            self.protected.put(name, True)

    def unprotect(self, name: str) -> None:
        self.protected.drop_where(lambda key: key == name)

    def is_protected(self, name: str) -> bool:
        return self.protected.get(name) is not None


def _get(iam: IAMClient, name: str) -> Mapping[str, Any] | None:
    try:
        with aws_call("iam:GetInstanceProfile", f"instance profile {name}"):
            return iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    except CloudProviderError as error:
        if error.code == "NoSuchEntity":
            return None
        raise


def _roles(profile: Mapping[str, Any]) -> list[str]:
    return [str(r["RoleName"]) for r in profile.get("Roles", []) or []]


@dataclass(frozen=True)
class NodeClassIdentity:
    """Who a profile is for: the node class's name, uid and generation, and the profile
    its status names now."""

    name: str
    uid: str = ""
    generation: int = 0
    current: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


def ensure_instance_profile(
    iam: IAMClient,
    *,
    cluster: str,
    region: str,
    node_class: str | NodeClassIdentity,
    role: str | None,
    instance_profile: str | None,
    memory: ProfileMemory | None = None,
    check_named: bool = True,
) -> str:
    """The profile name to launch with. Raises CloudProviderError naming what is missing.

    `check_named`: read a `spec.instanceProfile` from IAM to check that it exists. False
    in an isolated VPC (ISOLATED_VPC): IAM has no VPC endpoint there (that is why such a
    cluster names a profile instead of a role), so the name is taken as written, as
    Karpenter always takes it."""
    who = node_class if isinstance(node_class, NodeClassIdentity) else NodeClassIdentity(
        node_class)
    memory = memory or ProfileMemory()
    if instance_profile:
        if check_named and _get(iam, instance_profile) is None:
            raise CloudProviderError(
                f"spec.instanceProfile: instance profile {instance_profile} does not exist",
                call="iam:GetInstanceProfile",
                resource=f"instance profile {instance_profile}",
                code="NoSuchEntity",
            )
        # A profile we created before the node class switched to instanceProfile stays
        # for the nodes launched with it (Karpenter protects it too).
        if who.current != instance_profile:
            memory.protect(who.current)
        return instance_profile
    if not role:
        raise CloudProviderError("spec: neither role nor instanceProfile is set")
    wanted = role_name(role)
    missing = memory.missing_roles.get(wanted)
    if missing is not None:
        raise CloudProviderError(f"spec.role: role {wanted} not found ({missing}); "
                                 f"trying again within a minute", code="NoSuchEntity",
                                 call="iam:AddRoleToInstanceProfile",
                                 resource=f"role {wanted}")
    if who.current:
        current = _get(iam, who.current)
        if current is not None and _roles(current)[:1] == [wanted]:
            return who.current
    name = profile_name(cluster, region, who.name, uid=who.uid, generation=who.generation,
                        role=wanted)
    try:
        _create_with_role(iam, cluster, region, who, name, wanted)
    except CloudProviderError as error:
        # Another writer (a second replica, or a previous attempt whose answer was lost)
        # got there first: what counts is whether the profile now carries the role.
        if error.code in RACED_CODES:
            profile = _get(iam, name)
            if profile is not None and _roles(profile) == [wanted]:
                return _adopted(memory, who, name)
        if _role_not_found(error):
            memory.missing_roles.put(wanted, error.cloud_message or str(error))
        raise
    return _adopted(memory, who, name)


def _adopted(memory: ProfileMemory, who: NodeClassIdentity, name: str) -> str:
    memory.protect(name)
    if who.current != name:
        memory.protect(who.current)
    return name


# IAM's answers when a concurrent writer created the profile or attached a role first.
RACED_CODES: Final = frozenset({"EntityAlreadyExists", "LimitExceeded"})


def _role_not_found(error: CloudProviderError) -> bool:
    """IAM's NoSuchEntity from AddRoleToInstanceProfile names the role when it is the role
    that is missing (Karpenter's IsRoleNotFoundError)."""
    return (error.call == "iam:AddRoleToInstanceProfile" and error.code == "NoSuchEntity"
            and "role" in error.cloud_message.lower())


def _delete_quietly(iam: IAMClient, name: str) -> None:
    try:
        profile = _get(iam, name)
        if profile is not None:
            delete_profile(iam, OwnedProfile(name=name, node_class="",
                                             roles=tuple(_roles(profile))))
    except CloudProviderError as error:
        log.info("deleting instance profile %s after a failed creation: %s", name, error)


def _create_with_role(iam: IAMClient, cluster: str, region: str, who: NodeClassIdentity,
                      name: str, wanted: str) -> None:
    resource = f"instance profile {name}"
    profile = _get(iam, name)
    if profile is None:
        with aws_call("iam:CreateInstanceProfile", resource):
            profile = iam.create_instance_profile(
                InstanceProfileName=name,
                Path=profile_path(cluster),
                Tags=[
                    {"Key": k, "Value": v}
                    for k, v in sorted(profile_tags(cluster, region, who.name,
                                                    who.tags).items())
                ],
            )["InstanceProfile"]
        created = True
    else:
        created = False
    try:
        attached = _roles(profile)
        if attached == [wanted]:
            return
        for other in attached:
            with aws_call("iam:RemoveRoleFromInstanceProfile", resource):
                iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=other)
        with aws_call("iam:AddRoleToInstanceProfile", f"{resource} role {wanted}"):
            iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=wanted)
    except CloudProviderError as error:
        # As Karpenter: a profile created here but left without its role is deleted, so
        # failed attempts do not pile up profiles (garbage collection is the backstop).
        # A concurrent writer's profile (it attached the role first) is not ours to delete.
        if created and error.code not in RACED_CODES:
            _delete_quietly(iam, name)
        raise


@dataclass(frozen=True)
class OwnedProfile:
    name: str
    node_class: str
    roles: tuple[str, ...]


def list_cluster_profiles(iam: IAMClient, cluster: str,
                          region: str | None = None) -> list[OwnedProfile]:
    """Profiles we created for this cluster: found by path, confirmed by the cluster's
    ownership tag and, given `region`, its region tag: IAM is global, and a cluster of the
    same name in another region has the same path and ownership tag (Karpenter's path
    holds the region for this). IAM's ListInstanceProfiles answers without tags (its
    listings return a subset of each resource), so each profile's tags are read with
    GetInstanceProfile."""
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
        if region is not None and tagged.get(tag_keys.REGION) != region:
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
