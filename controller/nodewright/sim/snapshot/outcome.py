"""What the controllers would do to a cluster: a snapshot (or any scenario starting from a
fleet) run until it settles, told as the fleet and its hourly cost before and after,
each disruption with its reason and saving, every evicted pod and where its replacement
went, what stays pending and why (`nodewright explain`'s words), and what disruption
budgets and PodDisruptionBudgets held back.

Unmanaged nodes (node groups) count in the fleet and its cost at the catalog's price for
their instance type, zone and capacity type; the simulator never removes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.disruption.why_from_cluster import (
    ExplainError,
    OfflineCatalog,
    explain_pod,
)
from nodewright.runtime.reconciler import WatchEvent
from nodewright.scheduling import labels as well_known
from nodewright.scheduling.catalog import offline_catalog
from nodewright.sim.durations import format_offset
from nodewright.sim.progress import Progress
from nodewright.sim.result import RunResult
from nodewright.sim.runner import _Run
from nodewright.sim.scenario import Scenario
from nodewright.sim.timeline import DecisionRecord, TimelineEvent
from nodewright.sim.world import World, build_world

HELD_BACK_CAUSES = ("PodDisruptionBudget", "DisruptionBudget", "DoNotDisrupt")
EXPLAINED_PENDING = 25  # pending pods explained one by one; the rest are counted


@dataclass(frozen=True)
class NodeLine:
    name: str
    instance_type: str
    capacity_type: str
    zone: str
    price: float
    nodepool: str  # "" for unmanaged capacity

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instanceType": self.instance_type,
                "capacityType": self.capacity_type, "zone": self.zone,
                "price": round(self.price, 6), "nodePool": self.nodepool or None}


@dataclass(frozen=True)
class Move:
    at: float
    pod: str  # namespace/name
    owner: str  # Kind/name, or "" for a bare pod
    node: str  # where it was evicted from
    to: str | None  # where its replacement runs at the end (None: pending, or none made)

    def describe(self) -> str:
        where = f"-> {self.to}" if self.to else "-> (pending)" if self.owner else "-> (gone)"
        return f"[{format_offset(self.at)}] {self.pod} from {self.node} {where}"


@dataclass(frozen=True)
class HeldBack:
    node: str
    cause: str
    message: str


@dataclass
class WhatItWouldDo:
    before: list[NodeLine]
    after: list[NodeLine]
    disruptions: list[DecisionRecord]
    moves: list[Move]
    pending: list[tuple[str, str]]  # pod, explain's summary
    pending_total: int
    held_back: list[HeldBack]
    refused_evictions: int
    settled: bool
    notes: list[str] = field(default_factory=list)

    @staticmethod
    def cost(nodes: list[NodeLine]) -> float:
        return sum(node.price for node in nodes)

    def lines(self) -> list[str]:
        before, after = self.cost(self.before), self.cost(self.after)
        out = ["", "What it would do to this cluster:",
               f"  fleet now:    {_fleet(self.before)}, ${before:.4f}/hour",
               f"  fleet after:  {_fleet(self.after)}, ${after:.4f}/hour"
               f"{'' if self.settled else ' (not settled: the run timed out)'}",
               f"  saving:       ${before - after:.4f}/hour "
               f"(${(before - after) * 730:.2f}/month)"]
        out.append(f"  disruptions:  {len(self.disruptions) or 'none'}")
        for record in self.disruptions:
            saving = f", saving ${record.savings:.4f}/hour" if record.savings else ""
            with_ = f" with {', '.join(record.replacements)}" if record.replacements else ""
            out.append(f"    [{format_offset(record.at)}] {record.reason or record.method}: "
                       f"{record.decision or 'disrupt'} {record.node}{with_}{saving}")
        out.append(f"  pods evicted: {len(self.moves) or 'none'}")
        out.extend(f"    {move.describe()}" for move in self.moves)
        out.append(f"  pending at the end: {self.pending_total or 'none'}")
        out.extend(f"    {pod}: {why}" for pod, why in self.pending)
        if self.pending_total > len(self.pending):
            out.append(f"    ... and {self.pending_total - len(self.pending)} more")
        held = self.held_back
        out.append(f"  held back:    {len(held) or 'nothing'}"
                   + (f"; {self.refused_evictions} eviction(s) refused by "
                      "PodDisruptionBudgets" if self.refused_evictions else ""))
        out.extend(f"    {h.node}: {h.cause}: {h.message}" for h in held)
        out.extend(f"  note: {note}" for note in self.notes)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": {"nodes": [n.to_dict() for n in self.before],
                       "hourlyCost": round(self.cost(self.before), 6)},
            "after": {"nodes": [n.to_dict() for n in self.after],
                      "hourlyCost": round(self.cost(self.after), 6)},
            "disruptions": [d.to_dict() for d in self.disruptions],
            "evictions": [{"at": m.at, "pod": m.pod, "owner": m.owner, "node": m.node,
                           "to": m.to} for m in self.moves],
            "pending": [{"pod": p, "why": w} for p, w in self.pending],
            "pendingTotal": self.pending_total,
            "heldBack": [{"node": h.node, "cause": h.cause, "message": h.message}
                         for h in self.held_back],
            "refusedEvictions": self.refused_evictions,
            "settled": self.settled,
        }


def _fleet(nodes: list[NodeLine]) -> str:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.instance_type] = counts.get(node.instance_type, 0) + 1
    managed = sum(1 for n in nodes if n.nodepool)
    kinds = ", ".join(f"{t}: {c}" for t, c in sorted(counts.items())) or "none"
    return f"{len(nodes)} node{'' if len(nodes) == 1 else 's'} ({managed} managed; {kinds})"


def run_what_if(
    scenario: Scenario, *, label: str = "as written",
    on_event: Any = None, progress: Progress | None = None,
) -> tuple[RunResult, WhatItWouldDo]:
    world = build_world(scenario)
    if on_event is not None:
        world.recorder.listen(on_event)
    watcher = _Watcher(world)
    result = _Run(world, progress).execute(label)
    return result, watcher.outcome(result)


class _Watcher:
    """Watches evictions and bindings while the run goes on."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.prices = _Prices(world.scenario)
        self.before: list[NodeLine] | None = None
        self.evicted: list[tuple[float, str, str, str]] = []  # at, pod, owner, node
        self.bound_after: dict[str, list[str]] = {}  # owner -> pod keys bound, in order
        self.placed: dict[str, str] = {}  # pod key -> node
        self.bind_time: dict[str, float] = {}
        self.owners = _Owners(world)
        world.observed.before_evict.append(self._on_evict)
        world.driver.listen(self._on_watch)
        # The fleet before anything ran: the first watch delivery comes after start_fleet.
        world.recorder.listen(self._on_line)

    def _on_line(self, event: TimelineEvent) -> None:
        if self.before is None and event.kind == "start":
            self.before = self._fleet_now()

    def _on_evict(self, name: str, namespace: str) -> None:
        pod = self.world.cluster.peek("Pod", name, namespace)
        if pod is None:
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        self.evicted.append((self.world.offset(), f"{namespace}/{name}",
                             self.owners.of(pod), node))

    def _on_watch(self, event: WatchEvent) -> None:
        if event.kind != "Pod" or event.type == "DELETED":
            return
        pod = event.object
        key = objects.key(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if node and key not in self.placed:
            self.placed[key] = str(node)
            self.bind_time[key] = self.world.offset()
            owner = self.owners.of(pod)
            if owner:
                self.bound_after.setdefault(owner, []).append(key)

    def _fleet_now(self) -> list[NodeLine]:
        lines: list[NodeLine] = []
        for node in self.world.cluster.peek_all("Node", sort=True):
            if objects.is_deleting(node):
                continue
            labels = objects.labels(node)
            instance_type = labels.get(well_known.INSTANCE_TYPE, "")
            zone = labels.get(well_known.ZONE, "")
            capacity = labels.get(well_known.CAPACITY_TYPE) or (
                "spot" if labels.get("eks.amazonaws.com/capacityType", "").lower() == "spot"
                else "on-demand")
            lines.append(NodeLine(objects.name(node), instance_type, capacity, zone,
                                  self.prices.of(instance_type, zone, capacity),
                                  labels.get(well_known.NODEPOOL, "")))
        return lines

    def outcome(self, result: RunResult) -> WhatItWouldDo:
        world = self.world
        after = self._fleet_now()
        managed_prices = {f.name: f.price for f in result.fleet}
        after = [NodeLine(n.name, n.instance_type, n.capacity_type, n.zone,
                          managed_prices.get(n.name) or n.price, n.nodepool) for n in after]
        moves: list[Move] = []
        used: set[str] = set()
        replaced_by: dict[str, str] = {}
        for at, pod, owner, _ in sorted(self.evicted):
            # The owner's first pod bound after this eviction stands in for the pod (a
            # replacement evicted in turn is followed to where its own replacement went).
            replacement = next((k for k in self.bound_after.get(owner, [])
                                if k not in used and k != pod
                                and self.bind_time[k] >= at), None) if owner else None
            if replacement is not None:
                used.add(replacement)
                replaced_by[pod] = replacement
        for at, pod, owner, node in sorted(self.evicted):
            to = None
            current = replaced_by.get(pod)
            seen = {pod}
            while current is not None and current in replaced_by and current not in seen:
                seen.add(current)
                current = replaced_by[current]
            if current is not None:
                namespace, _, name = current.partition("/")
                alive = world.cluster.peek("Pod", name, namespace)
                to = str(((alive or {}).get("spec") or {}).get("nodeName") or "") or None
            moves.append(Move(at, pod, owner, node, to))
        pending_pods = [p for p in world.cluster.peek_all("Pod", sort=True)
                        if not (p.get("spec") or {}).get("nodeName")
                        and not objects.is_deleting(p)
                        and (p.get("status") or {}).get("phase") not in ("Succeeded",
                                                                          "Failed")]
        pending: list[tuple[str, str]] = []
        catalog = OfflineCatalog(world.scenario.region)
        for waiting in pending_pods[:EXPLAINED_PENDING]:
            try:
                why = explain_pod(world.cluster, objects.namespace(waiting),
                                  objects.name(waiting), world.clock.now(), catalog).summary
            except ExplainError as error:
                why = str(error)
            pending.append((objects.key(waiting), why))
        held: dict[tuple[str, str], HeldBack] = {}
        for record in result.decisions:
            if record.cause in HELD_BACK_CAUSES:
                held[(record.node, record.cause)] = HeldBack(record.node, record.cause,
                                                             record.message)
        settled = not any(not e.held and "settle" in " ".join(e.differences)
                          for e in result.expectations)
        return WhatItWouldDo(
            before=self.before or [], after=after,
            disruptions=[d for d in result.decisions if d.outcome == "disrupted"],
            moves=moves, pending=pending, pending_total=len(pending_pods),
            held_back=sorted(held.values(), key=lambda h: (h.node, h.cause)),
            refused_evictions=world.observed.refused_evictions, settled=settled)


class _Owners:
    """A pod's top owner as `Kind/namespace/name` (a Deployment through its ReplicaSet)."""

    def __init__(self, world: World) -> None:
        self.cluster = world.cluster

    def of(self, pod: Mapping[str, Any]) -> str:
        owner = objects.controller_owner(pod)
        if owner is None:
            return ""
        namespace = objects.namespace(pod)
        kind, name = str(owner.get("kind")), str(owner.get("name"))
        if kind == "ReplicaSet":
            replica_set = self.cluster.peek("ReplicaSet", name, namespace)
            parent = objects.controller_owner(replica_set) if replica_set else None
            if parent is not None:
                kind, name = str(parent.get("kind")), str(parent.get("name"))
        return f"{kind}/{namespace}/{name}"


class _Prices:
    """The catalog's hourly price of an offering (for unmanaged nodes)."""

    def __init__(self, scenario: Scenario) -> None:
        self.types = {it.name: it for it in offline_catalog(scenario.region, scenario.zones)}
        self.overrides = {(p.instance_type, p.capacity_type, p.zone): p.price
                          for p in scenario.prices}

    def of(self, instance_type: str, zone: str, capacity_type: str) -> float:
        for key in ((instance_type, capacity_type, zone), (instance_type, capacity_type, None)):
            if key in self.overrides:
                return self.overrides[key]
        it = self.types.get(instance_type)
        if it is None:
            return 0.0
        prices = [o.price for o in it.offerings if o.capacity_type == capacity_type
                  and (o.zone == zone or not zone)]
        return min(prices) if prices else 0.0
