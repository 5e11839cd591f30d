"""The AWS CloudProvider: boto3 behind the `nodewright.cloud.provider.CloudProvider` seam."""

from __future__ import annotations

import builtins
import json
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import ClassVar, Final

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.quantity import PODS, Resources, parse_resources
from nodewright.cloud.aws import (
    capacity_reservations,
    fleet,
    garbage,
    instance_profiles,
    instance_tagging,
    instances,
    launch_templates,
    placement_groups,
    provider_metrics,
    validation,
)
from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.amis import STANDARD, Image, image_for
from nodewright.cloud.aws.catalog import LiveCatalog
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock
from nodewright.cloud.aws.cluster_info import EksCluster, describe_cluster
from nodewright.cloud.aws.discovered_capacity import DiscoveredCapacity
from nodewright.cloud.aws.drift import drift_of, reservation_drift, static_drift
from nodewright.cloud.aws.ec2_batcher import BatchWindows, EC2Batcher
from nodewright.cloud.aws.errors import LAUNCH_TEMPLATE_NOT_FOUND
from nodewright.cloud.aws.kubernetes_version import VersionWatch
from nodewright.cloud.aws.node_class_resolution import (
    PLACEMENT_GROUP,
    RESERVATIONS,
    VALIDATION,
    Lookups,
    Resolution,
    resolve_node_class,
)
from nodewright.cloud.aws.node_identity import (
    CAPACITY_TYPE_LABEL,
    bottlerocket_release,
    node_labels,
    with_do_not_sync_taints,
)
from nodewright.cloud.aws.offerings import (
    ON_DEMAND,
    RESERVATION_ID_LABEL,
    RESERVATION_INTERRUPTIBLE_LABEL,
    RESERVATION_TYPE_LABEL,
    RESERVED,
    TENANCY_LABEL,
    ZONE_ID_LABEL,
    Choice,
    capacity_type_for,
    interruptible_value,
    launchable,
    tenancy_for,
)
from nodewright.cloud.aws.placement_group_hook import PlacementGroupRegistrationHook
from nodewright.cloud.aws.placement_groups import (
    PLACEMENT_GROUP_ID_LABEL,
    PLACEMENT_GROUP_PARTITION_LABEL,
)
from nodewright.cloud.aws.pricing import LivePriceSource
from nodewright.cloud.aws.ssm_parameters import ParameterCache
from nodewright.cloud.aws.subnet_ips import SubnetIPs
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.cloud.aws.userdata import NodeBootstrap, render_user_data
from nodewright.cloud.aws.userdata.bootstrap import UnresolvedClusterError
from nodewright.cloud.aws.zonal_shift import ZonalShifts
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import (
    CloudProviderError,
    Instance,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from nodewright.scheduling.allocatable import AWS_EFA, ProviderSettings
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.launch_filters import filter_for_launch
from nodewright.scheduling.overlays import OverlayStore
from nodewright.scheduling.pricing import PriceSource
from nodewright.scheduling.requirements import Requirements

RESOLUTION_CACHE_SECONDS: Final = 60.0
# A node class that is not ready is looked at again sooner: its problem may be a race or a
# resource created a moment later, and a minute of pods waiting on it is too long.
UNREADY_RESOLUTION_CACHE_SECONDS: Final = 10.0
# A launch template no launch used for this long is deleted (Karpenter's launch template
# cache TTL, whose evictions delete the template).
LAUNCH_TEMPLATE_TTL_SECONDS: Final = 60.0
CLUSTER_CACHE_SECONDS: Final = 300.0
RESERVATION_CACHE_SECONDS: Final = 60.0
# AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL's defaults (and least values).
DEFAULT_REFRESH_SECONDS: Final = 60.0
# The reason of a ValidationSucceeded whose check could not tell yet (operatorpkg's reason
# for a condition not reconciled yet).
AWAITING_RECONCILIATION: Final = "AwaitingReconciliation"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
MIN_VALUES_RELAXED: Final = "karpenter.sh/nodeclaim-min-values-relaxed"
PRICE_OVERLAY_APPLIED: Final = "karpenter.sh/price-overlay-applied"
# A NodeClaim asking for Nitro Enclave slots launches with enclaves enabled.
NIP_SLOTS: Final = "eks.amazonaws.com/nip-slots"
PLACEMENT_GROUP_DRIFT: Final = "PlacementGroupDrift"

log = logging.getLogger(__name__)

# Conditions the node monitoring agent and kubelet report; held this long, the node is
# replaced (Karpenter's AWS repair policies).
REPAIR_POLICIES: Final = (
    RepairPolicy("Ready", "False", 30 * 60),
    RepairPolicy("Ready", "Unknown", 30 * 60),
    RepairPolicy("AcceleratedHardwareReady", "False", 10 * 60),
    RepairPolicy("StorageReady", "False", 30 * 60),
    RepairPolicy("NetworkingReady", "False", 30 * 60),
    RepairPolicy("KernelReady", "False", 30 * 60),
    RepairPolicy("ContainerRuntimeReady", "False", 30 * 60),
)


@dataclass(frozen=True)
class GarbageReport:
    deleted_templates: tuple[str, ...]
    deleted_profiles: tuple[str, ...]


@dataclass
class AwsCloudProvider:
    clients: AwsClients
    cluster_name: str
    clock: Seconds = system_clock
    prices: PriceSource | None = None
    provider_settings: ProviderSettings = field(default_factory=ProviderSettings)
    isolated_vpc: bool = False
    # The kube-dns Service's cluster IP, which the operator reads at start-up as Karpenter
    # does: the nodes' default cluster DNS, and whether the cluster is IPv6.
    kube_dns_ip: str | None = None
    name: str = "aws"
    # Its calls are safe from any thread, so the operator makes every one of them outside
    # the state lock (runtime.outside_lock): a CreateFleet, a catalog refresh or a
    # resolution that takes seconds never holds up an interruption or a registration.
    launches_outside_state_lock: ClassVar[bool] = True
    # Wall time, for capacity reservations' end dates (`clock` is monotonic, for TTLs).
    wall_clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # How long the images amiSelectorTerms and the subnets subnetSelectorTerms resolve to
    # are kept (Karpenter's AMI_REFRESH_INTERVAL / SUBNET_REFRESH_INTERVAL).
    ami_refresh_seconds: float = DEFAULT_REFRESH_SECONDS
    subnet_refresh_seconds: float = DEFAULT_REFRESH_SECONDS
    # Prove each node class's launches authorized with dry runs (the operator turns this on
    # unless DISABLE_DRY_RUN; off here so a bare provider makes only the calls asked of it).
    dry_run: bool = False
    # How long CreateFleet, DescribeInstances and TerminateInstances calls wait for others
    # to go out with (Karpenter's batcher windows).
    batch_windows: BatchWindows = field(default_factory=BatchWindows)
    batch: EC2Batcher = field(init=False)
    # ENABLE_ZONAL_SHIFT: ARC's zonal shifts on the cluster (None: not watched).
    zonal_shifts: ZonalShifts | None = None
    # FEATURE_GATES ReservedCapacity. Off, as Karpenter: node classes' reservations are not
    # looked up (no CapacityReservationsReady, no reserved offerings), launch templates use
    # the open launch mode, and an instance in a reservation is on-demand.
    reserved_capacity: bool = True
    unavailable: UnavailableOfferings = field(init=False)
    lookups: Lookups = field(init=False)
    reservations: capacity_reservations.Availability = field(init=False)
    _template_use: dict[str, float] = field(init=False)
    catalog: LiveCatalog = field(init=False)
    # Memory capacity registered Nodes reported, per type and image set (60 days).
    discovered: DiscoveredCapacity = field(init=False)
    _resolutions: TTLCache[str, Resolution] = field(init=False)
    _unready_resolutions: TTLCache[str, Resolution] = field(init=False)
    # Controllers resolve from their own threads: one resolution at a time, so two of them
    # never create the same instance profile or launch template at once.
    _resolving: threading.Lock = field(init=False, default_factory=threading.Lock)
    _cluster: TTLCache[str, EksCluster] = field(init=False)
    # Reservations looked up by id, a minute each (Karpenter's reservation query cache).
    _reservations_by_id: TTLCache[str, tuple[capacity_reservations.Reservation, ...]] = field(
        init=False)
    # The Kubernetes version last discovered: a new one out of the supported range is
    # logged as an error (Karpenter's version controller).
    versions: VersionWatch = field(init=False, default_factory=VersionWatch)
    # Instance profiles protected from garbage collection, roles IAM does not know.
    profiles: instance_profiles.ProfileMemory = field(init=False)
    # ValidationSucceeded verdicts, by validation.cache_key (30 minutes).
    validations: TTLCache[str, validation.Verdict] = field(init=False)
    # IPs launches took from each subnet since EC2 last counted them.
    subnet_ips: SubnetIPs = field(init=False, default_factory=SubnetIPs)
    # Zone -> zone id of the subnets launched into (the failure metrics' zone_id label).
    _zone_ids: dict[str, str] = field(init=False, default_factory=dict)
    # The instances last seen (launched, got or listed), by id: what a zonal shift guard
    # answers with instead of asking EC2 about an instance in a shifted zone (Karpenter's
    # instance cache; never expires, List evicts what EC2 no longer returns).
    _seen: dict[str, Instance] = field(init=False, default_factory=dict)
    _seen_lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    # The NodeOverlay gate's store, read at each launch (Karpenter hands its CloudProvider
    # the InstanceTypeStore): a NodePool's NodeClaims launch from its instance types as the
    # overlays make them. None: the gate is off.
    _overlays: Callable[[], OverlayStore | None] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.batch = EC2Batcher(self.clients.ec2, self.batch_windows)
        self.unavailable = UnavailableOfferings(self.clock)
        self.reservations = capacity_reservations.Availability()
        self._template_use = {}
        price_source = self.prices or LivePriceSource(
            self.clients.pricing, self.clients.ec2, self.clients.region, clock=self.clock,
            isolated_vpc=self.isolated_vpc,
        )
        self.catalog = LiveCatalog(
            self.clients.ec2, self.clients.region, price_source, self.unavailable, self.clock,
            provider=self.provider_settings,
        )
        self.discovered = DiscoveredCapacity(self.clock)
        self._resolutions = TTLCache(RESOLUTION_CACHE_SECONDS, self.clock)
        self._unready_resolutions = TTLCache(UNREADY_RESOLUTION_CACHE_SECONDS, self.clock)
        self._cluster = TTLCache(CLUSTER_CACHE_SECONDS, self.clock)
        self._reservations_by_id = TTLCache(RESERVATION_CACHE_SECONDS, self.clock)
        self.profiles = instance_profiles.ProfileMemory(self.clock)
        self.validations = TTLCache(validation.VALIDATION_TTL_SECONDS, self.clock)
        self.lookups = Lookups(ParameterCache(self.clients.ssm, self.clock),
                               TTLCache(self.ami_refresh_seconds, self.clock),
                               TTLCache(self.subnet_refresh_seconds, self.clock))

    # --- node classes -------------------------------------------------------------------

    def cluster(self) -> EksCluster:
        cached = self._cluster.get(self.cluster_name)
        if cached is None:
            cached = describe_cluster(self.clients.eks, self.cluster_name).with_kube_dns(
                self.kube_dns_ip)
            self._cluster.put(self.cluster_name, cached)
        return cached

    def resolve(self, node_class: EC2NodeClass) -> Resolution:
        """Subnets, security groups, AMIs and instance profile (cached one minute per spec)."""
        key = f"{node_class.name}:{json.dumps(node_class.spec.to_manifest(), sort_keys=True)}"
        with self._resolving:
            cached = self._resolutions.get(key) or self._unready_resolutions.get(key)
            if cached is None:
                cached = resolve_node_class(
                    self.clients,
                    node_class,
                    cluster=self.cluster_name,
                    kubernetes_version=self.versions.observe(
                        self.cluster().kubernetes_version),
                    now=self.wall_clock(),
                    lookups=self.lookups,
                    profiles=self.profiles,
                    reserved_capacity=self.reserved_capacity,
                    isolated_vpc=self.isolated_vpc,
                )
                self._zone_ids.update({s.zone: s.zone_id for s in cached.subnets
                                       if s.zone_id})
                cached = self._validated(node_class, cached)
                self.reservations.sync(cached.capacity_reservations)
                cache = self._resolutions if cached.ready else self._unready_resolutions
                cache.put(key, cached)
            return cached

    def describe_reservations(
            self, reservation_ids: Collection[str],
    ) -> builtins.list[capacity_reservations.Reservation]:
        """The capacity reservations of these ids as EC2 describes them (active, unexpired),
        each looked up at most once a minute; their counts refresh the availability, as
        Karpenter's capacity reservation provider's List does."""
        found: list[capacity_reservations.Reservation] = []
        for reservation_id in sorted(set(reservation_ids)):
            cached = self._reservations_by_id.get(reservation_id)
            if cached is None:
                cached = tuple(capacity_reservations.describe_ids(
                    self.clients.ec2, [reservation_id], self.wall_clock()))
                self.reservations.sync(cached)
                self._reservations_by_id.put(reservation_id, cached)
            now = self.wall_clock()
            found.extend(r for r in cached if r.end_time is None or r.end_time > now)
        return found

    def invalidate_deprecated_parameters(self) -> list[str]:
        """Forget the `latest` alias parameters whose image AWS has deprecated, and the
        resolutions that used them (Karpenter's SSM invalidation controller)."""
        dropped = self.lookups.parameters.invalidate_deprecated(self.clients.ec2,
                                                               self.wall_clock())
        if dropped:
            with self._resolving:
                self.lookups.images.clear()
                self._resolutions.clear()
        return dropped

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return self._instance_types(node_class, self.resolve(node_class))

    def use_overlays(self, store: Callable[[], OverlayStore | None]) -> None:
        """Launch with the NodeOverlays' prices and capacity (the NodeOverlay gate)."""
        self._overlays = store

    def _overlaid(self, nodeclaim: NodeClaim,
                  catalog: builtins.list[InstanceType]) -> builtins.list[InstanceType]:
        """The catalog as the NodeClaim's NodePool sees it through the overlays (a NodeClaim
        of no NodePool: as the cloud offers it, as in Karpenter)."""
        store = self._overlays() if self._overlays is not None else None
        pool = (nodeclaim.metadata.labels or {}).get(NODEPOOL_LABEL)
        if store is None or not pool:
            return catalog
        applied = store.apply(pool, catalog)
        if applied is None:
            raise CloudProviderError(
                f"nodeclaim {nodeclaim.name}: nodepool {pool} is awaiting nodeoverlay "
                "evaluation", resource=f"nodeclaim {nodeclaim.name}",
                code="UnevaluatedNodePool")
        return applied

    def _instance_types(self, node_class: EC2NodeClass,
                        resolution: Resolution) -> list[InstanceType]:
        zones = {subnet.zone for subnet in resolution.subnets}
        zone_ids = {subnet.zone: subnet.zone_id for subnet in resolution.subnets}
        group = resolution.placement_group
        catalog = self.catalog.instance_types(
            node_class, zones=zones, zone_ids=zone_ids,
            placement_strategy=group.strategy if group else None,
            placement_group=group.id if group else None)
        catalog = self.discovered.apply(catalog, resolution.images)
        if group is not None:
            # As Karpenter: the group's id is a requirement of every type, so pods can
            # select it and the NodeClaim (then the node) carries it.
            catalog = [replace(t, labels={**t.labels, PLACEMENT_GROUP_ID_LABEL: group.id})
                       for t in catalog]
        catalog = capacity_reservations.with_reserved_offerings(
            catalog, resolution.capacity_reservations, self.reservations, self.wall_clock())
        catalog = self._without_shifted_zones(catalog, zone_ids)
        # Each partition's capacity errors as of now, read once: a type's offerings times
        # the partitions ask thousands of times.
        partition_out: dict[str, Callable[[str, str, str], bool]] = {}

        def unavailable_in(name: str, offering: Offering, partition: str) -> bool:
            if offering.capacity_type == RESERVED or group is None:
                return False
            out = partition_out.get(partition)
            if out is None:
                out = partition_out[partition] = self.unavailable.snapshot(
                    f"{group.id}:{partition}")
            return out(name, offering.zone, offering.capacity_type)

        return placement_groups.with_partition_offerings(catalog, group, unavailable_in)

    def update_capacity_from_node(self, node_class: EC2NodeClass, labels: Mapping[str, str],
                                  memory: int, image_id: str | None) -> bool:
        """Learn a registered Node's memory capacity (milli-units) for its instance type and
        the node class's current images, when it booted the image the node class gives
        that type now (Karpenter's UpdateInstanceTypeCapacityFromNode). True when what
        plans see changed."""
        name = labels.get(INSTANCE_TYPE_LABEL)
        if not name:
            return False
        images = self.resolve(node_class).images
        image = image_for(labels, images)
        if image is None or image.id != image_id:
            return False
        return self.discovered.record(name, images, memory)

    # --- validation (ValidationSucceeded) -------------------------------------------------

    def _validated(self, node_class: EC2NodeClass, resolution: Resolution) -> Resolution:
        if VALIDATION in resolution.problems:  # spec.kubelet is wrong: nothing to check
            return resolution
        verdict = self._verdict(node_class, resolution)
        if verdict.passed:
            return resolution
        return replace(
            resolution,
            problems={**resolution.problems, VALIDATION: verdict.message},
            reasons={**resolution.reasons,
                     VALIDATION: verdict.reason or AWAITING_RECONCILIATION},
            unknown=resolution.unknown | ({VALIDATION} if verdict.retry else set()))

    def _verdict(self, node_class: EC2NodeClass,
                 resolution: Resolution) -> validation.Verdict:
        tag_problem = validation.tag_problem(node_class)
        if tag_problem is not None:
            return tag_problem
        if validation.dependencies_missing(resolution):
            return validation.Verdict(validation.DEPENDENCIES_NOT_READY,
                                      validation.AWAITING_DEPENDENCIES)
        tags = validation.validation_tags(node_class, self.cluster_name)
        key = validation.cache_key(node_class, resolution, tags)
        cached = self.validations.get(key)
        if cached is not None:
            return cached
        verdict = (self._dry_runs(node_class, resolution, tags) if self.dry_run
                   else validation.PASSED)
        if not verdict.retry:
            self.validations.put(key, verdict)
        return verdict

    def _dry_runs(self, node_class: EC2NodeClass, resolution: Resolution,
                  tags: Mapping[str, str]) -> validation.Verdict:
        """CreateLaunchTemplate (for real: a launch reuses it), then CreateFleet and
        RunInstances as dry runs, with one instance type (Karpenter's validation)."""
        choice = self._validation_choice(node_class, resolution)
        if choice is None:
            return validation.Verdict(
                message="no instance type launchable with the node class's images to check "
                "its launches with", retry=True)
        claim = NodeClaim.model_validate({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"{node_class.name}-validation"},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": node_class.name}, "requirements": []}})
        try:
            template = self._templates_for(claim, node_class, resolution,
                                           [choice])[_template_key(choice)]
        except CloudProviderError as error:
            return validation.launch_template_verdict(error)
        name = choice.instance_type.name
        verdict = validation.dry_run_fleet(self.clients.ec2, validation.fleet_request(
            template, name, [subnet.id for subnet in resolution.subnets], tags))
        if not verdict.passed:
            return verdict
        interfaces = [(i.network_card_index, i.device_index, i.interface_type)
                      for i in node_class.spec.network_interfaces or ()]
        return validation.dry_run_instances(self.clients.ec2, [
            validation.run_instances_request(template, name, subnet.id, interfaces, tags)
            for subnet in resolution.subnets])

    def _validation_choice(self, node_class: EC2NodeClass,
                           resolution: Resolution) -> Choice | None:
        """An on-demand offering to check with: a type booting a standard (not GPU) image,
        m5.large or m6g.large when there is one (Karpenter's fallback types)."""
        zones = sorted({subnet.zone for subnet in resolution.subnets})
        architectures = sorted({image.architecture for image in resolution.images})
        choices = [c for c in launchable(self._instance_types(node_class, resolution),
                                         Requirements.from_node_selector([]), zones,
                                         architectures)
                   if c.offering.capacity_type == ON_DEMAND and not c.offering.reservation_id
                   and image_for(c.instance_type.labels, resolution.images) is not None]
        standard = [c for c in choices if STANDARD in (
            _image_of(c.instance_type.labels, resolution).variants or (STANDARD,))]
        pool = standard or choices
        for preferred in validation.FALLBACK_TYPES.values():
            for choice in pool:
                if choice.instance_type.name == preferred:
                    return choice
        return min(pool, key=lambda c: (c.offering.price, c.instance_type.name), default=None)

    # --- instances ----------------------------------------------------------------------

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        existing = instances.find_for_nodeclaim(self.clients.ec2, self.cluster_name, nodeclaim.name)
        if existing is not None:
            return self._as_gated(_with_type_labels(
                existing, self._type_labels(node_class, existing.instance_type)))
        resolution = self.resolve(node_class)
        if not resolution.ready:
            detail = "; ".join(f"{k}: {v}" for k, v in sorted(resolution.problems.items()))
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name} is not ready: {detail}",
                resource=f"ec2nodeclass {node_class.name}",
            )
        subnets = self.subnet_ips.per_zone(resolution.subnets)
        requirements = Requirements.from_node_selector(
            [r.to_manifest() for r in nodeclaim.spec.requirements]
        )
        # Only instance types some image supports (a GPU type needs a GPU image).
        choices = [
            choice
            for choice in launchable(
                self._overlaid(nodeclaim, self.get_instance_types(node_class)),
                requirements, sorted(subnets),
                sorted({image.architecture for image in resolution.images}),
            )
            if image_for(choice.instance_type.labels, resolution.images) is not None
        ]
        partition = placement_groups.target_partition(resolution.placement_group, requirements)
        if partition is not None:
            choices = [c for c in choices if c.offering.partition == str(partition)]
        elif placement_groups.partitions_of(resolution.placement_group):
            # Without a partition asked EC2 picks one: offerings that differ only in their
            # partition are one fleet override (as Karpenter deduplicates them).
            choices = list({(c.instance_type.name, c.offering.zone, c.offering.capacity_type,
                             c.offering.reservation_id): c for c in choices}.values())
        if not choices:
            raise InsufficientCapacityError(
                f"nodeclaim {nodeclaim.name}: no available offering matches its requirements "
                f"({requirements.describe() or 'none'}) in zones {', '.join(sorted(subnets))}",
                resource=f"nodeclaim {nodeclaim.name}",
                code="NoCompatibleOffering",
            )
        choices = _filter_for_launch(nodeclaim, choices, requirements)
        _check_truncation(nodeclaim, choices)
        capacity_type = capacity_type_for(choices)
        assert capacity_type is not None, "the launch filters leave some offering or raise"
        picked = [c for c in choices if c.offering.capacity_type == capacity_type]
        reservation_type = None
        reservation_interruptible = False
        if capacity_type == RESERVED:
            # One kind of reservation per fleet (a capacity block, and an interruptible
            # reservation, are markets of their own).
            cheapest = min(picked, key=lambda c: c.offering.price).offering
            reservation_type = cheapest.reservation_type
            reservation_interruptible = cheapest.reservation_interruptible
            picked = [c for c in picked if c.offering.reservation_type == reservation_type
                      and c.offering.reservation_interruptible == reservation_interruptible]
        tenancy = tenancy_for(requirements)
        templates = self._templates_for(nodeclaim, node_class, resolution, picked, partition,
                                        tenancy, capacity_type)
        candidates = fleet.cheapest_first(
            [
                fleet.Candidate(
                    instance_type=choice.instance_type.name,
                    zone=choice.offering.zone,
                    subnet_id=subnets[choice.offering.zone].id,
                    price=choice.offering.price,
                    template_name=templates[_template_key(choice)],
                    image_id=_image_of(choice.instance_type.labels, resolution).id,
                    reservation_id=choice.offering.reservation_id,
                    priority=choice.offering.price,
                )
                for choice in picked
            ]
        )
        nodepool = (nodeclaim.metadata.labels or {}).get(NODEPOOL_LABEL, "")
        request = fleet.FleetRequest(
            nodeclaim_name=nodeclaim.name,
            nodeclaim_uid=nodeclaim.metadata.uid or nodeclaim.name,
            capacity_type=capacity_type,
            candidates=tuple(candidates),
            tags=self._instance_tags(nodeclaim.name, nodepool, node_class),
            reservation_type=reservation_type,
            reservation_interruptible=reservation_interruptible,
            # As Karpenter: a NodeClaim whose minValues were relaxed launches outside the
            # node class's reserved-capacity context.
            context=(None if (nodeclaim.metadata.annotations or {}).get(
                MIN_VALUES_RELAXED) == "true" else node_class.spec.context),
            placement_group_id=(resolution.placement_group.id
                                if resolution.placement_group else None),
            placement_partition=partition,
            prioritized=PRICE_OVERLAY_APPLIED in (nodeclaim.metadata.annotations or {}),
        )
        self._zone_ids.update({s.zone: s.zone_id for s in resolution.subnets if s.zone_id})

        def launch() -> fleet.Launched:
            return fleet.launch(
                self.clients.ec2, request, self.unavailable, self.reservations,
                zone_ids=self._zone_ids,
                subnet_exhausted=lambda subnet_id: self._subnet_exhausted(resolution, subnet_id),
                batch=self.batch)

        try:
            launched = launch()
        except CloudProviderError as error:
            if error.code not in LAUNCH_TEMPLATE_NOT_FOUND:
                raise
            # A template went away between its lookup and the fleet (garbage collection of
            # an unused one): made again, and the launch tried once more, as Karpenter's.
            log.info("launch templates of nodeclaim %s not found; making them again",
                     nodeclaim.name)
            self._templates_for(nodeclaim, node_class, resolution, picked, partition,
                                tenancy, capacity_type)
            launched = launch()
        if launched.reservation_id:
            self.reservations.mark_launched(launched.reservation_id)
        self._take_subnet_ips(launched, resolution, picked)
        type_labels = next((c.instance_type.labels for c in picked
                            if c.instance_type.name == launched.instance_type), {})
        return self._remember(_with_type_labels(self._instance_from_launch(
            launched, request, nodepool, node_class, resolution, tenancy), type_labels))

    def get(self, provider_id: str) -> Instance:
        """The instance as EC2 has it now; in a zone ARC shifted traffic away from, as last
        seen (Karpenter's Get: no DescribeInstances against an impaired zone)."""
        seen = self._seen_instance(provider_id)
        if seen is not None and self._shifted(seen):
            return seen
        try:
            instance = instances.get_instance(self.batch, provider_id)
        except NodeClaimNotFoundError:
            with self._seen_lock:
                self._seen.pop(instances.instance_id_of(provider_id), None)
            raise
        return self._remember(instance)

    def list(self) -> list[Instance]:
        found = [self._as_gated(i)
                 for i in instances.list_instances(self.clients.ec2, self.cluster_name)]
        live = {instance.instance_id: instance for instance in found}
        with self._seen_lock:
            previous = dict(self._seen)
        # What EC2 no longer returns is forgotten, unless its zone is shifted away from (EC2
        # may not answer for it then).
        kept = {key: seen for key, seen in previous.items()
                if key not in live and self._shifted(seen)}
        with self._seen_lock:
            self._seen = {**kept, **live}
        return found

    def delete(self, provider_id: str) -> None:
        """Terminate, unless EC2 says the instance is gone or already shutting down
        (Karpenter's instance provider looks first, so a NodeClaim whose deletion is retried
        costs no TerminateInstances call once one went through)."""
        try:
            instance = self.get(provider_id)
        except NodeClaimNotFoundError:
            return
        if self._shifted(instance):
            # Not counted as a termination failure: a choice, retried once the shift ends.
            raise CloudProviderError(
                f"instance {instance.instance_id} is in zonally shifted availability zone "
                f"{instance.zone} ({self._zone_id(instance)}), skipping termination",
                call="ec2:TerminateInstances", resource=f"instance {instance.instance_id}")
        if instance.state == "shutting-down":
            return
        try:
            instances.terminate(self.batch, provider_id)
        except CloudProviderError:
            zone = instances.zone_of(provider_id)
            provider_metrics.termination_failed(zone, self._zone_ids.get(zone, ""))
            raise

    def tag_registered(self, provider_id: str, nodeclaim: str, node_name: str
                       ) -> dict[str, str]:
        """Tag the registered NodeClaim's instance with its Node's name, the NodeClaim and
        the cluster, each where the instance lacks that key (`instance_tagging`); the tags
        written. Raises NodeClaimNotFoundError when the instance is gone, CloudProviderError
        when it is in a zone ARC shifted traffic away from (as Karpenter, no CreateTags
        there; retried)."""
        instance = self.get(provider_id)
        missing = instance_tagging.missing_tags(instance, instance_tagging.registration_tags(
            node_name, nodeclaim, self.cluster_name))
        if not missing:
            return {}
        if self._shifted(instance):
            raise CloudProviderError(
                f"instance {instance.instance_id} is in zonally shifted availability zone "
                f"{instance.zone} ({self._zone_id(instance)}), skipping tag creation",
                call="ec2:CreateTags", resource=f"instance {instance.instance_id}")
        instance_tagging.create_tags(self.clients.ec2, instance.instance_id, missing)
        self._remember(replace(instance, tags={**instance.tags, **missing}))
        return missing

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        """Karpenter's isNodeClassDrifted, in its order: the EC2NodeClass hash, the AMI, then
        the first of security groups, subnet, capacity reservation and placement group.
        CloudProviderError when it cannot judge (nothing resolved, the instance gone)."""
        provider_id = nodeclaim.status.provider_id if nodeclaim.status else None
        if not provider_id:
            return None
        static = static_drift(nodeclaim.metadata.annotations or {}, node_class)
        if static is not None:
            log.debug("nodeclaim %s drifted: %s", nodeclaim.name, static.message)
            return static.reason
        resolution = self.resolve(node_class)
        instance = self.get(provider_id)
        if nodeclaim.status and nodeclaim.status.image_id:
            instance = replace(instance, image_id=nodeclaim.status.image_id)
        drift = drift_of(
            instance,
            self._images_for(nodeclaim, instance, node_class, resolution),
            {subnet.id for subnet in resolution.subnets},
            {group.id for group in resolution.security_groups},
        )
        if drift is None and not resolution.problems.get(RESERVATIONS):
            drift = reservation_drift(
                instance, {r.id for r in resolution.capacity_reservations})
        if drift is not None:
            log.debug("nodeclaim %s drifted: %s", nodeclaim.name, drift.message)
            return drift.reason
        group = resolution.placement_group
        launched_into = (nodeclaim.metadata.labels or {}).get(PLACEMENT_GROUP_ID_LABEL, "")
        if not resolution.problems.get(PLACEMENT_GROUP) and launched_into != (
                group.id if group else ""):
            # The selector was added, removed or now names another group (Karpenter's
            # PlacementGroupDrift).
            log.debug("nodeclaim %s drifted: placement group %s, the node class's is %s",
                      nodeclaim.name, launched_into or "none", group.id if group else "none")
            return PLACEMENT_GROUP_DRIFT
        return None

    def _images_for(self, nodeclaim: NodeClaim, instance: Instance, node_class: EC2NodeClass,
                    resolution: Resolution) -> set[str]:
        """The image the NodeClaim's instance type boots now (Karpenter's isAMIDrifted maps
        the instance type to the node class's AMIs): an instance running another of the
        node class's images (an arm64 image on an amd64 type, a standard image where a GPU
        image now serves its type) has drifted. Every resolved image when the type is no
        longer in the catalog."""
        name = (nodeclaim.metadata.labels or {}).get(INSTANCE_TYPE_LABEL) or instance.instance_type
        found = next((t for t in self._instance_types(node_class, resolution)
                      if t.name == name), None)
        image = image_for(found.labels, resolution.images) if found else None
        return {image.id} if image else {i.id for i in resolution.images}

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def capabilities(self) -> CloudCapabilities:
        return CloudCapabilities(unavailable=self.unavailable, reservations=self.reservations,
                                 reservation_lookup=self,
                                 node_classes=self, cleaner=self, parameters=self,
                                 zonal_shifts=self.zonal_shifts, catalog_cache=True,
                                 capacity_discovery=self, overlay_prices=self,
                                 instance_tagger=self,
                                 registration_hooks=(PlacementGroupRegistrationHook(self),),
                                 launches_outside_state_lock=self.launches_outside_state_lock)

    # --- garbage collection -------------------------------------------------------------

    def collect_cloud_garbage(
        self, node_classes: Collection[str], current_profiles: Collection[str] | None = None,
        active_profiles: Collection[str] = (),
    ) -> GarbageReport:
        """Launch templates and instance profiles nothing needs any more: templates of node
        classes that are gone and templates no launch used for a minute (one first seen now
        counts as used now); and the profiles we created that no node class's status names
        (`current_profiles`), that no NodeClaim was launched with (`active_profiles`, their
        karpenter.k8s.aws/instance-profile-name), that are not protected (created or
        replaced within the hour) and that no live instance runs with (Karpenter's
        instance profile garbage collection). Without `current_profiles`, only the profiles
        of node classes that are gone are candidates."""
        ec2, iam = self.clients.ec2, self.clients.iam
        now = self.clock()
        owned = launch_templates.list_cluster_templates(ec2, self.cluster_name)
        for template in owned:
            self._template_use.setdefault(template.name, now)
        recent = {name for name, used in list(self._template_use.items())
                  if now - used < LAUNCH_TEMPLATE_TTL_SECONDS}
        templates = garbage.unreferenced_templates(owned, node_classes, recent)
        for template in templates:
            launch_templates.delete_launch_template(ec2, template)
            self._template_use.pop(template.name, None)
            log.info("deleted launch template %s", template.name)
        profiles: list[instance_profiles.OwnedProfile] = []
        # ISOLATED_VPC: IAM has no VPC endpoint; Karpenter leaves profiles alone then.
        if not self.isolated_vpc:
            candidates = garbage.unreferenced_profiles(
                instance_profiles.list_cluster_profiles(iam, self.cluster_name,
                                                        self.clients.region),
                node_classes, current_profiles,
                {*active_profiles, *self._resolved_profiles()},
                self.profiles.is_protected)
            if candidates:
                in_use = {i.instance_profile for i in self.list() if i.instance_profile}
                profiles = [p for p in candidates if p.name not in in_use]
        for profile in profiles:
            instance_profiles.delete_profile(iam, profile)
            self.profiles.unprotect(profile.name)
            log.info("deleted instance profile %s", profile.name)
        return GarbageReport(tuple(t.name for t in templates), tuple(p.name for p in profiles))

    def _resolved_profiles(self) -> set[str]:
        """The profiles the cached resolutions launch with (their status may not say so
        yet)."""
        return {r.instance_profile for cache in (self._resolutions, self._unready_resolutions)
                for r in cache.values() if r.instance_profile}

    def delete_node_class_resources(self, node_class: str) -> GarbageReport:
        """What an EC2NodeClass's finalizer removes once its NodeClaims are gone: the
        instance profile created for its role, then its launch templates (Karpenter's
        finalize: cleanupManagedInstanceProfiles before launchTemplateProvider.DeleteAll, so
        a profile IAM will not delete leaves the templates too, for the next attempt)."""
        ec2, iam = self.clients.ec2, self.clients.iam
        profiles = [] if self.isolated_vpc else [
            p for p in instance_profiles.list_cluster_profiles(iam, self.cluster_name,
                                                               self.clients.region)
            if p.node_class == node_class]
        for profile in profiles:
            instance_profiles.delete_profile(iam, profile)
            self.profiles.unprotect(profile.name)
        templates = [t for t in launch_templates.list_cluster_templates(
                         ec2, self.cluster_name, node_class)
                     if t.tags.get(tag_keys.NODECLASS) == node_class]
        for template in templates:
            launch_templates.delete_launch_template(ec2, template)
            self._template_use.pop(template.name, None)
        provider_metrics.node_class_gone(node_class)
        self._resolutions.clear()
        # Its validation verdicts go too (Karpenter clears them when the node class goes).
        self.validations.drop_where(lambda key: key.startswith(f"{node_class}:"))
        return GarbageReport(tuple(t.name for t in templates), tuple(p.name for p in profiles))

    # --- zonal shift ----------------------------------------------------------------------

    def _without_shifted_zones(self, catalog: builtins.list[InstanceType],
                               zone_ids: Mapping[str, str]) -> builtins.list[InstanceType]:
        """Offerings in a zone ARC shifted traffic away from are unavailable."""
        shifts = self.zonal_shifts
        if shifts is None:
            return catalog
        shifted = {zone for zone, zone_id in zone_ids.items() if shifts.is_shifted(zone_id)}
        if not shifted:
            return catalog
        return [replace(t, offerings=tuple(
                    replace(o, available=False) if o.zone in shifted else o
                    for o in t.offerings)) for t in catalog]

    def _zone_id(self, instance: Instance) -> str:
        return instance.labels.get(ZONE_ID_LABEL) or self._zone_ids.get(instance.zone, "")

    def _shifted(self, instance: Instance) -> bool:
        return self.zonal_shifts is not None and self.zonal_shifts.is_shifted(
            self._zone_id(instance))

    def _seen_instance(self, provider_id: str) -> Instance | None:
        with self._seen_lock:
            return self._seen.get(instances.instance_id_of(provider_id))

    def _type_labels(self, node_class: EC2NodeClass, name: str) -> Mapping[str, str]:
        """The labels of the instance type `name` in the node class's catalog (none when it
        cannot be read now: the launch's own labels still go on)."""
        try:
            catalog = self.get_instance_types(node_class)
        except CloudProviderError as error:
            log.warning("labels of instance type %s: %s", name, error)
            return {}
        return next((t.labels for t in catalog if t.name == name), {})

    def _as_gated(self, instance: Instance) -> Instance:
        return instance if self.reserved_capacity else instances.without_reservation(instance)

    def _remember(self, instance: Instance) -> Instance:
        instance = self._as_gated(instance)
        with self._seen_lock:
            self._seen[instance.instance_id] = instance
        return instance

    # --- helpers ------------------------------------------------------------------------

    def _subnet_exhausted(self, resolution: Resolution, subnet_id: str) -> bool:
        """EC2 found `subnet_id` full: no address is left there until EC2 counts again (the
        next launch into its zone picks another subnet); whether the zone has one."""
        subnet = next((s for s in resolution.subnets if s.id == subnet_id), None)
        if subnet is None:
            return False
        self.subnet_ips.exhausted(subnet)
        return any(self.subnet_ips.free(other) > 0 for other in resolution.subnets
                   if other.zone == subnet.zone and other.id != subnet.id)

    def _take_subnet_ips(self, launched: fleet.Launched, resolution: Resolution,
                         picked: Sequence[Choice]) -> None:
        """The launched node's pods will take IPs of its subnet (in-flight IP accounting)."""
        subnet = next((s for s in resolution.subnets if s.id == launched.subnet_id), None)
        pods = next((c.instance_type.capacity.get(PODS) for c in picked
                     if c.instance_type.name == launched.instance_type), None)
        if subnet is not None and pods:
            self.subnet_ips.launched(subnet, pods // 1000)

    def _templates_for(
        self,
        nodeclaim: NodeClaim,
        node_class: EC2NodeClass,
        resolution: Resolution,
        choices: Sequence[Choice],
        partition: int | None = None,
        tenancy: str = launch_templates.DEFAULT_TENANCY,
        capacity_type: str = ON_DEMAND,
    ) -> dict[str, str]:
        """_template_key(choice) -> launch template name; one template per (image, max pods,
        reservation, EFA interfaces)."""
        family = node_class.resolved_ami_family()
        nodepool = (nodeclaim.metadata.labels or {}).get(NODEPOOL_LABEL)
        # As Karpenter's launch: the NodeClaim's labels with the capacity type launched.
        labels = with_do_not_sync_taints(family, {
            **node_labels(nodeclaim.metadata.labels, nodeclaim.spec.requirements, nodepool),
            CAPACITY_TYPE_LABEL: capacity_type})
        spec = node_class.spec
        by_config: dict[tuple[str, int | None, str | None, int], str] = {}
        # Pods asking for EFA devices: launch with one EFA interface per device the type
        # has (Karpenter's getEFACountForInstance).
        requested = ((nodeclaim.spec.resources.requests or {})
                     if nodeclaim.spec.resources else {})
        wants_efa = AWS_EFA in requested
        result: dict[str, str] = {}
        for choice in choices:
            instance_type = choice.instance_type
            if _template_key(choice) in result:
                continue
            image = _image_of(instance_type.labels, resolution)
            pods = instance_type.capacity.get(PODS)
            max_pods = pods // 1000 if pods is not None else None
            efa_count = (instance_type.capacity.get(AWS_EFA, 0) // 1000
                         if wants_efa and not spec.network_interfaces else 0)
            key = (image.id, max_pods, choice.offering.reservation_id, efa_count)
            if key not in by_config:
                bootstrap = NodeBootstrap.build(
                    self.cluster().info,
                    labels=labels,
                    taints=nodeclaim.spec.taints or [],
                    startup_taints=nodeclaim.spec.startup_taints or [],
                    kubelet=spec.kubelet,
                    max_pods=max_pods,
                    custom_user_data=spec.user_data,
                    instance_store_policy=spec.instance_store_policy,
                    bottlerocket_version=bottlerocket_release(
                        node_class, [i.name for i in resolution.images],
                        image_ids={i.id: i.name for i in resolution.images}),
                )
                try:
                    user_data = render_user_data(family, bootstrap)
                except UnresolvedClusterError as error:
                    raise NodeClassNotReadyError(
                        f"EC2NodeClass {node_class.name}: {error}",
                        resource=f"ec2nodeclass {node_class.name}",
                    ) from error
                except ValueError as error:
                    raise CloudProviderError(
                        f"EC2NodeClass {node_class.name}: {error}",
                        resource=f"ec2nodeclass {node_class.name}",
                    ) from error
                provider_metrics.user_data_rendered(node_class.name, user_data)
                config = launch_templates.LaunchConfig(
                    cluster=self.cluster_name,
                    nodepool=nodepool or "",
                    node_class=node_class.name,
                    image_id=image.id,
                    user_data=user_data,
                    instance_profile=resolution.instance_profile or "",
                    security_group_ids=tuple(g.id for g in resolution.security_groups),
                    metadata_options=launch_templates.metadata_options_of(
                        spec.metadata_options, self.clients.region),
                    block_device_mappings=tuple(
                        launch_templates.block_devices_of(spec.block_device_mappings, family)
                    ),
                    detailed_monitoring=bool(spec.detailed_monitoring),
                    associate_public_ip_address=spec.associate_public_ip_address,
                    ip_prefix_count=spec.ip_prefix_count,
                    ipv6=self.cluster().info.ipv6,
                    efa_count=efa_count,
                    network_interfaces=tuple(
                        (i.network_card_index, i.device_index, i.interface_type)
                        for i in spec.network_interfaces or ()),
                    connection_tracking=launch_templates.connection_tracking_of(
                        spec.connection_tracking),
                    nested_virtualization=(spec.cpu_options.nested_virtualization
                                           if spec.cpu_options else None),
                    extra_tags=dict(spec.tags or {}),
                    targeted_reservations=self.reserved_capacity,
                    capacity_reservation_id=choice.offering.reservation_id,
                    capacity_reservation_type=choice.offering.reservation_type,
                    capacity_reservation_interruptible=(
                        choice.offering.reservation_interruptible),
                    placement_group_id=(resolution.placement_group.id
                                        if resolution.placement_group else None),
                    placement_partition=partition,
                    tenancy=tenancy,
                    enclave_enabled=NIP_SLOTS in requested,
                    capacity_type=capacity_type,
                )
                by_config[key] = launch_templates.ensure_launch_template(self.clients.ec2, config)
                self._template_use[by_config[key]] = self.clock()
            result[_template_key(choice)] = by_config[key]
        return result

    def _instance_tags(
        self, nodeclaim: str, nodepool: str, node_class: EC2NodeClass
    ) -> dict[str, str]:
        # No Name: the NodeClaim tagging controller names the instance after its Node once
        # registered, unless the node class's tags give it one (as Karpenter). The
        # ownership tags cannot be replaced.
        return {
            **(node_class.spec.tags or {}),
            **tag_keys.ownership_tags(self.cluster_name),
            tag_keys.NODEPOOL: nodepool,
            tag_keys.NODECLAIM: nodeclaim,
            tag_keys.NODECLASS: node_class.name,
        }

    def _instance_from_launch(
        self,
        launched: fleet.Launched,
        request: fleet.FleetRequest,
        nodepool: str,
        node_class: EC2NodeClass,
        resolution: Resolution,
        tenancy: str,
    ) -> Instance:
        return Instance(
            provider_id=instances.provider_id(launched.zone, launched.instance_id),
            instance_id=launched.instance_id,
            instance_type=launched.instance_type,
            zone=launched.zone,
            capacity_type=launched.capacity_type,
            image_id=launched.image_id,
            state="pending",
            launch_time=datetime.now(UTC),
            subnet_id=launched.subnet_id,
            security_group_ids=tuple(sorted(g.id for g in resolution.security_groups)),
            nodeclaim_name=request.nodeclaim_name,
            nodepool_name=nodepool,
            node_class_name=node_class.name,
            tags=dict(request.tags),
            instance_profile=resolution.instance_profile or "",
            # The profile the instance was launched with, whatever the node class names
            # later: garbage collection keeps it while the NodeClaim lives.
            annotations=({instance_profiles.PROFILE_ANNOTATION: resolution.instance_profile}
                         if resolution.instance_profile else {}),
            labels={
                "node.kubernetes.io/instance-type": launched.instance_type,
                "topology.kubernetes.io/zone": launched.zone,
                **({ZONE_ID_LABEL: self._zone_ids[launched.zone]}
                   if self._zone_ids.get(launched.zone) else {}),
                "karpenter.sh/capacity-type": launched.capacity_type,
                TENANCY_LABEL: tenancy,
                **({RESERVATION_ID_LABEL: launched.reservation_id,
                    RESERVATION_TYPE_LABEL: request.reservation_type or "default",
                    RESERVATION_INTERRUPTIBLE_LABEL: interruptible_value(
                        request.reservation_interruptible)}
                   if launched.reservation_id else {}),
                **({PLACEMENT_GROUP_ID_LABEL: resolution.placement_group.id}
                   if resolution.placement_group else {}),
                **_partition_label(resolution.placement_group, request.placement_partition),
            },
        )


def _with_type_labels(instance: Instance, type_labels: Mapping[str, str]) -> Instance:
    """The instance with its type's labels beneath those of its launch (Karpenter's
    instanceToNodeClaim: every single-valued requirement of the instance type, so the
    NodeClaim, then the Node, carries karpenter.k8s.aws/instance-family, -cpu, -memory, ...,
    kubernetes.io/arch and os and the region; the launch's zone, capacity type, tenancy and
    reservation win)."""
    return replace(instance, labels={**type_labels, **instance.labels})


def _partition_label(group: placement_groups.PlacementGroup | None, partition: int | None
                     ) -> dict[str, str]:
    """The partition a launch targeted; "" when EC2 picks one in a partition group, for the
    placement group registration hook to fill in (as Karpenter)."""
    if partition is not None:
        return {PLACEMENT_GROUP_PARTITION_LABEL: str(partition)}
    if group is not None and group.strategy == placement_groups.PARTITION:
        return {PLACEMENT_GROUP_PARTITION_LABEL: ""}
    return {}


def _filter_for_launch(
    nodeclaim: NodeClaim, choices: Sequence[Choice], requirements: Requirements
) -> list[Choice]:
    """Karpenter's launch-time filters, before the fleet's overrides are built."""
    filtered = filter_for_launch(choices, requirements, _requests_of(nodeclaim))
    if not filtered.choices:
        raise InsufficientCapacityError(
            f"nodeclaim {nodeclaim.name}: all requested instance types were unavailable "
            f"during launch (none left by the {filtered.emptied_by})",
            resource=f"nodeclaim {nodeclaim.name}",
            code="NoCompatibleOffering",
        )
    for name, types in sorted(filtered.rejected.items()):
        log.debug("nodeclaim %s: %s filtered out %s", nodeclaim.name, name,
                  ", ".join(types[:5]) + (f" and {len(types) - 5} other(s)"
                                          if len(types) > 5 else ""))
    return filtered.choices


def _check_truncation(nodeclaim: NodeClaim, choices: Sequence[Choice]) -> None:
    """A fleet carries the 60 cheapest types: when those no longer meet the NodeClaim's
    minValues, the launch has no capacity (Karpenter's Truncate), unless its minValues were
    already relaxed (MIN_VALUES_POLICY=BestEffort)."""
    if (nodeclaim.metadata.annotations or {}).get(MIN_VALUES_RELAXED) == "true":
        return
    wanted = {r.key: r.min_values for r in nodeclaim.spec.requirements if r.min_values}
    if not wanted:
        return
    unmet = fleet.unmet_min_values(choices, wanted)
    if unmet:
        raise InsufficientCapacityError(
            f"nodeclaim {nodeclaim.name}: truncating instance types based on the passed-in "
            "requirements, minValues requirement is not met for label(s) "
            + ", ".join(f"{key} ({found} of {wanted[key]})"
                        for key, found in sorted(unmet.items())),
            resource=f"nodeclaim {nodeclaim.name}", code="NoCompatibleOffering")


def _requests_of(nodeclaim: NodeClaim) -> Resources:
    raw = nodeclaim.spec.resources.requests if nodeclaim.spec.resources else None
    try:
        return parse_resources(raw or {})
    except ValueError as error:
        where = f"nodeclaim {nodeclaim.name}"
        raise CloudProviderError(f"{where}: spec.resources.requests.{error}",
                                 resource=where) from error


def _template_key(choice: Choice) -> str:
    return f"{choice.instance_type.name}/{choice.offering.reservation_id or ''}"


def _image_of(labels: Mapping[str, str], resolution: Resolution) -> Image:
    image = image_for(labels, resolution.images)
    assert image is not None, "choices are limited to instance types an image supports"
    return image
