"""What the controllers are built with (`ControllerOptions`), and the feature gates mapped to
them, once: `with_gates(options, gates)` is how both the controller process (its
FEATURE_GATES) and the simulator (a scenario's `featureGates`) turn gates into options.
A gated controller's spec names its gate (`controllers.registry`); the gate's option is
in `GATE_OPTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.metrics.status import REQUEUE_SECONDS as STATUS_REQUEUE_SECONDS
from nodewright.controllers.nodeclaim import (
    LAUNCH_TIMEOUT_SECONDS,
    REGISTRATION_TIMEOUT_SECONDS,
)
from nodewright.controllers.provisioning.batcher import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_SECONDS


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
    # The NodeRepair feature gate: unhealthy nodes are replaced (controllers.node.health).
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
    # CLUSTER_CA_BUNDLE, else the CA the controller trusts the API server by: the
    # EC2NodeClass drift hash covers it (Karpenter's hash controller's caBundle).
    cluster_ca_bundle: str | None = None

    @property
    def nomination_seconds(self) -> float:
        """Karpenter: max(2 x batchMaxDuration, 10 s)."""
        return max(2 * self.batch_max_seconds, 10.0)


@dataclass(frozen=True)
class GateOption:
    """Where a feature gate lives in `ControllerOptions`."""

    get: Callable[[ControllerOptions], bool]
    set: Callable[[ControllerOptions, bool], ControllerOptions]


def _spot_to_spot(options: ControllerOptions, on: bool) -> ControllerOptions:
    methods = replace(options.disruption.methods, spot_to_spot=on)
    return replace(options, disruption=replace(options.disruption, methods=methods))


# The feature gates Nodewright implements, each with the option it sets. Karpenter's other
# gates are accepted and have no effect.
GATE_OPTIONS: Mapping[str, GateOption] = {
    "SpotToSpotConsolidation": GateOption(lambda o: o.disruption.methods.spot_to_spot,
                                          _spot_to_spot),
    "StaticCapacity": GateOption(lambda o: o.static_capacity,
                                 lambda o, on: replace(o, static_capacity=on)),
    "NodeRepair": GateOption(lambda o: o.node_repair, lambda o, on: replace(o, node_repair=on)),
    "NodeOverlay": GateOption(lambda o: o.node_overlay,
                              lambda o, on: replace(o, node_overlay=on)),
    "CapacityBuffer": GateOption(lambda o: o.capacity_buffer,
                                 lambda o, on: replace(o, capacity_buffer=on)),
    "ReservedCapacity": GateOption(lambda o: o.reserved_capacity,
                                   lambda o, on: replace(o, reserved_capacity=on)),
}


def with_gates(options: ControllerOptions, gates: Mapping[str, bool]) -> ControllerOptions:
    """`options` as the feature gates set them (a gate not given keeps the option as is;
    a gate Nodewright does not implement changes nothing)."""
    for gate, on in sorted(gates.items()):
        if gate in GATE_OPTIONS:
            options = GATE_OPTIONS[gate].set(options, bool(on))
    return options


def gate_enabled(options: ControllerOptions, gate: str) -> bool:
    """Whether `gate` is on in `options`."""
    return GATE_OPTIONS[gate].get(options)


def disruption_options(options: ControllerOptions) -> DisruptionOptions:
    methods = options.disruption.methods
    if options.relax_min_values:
        methods = replace(methods, relax_min_values=True)
    if options.ignore_preferences:
        methods = replace(methods, ignore_preferences=True)
    return replace(options.disruption, methods=methods)
