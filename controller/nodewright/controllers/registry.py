"""The one list of Nodewright's controllers, and building them for one cluster, cloud and
clock.

`SPECS` names every controller (Karpenter's `NewControllers`, core and AWS together): the
object it owns, how it is built, the feature gate it needs and the cloud capability or
option that must be there for it to run. Both the controller process (`operator.process`)
and the simulator (`sim.world`) call `build_controllers(cluster, cloud, clock, options)`,
so `nodewright simulate` runs every controller `nodewright controller` runs; only the
cloud (AWS or the simulated EC2), what plays the kubelet and the clock differ. A
controller's watches and workers are its own (`Reconciler.watches`,
`concurrent_reconciles`).

Adding a gated controller: its module, one `ControllerSpec` line in `SPECS` naming its
gate, and the gate in `controllers.options.GATE_OPTIONS` if it is a new one.

`build_controllers` returns `Controllers`: one state cache, one event recorder, one
decision log and every reconciler sharing them. A driver (the `VirtualDriver` of the
simulator and the tests, or the operator's work queues) must

1. hand every watch event to `controllers.state.observe` before queueing keys
   (`controllers.attach(driver)` does this and adds the reconcilers), and
2. run each of `controllers.singletons` once with the key "" after it starts (periodic
   loops that no watch event starts: garbage collection, the node and offering metrics,
   the instance status health checks), as `attach(..., start=True)` and `kick(driver)` do.

Each controller talks to the cloud through its own `MeteredCloud`, which records
karpenter_cloudprovider_* under that controller's name. The metrics reconcilers
(`controllers.metrics`) only read the state cache and write `nodewright.metrics`: the
simulator runs them too, and nothing they compute reaches a decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.metered import MeteredCloud
from nodewright.cloud.provider import CloudProvider, RegistrationHook
from nodewright.cloud.unreserved import WithoutReservedCapacity
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.capacitybuffer.controller import CapacityBufferController
from nodewright.controllers.capacityreservation.capacitytype import ReservedCapacityDemotion
from nodewright.controllers.capacityreservation.expiration import CapacityBlockExpiration
from nodewright.controllers.common.decision_log import DecisionLog
from nodewright.controllers.common.registration_health import RegistrationHealth
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.interruption.controller import Interruption
from nodewright.controllers.interruption.instance_status import InstanceStatusChecks
from nodewright.controllers.metrics import (
    NodeMetrics,
    NodePoolMetrics,
    OfferingMetrics,
    PodMetrics,
    StatusConditionMetrics,
)
from nodewright.controllers.node.discovered_capacity import DiscoveredCapacity
from nodewright.controllers.node.health import NodeHealth
from nodewright.controllers.node.hydration import NodeHydration
from nodewright.controllers.node.termination import NodeTermination
from nodewright.controllers.nodeclaim import NodeClaimLifecycle
from nodewright.controllers.nodeclaim.consistency import NodeClaimConsistency
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.expiration import Expiration
from nodewright.controllers.nodeclaim.garbagecollection import (
    InstanceGarbageCollection,
    NodeClaimGarbageCollection,
)
from nodewright.controllers.nodeclaim.hydration import NodeClaimHydration
from nodewright.controllers.nodeclaim.podevents import PodEvents
from nodewright.controllers.nodeclaim.tagging import NodeClaimTagging
from nodewright.controllers.nodeclass.cleanup import CloudGarbageCollection, NodeClassTermination
from nodewright.controllers.nodeclass.ssm_invalidation import SsmInvalidation
from nodewright.controllers.nodeclass.status import CatalogRefresh, NodeClassStatus
from nodewright.controllers.nodeoverlay.controller import NodeOverlayController
from nodewright.controllers.nodepool.cost import NodeClaimCost, NodePoolCost, Pricing
from nodewright.controllers.nodepool.hash_annotations import HashController
from nodewright.controllers.nodepool.status import NodePoolStatus
from nodewright.controllers.nodepool.zonal_shift import ZonalShiftEvents
from nodewright.controllers.options import ControllerOptions, disruption_options, gate_enabled
from nodewright.controllers.provisioning import Provisioner, ProvisionerOptions
from nodewright.controllers.static.deprovisioning import StaticDeprovisioning
from nodewright.controllers.static.provisioning import StaticProvisioning
from nodewright.runtime.clock import Clock
from nodewright.runtime.outside_lock import outside_state_lock
from nodewright.runtime.reconciler import Reconciler, WatchEvent
from nodewright.scheduling.overlays import OverlayStore
from nodewright.state import ClusterState
from nodewright.state.buffers import BufferPods

R = TypeVar("R", bound=Reconciler)


class Runner(Protocol):
    """What `attach` needs of a driver."""

    def add(self, *reconcilers: Reconciler) -> None: ...

    def listen(self, listener: Callable[[WatchEvent], None]) -> None: ...

    def enqueue(self, reconciler: Reconciler, key: str) -> None: ...


@dataclass
class Parts:
    """What every controller is built from. `cluster` makes its calls outside the state
    lock (`runtime.outside_lock`), and so does `cloud` when its capabilities say it may;
    `given_cloud` is the cloud as the caller gave it (no gate's wrapper, no metering)."""

    cluster: ClusterAPI
    cloud: CloudProvider
    given_cloud: CloudProvider
    clock: Clock
    state: ClusterState
    recorder: EventRecorder
    options: ControllerOptions
    capabilities: CloudCapabilities
    decisions: DecisionLog
    registration_health: RegistrationHealth
    specs: Sequence[ControllerSpec]
    built: dict[str, Reconciler] = field(default_factory=dict)

    def metered(self, controller: str) -> CloudProvider:
        """The cloud as `controller` calls it: timed under its name."""
        inner = MeteredCloud(self._unlocked, controller)
        if self.capabilities.launches_outside_state_lock:
            return outside_state_lock(inner, self.state.lock)
        return inner

    @property
    def _unlocked(self) -> CloudProvider:
        """The cloud without the outside-lock proxy (the gate's wrapper kept)."""
        if self.options.reserved_capacity:
            return self.given_cloud
        return WithoutReservedCapacity(self.given_cloud)

    def build(self, name: str, kind: type[R]) -> R:
        """The controller of that name, for a constructor that needs another one."""
        found = self.reconciler(name)
        assert isinstance(found, kind), f"{name} is a {type(found).__name__}"
        return found

    def reconciler(self, name: str) -> Reconciler:
        """The controller of that name, built now if the list has not reached it yet."""
        if name not in self.built:
            spec = next(spec for spec in self.specs if spec.name == name)
            built = spec.build(self)
            if built.name != spec.name:
                raise ValueError(f"the spec {spec.name!r} built the reconciler {built.name!r}")
            self.built[name] = built
        return self.built[name]


@dataclass(frozen=True)
class ControllerSpec:
    """One controller. `name` is its reconciler's name; `owner` the object it owns (its
    folder); `gate` the feature gate it needs; `needs` what else must hold (a cloud
    capability, an option); `singleton`: started once with the key "" (a loop no watch
    event starts)."""

    name: str
    owner: str
    build: Callable[[Parts], Reconciler]
    gate: str | None = None
    needs: Callable[[Parts], bool] | None = None
    singleton: bool = False

    def enabled(self, parts: Parts) -> bool:
        if self.gate is not None and not gate_enabled(parts.options, self.gate):
            return False
        return self.needs is None or self.needs(parts)


def _provisioner(p: Parts) -> Provisioner:
    o = p.options
    return Provisioner(p.cluster, p.metered(Provisioner.name), p.clock, p.state, p.recorder,
                       ProvisionerOptions(o.batch_idle_seconds, o.batch_max_seconds,
                                          relax_min_values=o.relax_min_values,
                                          solve_deadline=o.solve_deadline,
                                          ignore_preferences=o.ignore_preferences))


def _lifecycle(p: Parts) -> NodeClaimLifecycle:
    return NodeClaimLifecycle(p.cluster, p.metered(NodeClaimLifecycle.name), p.clock, p.state,
                              p.recorder, launch_timeout=p.options.launch_timeout_seconds,
                              registration_timeout=p.options.registration_timeout_seconds,
                              registration_health=p.registration_health,
                              registration_hooks=_registration_hooks(p))


def _registration_hooks(p: Parts) -> tuple[RegistrationHook, ...]:
    hooks = p.capabilities.registration_hooks
    if p.capabilities.launches_outside_state_lock:
        return tuple(outside_state_lock(hook, p.state.lock) for hook in hooks)
    return hooks


def _interruption(p: Parts) -> Interruption:
    queue = p.capabilities.interruption_queue
    assert queue is not None
    return Interruption(p.cluster, p.clock, p.state, p.recorder, queue,
                        p.capabilities.unavailable, p.decisions,
                        reservations=p.capabilities.reservations)


def _instance_status(p: Parts) -> InstanceStatusChecks:
    statuses = p.capabilities.instance_statuses
    assert statuses is not None
    return InstanceStatusChecks(p.cluster, p.clock, p.state, p.recorder, statuses, p.decisions)


def _capacity_block_expiration(p: Parts) -> Reconciler:
    lookup = p.capabilities.reservation_lookup
    assert lookup is not None
    return CapacityBlockExpiration(
        p.cluster, p.clock, lookup,
        outside_state_lock=p.capabilities.launches_outside_state_lock)


def _node_class_status(p: Parts) -> NodeClassStatus:
    resolver = p.capabilities.node_classes
    assert resolver is not None
    return NodeClassStatus(p.cluster, resolver, p.clock,
                           outside_state_lock=p.capabilities.launches_outside_state_lock)


def _cloud_garbage(p: Parts) -> CloudGarbageCollection:
    cleaner = p.capabilities.cleaner
    assert cleaner is not None
    return CloudGarbageCollection(p.cluster, cleaner,
                                  outside_state_lock=p.capabilities.launches_outside_state_lock)


def _ssm(p: Parts) -> SsmInvalidation:
    parameters = p.capabilities.parameters
    assert parameters is not None
    return SsmInvalidation(parameters)


def _discovered_capacity(p: Parts) -> DiscoveredCapacity:
    learner = p.capabilities.capacity_discovery
    assert learner is not None
    if p.capabilities.launches_outside_state_lock:
        learner = outside_state_lock(learner, p.state.lock)
    return DiscoveredCapacity(p.cluster, p.state, learner)


def _zonal_shift(p: Parts) -> ZonalShiftEvents:
    shifts = p.capabilities.zonal_shifts
    assert shifts is not None
    return ZonalShiftEvents(p.cluster, p.recorder, shifts)


def _tagging(p: Parts) -> NodeClaimTagging:
    tagger = p.capabilities.instance_tagger
    assert tagger is not None
    if p.capabilities.launches_outside_state_lock:
        tagger = outside_state_lock(tagger, p.state.lock)
    return NodeClaimTagging(p.cluster, tagger, p.clock)


def _cluster_state(p: Parts) -> bool:
    return p.options.cluster_state_observability


# Every controller, in the order a driver is given them (the order events reach them).
SPECS: tuple[ControllerSpec, ...] = (
    ControllerSpec("provisioner", "Pod", _provisioner),
    ControllerSpec("nodeclaim.lifecycle", "NodeClaim", _lifecycle),
    ControllerSpec("node.termination", "Node", lambda p: NodeTermination(
        p.cluster, p.metered(NodeTermination.name), p.clock, p.state, p.recorder)),
    ControllerSpec("node.hydration", "Node", lambda p: NodeHydration(p.cluster, p.state)),
    ControllerSpec("nodepool.status", "NodePool", lambda p: NodePoolStatus(
        p.cluster, p.clock, p.state, p.registration_health, p.recorder)),
    ControllerSpec("instance.garbagecollection", "NodeClaim", lambda p: InstanceGarbageCollection(
        p.cluster, p.metered(InstanceGarbageCollection.name), p.clock, p.state),
        singleton=True),
    ControllerSpec("nodeclaim.garbagecollection", "NodeClaim",
                   lambda p: NodeClaimGarbageCollection(
                       p.cluster, p.metered(NodeClaimGarbageCollection.name), p.clock,
                       p.state), singleton=True),
    ControllerSpec("nodeclaim.podevents", "NodeClaim", lambda p: PodEvents(
        p.cluster, p.clock, p.state)),
    ControllerSpec("nodeclaim.consistency", "NodeClaim", lambda p: NodeClaimConsistency(
        p.cluster, p.clock, p.state, p.recorder)),
    ControllerSpec("nodeclaim.hydration", "NodeClaim",
                   lambda p: NodeClaimHydration(p.cluster, p.state)),
    ControllerSpec("disruption", "NodePool", lambda p: DisruptionController(
        p.cluster, p.metered(DisruptionController.name), p.clock, p.state, p.recorder,
        p.decisions, disruption_options(p.options)), singleton=True),
    ControllerSpec("nodeclaim.disruption", "NodeClaim", lambda p: NodeClaimConditions(
        p.cluster, p.state, p.metered(NodeClaimConditions.name), p.clock)),
    ControllerSpec("disruption.hash", "NodePool", lambda p: HashController(p.cluster, p.state)),
    ControllerSpec("nodeclaim.expiration", "NodeClaim", lambda p: Expiration(
        p.cluster, p.clock, p.state, p.recorder, p.decisions)),
    ControllerSpec("interruption", "NodeClaim", _interruption, singleton=True,
                   needs=lambda p: p.capabilities.interruption_queue is not None),
    ControllerSpec("metrics.node", "Node", lambda p: NodeMetrics(p.clock, p.state),
                   needs=_cluster_state, singleton=True),
    ControllerSpec("metrics.nodepool", "NodePool", lambda p: NodePoolMetrics(p.state),
                   needs=_cluster_state),
    # Karpenter's ClusterCost feeders (state informers): they run whatever the settings.
    ControllerSpec("state.cost.nodeclaim", "NodeClaim", lambda p: NodeClaimCost(
        p.state, p.metered(NodeClaimCost.name))),
    ControllerSpec("state.cost.nodepool", "NodePool", lambda p: NodePoolCost(p.state)),
    ControllerSpec("state.pricing", "NodePool", lambda p: Pricing(
        p.state, p.metered(Pricing.name)), singleton=True),
    ControllerSpec("metrics.pod", "Pod", lambda p: PodMetrics(p.clock, p.state),
                   needs=_cluster_state),
    ControllerSpec("metrics.status", "NodeClaim", lambda p: StatusConditionMetrics(
        p.clock, p.state, p.options.status_metrics_requeue_seconds,
        buffers=p.cluster if p.options.capacity_buffer else None, recorder=p.recorder),
        needs=_cluster_state),
    # Karpenter writes the offering metrics from GetInstanceTypes whatever the setting.
    ControllerSpec("metrics.offerings", "NodePool", lambda p: OfferingMetrics(
        p.metered(OfferingMetrics.name), p.state,
        reserved_capacity=p.options.reserved_capacity), singleton=True),
    ControllerSpec("static.provisioning", "NodePool", lambda p: StaticProvisioning(
        p.cluster, p.state), gate="StaticCapacity"),
    ControllerSpec("static.deprovisioning", "NodePool", lambda p: StaticDeprovisioning(
        p.cluster, p.clock, p.state, p.recorder), gate="StaticCapacity"),
    ControllerSpec("node.health", "Node", lambda p: NodeHealth(
        p.cluster, p.metered(NodeHealth.name), p.clock, p.state, p.recorder),
        gate="NodeRepair", needs=lambda p: bool(p.cloud.repair_policies())),
    ControllerSpec("nodeoverlay.controller", "NodeOverlay", lambda p: NodeOverlayController(
        p.cluster, p.metered(NodeOverlayController.name), p.clock, p.state),
        gate="NodeOverlay", singleton=True),
    ControllerSpec("capacitybuffer", "CapacityBuffer", lambda p: CapacityBufferController(
        p.cluster, p.clock, p.state), gate="CapacityBuffer"),
    ControllerSpec("interruption.instancestatus", "NodeClaim", _instance_status,
                   needs=lambda p: p.capabilities.instance_statuses is not None,
                   singleton=True),
    ControllerSpec("nodeclass.status", "EC2NodeClass", _node_class_status,
                   needs=lambda p: p.capabilities.node_classes is not None),
    ControllerSpec("catalog.refresh", "EC2NodeClass", lambda p: CatalogRefresh(
        p.cluster, p.given_cloud), needs=lambda p: p.capabilities.catalog_cache),
    ControllerSpec("capacityreservation.expiration", "NodeClaim", _capacity_block_expiration,
                   needs=lambda p: p.capabilities.reservation_lookup is not None),
    ControllerSpec("nodeclass.termination", "EC2NodeClass", lambda p: NodeClassTermination(
        p.cluster, p.capabilities.cleaner, p.recorder,
        outside_state_lock=p.capabilities.launches_outside_state_lock)),
    ControllerSpec("nodeclass.garbagecollection", "EC2NodeClass", _cloud_garbage,
                   needs=lambda p: p.capabilities.cleaner is not None),
    ControllerSpec("providers.ssm.invalidation", "EC2NodeClass", _ssm,
                   needs=lambda p: p.capabilities.parameters is not None),
    ControllerSpec("zonalshift", "NodePool", _zonal_shift, singleton=True,
                   needs=lambda p: p.capabilities.zonal_shifts is not None),
    ControllerSpec("providers.instancetype.capacity", "Node", _discovered_capacity,
                   needs=lambda p: p.capabilities.capacity_discovery is not None),
    ControllerSpec("nodeclaim.tagging", "NodeClaim", _tagging,
                   needs=lambda p: p.capabilities.instance_tagger is not None),
    ControllerSpec("capacityreservation.capacitytype", "NodeClaim",
                   lambda p: ReservedCapacityDemotion(p.cluster, p.given_cloud)),
)


@dataclass
class DisruptionControllers:
    """The disruption side, as the stories look at it (one decision log)."""

    decisions: DecisionLog
    disruption: DisruptionController
    conditions: NodeClaimConditions
    hashes: HashController
    expiration: Expiration
    interruption: Interruption | None


@dataclass
class MetricsControllers:
    offerings: OfferingMetrics
    nodes: NodeMetrics | None = None
    nodepools: NodePoolMetrics | None = None
    pods: PodMetrics | None = None
    status: StatusConditionMetrics | None = None


@dataclass
class Controllers:
    state: ClusterState
    recorder: EventRecorder
    decisions: DecisionLog
    # NodePools' registration outcomes (NodeRegistrationHealthy), shared by the lifecycle
    # and the NodePool status controller.
    registration_health: RegistrationHealth
    # Every controller the list enabled, by name, in the list's order.
    built: dict[str, Reconciler]
    singleton_names: tuple[str, ...] = ()
    # Reconcilers added by the caller (what plays the kubelet for `--cloud sim`).
    extra: list[Reconciler] = field(default_factory=list)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.built)

    @property
    def reconcilers(self) -> tuple[Reconciler, ...]:
        return (*self.built.values(), *self.extra)

    @property
    def singletons(self) -> tuple[Reconciler, ...]:
        """Reconcilers to run once with the key "" at start."""
        return tuple(self.built[name] for name in self.singleton_names)

    def attach(self, driver: Runner, *, start: bool = False) -> None:
        driver.listen(self.state.observe)
        driver.add(*self.reconcilers)
        if start:
            self.kick(driver)

    def kick(self, driver: Runner) -> None:
        for reconciler in self.singletons:
            driver.enqueue(reconciler, "")

    def get(self, name: str, kind: type[R]) -> R | None:
        """The controller built under `name` (the spec list's name), if it is a `kind`."""
        found = self.built.get(name)
        return found if isinstance(found, kind) else None

    def _must(self, name: str, kind: type[R]) -> R:
        found = self.get(name, kind)
        assert found is not None, f"{name} was not built"
        return found

    # --- the controllers the stories look at, typed ----------------------------------------

    @property
    def provisioner(self) -> Provisioner:
        return self._must("provisioner", Provisioner)

    @property
    def lifecycle(self) -> NodeClaimLifecycle:
        return self._must("nodeclaim.lifecycle", NodeClaimLifecycle)

    @property
    def disruption(self) -> DisruptionControllers:
        return DisruptionControllers(
            decisions=self.decisions,
            disruption=self._must("disruption", DisruptionController),
            conditions=self._must("nodeclaim.disruption", NodeClaimConditions),
            hashes=self._must("disruption.hash", HashController),
            expiration=self._must("nodeclaim.expiration", Expiration),
            interruption=self.get("interruption", Interruption))

    @property
    def metrics(self) -> MetricsControllers:
        return MetricsControllers(
            offerings=self._must("metrics.offerings", OfferingMetrics),
            nodes=self.get("metrics.node", NodeMetrics),
            nodepools=self.get("metrics.nodepool", NodePoolMetrics),
            pods=self.get("metrics.pod", PodMetrics),
            status=self.get("metrics.status", StatusConditionMetrics))

    @property
    def static(self) -> tuple[StaticProvisioning, StaticDeprovisioning] | None:
        provisioning = self.get("static.provisioning", StaticProvisioning)
        deprovisioning = self.get("static.deprovisioning", StaticDeprovisioning)
        if provisioning is None or deprovisioning is None:
            return None
        return provisioning, deprovisioning

    @property
    def node_overlay(self) -> NodeOverlayController | None:
        return self.get("nodeoverlay.controller", NodeOverlayController)

    @property
    def capacity_buffer(self) -> CapacityBufferController | None:
        return self.get("capacitybuffer", CapacityBufferController)


def build_controllers(
    cluster: ClusterAPI,
    cloud: CloudProvider,
    clock: Clock,
    options: ControllerOptions | None = None,
    *,
    specs: Sequence[ControllerSpec] = SPECS,
) -> Controllers:
    options = options or ControllerOptions()
    given_cloud = cloud
    if not options.reserved_capacity:
        cloud = WithoutReservedCapacity(cloud)
    state = ClusterState(clock, nomination_seconds=options.nomination_seconds)
    state.ca_bundle = options.cluster_ca_bundle
    if options.capacity_buffer:
        state.buffers = BufferPods()
    if options.node_overlay:
        # No NodePool launches before the overlay controller has evaluated it.
        state.overlay_store = OverlayStore()
    recorder = EventRecorder(cluster, clock, reporting_instance=options.reporting_instance)
    capabilities = cloud.capabilities()
    if options.node_overlay and capabilities.overlay_prices is not None:
        # The cloud launches a NodePool's NodeClaims from its types as the overlays make
        # them (their prices become the fleet's priorities), read from the current store.
        capabilities.overlay_prices.use_overlays(lambda: state.overlay_store)
    # Requests run outside the state lock (runtime.outside_lock): the API client always
    # (it is safe from any thread), the cloud when it says it is. The recorder keeps the
    # bare client: it writes under a lock of its own.
    if capabilities.launches_outside_state_lock:
        cloud = outside_state_lock(cloud, state.lock)
    parts = Parts(cluster=outside_state_lock(cluster, state.lock), cloud=cloud,
                  given_cloud=given_cloud, clock=clock, state=state, recorder=recorder,
                  options=options, capabilities=capabilities, decisions=DecisionLog(),
                  registration_health=RegistrationHealth(), specs=specs)
    enabled = [spec for spec in specs if spec.enabled(parts)]
    built = {spec.name: parts.reconciler(spec.name) for spec in enabled}
    return Controllers(state=state, recorder=recorder, decisions=parts.decisions,
                       registration_health=parts.registration_health, built=built,
                       singleton_names=tuple(s.name for s in enabled if s.singleton))
