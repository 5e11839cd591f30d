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

# EC2 error codes that mean "this offering has no capacity right now" (CreateFleet reports
# them per override; RunInstances raises them).
CAPACITY_ERROR_CODES: Final[frozenset[str]] = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientFreeAddressesInSubnet",
        "MaxSpotInstanceCountExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientCapacityOnHost",
        "ReservationCapacityExceeded",
        "SpotMaxPriceTooLow",
    }
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
    return kind(text, call=call, resource=resource, code=code, cloud_message=message)


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
