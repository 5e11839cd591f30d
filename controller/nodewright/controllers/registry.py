"""The production wiring of the core controllers for one cluster, cloud and clock.

`build_controllers(cluster, cloud, clock, options)` returns `Controllers`: one state cache,
one event recorder and every reconciler sharing them. A driver (the `VirtualDriver` of
the simulator and the tests, or the operator's work queues) must

1. hand every watch event to `controllers.state.observe` before queueing keys
   (`controllers.attach(driver)` does this and adds the reconcilers), and
2. run each of `controllers.singletons` once with the key "" after it starts (periodic
   loops that no watch event starts: garbage collection, the node and offering metrics,
   the instance status health checks when the cloud has `instance_statuses`),
   as `attach(..., start=True)` and `kick(driver)` do.

Each controller talks to the cloud through its own `MeteredCloud`, which records
karpenter_cloudprovider_* under that controller's name. The metrics reconcilers
(`controllers.metrics`) only read the state cache and write `nodewright.metrics`: the
simulator runs them too, and nothing they compute reaches a decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol, cast

from nodewright.cloud.metered import MeteredCloud
from nodewright.cloud.provider import CloudProvider
from nodewright.cloud.unreserved import WithoutReservedCapacity
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.capacitybuffer.controller import CapacityBufferController
from nodewright.controllers.common.registration_health import RegistrationHealth
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.wiring import DisruptionControllers, build_disruption
from nodewright.controllers.interruption.instance_status import (
    InstanceStatusChecks,
    InstanceStatusSource,
)
from nodewright.controllers.metrics import (
    NodeMetrics,
    NodePoolMetrics,
    OfferingMetrics,
    PodMetrics,
    StatusConditionMetrics,
)
from nodewright.controllers.metrics.status import REQUEUE_SECONDS as STATUS_REQUEUE_SECONDS
from nodewright.controllers.node.health import NodeHealth
from nodewright.controllers.node.termination import NodeTermination
from nodewright.controllers.nodeclaim import (
    LAUNCH_TIMEOUT_SECONDS,
    REGISTRATION_TIMEOUT_SECONDS,
    NodeClaimLifecycle,
)
from nodewright.controllers.nodeclaim.consistency import NodeClaimConsistency
from nodewright.controllers.nodeclaim.garbagecollection import (
    InstanceGarbageCollection,
    NodeClaimGarbageCollection,
)
from nodewright.controllers.nodeclaim.podevents import PodEvents
from nodewright.controllers.nodeoverlay.controller import NodeOverlayController
from nodewright.controllers.nodepool.status import NodePoolStatus
from nodewright.controllers.provisioning import Provisioner, ProvisionerOptions
from nodewright.controllers.provisioning.batcher import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_SECONDS
from nodewright.controllers.static.deprovisioning import StaticDeprovisioning
from nodewright.controllers.static.provisioning import StaticProvisioning
from nodewright.runtime.clock import Clock
from nodewright.runtime.outside_lock import outside_state_lock, safe_from_any_thread
from nodewright.runtime.reconciler import Reconciler, WatchEvent
from nodewright.scheduling.overlays import OverlayStore
from nodewright.state import ClusterState
from nodewright.state.buffers import BufferPods


class Runner(Protocol):
    """What `attach` needs of a driver."""

    def add(self, *reconcilers: Reconciler) -> None: ...

    def listen(self, listener: Callable[[WatchEvent], None]) -> None: ...

    def enqueue(self, reconciler: Reconciler, key: str) -> None: ...


@dataclass(frozen=True)
class ControllerOptions:
    batch_idle_seconds: float = DEFAULT_IDLE_SECONDS
    batch_max_seconds: float = DEFAULT_MAX_SECONDS
    launch_timeout_seconds: float = LAUNCH_TIMEOUT_SECONDS
    registration_timeout_seconds: float = REGISTRATION_TIMEOUT_SECONDS
    reporting_instance: str = "nodewright"
    disruption: DisruptionOptions = field(default_factory=DisruptionOptions)
    # How often operatorpkg's status metrics refresh each object's
    # current_status_seconds without an event (None: on events only).
    status_metrics_requeue_seconds: float | None = STATUS_REQUEUE_SECONDS
    # The StaticCapacity feature gate: static NodePools' replicas are kept (Karpenter's
    # static provisioning and deprovisioning controllers run only behind it).
    static_capacity: bool = False
    # MIN_VALUES_POLICY=BestEffort (Karpenter's default is Strict).
    relax_min_values: bool = False
    # SOLVE_DEADLINE: wall seconds a provisioning solve may spend improving its plan.
    solve_deadline: float | None = None
    # PREFERENCE_POLICY=Ignore: preferred affinities and ScheduleAnyway spreads are dropped.
    ignore_preferences: bool = False
    # The NodeRepair feature gate: unhealthy nodes are replaced (controllers.node_health).
    node_repair: bool = False
    # The NodeOverlay feature gate: NodeOverlays change instance types' prices and capacity.
    node_overlay: bool = False
    # The CapacityBuffer feature gate: CapacityBuffers keep headroom launched.
    capacity_buffer: bool = False
    # The ReservedCapacity feature gate (on by default): off, no instance type has a
    # reserved offering and nothing launches into a capacity reservation.
    reserved_capacity: bool = True
    # False: DISABLE_CLUSTER_STATE_OBSERVABILITY, the pod, NodePool, Node and
    # status-condition metrics controllers are not run (Karpenter's controllers.go).
    cluster_state_observability: bool = True

    @property
    def nomination_seconds(self) -> float:
        """Karpenter: max(2 x batchMaxDuration, 10 s)."""
        return max(2 * self.batch_max_seconds, 10.0)


@dataclass
class MetricsControllers:
    nodes: NodeMetrics
    nodepools: NodePoolMetrics
    pods: PodMetrics
    status: StatusConditionMetrics
    offerings: OfferingMetrics

    # False (DISABLE_CLUSTER_STATE_OBSERVABILITY): only the offering metrics run, which
    # Karpenter writes from its cloud provider's GetInstanceTypes whatever the setting.
    cluster_state: bool = True

    @property
    def reconcilers(self) -> tuple[Reconciler, ...]:
        if not self.cluster_state:
            return (self.offerings,)
        return (self.nodes, self.nodepools, self.pods, self.status, self.offerings)

    @property
    def singletons(self) -> tuple[Reconciler, ...]:
        return (self.nodes, self.offerings) if self.cluster_state else (self.offerings,)


def build_metrics(cloud: CloudProvider, clock: Clock, state: ClusterState,
                  options: ControllerOptions | None = None,
                  cluster: ClusterAPI | None = None,
                  recorder: EventRecorder | None = None) -> MetricsControllers:
    """`cluster`: where CapacityBuffers are read from, with the CapacityBuffer gate on;
    `recorder`: where the status controller's transition and Finalized events go."""
    options = options or ControllerOptions()
    offerings = OfferingMetrics(MeteredCloud(cloud, OfferingMetrics.name), state)
    return MetricsControllers(
        nodes=NodeMetrics(clock, state),
        nodepools=NodePoolMetrics(state, offerings),
        pods=PodMetrics(clock, state),
        status=StatusConditionMetrics(
            clock, state, options.status_metrics_requeue_seconds,
            buffers=cluster if options.capacity_buffer else None, recorder=recorder),
        offerings=offerings,
        cluster_state=options.cluster_state_observability,
    )


@dataclass
class Controllers:
    state: ClusterState
    recorder: EventRecorder
    provisioner: Provisioner
    lifecycle: NodeClaimLifecycle
    termination: NodeTermination
    nodepool_status: NodePoolStatus
    instance_gc: InstanceGarbageCollection
    nodeclaim_gc: NodeClaimGarbageCollection
    extra: list[Reconciler] = field(default_factory=list)
    # Disruption, expiration, interruption, drift conditions (controllers.disruption.wiring).
    disruption: DisruptionControllers | None = None
    # NodeClaim status.lastPodEventTime (nodeclaim.podevents).
    pod_events: PodEvents | None = None
    # NodeClaims compared with their Nodes (nodeclaim.consistency).
    consistency: NodeClaimConsistency | None = None
    # NodePools' registration outcomes (NodeRegistrationHealthy), shared by the lifecycle
    # and the NodePool status controller.
    registration_health: RegistrationHealth | None = None
    # Karpenter's metrics controllers (controllers.metrics).
    metrics: MetricsControllers | None = None
    # Static NodePools' replicas (controllers.static).
    static: tuple[StaticProvisioning, StaticDeprovisioning] | None = None
    # Node auto-repair (controllers.node_health).
    node_health: NodeHealth | None = None
    # NodeOverlays (controllers.nodeoverlay).
    node_overlay: NodeOverlayController | None = None
    # CapacityBuffers (controllers.capacitybuffer).
    capacity_buffer: CapacityBufferController | None = None
    # Instance status health checks (controllers.instance_status), when the cloud reports
    # instance statuses (the AWS provider the controller process runs).
    instance_status: InstanceStatusChecks | None = None

    @property
    def reconcilers(self) -> tuple[Reconciler, ...]:
        return (
            self.provisioner,
            self.lifecycle,
            self.termination,
            self.nodepool_status,
            self.instance_gc,
            self.nodeclaim_gc,
            *((self.pod_events,) if self.pod_events else ()),
            *((self.consistency,) if self.consistency else ()),
            *(self.disruption.reconcilers if self.disruption else ()),
            *(self.metrics.reconcilers if self.metrics else ()),
            *(self.static or ()),
            *((self.node_health,) if self.node_health else ()),
            *((self.node_overlay,) if self.node_overlay else ()),
            *((self.capacity_buffer,) if self.capacity_buffer else ()),
            *((self.instance_status,) if self.instance_status else ()),
            *self.extra,
        )

    @property
    def singletons(self) -> tuple[Reconciler, ...]:
        """Reconcilers to run once with the key "" at start."""
        return (self.instance_gc, self.nodeclaim_gc,
                *((self.node_overlay,) if self.node_overlay else ()),
                *(self.disruption.singletons if self.disruption else ()),
                *((self.instance_status,) if self.instance_status else ()),
                *(self.metrics.singletons if self.metrics else ()))

    def attach(self, driver: Runner, *, start: bool = False) -> None:
        driver.listen(self.state.observe)
        driver.add(*self.reconcilers)
        if start:
            self.kick(driver)

    def kick(self, driver: Runner) -> None:
        for reconciler in self.singletons:
            driver.enqueue(reconciler, "")


def _disruption_options(options: ControllerOptions) -> DisruptionOptions:
    methods = options.disruption.methods
    if options.relax_min_values:
        methods = replace(methods, relax_min_values=True)
    if options.ignore_preferences:
        methods = replace(methods, ignore_preferences=True)
    return replace(options.disruption, methods=methods)


def build_controllers(
    cluster: ClusterAPI,
    cloud: CloudProvider,
    clock: Clock,
    options: ControllerOptions | None = None,
) -> Controllers:
    options = options or ControllerOptions()
    if not options.reserved_capacity:
        cloud = WithoutReservedCapacity(cloud)
    state = ClusterState(clock, nomination_seconds=options.nomination_seconds)
    if options.capacity_buffer:
        state.buffers = BufferPods()
    if options.node_overlay:
        # No NodePool launches before the overlay controller has evaluated it.
        state.overlay_store = OverlayStore()
    recorder = EventRecorder(cluster, clock, reporting_instance=options.reporting_instance)
    registration_health = RegistrationHealth()
    # Requests run outside the state lock (runtime.outside_lock): the API client always
    # (it is safe from any thread), the cloud when it says it is. The recorder keeps the
    # bare client: it writes under a lock of its own.
    raw_cloud = cloud
    cluster = outside_state_lock(cluster, state.lock)
    if safe_from_any_thread(cloud):
        cloud = outside_state_lock(cloud, state.lock)

    def metered(controller: str) -> CloudProvider:
        inner = MeteredCloud(raw_cloud, controller)
        return outside_state_lock(inner, state.lock) if safe_from_any_thread(raw_cloud) \
            else inner

    provisioner = Provisioner(
        cluster, metered(Provisioner.name), clock, state, recorder,
        ProvisionerOptions(options.batch_idle_seconds, options.batch_max_seconds,
                           relax_min_values=options.relax_min_values,
                           solve_deadline=options.solve_deadline,
                           ignore_preferences=options.ignore_preferences),
    )
    lifecycle = NodeClaimLifecycle(
        cluster, metered(NodeClaimLifecycle.name), clock, state, recorder,
        launch_timeout=options.launch_timeout_seconds,
        registration_timeout=options.registration_timeout_seconds,
        registration_health=registration_health,
    )
    disruption = build_disruption(cluster, cloud, clock, state, recorder,
                                  options=_disruption_options(options))
    statuses = cast("InstanceStatusSource | None", getattr(cloud, "instance_statuses", None))
    return Controllers(
        state=state,
        recorder=recorder,
        provisioner=provisioner,
        lifecycle=lifecycle,
        termination=NodeTermination(cluster, metered(NodeTermination.name), clock, state,
                                    recorder),
        nodepool_status=NodePoolStatus(cluster, clock, state, registration_health),
        instance_gc=InstanceGarbageCollection(
            cluster, metered(InstanceGarbageCollection.name), clock, state),
        nodeclaim_gc=NodeClaimGarbageCollection(
            cluster, metered(NodeClaimGarbageCollection.name), clock, state),
        disruption=disruption,
        pod_events=PodEvents(cluster, clock, state),
        consistency=NodeClaimConsistency(cluster, clock, state, recorder),
        registration_health=registration_health,
        metrics=build_metrics(cloud, clock, state, options, cluster, recorder),
        static=(StaticProvisioning(cluster, state), StaticDeprovisioning(cluster, clock, state))
        if options.static_capacity else None,
        node_health=NodeHealth(cluster, metered(NodeHealth.name), clock, state, recorder)
        if options.node_repair and cloud.repair_policies() else None,
        node_overlay=NodeOverlayController(cluster, metered(NodeOverlayController.name), clock,
                                           state) if options.node_overlay else None,
        capacity_buffer=CapacityBufferController(cluster, clock, state)
        if options.capacity_buffer else None,
        instance_status=InstanceStatusChecks(cluster, clock, state, recorder, statuses,
                                             disruption.decisions)
        if statuses is not None else None,
    )
