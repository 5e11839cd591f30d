"""What a cloud may offer beyond the `CloudProvider` calls, typed: each provider says what
it has in one `CloudCapabilities` record (`cloud.capabilities()`), and every wrapper
(`MeteredCloud`, `WithoutReservedCapacity`, the outside-lock proxy) forwards it. A
controller that needs one is built only when the record has it (`controllers.registry`).

- `instance_statuses`: EC2's instance status checks (the AWS provider the controller
  process runs, the simulated EC2), polled by the instance status health checks;
- `interruption_queue`: EC2's interruption events (the SQS queue, the simulated EC2's
  own queue), read by the interruption controller;
- `unavailable`: the offerings cache a spot interruption marks unavailable;
- `reservations`: capacity reservations an interruption marks unavailable;
- `reservation_lookup`: describes capacity reservations by id as EC2 has them now (their
  kind and end), for the capacity-block expiration controller (AWS, the simulated EC2);
- `node_classes`: resolves an EC2NodeClass's subnets, security groups, images and instance
  profile, for the EC2NodeClass status controller (the AWS provider, the simulated EC2);
- `cleaner`: deletes what launches leave behind (launch templates, instance profiles),
  for the EC2NodeClass finalizer and the cloud garbage collection (AWS);
- `parameters`: SSM alias parameters whose image was deprecated are read again (AWS);
- `zonal_shifts`: ARC's zonal shifts on the cluster (AWS with ENABLE_ZONAL_SHIFT), read
  every 30 seconds by the zonal shift controller;
- `capacity_discovery`: learns the memory a registered Node reports for its instance type
  and node class images, and plans with it instead of the estimate (AWS), fed by the
  discovered capacity controller;
- `instance_tagger`: tags a registered NodeClaim's instance with its Node's name, the
  NodeClaim and the cluster (AWS), for the NodeClaim tagging controller;
- `registration_hooks`: the provider's gates on node registration (AWS: the placement
  group partition hook), run by the NodeClaim lifecycle's registration;
- `catalog_cache`: instance types and prices are cached and worth refreshing outside any
  provisioning (AWS: the Pricing API);
- `overlay_prices`: launches read the NodeOverlay store (the gate on), so a fleet's
  overrides carry the overlays' prices as priorities (AWS);
- `launches_outside_state_lock`: every call is safe from any thread, so controllers make
  them outside the state lock (the AWS provider; the simulated EC2, written for one
  thread, keeps its calls under it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.cloud.aws.capacity_reservations import Reservation
    from nodewright.cloud.aws.instance_statuses import HealthStatus
    from nodewright.cloud.aws.interruption_queue import EventHandler, PollResult
    from nodewright.cloud.aws.node_class_resolution import Resolution
    from nodewright.cloud.provider import RegistrationHook
    from nodewright.scheduling.overlays import OverlayStore


class InstanceStatusSource(Protocol):
    def list(self) -> Sequence[HealthStatus]: ...


class InterruptionSource(Protocol):
    def poll_once(self, handle: EventHandler) -> PollResult: ...

    @property
    def wait_seconds(self) -> float:
        """How long a receive may wait for a message (a long poll); 0: it returns at once."""
        ...


class OfferingMarker(Protocol):
    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str,
                         reason: str) -> None: ...


class ReservationMarker(Protocol):
    """The cloud's capacity reservations: one marked unavailable counts as empty until it
    is next looked up (Karpenter's capacityreservation.Provider.MarkUnavailable); one whose
    instance is gone has a slot back (MarkTerminated)."""

    def mark_unavailable(self, *reservation_ids: str) -> None: ...

    def mark_terminated(self, reservation_id: str) -> None: ...


class ReservationLookup(Protocol):
    def describe_reservations(self, reservation_ids: Collection[str]) -> Sequence[Reservation]:
        """The active, unexpired reservations among these ids (unknown ones left out)."""
        ...


class NodeClassResolver(Protocol):
    def resolve(self, node_class: EC2NodeClass) -> Resolution: ...


class CloudCleaner(Protocol):
    def delete_node_class_resources(self, node_class: str) -> object: ...

    def collect_cloud_garbage(
        self, node_classes: Collection[str], current_profiles: Collection[str] | None = None,
        active_profiles: Collection[str] = (),
    ) -> object: ...


class ParameterInvalidator(Protocol):
    def invalidate_deprecated_parameters(self) -> list[str]: ...


class CapacityLearner(Protocol):
    def update_capacity_from_node(self, node_class: EC2NodeClass, labels: Mapping[str, str],
                                  memory: int, image_id: str | None) -> bool: ...


class InstanceTagger(Protocol):
    def tag_registered(self, provider_id: str, nodeclaim: str, node_name: str
                       ) -> Mapping[str, str]: ...


class ZonalShiftSource(Protocol):
    def update(self) -> None: ...

    def shifted_zones(self) -> frozenset[str]: ...


class OverlayUser(Protocol):
    def use_overlays(self, store: Callable[[], OverlayStore | None]) -> None: ...


@dataclass(frozen=True)
class CloudCapabilities:
    """None (False): the cloud does not have it."""

    instance_statuses: InstanceStatusSource | None = None
    interruption_queue: InterruptionSource | None = None
    unavailable: OfferingMarker | None = None
    reservations: ReservationMarker | None = None
    reservation_lookup: ReservationLookup | None = None
    node_classes: NodeClassResolver | None = None
    cleaner: CloudCleaner | None = None
    parameters: ParameterInvalidator | None = None
    zonal_shifts: ZonalShiftSource | None = None
    capacity_discovery: CapacityLearner | None = None
    overlay_prices: OverlayUser | None = None
    instance_tagger: InstanceTagger | None = None
    registration_hooks: tuple[RegistrationHook, ...] = ()
    catalog_cache: bool = False
    launches_outside_state_lock: bool = False
