"""A scenario once read and checked: the world to build and the steps to run.

The file format is specified in the shared design (scenarios.md) and documented for
users in docs/scenarios.md. `nodewright.sim.loading` builds these objects from a file and
reports every mistake; the runner only ever sees a valid scenario.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from nodewright.api.manifests import Document
from nodewright.cloud.sim.reservations import SimReservation

DEFAULT_REGION = "us-east-1"
DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday, midnight
DEFAULT_SETTLE_TIMEOUT = 30 * 60.0

DISRUPTION_REASONS = ("Empty", "Underutilized", "Drifted", "Expired", "Interrupted")
INTERRUPTION_KINDS = ("spot", "scheduled", "stop", "terminate", "rebalance", "reservation")
CAPACITY_TYPES = ("on-demand", "spot")
# What a node can be: also launched into a capacity reservation (`capacityReservations`).
NODE_CAPACITY_TYPES = (*CAPACITY_TYPES, "reserved")
SCALABLE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "NodePool")
MANIFEST_KINDS = (
    "NodePool", "EC2NodeClass", "Deployment", "ReplicaSet", "StatefulSet", "Job", "Pod",
    "DaemonSet", "PodDisruptionBudget", "Namespace", "Node", "NodeOverlay",
    "CapacityBuffer", "PodTemplate",
    "StorageClass", "PersistentVolumeClaim", "PersistentVolume", "RuntimeClass",
)
CLUSTER_SCOPED_KINDS = ("NodePool", "EC2NodeClass", "Namespace", "Node", "NodeClaim",
                        "NodeOverlay", "StorageClass", "PersistentVolume", "RuntimeClass")


@dataclass(frozen=True)
class Settings:
    """Controller options and the simulated cloud's delays, in seconds."""

    batch_idle_duration: float = 1.0
    batch_max_duration: float = 10.0
    launch_delay: float = 20.0
    registration_delay: float = 30.0
    pod_start_delay: float = 2.0
    termination_delay: float = 30.0
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # MIN_VALUES_POLICY: Strict or BestEffort.
    min_values_policy: str = "Strict"
    # The raw `settings` mapping, for the keys other parts read themselves (the simulated
    # EC2's optional knobs such as startupTaintDelay).
    raw: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CapacityRule:
    """How many more instances of the matching offerings EC2 will launch."""

    instance_type: str
    zone: str | None
    capacity_type: str | None
    available: int


@dataclass(frozen=True)
class PriceRule:
    instance_type: str
    capacity_type: str
    zone: str | None
    price: float


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""  # "" for cluster-scoped kinds

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"


@dataclass(frozen=True)
class NodeSelection:
    """Which nodes an interruption hits: by name, or by any of the other fields."""

    name: str | None = None
    node_pool: str | None = None
    instance_type: str | None = None
    capacity_type: str | None = None
    zone: str | None = None

    def describe(self) -> str:
        parts = [
            f"{label}={value}" for label, value in (
                ("name", self.name), ("nodePool", self.node_pool),
                ("instanceType", self.instance_type), ("capacityType", self.capacity_type),
                ("zone", self.zone),
            ) if value is not None
        ]
        return ", ".join(parts) or "any node"


@dataclass(frozen=True)
class Expectation:
    """The checks of one `expect` step; None means not checked."""

    nodes: int | None = None
    instance_types: Mapping[str, int] | None = None
    capacity_types: Mapping[str, int] | None = None
    zones_distinct: int | None = None
    zones: Mapping[str, int] | None = None
    node_pools: Mapping[str, int] | None = None
    pending_pods: int | None = None
    hourly_cost_min: float | None = None
    hourly_cost_max: float | None = None
    disruptions: Mapping[str, int] | None = None
    launched: int | None = None
    pods_evicted_max: int | None = None
    violations: int | None = None


@dataclass(frozen=True)
class Step:
    number: int  # 1-based, as reports name steps
    line: int


@dataclass(frozen=True)
class ScaleStep(Step):
    target: ObjectRef
    replicas: int


@dataclass(frozen=True)
class ApplyStep(Step):
    documents: tuple[Document, ...]


@dataclass(frozen=True)
class DeleteStep(Step):
    target: ObjectRef


@dataclass(frozen=True)
class WaitStep(Step):
    seconds: float


@dataclass(frozen=True)
class SettleStep(Step):
    timeout: float = DEFAULT_SETTLE_TIMEOUT


@dataclass(frozen=True)
class InterruptStep(Step):
    select: NodeSelection
    kind: str
    count: int = 1


@dataclass(frozen=True)
class ExpectStep(Step):
    expectation: Expectation


@dataclass(frozen=True)
class FleetClaim:
    """A NodeClaim already running when the scenario starts (`nodeClaims`): its instance
    and Node exist, launched `age` seconds before the start with the hashes given."""

    name: str
    node_pool: str
    instance_type: str
    zone: str
    capacity_type: str = "on-demand"
    age: float = 0.0
    node_name: str | None = None
    node_pool_hash: str | None = None
    node_class_hash: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BoundPods:
    """`count` pods of a workload (or one Pod of the manifests) already running on a node
    when the scenario starts (`boundPods`)."""

    node: str  # a fleet NodeClaim's name or node name, or a Node of the manifests
    owner: ObjectRef
    count: int = 1
    line: int = 0


AnyStep = ScaleStep | ApplyStep | DeleteStep | WaitStep | SettleStep | InterruptStep | ExpectStep


@dataclass(frozen=True)
class Scenario:
    path: str
    name: str
    description: str
    region: str
    zones: tuple[str, ...]
    seed: int
    start: datetime
    manifests: tuple[Document, ...]
    settings: Settings
    capacity: tuple[CapacityRule, ...]
    prices: tuple[PriceRule, ...]
    steps: tuple[AnyStep, ...]
    reservations: tuple[SimReservation, ...] = ()
    # The running fleet the scenario starts from (optional keys nodeClaims and boundPods).
    node_claims: tuple[FleetClaim, ...] = ()
    bound_pods: tuple[BoundPods, ...] = ()
