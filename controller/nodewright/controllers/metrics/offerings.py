"""The AWS provider's metrics controller: for every instance type the NodePools' node
classes can launch, whether each offering (instance type x capacity type x zone) is
available and its estimated hourly price, plus each type's vCPUs and memory (EC2's, before
the VM overhead), every minute.

With the ReservedCapacity gate on, every zone an instance type is offered in also has a
`reserved` availability and price series, 0 unless a reservation there says otherwise (as
Karpenter's controller injects them): a reservation the node class no longer selects, or
one that never existed, reads 0 rather than vanishing.

The series are only rewritten when the cloud answers with different instance types (the
catalogs hand back the same objects while nothing changed), so a long simulation pays
for a catalog walk only when an offering's availability or price moved.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright import metrics
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.controllers.metrics.nodes import value
from nodewright.runtime.reconciler import Result, Watch
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.labels import INSTANCE_MEMORY
from nodewright.state import ClusterState

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 60.0
Dimensions = tuple[str, str, str]
RESERVED = "reserved"  # karpenter.sh/capacity-type of a capacity reservation's offering


class OfferingMetrics:
    name = "metrics.offerings"
    # Reads the NodePools under the state lock; asks the cloud and publishes outside it.
    manages_state_lock = True

    def __init__(self, cloud: CloudProvider, state: ClusterState, *,
                 reserved_capacity: bool = True) -> None:
        self.cloud = cloud
        self.state = state
        self.reserved_capacity = reserved_capacity
        self.store = metrics.Store()
        # The instance types last published (the objects, not their ids: a catalog that
        # is let go frees its types, and a new one may take their ids).
        self._last: tuple[InstanceType, ...] | None = None
        self._prices: dict[Dimensions, float] = {}

    @property
    def watches(self) -> Sequence[Watch]:
        return ()

    def price(self, instance_type: str, capacity_type: str, zone: str) -> float:
        """The last price estimate seen for this offering, 0 when unknown."""
        return self._prices.get((instance_type, capacity_type, zone), 0.0)

    def reconcile(self, key: str) -> Result:
        types: list[InstanceType] = []
        for name, node_class in self._node_classes():
            try:
                types.extend(self.cloud.get_instance_types(node_class))
            except CloudProviderError as error:
                # One NodePool that cannot be resolved costs only its own series.
                log.warning("instance types of NodePool %s: %s", name, error)
        if self._last is None or not _same_objects(self._last, types):
            self._last = tuple(types)
            self._publish(types)
        return Result(requeue_after=INTERVAL_SECONDS)

    def _node_classes(self) -> list[tuple[str, EC2NodeClass]]:
        """Each NodePool's name with its node class, where both can be read."""
        found = []
        with self.state.lock:
            for pool in self.state.nodepools():
                name = str((pool.get("metadata") or {}).get("name") or "")
                parsed = self.state.nodepool_model(name)
                if parsed is None or parsed.model is None:
                    continue
                node_class = self.state.node_class_model(parsed.model.spec.template.spec
                                                         .node_class_ref.name)
                if node_class is None or node_class.model is None:
                    continue
                found.append((name, node_class.model))
        return found

    def _publish(self, types: Sequence[InstanceType]) -> None:
        built = _built(tuple(types), self.reserved_capacity)
        self._prices = built.prices
        self.store.update_prepared("", built.series, _changed_since_written(built))
        _WRITTEN[:] = [built, _gauge_marks()]


def _same_objects(one: Sequence[object], other: Sequence[object]) -> bool:
    """The same objects in the same order."""
    return len(one) == len(other) and all(map(operator.is_, one, other))


@dataclass(frozen=True)
class Built:
    """A catalog's series and prices; `parts` its instance types' own series (None when
    two types share a name, and so series)."""

    series: metrics.Prepared
    prices: dict[Dimensions, float]
    parts: tuple[metrics.Prepared, ...] | None = None


# The series of the last few catalogs published, by the identity of their instance types
# (kept with them, so the ids stay theirs): every controller process the tests and the
# simulator start publishes the same cached catalog again, some 27,000 series each time.
_BUILT: dict[tuple[bool, tuple[int, ...]], tuple[tuple[InstanceType, ...], Built]] = {}
_BUILT_KEPT = 4
# Each instance type's own series, by identity as above: when a catalog changes, the cloud
# hands back new objects for the few types that changed and the same ones for the rest.
_PER_TYPE: dict[tuple[bool, int], tuple[InstanceType, Built]] = {}
_PER_TYPE_KEPT = 8_000
# The catalog whose series the gauges hold, as the last publish (by any controller process
# in this Python process) wrote them, with `_gauge_marks` then. Only this module writes
# these gauges; clearing one (as tests do) gives it a new dict, which the marks notice.
_WRITTEN: list[object] = []
_GAUGES = (metrics.INSTANCE_TYPE_CPU_CORES, metrics.INSTANCE_TYPE_MEMORY_BYTES,
           metrics.OFFERING_AVAILABLE, metrics.OFFERING_PRICE_ESTIMATE)


def _gauge_marks() -> tuple[tuple[object, int], ...]:
    """Each gauge's dict of series (kept, so no new one can take its id) and its size."""
    return tuple((gauge._metrics, len(gauge._metrics)) for gauge in _GAUGES)


def _same_marks(marks: object) -> bool:
    return isinstance(marks, tuple) and len(marks) == len(_GAUGES) and all(
        series is gauge._metrics and size == len(series)
        for (series, size), gauge in zip(marks, _GAUGES, strict=True))


def _changed_since_written(built: Built) -> list[metrics.Sample3] | None:
    """The samples of `built` the gauges may not hold already (None: any of them)."""
    if len(_WRITTEN) != 2 or not _same_marks(_WRITTEN[1]):
        return None
    written = _WRITTEN[0]
    assert isinstance(written, Built)
    if written is built:
        return []
    if written.parts is None or built.parts is None:
        return None
    kept = {id(part) for part in written.parts}
    return [entry for part in built.parts if id(part) not in kept for entry in part.entries]


def _built(types: tuple[InstanceType, ...], reserved_capacity: bool) -> Built:
    key = (reserved_capacity, tuple(id(it) for it in types))
    known = _BUILT.get(key)
    if known is not None:
        return known[1]
    if len({it.name for it in types}) == len(types):
        # No two types share a name, so none share a series: the catalog's series are
        # its types' own, side by side.
        own = [_type_series(it, reserved_capacity) for it in types]
        parts = tuple(built.series for built in own)
        entries = tuple(entry for part in parts for entry in part.entries)
        prices: dict[Dimensions, float] = {}
        for built in own:
            prices.update(built.prices)
        built = Built(metrics.Prepared(entries, frozenset(
            (gauge, labels) for gauge, labels, _ in entries)), prices, parts)
    else:
        built = _series(types, reserved_capacity)
    if len(_BUILT) >= _BUILT_KEPT:
        _BUILT.pop(next(iter(_BUILT)), None)
    _BUILT[key] = (types, built)
    return built


def _type_series(instance_type: InstanceType, reserved_capacity: bool) -> Built:
    key = (reserved_capacity, id(instance_type))
    known = _PER_TYPE.get(key)
    if known is not None:
        return known[1]
    built = _series((instance_type,), reserved_capacity)
    if len(_PER_TYPE) >= _PER_TYPE_KEPT:
        _PER_TYPE.clear()
    _PER_TYPE[key] = (instance_type, built)
    return built


def _series(types: Sequence[InstanceType], reserved_capacity: bool) -> Built:
    available: dict[Dimensions, bool] = {}
    prices: dict[Dimensions, float] = {}
    series: list[metrics.Sample] = []
    for it in types:
        for offering in it.offerings:
            dims = (it.name, offering.capacity_type, offering.zone)
            available[dims] = available.get(dims, False) or offering.available
            prices[dims] = offering.price
        if reserved_capacity:
            for zone in {offering.zone for offering in it.offerings}:
                dims = (it.name, RESERVED, zone)
                if dims not in available:
                    available[dims] = False
                    prices[dims] = 0.0
        series.append((metrics.INSTANCE_TYPE_CPU_CORES, {"instance_type": it.name},
                       value(it.capacity.get("cpu", 0))))
        series.append((metrics.INSTANCE_TYPE_MEMORY_BYTES, {"instance_type": it.name},
                       _raw_memory_bytes(it)))
    for dims, is_available in available.items():
        labels = dict(zip(metrics.OFFERING_LABELS, dims, strict=True))
        series.append((metrics.OFFERING_AVAILABLE, labels, 1.0 if is_available else 0.0))
        series.append((metrics.OFFERING_PRICE_ESTIMATE, labels, prices[dims]))
    return Built(metrics.prepare(series), prices)


def _raw_memory_bytes(instance_type: InstanceType) -> float:
    """The type's memory as EC2 describes it (SizeInMiB x 2^20, Karpenter's gauge), not the
    capacity planned with (less VM_MEMORY_OVERHEAD_PERCENT); a type without the
    karpenter.k8s.aws/instance-memory label reports its capacity."""
    mib = instance_type.labels.get(INSTANCE_MEMORY, "")
    if mib.isdigit():
        return float(int(mib) * 2**20)
    return value(instance_type.capacity.get("memory", 0))
