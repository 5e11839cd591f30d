"""Everything an EC2NodeClass resolves to, and the status conditions that describe it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from nodewright.api.core import Condition, NodeSelectorRequirement
from nodewright.api.ec2nodeclass import (
    AMIStatus,
    EC2NodeClassStatus,
    SecurityGroupStatus,
    SubnetStatus,
)
from nodewright.api.kubelet import kubelet_problems
from nodewright.api.problems import format_path
from nodewright.cloud.aws import capacity_reservations, placement_groups
from nodewright.cloud.aws.amis import (
    OS_LABEL,
    WINDOWS_BUILD_LABEL,
    AliasError,
    Image,
    resolve_amis,
    variant_requirements,
)
from nodewright.cloud.aws.capacity_reservations import Reservation
from nodewright.cloud.aws.clock import TTLCache
from nodewright.cloud.aws.discovery import (
    SecurityGroup,
    Subnet,
    UnmatchedTerm,
    discover_security_groups,
    discover_subnets,
)
from nodewright.cloud.aws.instance_profiles import (
    NodeClassIdentity,
    ProfileMemory,
    ensure_instance_profile,
)
from nodewright.cloud.aws.placement_groups import PlacementGroup
from nodewright.cloud.aws.ssm_parameters import ParameterCache
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.conditions import EC2NODECLASS, EC2NODECLASS_UNRESERVED, ConditionSet

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import AMISelectorTerm, EC2NodeClass
    from nodewright.cloud.aws.clients import AwsClients

ARCH_LABEL = "kubernetes.io/arch"
VALIDATION = "ValidationSucceeded"
RESERVATIONS = "CapacityReservationsReady"
PLACEMENT_GROUP = "PlacementGroupReady"
INVALID_KUBELET = "InvalidKubeletConfiguration"
AMIS = "AMIsReady"
PLACEMENT_GROUP_FAILED = "PlacementGroupResolutionFailed"

ImageLookup = tuple[list[Image], list[UnmatchedTerm]]
SubnetLookup = tuple[list[Subnet], list[UnmatchedTerm]]


@dataclass
class Lookups:
    """What resolutions keep between them: SSM parameters (24 h / 5 min), the images
    amiSelectorTerms resolve to (AMI_REFRESH_INTERVAL) and the subnets subnetSelectorTerms
    resolve to (SUBNET_REFRESH_INTERVAL), as Karpenter's providers cache them."""

    parameters: ParameterCache
    images: TTLCache[str, ImageLookup]
    subnets: TTLCache[str, SubnetLookup]


@dataclass(frozen=True)
class Resolution:
    subnets: tuple[Subnet, ...] = ()
    security_groups: tuple[SecurityGroup, ...] = ()
    images: tuple[Image, ...] = ()
    instance_profile: str | None = None
    capacity_reservations: tuple[Reservation, ...] = ()
    placement_group: PlacementGroup | None = None
    unmatched: tuple[UnmatchedTerm, ...] = ()
    # condition type -> why it is not ready
    problems: dict[str, str] = field(default_factory=dict)
    # condition type -> the reason of its False (or Unknown) condition, where it is not the
    # condition's usual one
    reasons: dict[str, str] = field(default_factory=dict)
    # condition types whose state is not known yet (Unknown, not False)
    unknown: frozenset[str] = frozenset()
    # The ReservedCapacity gate: off, capacity reservations are not looked up and
    # CapacityReservationsReady is no condition of the node class (Karpenter's nodeclass
    # controller skips its capacity reservation reconciler).
    reserved_capacity: bool = True

    @property
    def condition_set(self) -> ConditionSet:
        return EC2NODECLASS if self.reserved_capacity else EC2NODECLASS_UNRESERVED

    @property
    def valid(self) -> bool:
        return VALIDATION not in self.problems

    @property
    def ready(self) -> bool:
        return (
            bool(self.subnets)
            and bool(self.security_groups)
            and bool(self.images)
            and self.instance_profile is not None
            and self.valid
            and RESERVATIONS not in self.problems
            and PLACEMENT_GROUP not in self.problems
        )

    def conditions(self, now: datetime | None = None) -> list[Condition]:
        stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        checks = (
            ("SubnetsReady", bool(self.subnets), "SubnetsNotFound"),
            ("SecurityGroupsReady", bool(self.security_groups), "SecurityGroupsNotFound"),
            ("AMIsReady", bool(self.images), "AMINotFound"),
            ("InstanceProfileReady", self.instance_profile is not None, "InstanceProfileNotFound"),
            (RESERVATIONS, RESERVATIONS not in self.problems, "CapacityReservationsNotFound"),
            (PLACEMENT_GROUP, PLACEMENT_GROUP not in self.problems, "PlacementGroupNotFound"),
            (VALIDATION, self.valid, INVALID_KUBELET),
        )
        kinds = self.condition_set
        conditions: list[Condition] = []
        for kind, ok, reason in checks:
            if kind not in kinds.dependents:
                continue
            message = self.problems.get(kind) or f"{kind.removesuffix('Ready')} not resolved"
            conditions.append(
                Condition(type=kind, status="True", reason=kind, last_transition_time=stamp)
                if ok
                else Condition(
                    type=kind,
                    status="Unknown" if kind in self.unknown else "False",
                    reason=self.reasons.get(kind, reason),
                    message=message,
                    last_transition_time=stamp,
                )
            )
        # Ready as the status controller writes it: the condition set's root.
        scratch: dict[str, object] = {"metadata": {}, "status": {}}
        moment = now or datetime.now(UTC)
        for condition in conditions:
            kinds.set(scratch, condition.type, condition.status, moment,
                      condition.reason, condition.message or "")
        ready = objects.condition(scratch, kinds.root) or {}
        conditions.append(Condition(
            type=kinds.root, status="True" if ready.get("status") == "True" else "False",
            reason=str(ready.get("reason")), message=str(ready.get("message") or "") or None,
            last_transition_time=stamp))
        return conditions

    def to_status(self, now: datetime | None = None) -> EC2NodeClassStatus:
        moment = now or datetime.now(UTC)
        return EC2NodeClassStatus(
            capacity_reservations=[
                r.to_status(moment) for r in self.capacity_reservations] or None,
            # Most free IPs first, then by id (Karpenter's subnet status order).
            # Empty lists are left out, as Karpenter's nil slices (omitempty).
            subnets=[
                SubnetStatus(id=s.id, zone=s.zone, zone_id=s.zone_id or None)
                for s in sorted(self.subnets, key=lambda s: (-s.free_ips, s.id))
            ] or None,
            security_groups=[
                SecurityGroupStatus(id=g.id, name=g.name or None) for g in self.security_groups
            ] or None,
            # One entry per image and variant, as Karpenter writes them: the requirements
            # say which instance types boot the image (GPU types the nvidia one, ...).
            amis=[
                AMIStatus(
                    id=image.id,
                    name=image.name or None,
                    deprecated=image.deprecated or None,
                    requirements=_status_order([
                        NodeSelectorRequirement(
                            key=ARCH_LABEL, operator="In", values=[image.architecture]
                        ),
                        *(
                            NodeSelectorRequirement(key=key, operator=operator)
                            for key, operator in variant_requirements(variant)
                        ),
                        *_windows_requirements(image),
                    ]),
                )
                for image in _newest_first(self.images)
                for variant in image.variants or ("",)
            ] or None,
            instance_profile=self.instance_profile,
            conditions=self.conditions(now),
        )


def _newest_first(images: Sequence[Image]) -> list[Image]:
    """Newest creation date first, then by id (Karpenter's AMIs.Sort)."""
    return sorted(sorted(images, key=lambda i: i.id), key=lambda i: i.creation_date,
                  reverse=True)


def _status_order(requirements: list[NodeSelectorRequirement]) -> list[NodeSelectorRequirement]:
    """Shortest key first, then by key (the order Karpenter's AMI status controller sorts an
    image's requirements in): kubernetes.io/os, kubernetes.io/arch,
    node.kubernetes.io/windows-build, karpenter.k8s.aws/instance-gpu-count, then
    karpenter.k8s.aws/instance-accelerator-count."""
    return sorted(requirements, key=lambda r: (len(r.key), r.key))


def _windows_requirements(image: Image) -> list[NodeSelectorRequirement]:
    """A Windows alias image runs on Windows nodes of its build (Karpenter's AMI
    requirements for the Windows families)."""
    if image.windows_build is None:
        return []
    return [
        NodeSelectorRequirement(key=OS_LABEL, operator="In", values=["windows"]),
        NodeSelectorRequirement(key=WINDOWS_BUILD_LABEL, operator="In",
                                values=[image.windows_build]),
    ]


def _missing(unmatched: Sequence[UnmatchedTerm], prefix: str) -> str:
    return "; ".join(term.describe() for term in unmatched if term.field.startswith(prefix))


def validation_problems(node_class: EC2NodeClass) -> dict[str, str]:
    """What the API server lets through but no node could use (an evictionSoftGracePeriod
    that is not a duration, which Karpenter cannot even decode): ValidationSucceeded=False,
    and the node class launches nothing."""
    invalid = kubelet_problems(node_class.spec.kubelet)
    if not invalid:
        return {}
    return {VALIDATION: "; ".join(f"{format_path(path)}: {why}" for path, why in invalid)}


def resolve_node_class(
    clients: AwsClients,
    node_class: EC2NodeClass,
    *,
    cluster: str,
    kubernetes_version: str,
    with_instance_profile: bool = True,
    now: datetime | None = None,
    lookups: Lookups | None = None,
    profiles: ProfileMemory | None = None,
    reserved_capacity: bool = True,
    isolated_vpc: bool = False,
) -> Resolution:
    """`lookups`: the caches to read through (none: everything is read afresh);
    `profiles`: the instance profiles protected and the roles found missing so far;
    `reserved_capacity`: the ReservedCapacity gate (off: no reservation is looked up);
    `isolated_vpc`: IAM is out of reach, a named instance profile is not read."""
    spec = node_class.spec
    problems = validation_problems(node_class)
    reasons: dict[str, str] = {}
    subnet_key = json.dumps([t.to_manifest() for t in spec.subnet_selector_terms],
                            sort_keys=True)
    found_subnets = lookups.subnets.get(subnet_key) if lookups else None
    if found_subnets is None:
        found_subnets = discover_subnets(clients.ec2, spec.subnet_selector_terms)
        if lookups:
            lookups.subnets.put(subnet_key, found_subnets)
    subnets, unmatched_subnets = found_subnets
    groups, unmatched_groups = discover_security_groups(
        clients.ec2, spec.security_group_selector_terms
    )
    try:
        images, unmatched_images = _images(clients, spec.ami_selector_terms,
                                           kubernetes_version, lookups)
    except AliasError as error:
        images, unmatched_images = [], []
        problems[AMIS] = f"spec.amiSelectorTerms: {error}"
        reasons[AMIS] = error.reason
    unmatched = (*unmatched_subnets, *unmatched_groups, *unmatched_images)
    if not subnets:
        problems["SubnetsReady"] = _missing(unmatched, "subnet") or "no subnets matched"
    if not groups:
        problems["SecurityGroupsReady"] = (
            _missing(unmatched, "securityGroup") or "no security groups matched"
        )
    if not images and "AMIsReady" not in problems:
        problems["AMIsReady"] = _missing(unmatched, "ami") or "no images matched"
    profile: str | None = None
    if with_instance_profile:
        try:
            profile = ensure_instance_profile(
                clients.iam,
                cluster=cluster,
                region=clients.region,
                node_class=identity_of(node_class),
                role=spec.role,
                instance_profile=spec.instance_profile,
                memory=profiles,
                check_named=not isolated_vpc,
            )
        except CloudProviderError as error:
            problems["InstanceProfileReady"] = str(error)
    reservations: list[Reservation] = []
    if spec.capacity_reservation_selector_terms and reserved_capacity:
        try:
            reservations = capacity_reservations.describe(
                clients.ec2, spec.capacity_reservation_selector_terms, now or datetime.now(UTC))
        except CloudProviderError as error:
            problems[RESERVATIONS] = str(error)
    group: PlacementGroup | None = None
    selector = spec.placement_group_selector
    if selector is not None:
        try:
            group = placement_groups.describe(clients.ec2, selector)
        except CloudProviderError as error:
            # Karpenter's reason and message for a failed lookup (not a missing group).
            problems[PLACEMENT_GROUP] = f"Failed to resolve placement group: {error}"
            reasons[PLACEMENT_GROUP] = PLACEMENT_GROUP_FAILED
        else:
            if group is None:
                problems[PLACEMENT_GROUP] = (
                    f"Placement group {selector.name or selector.id!r} not found")
    return Resolution(
        subnets=tuple(subnets),
        placement_group=group,
        security_groups=tuple(groups),
        images=tuple(images),
        instance_profile=profile,
        capacity_reservations=tuple(reservations),
        unmatched=unmatched,
        problems=problems,
        reasons=reasons,
        reserved_capacity=reserved_capacity,
    )


def identity_of(node_class: EC2NodeClass) -> NodeClassIdentity:
    meta = node_class.metadata
    return NodeClassIdentity(
        name=node_class.name, uid=meta.uid or "", generation=meta.generation or 0,
        current=node_class.status.instance_profile if node_class.status else None,
        tags=dict(node_class.spec.tags or {}))


def _images(clients: AwsClients, terms: Sequence[AMISelectorTerm], kubernetes_version: str,
            lookups: Lookups | None) -> ImageLookup:
    if lookups is None:
        return resolve_amis(clients.ec2, clients.ssm, terms, kubernetes_version)
    key = json.dumps([kubernetes_version, *(t.to_manifest() for t in terms)], sort_keys=True)
    found = lookups.images.get(key)
    if found is None:
        found = resolve_amis(clients.ec2, clients.ssm, terms, kubernetes_version,
                             parameters=lookups.parameters)
        lookups.images.put(key, found)
    return found
