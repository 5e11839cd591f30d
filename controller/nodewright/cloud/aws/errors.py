"""Turning botocore failures into the provider's error types, naming the call and resource."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from botocore.exceptions import BotoCoreError, ClientError

from nodewright.cloud.provider import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
)

# EC2 error codes that mean "this offering cannot be launched right now" (CreateFleet
# reports them per override; RunInstances raises them): Karpenter's unfulfillable-capacity
# codes (pkg/errors), account quotas included, plus two of EC2's own capacity answers.
CAPACITY_ERROR_CODES: Final[frozenset[str]] = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientFreeAddressesInSubnet",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "MaxFleetCountExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientCapacityOnHost",
        "ReservationCapacityExceeded",
        "SpotMaxPriceTooLow",
    }
)
# The account may not create the EC2 Spot service-linked role: no spot launch can succeed.
SPOT_SERVICE_LINKED_ROLE: Final = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
DRY_RUN_OPERATION: Final = "DryRunOperation"
UNAUTHORIZED_OPERATION: Final = "UnauthorizedOperation"
RATE_LIMITED: Final = "RequestLimitExceeded"
USER_DATA_MALFORMED: Final = "InvalidUserData.Malformed"

# Karpenter's IsLaunchTemplateNotFound.
LAUNCH_TEMPLATE_NOT_FOUND: Final[frozenset[str]] = frozenset(
    {"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"}
)

NOT_FOUND_CODES: Final[frozenset[str]] = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidInstanceID.Malformed",
        "InvalidLaunchTemplateName.NotFoundException",
        "InvalidLaunchTemplateId.NotFound",
        "NoSuchEntity",
    }
)


def reason_message(text: str) -> tuple[str, str]:
    """A well-known (reason, message) for an AWS failure's text (Karpenter's
    ToReasonMessage): what a condition or a NodeClaim says about it."""
    if SPOT_SERVICE_LINKED_ROLE in text:
        return ("SpotSLRCreationFailed", "User does not have sufficient permission to create "
                "the Spot ServiceLinkedRole to launch spot instances")
    if any(word in text for word in (UNAUTHORIZED_OPERATION, "AccessDenied", "AuthFailure")):
        if "with an explicit deny in a permissions boundary" in text:
            return ("Unauthorized", "User is not authorized to perform this operation due to a "
                    "permission boundary")
        if "with an explicit deny in a service control policy" in text:
            return ("Unauthorized", "User is not authorized to perform this operation due to a "
                    "service control policy")
        if "Not authorized for images" in text:
            return ("AMIAuthorizationFailure",
                    "User is not authorized for AMI used in instance launch")
        return ("Unauthorized", "User is not authorized to perform this operation because no "
                "identity-based policy allows it")
    for needles, reason, message in _REASONS:
        if all(needle in text for needle in needles):
            return reason, message
    return "LaunchFailed", "Instance launch failed"


_REASONS: Final[tuple[tuple[tuple[str, ...], str, str], ...]] = (
    (("InvalidParameter", "belong to different networks"), "SecurityGroupSubnetVPCMismatch",
     "Security groups and subnets must be in the same VPC."),
    (("iamInstanceProfile.name is invalid",), "InstanceProfileNameInvalid",
     "Instance profile name used from EC2NodeClass status does not exist"),
    (("InvalidLaunchTemplateId.NotFound",), "LaunchTemplateNotFound",
     "Launch template used for instance launch wasn't found"),
    (("User data is limited to",), "UserDataSizeLimitExceeded",
     "Rendered user data exceeds the EC2 user data size limit"),
    (("InvalidAMIID.Malformed",), "InvalidAMIID", "AMI used for instance launch is invalid"),
    (("InvalidAMIID.NotFound",), "AMINotFound", "AMI used for instance launch either does not "
     "exist or you don't have permissions to use it"),
    ((RATE_LIMITED,), RATE_LIMITED, "Request limit exceeded"),
    (("InternalError",), "InternalError", "An internal error has occurred"),
    (("not eligible for Free Tier",), "FreeTierIneligible",
     "The specified instance type is not eligible for Free Tier"),
    (("MaxFleetCountExceeded",), "FleetQuotaExceeded", "A fleet launch was requested but this "
     "would exceed your fleet request quota"),
    (("PendingVerification",), "AccountPendingVerification", "An instance launch was requested "
     "but the request for launching resources in this region is still being verified"),
    (("MaxSpotInstanceCountExceeded",), "SpotQuotaExceeded", "A spot instance launch was "
     "requested but this would exceed your spot instance quota"),
    (("VcpuLimitExceeded",), "VCPULimitExceeded",
     "An instance was requested that would exceed your VCPU quota"),
    (("InsufficientFreeAddressesInSubnet",), "InsufficientFreeAddressesInSubnet",
     "There are not enough free IP addresses to launch an instance in this subnet"),
)


def is_server_fault(error: ClientError) -> bool:
    """A 5xx answer (Karpenter's IsServerError): worth trying again."""
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return int(status or 0) >= 500


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", ""))


def describe_failure(call: str, resource: str, code: str, message: str) -> str:
    where = f"{call} {resource}".strip()
    return f"{where}: {code}: {message}" if code else f"{where}: {message}"


def translate(error: ClientError, call: str, resource: str) -> CloudProviderError:
    """The provider error for a ClientError raised by `call` on `resource`."""
    code, message = error_code(error), error_message(error)
    text = describe_failure(call, resource, code, message)
    kind: type[CloudProviderError] = CloudProviderError
    if code in CAPACITY_ERROR_CODES:
        kind = InsufficientCapacityError
    elif code in NOT_FOUND_CODES:
        kind = NodeClaimNotFoundError
    return kind(text, call=call, resource=resource, code=code, cloud_message=message,
                reason=reason_message(f"{code}: {message}")[0])


@contextmanager
def aws_call(call: str, resource: str = "") -> Iterator[None]:
    """Run AWS calls, re-raising any botocore failure as a CloudProviderError that names
    `call` (e.g. "ec2:CreateFleet") and `resource` (e.g. "nodeclaim default-x7k2p")."""
    try:
        yield
    except ClientError as error:
        raise translate(error, call, resource) from error
    except BotoCoreError as error:
        text = describe_failure(call, resource, type(error).__name__, str(error))
        raise CloudProviderError(
            text, call=call, resource=resource, code=type(error).__name__, cloud_message=str(error)
        ) from error
