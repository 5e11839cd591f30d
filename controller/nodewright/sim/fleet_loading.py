"""Reading the fleet a scenario starts from: the optional keys `nodeClaims` (managed nodes
already running, with their age and launch hashes) and `boundPods` (the pods already
running on them, or on the unmanaged Nodes of the manifests). docs/scenarios.md
describes both; `nodewright snapshot` writes them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodewright.api.problems import FieldPath
from nodewright.sim.reader import FieldReader, describe
from nodewright.sim.scenario import CAPACITY_TYPES, BoundPods, FleetClaim, ObjectRef
from nodewright.sim.steps import World

CLAIM_KEYS = ("name", "nodePool", "instanceType", "zone", "capacityType", "age", "nodeName",
              "nodePoolHash", "nodeClassHash", "labels", "annotations")
BOUND_KEYS = ("node", "kind", "name", "namespace", "count")
BOUND_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "Pod")


def read_node_claims(
    reader: FieldReader, value: object, world: World
) -> tuple[FleetClaim, ...] | None:
    items = reader.list_of(value if value is not None else [], ("nodeClaims",), "nodeClaims")
    if items is None:
        return None
    claims: list[FleetClaim] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        claim = _claim(reader, item, ("nodeClaims", index), world)
        if claim is None:
            continue
        for name in {claim.name, claim.node_name or claim.name}:
            if name in seen:
                reader.error(("nodeClaims", index, "name"),
                             f"{name!r} names two nodeClaims (names and node names are unique)")
            seen.add(name)
        claims.append(claim)
    return tuple(claims) if len(claims) == len(items) else None


def _claim(reader: FieldReader, item: object, where: FieldPath, world: World
           ) -> FleetClaim | None:
    body = reader.mapping(item, where, "a nodeClaim", CLAIM_KEYS,
                          ("name", "nodePool", "instanceType", "zone"))
    if body is None or any(key not in body for key in ("name", "nodePool", "instanceType",
                                                       "zone")):
        return None
    before = len(reader.problems)
    name = reader.string(body["name"], (*where, "name"), "name")
    pool = reader.string(body["nodePool"], (*where, "nodePool"), "nodePool")
    if pool is not None and pool not in world.node_pools():
        reader.error((*where, "nodePool"),
                     f"NodePool {pool!r} is not in the scenario's manifests (NodePools: "
                     f"{', '.join(sorted(world.node_pools())) or 'none'})")
    instance_type = reader.string(body["instanceType"], (*where, "instanceType"),
                                  "instanceType")
    if instance_type is not None and instance_type not in world.instance_types:
        reader.error((*where, "instanceType"),
                     f"instance type {instance_type!r} is not in the region's catalog")
    zone = reader.string(body["zone"], (*where, "zone"), "zone", sorted(world.zones))
    capacity_type = reader.string(body.get("capacityType", "on-demand"),
                                  (*where, "capacityType"), "capacityType", CAPACITY_TYPES)
    age = reader.duration(body["age"], (*where, "age"), "age") if "age" in body else 0.0
    node_name = reader.string(body["nodeName"], (*where, "nodeName"), "nodeName") \
        if "nodeName" in body else None
    hashes = [reader.string(str(body[key]) if isinstance(body[key], int) else body[key],
                            (*where, key), key) if key in body else None
              for key in ("nodePoolHash", "nodeClassHash")]
    labels = _strings(reader, body.get("labels", {}), (*where, "labels"), "labels")
    annotations = _strings(reader, body.get("annotations", {}), (*where, "annotations"),
                           "annotations")
    if (len(reader.problems) > before or name is None or pool is None or instance_type is None
            or zone is None or capacity_type is None or age is None or labels is None
            or annotations is None):
        return None
    return FleetClaim(name, pool, instance_type, zone, capacity_type, age, node_name,
                      hashes[0], hashes[1], labels, annotations)


def _strings(reader: FieldReader, value: object, where: FieldPath, what: str
             ) -> dict[str, str] | None:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        reader.error(where, f"{what} must map strings to strings, got {describe(value)}")
        return None
    return dict(value)


def read_bound_pods(
    reader: FieldReader, value: object, world: World, claims: tuple[FleetClaim, ...]
) -> tuple[BoundPods, ...] | None:
    items = reader.list_of(value if value is not None else [], ("boundPods",), "boundPods")
    if items is None:
        return None
    nodes = {claim.name for claim in claims} | {c.node_name for c in claims if c.node_name} \
        | {ref.name for ref in world.objects if ref.kind == "Node"}
    found: list[BoundPods] = []
    placed: Counter[ObjectRef] = Counter()
    for index, item in enumerate(items):
        where: FieldPath = ("boundPods", index)
        body = reader.mapping(item, where, "a boundPods entry", BOUND_KEYS,
                              ("node", "kind", "name"))
        if body is None or any(key not in body for key in ("node", "kind", "name")):
            continue
        before = len(reader.problems)
        node = reader.string(body["node"], (*where, "node"), "node")
        if node is not None and node not in nodes:
            reader.error((*where, "node"), f"node {node!r} is neither a nodeClaim (name or "
                                           "nodeName) nor a Node of the manifests")
        kind = reader.string(body["kind"], (*where, "kind"), "kind", BOUND_KINDS)
        name = reader.string(body["name"], (*where, "name"), "name")
        namespace = reader.string(body.get("namespace", "default"), (*where, "namespace"),
                                  "namespace")
        count = reader.integer(body.get("count", 1), (*where, "count"), "count", minimum=1)
        if len(reader.problems) > before or None in (node, kind, name, namespace, count):
            continue
        assert node is not None and kind is not None and name is not None
        assert namespace is not None and count is not None
        ref = ObjectRef(kind, name, namespace)
        document = world.objects.get(ref)
        if document is None:
            reader.error((*where, "name"), f"{ref} is not in the scenario's manifests")
            continue
        placed[ref] += count
        most = _pods_of(document.body, kind)
        if placed[ref] > most:
            reader.error((*where, "count"), f"{placed[ref]} pods of {ref} are bound, but it "
                                            f"runs {most}")
            continue
        found.append(BoundPods(node, ref, count, reader.document.line_of(where)))
    return tuple(found) if len(found) == len(items) else None


def _pods_of(body: dict[str, Any], kind: str) -> int:
    """How many pods the workload runs at once (a bound count may not exceed it)."""
    spec = body.get("spec") or {}
    if kind == "Pod":
        return 1
    field = "parallelism" if kind == "Job" else "replicas"
    value = spec.get(field, 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1
