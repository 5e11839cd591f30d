"""The CloudProvider seam: what the controllers ask of a cloud, and the errors it raises.

Implementations: `nodewright.cloud.aws` (boto3) and `nodewright.cloud.sim` (simulated EC2).
Controllers only see this module's names, so the same controller code runs against both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.api.nodeclaim import NodeClaim
    from nodewright.cloud.capabilities import CloudCapabilities
    from nodewright.scheduling.catalog import InstanceType


class CloudProviderError(Exception):
    """A terminal cloud failure. The message names the call, the resource and the cloud's
    own error code and message, so that a user can act on it without reading logs."""

    def __init__(
        self,
        message: str,
        *,
        call: str = "",
        resource: str = "",
        code: str = "",
        cloud_message: str = "",
        warnings: Sequence[tuple[str, str]] = (),
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.call = call
        self.resource = resource
        self.code = code
        self.cloud_message = cloud_message
        # (reason, note) of Warning events the launch controller publishes about the
        # NodeClaim, for what the cloud found out on the way (the account may not launch
        # spot, ...).
        self.warnings = tuple(warnings)
        # A well-known reason for the failure (Karpenter's CreateError reason: Unauthorized,
        # AMINotFound, ...), for the NodeClaim's Launched condition; "" when none applies.
        self.reason = reason


class InsufficientCapacityError(CloudProviderError):
    """No offering could be launched right now. Retryable: the offerings that failed have been
    marked unavailable, so the next attempt picks different ones."""


class NodeClaimNotFoundError(CloudProviderError):
    """The instance behind a NodeClaim does not exist (or is already terminated)."""


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClaim's node class cannot launch yet (no subnets, AMIs, ... resolved).
    Retryable once the node class status changes."""


class RegistrationHook(Protocol):
    """A provider's gate on node registration (Karpenter's cloudprovider.NodeLifecycleHook,
    `Registered`): while any hook is not ready, the Node keeps the karpenter.sh/unregistered
    taint and the NodeClaim stays Registered=Unknown (RegistrationHookPending, the pending
    hooks' names as message). `registered` answers None when ready, or the seconds after
    which to ask again; it may add labels to the NodeClaim, which are synced to the Node.
    An exception counts as pending and is logged."""

    @property
    def name(self) -> str: ...

    def registered(self, nodeclaim: dict[str, object]) -> float | None: ...


@dataclass(frozen=True)
class Instance:
    """A launched machine as the controllers see it (cloud-neutral)."""

    provider_id: str  # aws:///<zone>/<instance-id>
    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str  # "on-demand" | "spot" | "reserved"
    image_id: str
    state: str  # pending | running | stopping | stopped | shutting-down | terminated
    launch_time: datetime
    subnet_id: str = ""
    security_group_ids: tuple[str, ...] = ()
    nodeclaim_name: str = ""
    nodepool_name: str = ""
    node_class_name: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    # Well-known labels the node will carry (instance type, zone, capacity type, ...).
    labels: Mapping[str, str] = field(default_factory=dict)
    instance_profile: str = ""  # the IAM instance profile it runs with (AWS)
    # Annotations the NodeClaim takes from its launch (the AWS instance profile's name).
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RepairPolicy:
    """A node condition that, held for `toleration_seconds`, makes the node unhealthy."""

    condition_type: str
    condition_status: str
    toleration_seconds: int


@runtime_checkable
class CloudProvider(Protocol):
    """What the controllers need from a cloud."""

    name: str

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        """Instance types launchable with this node class, each with its offerings
        (zone x capacity type x price x available)."""
        ...

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        """Launch one instance for the NodeClaim. Idempotent per NodeClaim UID.

        Raises InsufficientCapacityError (retryable), NodeClassNotReadyError (retryable)
        or CloudProviderError (terminal)."""
        ...

    def get(self, provider_id: str) -> Instance:
        """Raises NodeClaimNotFoundError when the instance is gone."""
        ...

    def list(self) -> list[Instance]:
        """Every live instance this cluster owns."""
        ...

    def delete(self, provider_id: str) -> None:
        """Terminate. An instance that is already gone counts as deleted."""
        ...

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        """Why the NodeClaim's instance no longer matches its node class, or None."""
        ...

    def repair_policies(self) -> Sequence[RepairPolicy]: ...

    def capabilities(self) -> CloudCapabilities:
        """What it offers beyond these calls (`cloud.capabilities`); wrappers forward it."""
        ...
