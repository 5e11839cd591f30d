"""The EC2NodeClass ValidationSucceeded condition (Karpenter's nodeclass validation
reconciler, pkg/controllers/nodeclass/validation.go at v1.14.1).

Before anything launches, the controller proves it may: it creates the launch template a
launch would use (CreateLaunchTemplate), then asks EC2 to dry-run the CreateFleet and the
RunInstances that launch would send. EC2 answers a dry run with DryRunOperation when the
caller is authorized and UnauthorizedOperation when an identity policy, a permissions
boundary or an SCP denies it, so IAM problems show on the EC2NodeClass instead of as failed
launches. A verdict is kept 30 minutes per node class and what it was checked with;
throttling and EC2's own failures leave the condition Unknown and are asked again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from nodewright.api.rules import RESTRICTED_TAG_KEYS
from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.errors import (
    DRY_RUN_OPERATION,
    RATE_LIMITED,
    UNAUTHORIZED_OPERATION,
    USER_DATA_MALFORMED,
    error_code,
    error_message,
    is_server_fault,
    reason_message,
)
from nodewright.cloud.aws.fleet import ON_DEMAND
from nodewright.cloud.aws.fleet import TAGGED_RESOURCE_TYPES as FLEET_TAGGED_RESOURCE_TYPES
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.cloud.aws.node_class_resolution import Resolution

VALIDATION_TTL_SECONDS: Final = 30 * 60.0
CREATE_FLEET_AUTH_FAILED: Final = "CreateFleetAuthCheckFailed"
CREATE_LAUNCH_TEMPLATE_AUTH_FAILED: Final = "CreateLaunchTemplateAuthCheckFailed"
RUN_INSTANCES_AUTH_FAILED: Final = "RunInstancesAuthCheckFailed"
DEPENDENCIES_NOT_READY: Final = "DependenciesNotReady"
TAG_VALIDATION_FAILED: Final = "TagValidationFailed"
USER_DATA_TOO_LARGE: Final = "UserDataSizeLimitExceeded"
AWAITING_DEPENDENCIES: Final = (
    "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
MESSAGES: Final[Mapping[str, str]] = {
    CREATE_FLEET_AUTH_FAILED: "Controller isn't authorized to call ec2:CreateFleet",
    CREATE_LAUNCH_TEMPLATE_AUTH_FAILED:
        "Controller isn't authorized to call ec2:CreateLaunchTemplate",
    RUN_INSTANCES_AUTH_FAILED: "Controller isn't authorized to call ec2:RunInstances",
    USER_DATA_TOO_LARGE: "ec2:CreateLaunchTemplate rejected the rendered user data as too large",
}
# Failures worth asking again rather than reporting (Karpenter's rate-limit and server
# error checks).
TRANSIENT_CODES: Final = frozenset({RATE_LIMITED, "InternalError", "InternalFailure",
                                    "ServiceUnavailable", "Unavailable"})
# The instance types a check launches when no NodePool narrows the choice (Karpenter's
# fallback types), by architecture.
FALLBACK_TYPES: Final[Mapping[str, str]] = {"amd64": "m5.large", "arm64": "m6g.large"}


@dataclass(frozen=True)
class Verdict:
    """The check's outcome: `reason` empty when the controller may launch; `retry` when it
    could not tell (the condition is Unknown and nothing is cached)."""

    reason: str = ""
    message: str = ""
    retry: bool = False

    @property
    def passed(self) -> bool:
        return not self.reason and not self.retry


PASSED: Final = Verdict()


def failure(reason: str, aws_text: str) -> Verdict:
    """A failed check, worded as Karpenter words it: what was refused, then why."""
    return Verdict(reason, f"{MESSAGES[reason]}: {reason_message(aws_text)[1]}")


def validation_tags(node_class: EC2NodeClass, cluster: str) -> dict[str, str]:
    """The tags the checks send: what every launch of the node class carries (Karpenter's
    GetTags for a NodeClaim of no NodePool)."""
    return {**(node_class.spec.tags or {}), **tag_keys.ownership_tags(cluster),
            tag_keys.NODEPOOL: "", tag_keys.NODECLASS: node_class.name}


def tag_problem(node_class: EC2NodeClass) -> Verdict | None:
    """spec.tags naming a key the controller writes itself (the CRD refuses these; an
    object that got past it is caught here, as Karpenter's GetTags catches it)."""
    restricted = [key for key in (node_class.spec.tags or {})
                  if key in RESTRICTED_TAG_KEYS or key.startswith("kubernetes.io/cluster")]
    if not restricted:
        return None
    quoted = ", ".join(f'"{key}"' for key in sorted(restricted))
    return Verdict(TAG_VALIDATION_FAILED,
                   f"tags failed validation requirements (tags: {quoted})")


def dependencies_missing(resolution: Resolution) -> bool:
    return not (resolution.images and resolution.instance_profile is not None
                and resolution.security_groups and resolution.subnets)


def cache_key(node_class: EC2NodeClass, resolution: Resolution,
              tags: Mapping[str, str]) -> str:
    """The node class's name and a digest of everything a check depends on."""
    checked = [
        sorted(subnet.id for subnet in resolution.subnets),
        sorted(group.id for group in resolution.security_groups),
        sorted((image.id, image.variants) for image in resolution.images),
        resolution.instance_profile,
        node_class.spec.to_manifest(),
        dict(node_class.metadata.annotations or {}),
        dict(tags),
    ]
    digest = hashlib.sha256(json.dumps(checked, sort_keys=True, default=str).encode())
    return f"{node_class.name}:{digest.hexdigest()[:16]}"


def launch_template_verdict(error: CloudProviderError) -> Verdict:
    """What a CreateLaunchTemplate failure says about the node class."""
    text = f"{error.code}: {error.cloud_message or error}"
    if error.code in TRANSIENT_CODES:
        return Verdict(message=f"ec2:CreateLaunchTemplate: {text}", retry=True)
    if error.code == USER_DATA_MALFORMED and "User data is limited to" in text:
        return failure(USER_DATA_TOO_LARGE, text)
    if error.code == UNAUTHORIZED_OPERATION:
        return failure(CREATE_LAUNCH_TEMPLATE_AUTH_FAILED, text)
    # Karpenter expects nothing else here: the check errs and is tried again.
    return Verdict(message=f"validating ec2:CreateLaunchTemplate authorization: {error}",
                   retry=True)


def _dry_run(call: Any, request: Mapping[str, Any]) -> ClientError | None:
    """The error of a dry run that was not DryRunOperation (None: authorized)."""
    try:
        call(**request)
    except ClientError as error:
        return None if error_code(error) == DRY_RUN_OPERATION else error
    # EC2 never runs a dry run; an EC2 stand-in that does has launched nothing we keep.
    return None


def _refused(error: ClientError, reason: str, call: str) -> Verdict:
    code = error_code(error)
    text = f"{code}: {error_message(error)}"
    if code in TRANSIENT_CODES or is_server_fault(error):
        return Verdict(message=f"{call}: {text}", retry=True)
    if code != UNAUTHORIZED_OPERATION:
        return Verdict(message=f"validating {call} authorization: {text}", retry=True)
    return failure(reason, text)


def fleet_request(template: str, instance_type: str, subnet_ids: Sequence[str],
                  tags: Mapping[str, str]) -> dict[str, Any]:
    """Karpenter's dry-run CreateFleet (validation.go getFleetLaunchTemplateConfig and
    CreateFleetInputBuilder, on-demand): the template's one instance type in each of the
    node class's subnets, no zone, image, priority, context or client token."""
    tag_list = tag_keys.as_aws(tags)
    return {
        "DryRun": True, "Type": "instant",
        "LaunchTemplateConfigs": [{
            "LaunchTemplateSpecification": {"LaunchTemplateName": template,
                                            "Version": "$Latest"},
            "Overrides": [{"InstanceType": instance_type, "SubnetId": subnet_id}
                          for subnet_id in subnet_ids],
        }],
        "TargetCapacitySpecification": {"DefaultTargetCapacityType": ON_DEMAND,
                                        "TotalTargetCapacity": 1},
        "TagSpecifications": [{"ResourceType": kind, "Tags": tag_list}
                              for kind in FLEET_TAGGED_RESOURCE_TYPES],
        "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
    }


def dry_run_fleet(ec2: EC2Client, request: Mapping[str, Any]) -> Verdict:
    """CreateFleet with DryRun (`fleet_request`)."""
    refused = _dry_run(ec2.create_fleet, request)
    if refused is None:
        return PASSED
    return _refused(refused, CREATE_FLEET_AUTH_FAILED, "ec2:CreateFleet")


def run_instances_request(template: str, instance_type: str, subnet_id: str,
                          interfaces: Sequence[tuple[int, int, str]],
                          tags: Mapping[str, str]) -> dict[str, Any]:
    """Karpenter's dry-run RunInstances: the template, one type, one subnet, tagged."""
    tag_list = tag_keys.as_aws(tags)
    return {
        "DryRun": True, "MinCount": 1, "MaxCount": 1,
        "LaunchTemplate": {"LaunchTemplateName": template, "Version": "$Latest"},
        "InstanceType": instance_type,
        "NetworkInterfaces": [
            {"NetworkCardIndex": card, "DeviceIndex": device, "InterfaceType": kind,
             "SubnetId": subnet_id} for card, device, kind in interfaces
        ] or [{"DeviceIndex": 0, "SubnetId": subnet_id}],
        "TagSpecifications": [{"ResourceType": kind, "Tags": tag_list}
                              for kind in ("instance", "volume", "network-interface")],
    }


def dry_run_instances(ec2: EC2Client, requests: Sequence[Mapping[str, Any]]) -> Verdict:
    """RunInstances with DryRun, one subnet after the other: the first authorized one
    passes; else the first subnet's answer decides (authorization is not per subnet)."""
    first: ClientError | None = None
    for request in requests:
        refused = _dry_run(ec2.run_instances, request)
        if refused is None:
            return PASSED
        first = first or refused
    if first is None:
        return PASSED
    if (error_code(first) == "InvalidParameterValue"
            and "Invalid IAM Instance Profile name" in error_message(first)):
        # A profile just created is not visible to EC2 yet.
        return Verdict(message=f"ec2:RunInstances: {error_message(first)}", retry=True)
    return _refused(first, RUN_INSTANCES_AUTH_FAILED, "ec2:RunInstances")
