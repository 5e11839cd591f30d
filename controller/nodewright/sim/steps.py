"""Reading the `steps` of a scenario, checking each against the objects that exist when it
runs (manifests, then what earlier steps applied and deleted)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodewright.api.manifests import Document
from nodewright.api.problems import FieldPath
from nodewright.scheduling.pods import MAX_REPLICAS
from nodewright.sim import manifests
from nodewright.sim.reader import FieldReader, describe, unknown_key_message
from nodewright.sim.scenario import (
    CLUSTER_SCOPED_KINDS,
    DEFAULT_SETTLE_TIMEOUT,
    DISRUPTION_REASONS,
    INTERRUPTION_KINDS,
    MANIFEST_KINDS,
    NODE_CAPACITY_TYPES,
    SCALABLE_KINDS,
    AnyStep,
    ApplyStep,
    DeleteStep,
    Expectation,
    ExpectStep,
    InterruptStep,
    NodeSelection,
    ObjectRef,
    ScaleStep,
    SettleStep,
    WaitStep,
)

STEP_KEYS = ("scale", "apply", "delete", "wait", "settle", "interrupt", "expect")
EXPECT_KEYS = (
    "nodes", "instanceTypes", "capacityTypes", "zones", "nodePools", "pendingPods",
    "hourlyCost", "disruptions", "launched", "podsEvicted", "violations",
)
SELECT_KEYS = ("name", "nodePool", "instanceType", "capacityType", "zone")
# Objects the controllers and workload controllers name at run time: a delete of one that
# no manifest defines can only be checked when it runs.
RUNTIME_NAMED_KINDS = ("Pod", "Node", "NodeClaim")
DELETABLE_KINDS = (*MANIFEST_KINDS, "NodeClaim")


@dataclass
class World:
    """What the steps may refer to: the objects at this point, and the catalog."""

    objects: dict[ObjectRef, Document]
    instance_types: Collection[str]
    zones: Collection[str]
    node_pools_ever: set[str] = field(default_factory=set)

    def node_pools(self) -> set[str]:
        return {ref.name for ref in self.objects if ref.kind == "NodePool"}

    def node_classes(self) -> set[str]:
        return {ref.name for ref in self.objects if ref.kind == "EC2NodeClass"}

    def add(self, documents: list[Document]) -> None:
        for document in manifests.simulated(documents):
            if document.name:
                self.objects[manifests.object_ref(document)] = document
        self.node_pools_ever |= self.node_pools()


class StepReader:
    def __init__(self, reader: FieldReader, base: Path, world: World) -> None:
        self.reader = reader
        self.base = base
        self.world = world

    def read_all(self, value: object, path: FieldPath) -> list[AnyStep]:
        items = self.reader.list_of(value, path, "steps")
        if items is None:
            return []
        steps: list[AnyStep] = []
        for index, item in enumerate(items):
            step = self._read(item, (*path, index), index + 1)
            if step is not None:
                steps.append(step)
        return steps

    def _read(self, item: object, path: FieldPath, number: int) -> AnyStep | None:
        reader = self.reader
        if not isinstance(item, dict):
            reader.error(path, f"a step is a mapping with one of: {', '.join(STEP_KEYS)}; got "
                               f"{describe(item)}")
            return None
        keys = [str(key) for key in item]
        if not keys:
            reader.error(path, f"an empty step; give one of: {', '.join(STEP_KEYS)}")
            return None
        unknown = [key for key in keys if key not in STEP_KEYS]
        for key in unknown:
            reader.error((*path, key), unknown_key_message(key, STEP_KEYS, "a step"))
        if unknown:
            return None
        if len(keys) > 1:
            reader.error((*path, keys[1]), f"a step has exactly one key, this one has "
                                           f"{' and '.join(map(repr, keys))}; write one step "
                                           "for each")
            return None
        key = keys[0]
        line = reader.document.line_of(path)
        value = item[key]
        where = (*path, key)
        if key == "scale":
            return self._scale(value, where, number, line)
        if key == "apply":
            return self._apply(value, where, number, line)
        if key == "delete":
            return self._delete(value, where, number, line)
        if key == "wait":
            seconds = reader.duration(value, where, "wait")
            return None if seconds is None else WaitStep(number, line, seconds)
        if key == "settle":
            return self._settle(value, where, number, line)
        if key == "interrupt":
            return self._interrupt(value, where, number, line)
        expectation = ExpectationReader(reader, self.world).read(value, where)
        return None if expectation is None else ExpectStep(number, line, expectation)

    def _scale(self, value: object, path: FieldPath, number: int, line: int) -> ScaleStep | None:
        reader = self.reader
        body = reader.mapping(value, path, "scale", ("kind", "name", "namespace", "replicas"),
                              ("name", "replicas"))
        if body is None:
            return None
        kind = reader.string(body.get("kind", "Deployment"), (*path, "kind"), "kind",
                             SCALABLE_KINDS)
        name = reader.string(body.get("name"), (*path, "name"), "name") if "name" in body \
            else None
        namespace = reader.string(body.get("namespace", "default"), (*path, "namespace"),
                                  "namespace")
        replicas = reader.integer(body.get("replicas"), (*path, "replicas"), "replicas") \
            if "replicas" in body else None
        if replicas is not None and replicas > MAX_REPLICAS:
            reader.error((*path, "replicas"), f"{replicas} replicas is more than the "
                                              f"{MAX_REPLICAS} the simulator takes")
            replicas = None
        if kind is None or name is None or namespace is None or replicas is None:
            return None
        target = ObjectRef(kind, name, "" if kind in CLUSTER_SCOPED_KINDS else namespace)
        if target not in self.world.objects:
            reader.error((*path, "name"), f"no {target} at this step{self._known(kind)}")
            return None
        return ScaleStep(number, line, target, replicas)

    def _apply(self, value: object, path: FieldPath, number: int, line: int) -> ApplyStep | None:
        before = len(self.reader.problems)
        documents = manifests.read_items(self.reader, value, path, self.base, "apply")
        problems = manifests.check_all(documents) + manifests.duplicates(documents)
        self.reader.problems.extend(problems)
        self.world.add(documents)
        self.reader.problems.extend(manifests.node_class_references(
            [d for d in documents if not _has_errors(problems, d)], self.world.node_classes()
        ))
        failed = any(p.severity == "error" for p in self.reader.problems[before:])
        return None if failed else ApplyStep(number, line, tuple(manifests.simulated(documents)))

    def _delete(self, value: object, path: FieldPath, number: int, line: int) -> DeleteStep | None:
        reader = self.reader
        body = reader.mapping(value, path, "delete", ("kind", "name", "namespace"),
                              ("kind", "name"))
        if body is None or "kind" not in body or "name" not in body:
            return None
        kind = reader.string(body["kind"], (*path, "kind"), "kind", DELETABLE_KINDS)
        name = reader.string(body["name"], (*path, "name"), "name")
        if kind is None or name is None:
            return None
        namespace = ""
        if kind in CLUSTER_SCOPED_KINDS:
            if "namespace" in body:
                reader.error((*path, "namespace"), f"{kind} is cluster-scoped: leave out "
                                                   "namespace")
                return None
        else:
            given = reader.string(body.get("namespace", "default"), (*path, "namespace"),
                                  "namespace")
            if given is None:
                return None
            namespace = given
        target = ObjectRef(kind, name, namespace)
        if target in self.world.objects:
            del self.world.objects[target]
        elif kind not in RUNTIME_NAMED_KINDS:
            reader.error((*path, "name"), f"no {target} at this step{self._known(kind)}")
            return None
        return DeleteStep(number, line, target)

    def _settle(self, value: object, path: FieldPath, number: int, line: int) -> SettleStep | None:
        if value is None:
            return SettleStep(number, line, DEFAULT_SETTLE_TIMEOUT)
        if isinstance(value, str):  # `settle: 10m`, a shorthand for the timeout
            seconds = self.reader.duration(value, path, "settle timeout")
            return None if seconds is None else SettleStep(number, line, seconds)
        body = self.reader.mapping(value, path, "settle", ("timeout",))
        if body is None:
            return None
        if "timeout" not in body:
            return SettleStep(number, line, DEFAULT_SETTLE_TIMEOUT)
        seconds = self.reader.duration(body["timeout"], (*path, "timeout"), "timeout")
        if seconds is not None and seconds <= 0:
            self.reader.error((*path, "timeout"), "timeout must be longer than 0s")
            return None
        return None if seconds is None else SettleStep(number, line, seconds)

    def _interrupt(
        self, value: object, path: FieldPath, number: int, line: int
    ) -> InterruptStep | None:
        reader = self.reader
        body = reader.mapping(value, path, "interrupt", ("select", "kind", "count"), ("kind",))
        if body is None or "kind" not in body:
            return None
        kind = reader.string(body["kind"], (*path, "kind"), "interruption kind",
                             INTERRUPTION_KINDS)
        count = reader.integer(body.get("count", 1), (*path, "count"), "count", minimum=1)
        select = self._select(body.get("select", {}), (*path, "select"))
        if kind is None or count is None or select is None:
            return None
        return InterruptStep(number, line, select, kind, count)

    def _select(self, value: object, path: FieldPath) -> NodeSelection | None:
        reader = self.reader
        body = reader.mapping(value, path, "select", SELECT_KEYS)
        if body is None:
            return None
        good = not any(key not in SELECT_KEYS for key in body)
        if "name" in body and len(body) > 1:
            reader.error(path, "select a node either by name or by nodePool, instanceType, "
                               "capacityType and zone, not both")
            good = False
        text = {key: reader.string(body[key], (*path, key), key) for key in body
                if key in SELECT_KEYS}
        if any(value is None for value in text.values()):
            return None
        pool, instance_type = text.get("nodePool"), text.get("instanceType")
        capacity_type, zone = text.get("capacityType"), text.get("zone")
        if pool is not None and pool not in self.world.node_pools_ever:
            reader.error((*path, "nodePool"), _no_pool(pool, self.world.node_pools_ever))
            good = False
        if instance_type is not None and instance_type not in self.world.instance_types:
            reader.error((*path, "instanceType"), _no_type(instance_type))
            good = False
        if capacity_type is not None and capacity_type not in NODE_CAPACITY_TYPES:
            reader.error((*path, "capacityType"), _no_capacity_type(capacity_type))
            good = False
        if zone is not None and zone not in self.world.zones:
            reader.error((*path, "zone"), _no_zone(zone, self.world.zones))
            good = False
        if not good:
            return None
        return NodeSelection(text.get("name"), pool, instance_type, capacity_type, zone)

    def _known(self, kind: str) -> str:
        names = sorted(str(ref) for ref in self.world.objects if ref.kind == kind)
        return f" (known: {', '.join(names)})" if names else f" (no {kind} is defined)"


class ExpectationReader:
    def __init__(self, reader: FieldReader, world: World) -> None:
        self.reader = reader
        self.world = world

    def read(self, value: object, path: FieldPath) -> Expectation | None:
        reader = self.reader
        if value is None:
            value = {}
        body = reader.mapping(value, path, "expect", EXPECT_KEYS)
        if body is None:
            return None
        before = len(reader.problems)
        checks: dict[str, Any] = {}
        for key in ("nodes", "pendingPods", "launched", "violations"):
            if key in body:
                checks[key] = reader.integer(body[key], (*path, key), key)
        if "instanceTypes" in body:
            checks["instanceTypes"] = reader.counts(
                body["instanceTypes"], (*path, "instanceTypes"), "instanceTypes",
                lambda name: None if name in self.world.instance_types else _no_type(name))
        if "capacityTypes" in body:
            checks["capacityTypes"] = reader.counts(
                body["capacityTypes"], (*path, "capacityTypes"), "capacityTypes",
                lambda name: None if name in NODE_CAPACITY_TYPES else _no_capacity_type(name))
        if "nodePools" in body:
            pools = self.world.node_pools_ever
            checks["nodePools"] = reader.counts(
                body["nodePools"], (*path, "nodePools"), "nodePools",
                lambda name: None if name in pools else _no_pool(name, pools))
        if "disruptions" in body:
            checks["disruptions"] = reader.counts(
                body["disruptions"], (*path, "disruptions"), "disruptions",
                lambda name: None if name in DISRUPTION_REASONS else (
                    f"{name!r} is not a disruption reason (reasons: "
                    f"{', '.join(DISRUPTION_REASONS)})"))
        zones_distinct, zones = self._zones(body, path)
        cost_min, cost_max = self._bounds(body, path)
        evicted_max = self._evicted(body, path)
        if any(p.severity == "error" for p in reader.problems[before:]):
            return None
        if any(key not in EXPECT_KEYS for key in body):
            return None
        return Expectation(
            nodes=checks.get("nodes"),
            instance_types=checks.get("instanceTypes"),
            capacity_types=checks.get("capacityTypes"),
            zones_distinct=zones_distinct,
            zones=zones,
            node_pools=checks.get("nodePools"),
            pending_pods=checks.get("pendingPods"),
            hourly_cost_min=cost_min,
            hourly_cost_max=cost_max,
            disruptions=checks.get("disruptions"),
            launched=checks.get("launched"),
            pods_evicted_max=evicted_max,
            violations=checks.get("violations"),
        )

    def _zones(
        self, body: Mapping[str, Any], path: FieldPath
    ) -> tuple[int | None, dict[str, int] | None]:
        if "zones" not in body:
            return None, None
        value, where = body["zones"], (*path, "zones")
        if isinstance(value, dict) and "distinct" in value:
            if len(value) > 1:
                self.reader.error(where, "zones is either {distinct: N} or a map of zone to "
                                         "count, not both")
                return None, None
            return self.reader.integer(value["distinct"], (*where, "distinct"), "distinct"), None
        zones = self.world.zones
        return None, self.reader.counts(
            value, where, "zones",
            lambda name: None if name in zones else _no_zone(name, zones))

    def _bounds(self, body: Mapping[str, Any], path: FieldPath) -> tuple[float | None, ...]:
        if "hourlyCost" not in body:
            return None, None
        where = (*path, "hourlyCost")
        bounds = self.reader.mapping(body["hourlyCost"], where, "hourlyCost", ("min", "max"))
        if bounds is None:
            return None, None
        if not bounds:
            self.reader.error(where, "hourlyCost needs min, max or both")
        low = self.reader.number(bounds["min"], (*where, "min"), "min") if "min" in bounds \
            else None
        high = self.reader.number(bounds["max"], (*where, "max"), "max") if "max" in bounds \
            else None
        if low is not None and high is not None and low > high:
            self.reader.error(where, f"min ({low}) is more than max ({high})")
        return low, high

    def _evicted(self, body: Mapping[str, Any], path: FieldPath) -> int | None:
        if "podsEvicted" not in body:
            return None
        where = (*path, "podsEvicted")
        bounds = self.reader.mapping(body["podsEvicted"], where, "podsEvicted", ("max",),
                                     ("max",))
        if bounds is None or "max" not in bounds:
            return None
        return self.reader.integer(bounds["max"], (*where, "max"), "max")


def _has_errors(problems: list[Any], document: Document) -> bool:
    return any(p.severity == "error" and p.file == document.path and
               document.line <= p.line <= max(document.end_line, document.line)
               for p in problems)


def _no_pool(name: str, pools: Collection[str]) -> str:
    known = ", ".join(sorted(pools)) or "none"
    return f"no NodePool {name!r} exists at this step (NodePools: {known})"


def _no_type(name: str) -> str:
    return f"instance type {name!r} is not in the region's catalog"


def _no_capacity_type(name: str) -> str:
    return f"capacity type {name!r} is not one of: {', '.join(NODE_CAPACITY_TYPES)}"


def _no_zone(name: str, zones: Collection[str]) -> str:
    return f"zone {name!r} is not one of the scenario's zones ({', '.join(sorted(zones))})"

