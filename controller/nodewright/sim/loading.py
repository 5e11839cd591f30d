"""Reading a scenario file into a `Scenario`, or every mistake in it.

`load_scenario` never raises for bad input: it returns the problems, each located at the
line of the field (`FILE:LINE: path: message`), and the scenario only when there are
none. Manifests are checked with `nodewright validate`'s rules; steps are checked against
the objects that exist when they run and against the region's catalog.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from nodewright.api.manifests import Document
from nodewright.api.problems import FieldPath, Problem
from nodewright.cloud.sim.reservations import SimReservation
from nodewright.scheduling import offline_data
from nodewright.scheduling.catalog import offline_catalog
from nodewright.sim import manifests
from nodewright.sim.fleet_loading import read_bound_pods, read_node_claims
from nodewright.sim.reader import FieldReader, describe
from nodewright.sim.scenario import (
    CAPACITY_TYPES,
    DEFAULT_REGION,
    DEFAULT_START,
    CapacityRule,
    PriceRule,
    Scenario,
    Settings,
)
from nodewright.sim.steps import StepReader, World
from nodewright.sim.yamlfile import read_single_document

TOP_KEYS = (
    "name", "description", "region", "zones", "seed", "start", "manifests", "settings",
    "capacity", "prices", "capacityReservations", "steps", "nodeClaims", "boundPods",
)
DURATION_SETTINGS = {
    "batchIdleDuration": "batch_idle_duration",
    "batchMaxDuration": "batch_max_duration",
    "launchDelay": "launch_delay",
    "registrationDelay": "registration_delay",
    "podStartDelay": "pod_start_delay",
    "terminationDelay": "termination_delay",
}
# Optional knobs of the simulated EC2 beyond the spec's (nodewright.cloud.sim.settings).
EXTRA_DURATION_SETTINGS = ("spotInterruptionNotice", "nodeMonitorGracePeriod",
                           "volumeDetachDelay")
SETTINGS_KEYS = (
    *DURATION_SETTINGS, "featureGates", *EXTRA_DURATION_SETTINGS, "startupTaintDelay",
    "kubernetesVersion", "minValuesPolicy",
)
MIN_VALUES_POLICIES = ("Strict", "BestEffort")
FEATURE_GATES = (
    "NodeRepair", "ReservedCapacity", "SpotToSpotConsolidation", "NodeOverlay",
    "StaticCapacity", "CapacityBuffer",
)
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_START_EXAMPLE = "2026-01-05T00:00:00Z"


def load_scenario(path: str | Path) -> tuple[Scenario | None, list[Problem]]:
    file = Path(path)
    shown = manifests.display_path(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(shown, 0, "", "", "", "no such scenario file")]
    except (OSError, UnicodeDecodeError) as error:
        return None, [Problem(shown, 0, "", "", "", f"cannot read the scenario: {error}")]
    document, problems = read_single_document(text, shown)
    if document is None:
        return None, problems
    reader = FieldReader(document)
    try:
        scenario = _read(reader, file.parent)
    except RecursionError:
        return None, [Problem(shown, 0, "", "", "", "the scenario is nested too deeply to "
                                                    "read (do YAML aliases refer to themselves?)")]
    found = reader.problems
    if any(problem.severity == "error" for problem in found):
        return None, found
    return scenario, found


def _read(reader: FieldReader, base: Path) -> Scenario | None:
    body = reader.mapping(reader.document.body, (), "the scenario", TOP_KEYS,
                          ("name", "manifests", "steps"))
    if body is None:
        return None
    name = reader.string(body.get("name"), ("name",), "name") if "name" in body else None
    description = body.get("description", "")
    if not isinstance(description, str):
        reader.error(("description",), f"description must be text, got {describe(description)}")
    region, zones = _region_and_zones(reader, body)
    seed = reader.integer(body.get("seed", 0), ("seed",), "seed")
    start = _start(reader, body["start"]) if "start" in body else DEFAULT_START
    settings = _settings(reader, body.get("settings", {}))
    instance_types: set[str] = set()
    if region is not None and zones is not None:
        instance_types = {it.name for it in offline_catalog(region, zones)}
    documents = _manifests(reader, body, base)
    world = World({}, instance_types, zones or ())
    world.add(documents)
    capacity = _capacity(reader, body.get("capacity", []), world)
    prices = _prices(reader, body.get("prices", []), world)
    reservations = _reservations(reader, body.get("capacityReservations", []), world, start)
    node_claims = read_node_claims(reader, body.get("nodeClaims", []), world)
    bound_pods = read_bound_pods(reader, body.get("boundPods", []), world, node_claims or ())
    steps = StepReader(reader, base, world).read_all(body.get("steps"), ("steps",)) \
        if "steps" in body else []
    if (node_claims is None or bound_pods is None or name is None or region is None
            or zones is None or seed is None or start is None
            or settings is None or capacity is None or prices is None or reservations is None
            or reader.has_errors()):
        return None
    return Scenario(
        path=reader.document.path, name=name, description=str(description), region=region,
        zones=zones, seed=seed, start=start, manifests=tuple(manifests.simulated(documents)),
        settings=settings,
        capacity=capacity, prices=prices, steps=tuple(steps), reservations=reservations,
        node_claims=node_claims, bound_pods=bound_pods,
    )


def _region_and_zones(
    reader: FieldReader, body: dict[str, Any]
) -> tuple[str | None, tuple[str, ...] | None]:
    region = reader.string(body.get("region", DEFAULT_REGION), ("region",), "region")
    if region is None:
        return None, None
    if region not in offline_data.regions():
        reader.error(("region",), f"region {region!r} is not in the catalog (regions: "
                                  f"{', '.join(offline_data.regions())})")
        return None, None
    raw = body.get("zones")
    if raw is None:
        return region, offline_data.resolve_zones(region, None)
    items = reader.list_of(raw, ("zones",), "zones")
    if items is None:
        return region, None
    if not items:
        reader.error(("zones",), "zones is empty; leave it out for the region's first three")
        return region, None
    names: list[str] = []
    for index, item in enumerate(items):
        zone = reader.string(item, ("zones", index), "a zone")
        if zone is None:
            continue
        try:
            names.extend(offline_data.resolve_zones(region, [zone]))
        except ValueError as error:
            reader.error(("zones", index), str(error))
    if len(names) != len(items):
        return region, None
    return region, tuple(dict.fromkeys(names))


def _start(reader: FieldReader, value: object) -> datetime | None:
    where: FieldPath = ("start",)
    if isinstance(value, datetime):  # YAML reads an unquoted timestamp itself
        if value.tzinfo is None:
            reader.error(where, f"start needs a time zone; write it in UTC, e.g. {_START_EXAMPLE}")
            return None
        parsed = value
    elif isinstance(value, date):
        reader.error(where, f"start needs a time of day, e.g. {_START_EXAMPLE}")
        return None
    elif isinstance(value, str) and _RFC3339.match(value):
        try:
            parsed = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError as error:
            reader.error(where, f"start {value!r} is not a valid time: {error}")
            return None
    else:
        reader.error(where, f"start must be an RFC 3339 time in UTC such as {_START_EXAMPLE}, "
                            f"got {describe(value)}")
        return None
    offset = parsed.utcoffset()
    if offset is not None and offset.total_seconds() != 0:
        reader.error(where, f"start must be in UTC (end it with Z), got offset {offset}")
        return None
    return parsed.astimezone(UTC)


def _settings(reader: FieldReader, value: object) -> Settings | None:
    where: FieldPath = ("settings",)
    if value is None:
        value = {}
    body = reader.mapping(value, where, "settings", SETTINGS_KEYS)
    if body is None:
        return None
    before = len(reader.problems)
    seconds: dict[str, float] = {}
    for key, attribute in DURATION_SETTINGS.items():
        if key in body:
            parsed = reader.duration(body[key], (*where, key), key)
            if parsed is not None:
                seconds[attribute] = parsed
    for key in EXTRA_DURATION_SETTINGS:
        if key in body:
            reader.duration(body[key], (*where, key), key)
    if body.get("startupTaintDelay") is not None:
        reader.duration(body["startupTaintDelay"], (*where, "startupTaintDelay"),
                        "startupTaintDelay")
    if "kubernetesVersion" in body:
        reader.string(body["kubernetesVersion"], (*where, "kubernetesVersion"),
                      "kubernetesVersion")
    policy = body.get("minValuesPolicy", "Strict")
    if policy not in MIN_VALUES_POLICIES:
        reader.error((*where, "minValuesPolicy"),
                     f"minValuesPolicy is Strict or BestEffort, got {describe(policy)}")
    gates = _feature_gates(reader, body.get("featureGates", {}))
    if gates is None or any(p.severity == "error" for p in reader.problems[before:]):
        return None
    return Settings(**seconds, feature_gates=gates, min_values_policy=str(policy),
                    raw=dict(body))


def _feature_gates(reader: FieldReader, value: object) -> dict[str, bool] | None:
    where: FieldPath = ("settings", "featureGates")
    if value is None:
        return {}
    body = reader.mapping(value, where, "featureGates", FEATURE_GATES)
    if body is None:
        return None
    gates: dict[str, bool] = {}
    for key, enabled in body.items():
        if not isinstance(enabled, bool):
            reader.error((*where, str(key)), f"feature gate {key!r} is true or false, got "
                                             f"{describe(enabled)}")
        elif key in FEATURE_GATES:
            gates[key] = enabled
    return gates


def _manifests(reader: FieldReader, body: dict[str, Any], base: Path) -> list[Document]:
    if "manifests" not in body:
        return []
    value = body["manifests"]
    if not isinstance(value, list):
        reader.error(("manifests",), f"manifests must be a list of paths and inline objects, "
                                     f"got {describe(value)}")
        return []
    documents = manifests.read_items(reader, value, ("manifests",), base, "manifests") \
        if value else []
    problems = manifests.check_all(documents) + manifests.duplicates(documents)
    reader.problems.extend(problems)
    classes = {d.name for d in documents if d.kind == "EC2NodeClass"}
    clean = [d for d in documents
             if not any(p.file == d.path and p.severity == "error" and d.line <= p.line <= max(
                 d.end_line, d.line) for p in problems)]
    reader.problems.extend(manifests.node_class_references(clean, classes))
    return documents


def _capacity(
    reader: FieldReader, value: object, world: World
) -> tuple[CapacityRule, ...] | None:
    items = reader.list_of(value if value is not None else [], ("capacity",), "capacity")
    if items is None:
        return None
    rules: list[CapacityRule] = []
    keys = ("instanceType", "zone", "capacityType", "available")
    for index, item in enumerate(items):
        where: FieldPath = ("capacity", index)
        body = reader.mapping(item, where, "a capacity entry", keys,
                              ("instanceType", "available"))
        if body is None:
            continue
        offering = _offering(reader, body, where, world)
        available = reader.integer(body["available"], (*where, "available"), "available") \
            if "available" in body else None
        if offering is not None and available is not None:
            instance_type, zone, capacity_type = offering
            rules.append(CapacityRule(instance_type, zone, capacity_type, available))
    return tuple(rules) if len(rules) == len(items) else None


RESERVATION_TYPES = ("default", "capacity-block")


def _reservations(
    reader: FieldReader, value: object, world: World, start: datetime | None
) -> tuple[SimReservation, ...] | None:
    """`capacityReservations`: reservations the simulated EC2 holds for the account."""
    items = reader.list_of(value if value is not None else [], ("capacityReservations",),
                           "capacityReservations")
    if items is None:
        return None
    found: list[SimReservation] = []
    keys = ("id", "instanceType", "zone", "count", "type", "endsAfter", "tags",
            "instanceMatchCriteria", "interruptible")
    for index, item in enumerate(items):
        where: FieldPath = ("capacityReservations", index)
        required = ("id", "instanceType", "zone", "count")
        body = reader.mapping(item, where, "a capacity reservation", keys, required)
        if body is None or any(key not in body for key in required):
            continue
        ident = reader.string(body["id"], (*where, "id"), "id")
        if ident is not None and not re.fullmatch(r"cr-[0-9a-z]+", ident):
            reader.error((*where, "id"), f"id {ident!r} must look like cr-0123abcd")
            ident = None
        offering = _offering(reader, {k: body[k] for k in ("instanceType", "zone")}, where,
                             world)
        count = reader.integer(body["count"], (*where, "count"), "count")
        kind = reader.string(body.get("type", "default"), (*where, "type"), "type",
                             RESERVATION_TYPES)
        criteria = reader.string(body.get("instanceMatchCriteria", "targeted"),
                                 (*where, "instanceMatchCriteria"), "instanceMatchCriteria",
                                 ("open", "targeted"))
        ends = reader.duration(body["endsAfter"], (*where, "endsAfter"), "endsAfter") \
            if "endsAfter" in body else None
        tags = body.get("tags", {})
        if not isinstance(tags, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
            reader.error((*where, "tags"), "tags must map strings to strings")
            continue
        if kind == "capacity-block" and "endsAfter" not in body:
            reader.error((*where, "endsAfter"), "a capacity block needs endsAfter")
            continue
        interruptible = body.get("interruptible", False)
        if not isinstance(interruptible, bool):
            reader.error((*where, "interruptible"),
                         f"interruptible is true or false, got {describe(interruptible)}")
            continue
        if interruptible and kind == "capacity-block":
            reader.error((*where, "interruptible"),
                         "a capacity block cannot be interruptible (only a default "
                         "reservation can)")
            continue
        if (ident is None or offering is None or count is None or kind is None
                or criteria is None or start is None
                or ("endsAfter" in body and ends is None)):
            continue
        instance_type, zone, _ = offering
        found.append(SimReservation(
            id=ident, instance_type=instance_type, zone=zone or "", count=count,
            reservation_type=kind, tags=dict(tags), match_criteria=criteria,
            end=start + timedelta(seconds=ends) if ends is not None else None,
            interruptible=interruptible))
    return tuple(found) if len(found) == len(items) else None


def _prices(reader: FieldReader, value: object, world: World) -> tuple[PriceRule, ...] | None:
    items = reader.list_of(value if value is not None else [], ("prices",), "prices")
    if items is None:
        return None
    rules: list[PriceRule] = []
    keys = ("instanceType", "capacityType", "zone", "price")
    for index, item in enumerate(items):
        where: FieldPath = ("prices", index)
        body = reader.mapping(item, where, "a price entry", keys,
                              ("instanceType", "capacityType", "price"))
        if body is None:
            continue
        offering = _offering(reader, body, where, world)
        price = reader.number(body["price"], (*where, "price"), "price") \
            if "price" in body else None
        if offering is not None and price is not None:
            instance_type, zone, capacity_type = offering
            if capacity_type is not None:
                rules.append(PriceRule(instance_type, capacity_type, zone, price))
    return tuple(rules) if len(rules) == len(items) else None


def _offering(
    reader: FieldReader, body: dict[str, Any], where: FieldPath, world: World
) -> tuple[str, str | None, str | None] | None:
    """instanceType, zone and capacityType of a capacity or price entry, checked."""
    good = True
    instance_type = reader.string(body.get("instanceType"), (*where, "instanceType"),
                                  "instanceType") if "instanceType" in body else None
    if instance_type is not None and instance_type not in world.instance_types:
        reader.error((*where, "instanceType"),
                     f"instance type {instance_type!r} is not in the region's catalog")
        good = False
    zone = capacity_type = None
    if "zone" in body:
        zone = reader.string(body["zone"], (*where, "zone"), "zone", sorted(world.zones))
        good = good and zone is not None
    if "capacityType" in body:
        capacity_type = reader.string(body["capacityType"], (*where, "capacityType"),
                                      "capacityType", CAPACITY_TYPES)
        good = good and capacity_type is not None
    if instance_type is None or not good:
        return None
    return instance_type, zone, capacity_type
