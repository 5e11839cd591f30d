"""`SimulatedEC2`: the CloudProvider of the simulator, an in-process EC2 on a Clock.

Instances live through EC2's states on the clock: pending, running after `launch_delay`,
then (with a ClusterAPI) their Node registers after `registration_delay`; terminating goes
through shutting-down to terminated after `termination_delay`, after which a Node still
left for the instance is deleted. `interrupt` injects what AWS does to instances (spot
reclaims, scheduled retirements, stops, terminations, rebalance recommendations) and puts
the matching EventBridge messages on `interruption_queue`. Everything random comes from
the seed, nothing reads the wall clock.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar, Final

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.quantity import parse_resources
from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.capacity_reservations import (
    RESERVED,
    Reservation,
    with_reserved_offerings,
)
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.aws.node_identity import node_labels, with_do_not_sync_taints
from nodewright.cloud.aws.offerings import (
    RESERVATION_ID_LABEL,
    RESERVATION_INTERRUPTIBLE_LABEL,
    RESERVATION_TYPE_LABEL,
    TENANCY_LABEL,
    Choice,
    interruptible_value,
    tenancy_for,
)
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import (
    CloudProviderError,
    Instance,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from nodewright.cloud.sim import fleet
from nodewright.cloud.sim import node_class as node_class_resolution
from nodewright.cloud.sim.catalog import SimCatalog
from nodewright.cloud.sim.identity import Identities
from nodewright.cloud.sim.images import ImageCatalog
from nodewright.cloud.sim.instance_statuses import Impairment, SimInstanceStatuses
from nodewright.cloud.sim.interruptions import InterruptionKind, SimulatedInterruptionQueue
from nodewright.cloud.sim.kubelet import NodeAgent, retrying
from nodewright.cloud.sim.ledger import Ledger, SimCounters
from nodewright.cloud.sim.machines import (
    PENDING,
    RUNNING,
    SHUTTING_DOWN,
    STOPPED,
    STOPPING,
    TERMINATED,
    UP_STATES,
    NodeTemplate,
    SimInstance,
)
from nodewright.cloud.sim.node import OS_IMAGES
from nodewright.cloud.sim.reservations import ReservationBook, SimReservation
from nodewright.cloud.sim.settings import SimSettings
from nodewright.cloud.sim.world import (
    CapacityLike,
    CapacityPool,
    CapacityRule,
    PriceLike,
    PriceOverride,
)
from nodewright.cluster.api import ClusterAPI
from nodewright.runtime.clock import Clock
from nodewright.scheduling import labels as well_known
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.overlays import OverlayStore
from nodewright.scheduling.requirements import RequirementError, Requirements

log = logging.getLogger(__name__)

ICE: Final = "InsufficientInstanceCapacity"
DEFAULT_CLUSTER_NAME: Final = "nodewright-sim"


@dataclass(frozen=True)
class SimEvent:
    """Something the simulated EC2 did, for the simulator's timeline."""

    time: datetime
    kind: str  # launched | running | registered | insufficient-capacity | shutting-down | ...
    instance_id: str
    message: str


class SimulatedEC2:
    name = "sim"
    # Written for one thread: its calls stay under the state lock.
    launches_outside_state_lock: ClassVar[bool] = False

    def __init__(
        self,
        clock: Clock,
        *,
        cluster: ClusterAPI | None = None,
        cluster_name: str = DEFAULT_CLUSTER_NAME,
        region: str = "us-east-1",
        zones: Sequence[str] | None = None,
        seed: int = 0,
        settings: SimSettings | None = None,
        capacity: Sequence[CapacityLike] = (),
        prices: Sequence[PriceLike] = (),
        reservations: Sequence[SimReservation] = (),
    ) -> None:
        """`capacity` and `prices` take this package's CapacityRule / PriceOverride or any
        objects with the same attributes; a type or zone the region lacks is a ValueError
        naming the entry (`prices[0].instanceType: ...`)."""
        rules = [CapacityRule.of(entry) for entry in capacity]
        overrides = [PriceOverride.of(entry) for entry in prices]
        self.clock = clock
        self.cluster_name = cluster_name
        self.settings = settings or SimSettings()
        self.catalog = SimCatalog(region, zones, overrides)
        self.catalog.check(rules, overrides)
        self.region = region
        self.zones = self.catalog.zones
        self.capacity = CapacityPool(rules)
        self.catalog.check([CapacityRule(r.instance_type, r.count, r.zone)
                            for r in reservations], [])
        self.reservations = ReservationBook(reservations)
        self._reservation_of: dict[str, str] = {}  # instance id -> reservation it uses
        for block in reservations:
            if block.end is not None:
                self.clock.call_at(block.end, functools.partial(self._block_ended, block.id))
        self.unavailable = UnavailableOfferings(lambda: clock.now().timestamp())
        self.images = ImageCatalog()
        self.interruption_queue = SimulatedInterruptionQueue(clock, region, seed)
        # DescribeInstanceStatus: what `impair` reported, for the instance status checks.
        self.instance_statuses = SimInstanceStatuses(clock, self._running)
        self.counters = SimCounters()
        self._rng = random.Random(f"{seed}/fleet")
        self._eligible = fleet.EligibleOfferings()
        # The NodeOverlay store the controllers keep (the gate on), and per NodePool the
        # overlaid catalog last built from (the catalog it came from, that list): one list
        # object while neither changes, so the offerings cache above keeps its entries.
        self._overlays: Callable[[], OverlayStore | None] | None = None
        self._overlaid_catalogs: dict[str, tuple[Sequence[InstanceType],
                                                 list[InstanceType]]] = {}
        self._identities = Identities(seed, region, self.zones)
        self._agent = (
            NodeAgent(cluster, clock, self.settings.kubernetes_version) if cluster else None
        )
        self._instances: dict[str, SimInstance] = {}
        self._by_nodeclaim: dict[str, str] = {}
        self._listeners: list[Callable[[SimEvent], None]] = []

    # --- the CloudProvider protocol -----------------------------------------------------

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return list(self._offered(node_class))

    def resolve(self, node_class: EC2NodeClass) -> Resolution:
        """The subnets, security group, AMIs, instance profile and capacity reservations of
        `node_class` in the simulated VPC (what the EC2NodeClass status controller writes)."""
        resolved = node_class_resolution.resolve(node_class, cluster_name=self.cluster_name,
                                                 zones=tuple(self.zones), images=self.images)
        return replace(resolved, capacity_reservations=tuple(self._selected(node_class)))

    def _selected(self, node_class: EC2NodeClass) -> list[Reservation]:
        terms = node_class.spec.capacity_reservation_selector_terms
        return self.reservations.selected(terms, self.clock.now()) if terms else []

    def _offered(self, node_class: EC2NodeClass) -> Sequence[InstanceType]:
        """The catalog, with a `reserved` offering per reservation the node class selects."""
        catalog = self.catalog.offered(node_class, self.unavailable.entries())
        selected = self._selected(node_class)
        if not selected:
            return catalog
        return with_reserved_offerings(catalog, selected,
                                       self.reservations.availability(selected),
                                       self.clock.now())

    def use_overlays(self, store: Callable[[], OverlayStore | None]) -> None:
        """Launch a NodePool's NodeClaims from its types as its NodeOverlays make them: a
        price overlay reorders the fleet's choice as the AWS provider's priorities do
        (prioritized on-demand, capacity-optimized-prioritized spot). Instances are billed
        at EC2's prices, not the overlays'."""
        self._overlays = store

    def _overlaid(self, nodeclaim: NodeClaim,
                  catalog: Sequence[InstanceType]) -> Sequence[InstanceType]:
        store = self._overlays() if self._overlays is not None else None
        pool = (nodeclaim.metadata.labels or {}).get(well_known.NODEPOOL)
        if store is None or not pool or not store.updates.get(pool):
            return catalog
        applied = store.apply(pool, catalog)
        if applied is None:  # as the AWS provider: not evaluated yet, nothing launches
            raise CloudProviderError(
                f"nodeclaim {nodeclaim.name}: nodepool {pool} is awaiting nodeoverlay "
                "evaluation", resource=f"nodeclaim {nodeclaim.name}",
                code="UnevaluatedNodePool")
        known = self._overlaid_catalogs.get(pool)
        if known is not None and known[0] is catalog and len(known[1]) == len(applied) and all(
                a is b for a, b in zip(known[1], applied, strict=True)):
            return known[1]
        self._overlaid_catalogs[pool] = (catalog, applied)
        return applied

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        self.counters.create_calls += 1
        existing = self._live_for(nodeclaim.name)
        if existing is not None:
            return existing.view()
        _check_ready(node_class)
        requirements, requests = _wants(nodeclaim)
        offered = self._offered(node_class)
        choices = self._eligible(self._overlaid(nodeclaim, offered), requirements, requests,
                                 self.zones)
        capacity_type = fleet.capacity_type(choices)
        if capacity_type is None:
            self.counters.insufficient_capacity += 1
            raise InsufficientCapacityError(
                f"nodeclaim {nodeclaim.name}: no available offering matches its requirements "
                f"({requirements.describe() or 'none'}) and requests in zones "
                f"{', '.join(self.zones)}",
                call="ec2:CreateFleet",
                resource=f"nodeclaim {nodeclaim.name}",
                code="NoCompatibleOffering",
            )
        if capacity_type == RESERVED:
            for choice in sorted(fleet.overrides(choices, capacity_type),
                                 key=lambda c: (c.offering.price, c.offering.reservation_id)):
                if self.reservations.take(choice.offering.reservation_id or ""):
                    launched = self._launch(nodeclaim, node_class, choice, offered)
                    self._reservation_of[launched.instance_id] = (
                        choice.offering.reservation_id or "")
                    return launched.view()
            self.counters.insufficient_capacity += 1
            raise InsufficientCapacityError(
                f"ec2:CreateFleet nodeclaim {nodeclaim.name}: ReservationCapacityExceeded: "
                "the selected capacity reservations are full",
                call="ec2:CreateFleet", resource=f"nodeclaim {nodeclaim.name}",
                code="InsufficientCapacity", cloud_message="ReservationCapacityExceeded")
        candidates = fleet.launch_sequence(
            fleet.overrides(choices, capacity_type), self.capacity.remaining, self._rng
        )
        failed: list[str] = []
        for choice in candidates:
            it, offering = choice.instance_type, choice.offering
            if self.capacity.take(it.name, offering.zone, capacity_type):
                return self._launch(nodeclaim, node_class, choice, offered).view()
            self.counters.ice_errors += 1
            self.unavailable.mark_unavailable(it.name, offering.zone, capacity_type, ICE)
            failed.append(f"{it.name}/{offering.zone}")
            self._emit("insufficient-capacity", "", f"{ICE}: {it.name} {capacity_type} in "
                       f"{offering.zone}")
        self.counters.insufficient_capacity += 1
        summary = "; ".join(f"{name}: {ICE}" for name in failed[:10])
        raise InsufficientCapacityError(
            f"ec2:CreateFleet nodeclaim {nodeclaim.name}: InsufficientCapacity: no {capacity_type} "
            f"capacity for {len(failed)} offering(s): {summary}",
            call="ec2:CreateFleet",
            resource=f"nodeclaim {nodeclaim.name}",
            code="InsufficientCapacity",
            cloud_message=summary,
        )

    def interrupted(self, provider_id: str) -> bool:
        """The instance was given an interruption that takes it away (any but a rebalance
        recommendation)."""
        instance = self._instances.get(_instance_id(provider_id))
        return instance is not None and any(
            kind != InterruptionKind.REBALANCE.value for kind in instance.interruptions)

    def get(self, provider_id: str) -> Instance:
        instance = self._instances.get(_instance_id(provider_id))
        if instance is None or instance.state == TERMINATED:
            raise NodeClaimNotFoundError(
                f"ec2:DescribeInstances instance {_instance_id(provider_id)}: not found or "
                "terminated",
                call="ec2:DescribeInstances",
                resource=f"instance {_instance_id(provider_id)}",
                code="InvalidInstanceID.NotFound",
            )
        return instance.view()

    def list(self) -> list[Instance]:
        return [i.view() for i in self._instances.values() if i.state != TERMINATED]

    def delete(self, provider_id: str) -> None:
        instance = self._instances.get(_instance_id(provider_id))
        if instance is not None:
            self._terminate(instance, announce=False)

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        provider_id = nodeclaim.status.provider_id if nodeclaim.status else None
        if not provider_id:
            return None
        # An instance gone or terminated is an error, as the AWS provider's (Karpenter's
        # IsDrifted: NodeClaimNotFoundError), which leaves the Drifted condition as it was.
        self.get(provider_id)
        instance = self._instances[_instance_id(provider_id)]
        current = self.images.image_for(node_class, instance.architecture)
        return "AMIDrift" if instance.image_id != current else None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        from nodewright.cloud.aws.provider import REPAIR_POLICIES  # boto3: load on demand

        return REPAIR_POLICIES

    def describe_reservations(self, reservation_ids: Collection[str]) -> Sequence[Reservation]:
        """The unexpired reservations of these ids, as DescribeCapacityReservations has them."""
        return self.reservations.described(reservation_ids, self.clock.now())

    def capabilities(self) -> CloudCapabilities:
        """Its reservation book cannot be marked unavailable (a reclaim already shrinks the
        reservation); it leaves nothing behind to clean up and keeps no price cache to
        refresh."""
        return CloudCapabilities(instance_statuses=self.instance_statuses,
                                 interruption_queue=self.interruption_queue,
                                 unavailable=self.unavailable, node_classes=self,
                                 reservation_lookup=self, overlay_prices=self,
                                 launches_outside_state_lock=self.launches_outside_state_lock)

    # --- simulation controls ------------------------------------------------------------

    def set_image(self, alias_or_family: str, arch: str, ami_id: str) -> None:
        """Publish a new AMI (see `ImageCatalog.set_image`); running instances keep theirs."""
        self.images.set_image(alias_or_family, arch, ami_id)

    def interrupt(self, instance_id_or_provider_id: str, kind: str) -> None:
        """Do to the instance what AWS does for this kind of interruption, with its event."""
        event_kind = InterruptionKind.parse(kind)
        instance = self._instances.get(_instance_id(instance_id_or_provider_id))
        if instance is None or instance.state in (SHUTTING_DOWN, TERMINATED):
            raise NodeClaimNotFoundError(
                f"interrupt: instance {instance_id_or_provider_id} does not exist or is "
                "terminating",
                resource=f"instance {instance_id_or_provider_id}",
            )
        if event_kind is InterruptionKind.SPOT and instance.capacity_type != "spot":
            raise ValueError(
                f"interrupt: instance {instance.instance_id} is {instance.capacity_type}; only "
                "spot instances receive spot interruption warnings"
            )
        reservation = self._reservation_of.get(instance.instance_id, "")
        if event_kind is InterruptionKind.RESERVATION and not self._interruptible(reservation):
            raise ValueError(
                f"interrupt: instance {instance.instance_id} is not in an interruptible "
                "capacity reservation; only those receive capacity reservation interruption "
                "warnings"
            )
        instance.interruptions.append(event_kind.value)
        counts = self.counters.interruptions
        counts[event_kind.value] = counts.get(event_kind.value, 0) + 1
        queue = self.interruption_queue
        self._emit(f"interrupt-{event_kind.value}", instance.instance_id,
                   f"{event_kind.value} interruption of {instance.instance_id}")
        if event_kind is InterruptionKind.SPOT:
            queue.spot_interruption(instance.instance_id)
            self.clock.call_later(self.settings.spot_notice, lambda: self._reclaim(instance))
        elif event_kind is InterruptionKind.SCHEDULED:
            queue.scheduled_change(instance.instance_id, self.clock.now())
        elif event_kind is InterruptionKind.RESERVATION:
            # The owner takes the capacity back: the reservation is one instance smaller,
            # and this instance goes after the same two-minute warning as a spot one.
            self.reservations.reclaim(reservation)
            queue.reservation_interruption(instance.instance_id)
            self.clock.call_later(self.settings.spot_notice, lambda: self._reclaim(instance))
        elif event_kind is InterruptionKind.REBALANCE:
            queue.rebalance_recommendation(instance.instance_id)
        elif event_kind is InterruptionKind.STOP:
            self._stop(instance)
        else:
            self._terminate(instance, announce=True)

    def _interruptible(self, reservation_id: str) -> bool:
        reservation = self.reservations.reservations.get(reservation_id)
        return reservation is not None and reservation.interruptible

    def impair(self, instance_id_or_provider_id: str, impairment: str,
               since: datetime | None = None) -> None:
        """From now on DescribeInstanceStatus reports the instance impaired: `instance` or
        `system` (a status check failing since `since`, default now), `event` (an
        instance-retirement scheduled) or `ebs` (an attached volume's check failing). The
        instance keeps running; only what EC2 reports changes."""
        kind = Impairment.parse(impairment)
        instance_id = _instance_id(instance_id_or_provider_id)
        if not self._running(instance_id):
            raise NodeClaimNotFoundError(
                f"impair: instance {instance_id_or_provider_id} does not exist or is "
                "terminating", resource=f"instance {instance_id_or_provider_id}")
        self.instance_statuses.impair(instance_id, kind, since)
        self._emit(f"impaired-{kind.value}", instance_id, f"{instance_id}: {kind.value} impaired")

    def _running(self, instance_id: str) -> bool:
        instance = self._instances.get(instance_id)
        return instance is not None and instance.state not in (SHUTTING_DOWN, TERMINATED)

    def listen(self, listener: Callable[[SimEvent], None]) -> None:
        """Call `listener` with every SimEvent (the simulator's timeline)."""
        self._listeners.append(listener)

    def ledger(self) -> Ledger:
        """Every instance ever launched, with its price and times, for cost reports."""
        return Ledger.of(self._instances.values())

    def hourly_cost(self, now: datetime) -> float:
        """The ledger's `hourly_cost` without building the ledger: the simulator's recorder
        asks on every launch and termination, so building it made a run grow with the
        square of the fleet."""
        return sum(instance.price for instance in self._instances.values()
                   if instance.running_at is not None and instance.running_at <= now
                   and instance.stopping_at is None and instance.shutting_down_at is None)

    def instance_ids(self) -> tuple[str, ...]:
        """Every instance id ever launched, in launch order."""
        return tuple(self._instances)

    # --- the life of an instance --------------------------------------------------------

    def _launch(
        self, nodeclaim: NodeClaim, node_class: EC2NodeClass, choice: Choice,
        offered: Sequence[InstanceType],
    ) -> SimInstance:
        it, offering = choice.instance_type, choice.offering
        instance_id = self._identities.instance_id()
        address = self._identities.private_ip(offering.zone)
        nodepool = (nodeclaim.metadata.labels or {}).get(well_known.NODEPOOL, "")
        labels = {
            **it.labels,
            well_known.ZONE: offering.zone,
            well_known.CAPACITY_TYPE: offering.capacity_type,
            # As the AWS provider (Karpenter's instanceToNodeClaim): every launch is labelled
            # with its tenancy.
            TENANCY_LABEL: tenancy_for(_wants(nodeclaim)[0]),
        }
        if offering.zone_id:
            labels[well_known.ZONE_ID] = offering.zone_id
        if offering.reservation_id:
            labels[RESERVATION_ID_LABEL] = offering.reservation_id
            labels[RESERVATION_TYPE_LABEL] = offering.reservation_type or "default"
            labels[RESERVATION_INTERRUPTIBLE_LABEL] = interruptible_value(
                offering.reservation_interruptible)
        instance = SimInstance(
            instance_id=instance_id,
            instance_type=it,
            zone=offering.zone,
            zone_id=offering.zone_id or "",
            capacity_type=offering.capacity_type,
            price=_ec2_price(choice, offered),
            image_id=self.images.image_for(node_class, it.labels.get(well_known.ARCH, "amd64")),
            private_ip=address,
            subnet_id=self._identities.subnet_id(offering.zone),
            nodeclaim=nodeclaim.name,
            nodepool=nodepool,
            node_class=node_class.name,
            tags=self._tags(nodeclaim.name, nodepool, node_class),
            labels=dict(sorted(labels.items())),
            node=NodeTemplate(
                # As the AWS provider's user data: every family but Custom registers with
                # karpenter.sh/do-not-sync-taints=true (InjectDoNotSyncTaintsLabel).
                labels=with_do_not_sync_taints(node_class.resolved_ami_family(), node_labels(
                    nodeclaim.metadata.labels, nodeclaim.spec.requirements, nodepool or None
                )),
                taints=tuple(nodeclaim.spec.taints or ()),
                startup_taints=tuple(nodeclaim.spec.startup_taints or ()),
                os_image=OS_IMAGES.get(node_class.resolved_ami_family(), "Linux"),
            ),
            launched_at=self.clock.now(),
            node_name=self._identities.hostname(address),
            instance_profile=node_class_resolution.instance_profile_of(
                node_class, self.cluster_name),
        )
        self._instances[instance_id] = instance
        self._by_nodeclaim[nodeclaim.name] = instance_id
        self.counters.launched += 1
        self._emit("launched", instance_id, f"launched {it.name} {offering.capacity_type} in "
                   f"{offering.zone} at ${offering.price:.4f}/h for nodeclaim {nodeclaim.name}")
        self.clock.call_later(self.settings.launch_delay, lambda: self._run(instance))
        return instance

    def _run(self, instance: SimInstance) -> None:
        if instance.state != PENDING:
            return
        instance.state = RUNNING
        instance.running_at = self.clock.now()
        self._emit("running", instance.instance_id, f"{instance.instance_id} is running")
        self.clock.call_later(self.settings.registration_delay, lambda: self._join(instance))

    def _join(self, instance: SimInstance) -> None:
        agent = self._agent
        if agent is None or instance.state != RUNNING:
            return

        def joined() -> bool:
            if not agent.register(instance):
                return False
            instance.registered_at = self.clock.now()
            self.counters.registered += 1
            self._emit("registered", instance.instance_id,
                       f"node {instance.node_name} registered for {instance.instance_id}")
            delay = self.settings.startup_taint_delay
            if instance.node.startup_taints and delay is not None:
                self.clock.call_later(delay, lambda: self._agents_ready(instance))
            return True

        retrying(self.clock, joined, lambda: instance.state == RUNNING)

    def _agents_ready(self, instance: SimInstance) -> None:
        agent = self._agent
        if agent is not None:
            retrying(
                self.clock,
                lambda: agent.remove_startup_taints(instance),
                lambda: instance.state == RUNNING,
            )

    def _block_ended(self, reservation_id: str) -> None:
        """A capacity block's end: EC2 takes back every instance still in it."""
        for instance_id, reservation in list(self._reservation_of.items()):
            if reservation == reservation_id:
                self._emit("capacity-block-ended", instance_id,
                           f"capacity block {reservation_id} ended")
                self._reclaim(self._instances[instance_id])

    def _reclaim(self, instance: SimInstance) -> None:
        """The end of a spot notice: EC2 takes the instance back if it is still up."""
        if instance.state in UP_STATES or instance.state in (STOPPING, STOPPED):
            self._terminate(instance, announce=True)

    def _stop(self, instance: SimInstance) -> None:
        if instance.state not in UP_STATES:
            return
        instance.state = STOPPING
        instance.stopping_at = self.clock.now()
        self.interruption_queue.state_change(instance.instance_id, STOPPING)
        self._emit(STOPPING, instance.instance_id, f"{instance.instance_id} is stopping")

        def stopped() -> None:
            if instance.state != STOPPING:
                return
            instance.state = STOPPED
            self.interruption_queue.state_change(instance.instance_id, STOPPED)
            self._emit(STOPPED, instance.instance_id, f"{instance.instance_id} stopped")

        self.clock.call_later(self.settings.termination_delay, stopped)
        self._silence_after_grace(instance, (STOPPING, STOPPED))

    def _terminate(self, instance: SimInstance, *, announce: bool) -> None:
        """TerminateInstances. `announce`: AWS did it, so a state-change event goes out."""
        if instance.state in (SHUTTING_DOWN, TERMINATED):
            return
        instance.state = SHUTTING_DOWN
        instance.shutting_down_at = self.clock.now()
        reservation = self._reservation_of.pop(instance.instance_id, None)
        if reservation:
            self.reservations.release(reservation)
        if announce:
            self.interruption_queue.state_change(instance.instance_id, SHUTTING_DOWN)
        self._emit(SHUTTING_DOWN, instance.instance_id, f"{instance.instance_id} is shutting down")

        def gone() -> None:
            instance.state = TERMINATED
            instance.terminated_at = self.clock.now()
            self.counters.terminated += 1
            self._identities.release(instance.zone, instance.private_ip)
            if announce:
                self.interruption_queue.state_change(instance.instance_id, TERMINATED)
            self._emit(TERMINATED, instance.instance_id, f"{instance.instance_id} terminated")
            if self._agent is not None:
                self._agent.remove_node(instance)

        self.clock.call_later(self.settings.termination_delay, gone)
        # The kubelet stops with the machine: a Node still there (its finalizer kept by a
        # drain that cannot finish) goes Unknown, so the termination controller may let it go.
        self._silence_after_grace(instance, (SHUTTING_DOWN, TERMINATED))

    def _silence_after_grace(self, instance: SimInstance, silent_states: tuple[str, ...]
                             ) -> None:
        """The node lifecycle controller marks the Node Unknown a grace period after its
        kubelet stopped, if the instance is still in one of `silent_states` by then."""

        def silent() -> None:
            agent = self._agent
            if agent is not None and instance.state in silent_states:
                retrying(
                    self.clock,
                    lambda: agent.mark_unknown(instance),
                    lambda: instance.state in silent_states,
                )

        self.clock.call_later(self.settings.node_monitor_grace, silent)

    # --- helpers ------------------------------------------------------------------------

    def _live_for(self, nodeclaim: str) -> SimInstance | None:
        instance_id = self._by_nodeclaim.get(nodeclaim)
        instance = self._instances.get(instance_id) if instance_id else None
        return instance if instance is not None and instance.state != TERMINATED else None

    def _tags(self, nodeclaim: str, nodepool: str, node_class: EC2NodeClass) -> dict[str, str]:
        return {
            **(node_class.spec.tags or {}),
            **tag_keys.ownership_tags(self.cluster_name),
            tag_keys.NODEPOOL: nodepool,
            tag_keys.NODECLAIM: nodeclaim,
            tag_keys.NODECLASS: node_class.name,
            tag_keys.NAME: f"{nodepool}/{nodeclaim}" if nodepool else nodeclaim,
        }

    def _emit(self, kind: str, instance_id: str, message: str) -> None:
        log.debug("%s", message)
        event = SimEvent(self.clock.now(), kind, instance_id, message)
        for listener in self._listeners:
            listener(event)


def _instance_id(instance_id_or_provider_id: str) -> str:
    """`i-...` from an id or a providerID aws:///<zone>/<id>."""
    value = instance_id_or_provider_id
    if value.startswith("aws:///"):
        value = value.rsplit("/", 1)[-1]
    if not value.startswith("i-"):
        raise CloudProviderError(
            f"{instance_id_or_provider_id!r} is neither an instance id (i-...) nor a providerID "
            "of the form aws:///<zone>/<instance-id>",
            resource=instance_id_or_provider_id,
        )
    return value


def _ec2_price(choice: Choice, offered: Sequence[InstanceType]) -> float:
    """What EC2 bills for the chosen offering: a NodeOverlay's price only steered the
    choice (the chosen type is then a copy of the catalog's with the overlaid prices)."""
    if any(it is choice.instance_type for it in offered):
        return choice.offering.price
    offering = choice.offering
    for it in offered:
        if it.name != choice.instance_type.name:
            continue
        for raw in it.offerings:
            if (raw.zone, raw.capacity_type, raw.reservation_id) == (
                    offering.zone, offering.capacity_type, offering.reservation_id):
                return raw.price
    return offering.price


def _check_ready(node_class: EC2NodeClass) -> None:
    """A node class whose status says it is not Ready cannot launch (retryable). One
    without a Ready condition is taken as ready: the simulation may run no controller
    that resolves node classes."""
    conditions = node_class.status.conditions if node_class.status else None
    ready = next((c for c in conditions or [] if c.type == "Ready"), None)
    if ready is not None and ready.status != "True":
        raise NodeClassNotReadyError(
            f"EC2NodeClass {node_class.name} is not ready (Ready={ready.status}): "
            f"{ready.message or ready.reason or 'no reason given'}",
            resource=f"ec2nodeclass {node_class.name}",
        )


def _wants(nodeclaim: NodeClaim) -> tuple[Requirements, dict[str, int]]:
    """The NodeClaim's requirements and resource requests, or a CloudProviderError naming
    the field that cannot be read."""
    where = f"nodeclaim {nodeclaim.name}"
    try:
        requirements = Requirements.from_node_selector(
            [r.to_manifest() for r in nodeclaim.spec.requirements]
        )
    except RequirementError as error:
        raise CloudProviderError(
            f"{where}: spec.requirements: {error}", resource=where
        ) from error
    raw = nodeclaim.spec.resources.requests if nodeclaim.spec.resources else None
    try:
        requests = parse_resources(raw or {})
    except ValueError as error:
        raise CloudProviderError(
            f"{where}: spec.resources.requests.{error}", resource=where
        ) from error
    return requirements, requests
