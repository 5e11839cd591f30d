"""What blocks disrupting a pod or node (do-not-disrupt, PodDisruptionBudgets), said in
words that name the blocker, and what evicting a pod costs. What a pod *is* (active,
reschedulable, evictable) is `nodewright.state.podutil`."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nodewright.api import golang
from nodewright.api.formats import DurationError, parse_duration
from nodewright.cluster import objects
from nodewright.cluster.events import Event
from nodewright.runtime.clock import format_time, parse_time
from nodewright.scheduling.pods import LabelSelector, SpecError, parse_label_selector
from nodewright.state.podutil import is_evictable, is_terminal
from nodewright.state.wellknown import DO_NOT_DISRUPT_ANNOTATION

DO_NOT_DISRUPT = DO_NOT_DISRUPT_ANNOTATION
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

Obj = Mapping[str, Any]


def do_not_disrupt_until(obj: Obj, now: datetime) -> tuple[bool, str]:
    """Whether `karpenter.sh/do-not-disrupt` protects the pod or node now, and how.

    "true" protects for good; a duration protects that long after the pod started (a pod
    not started yet is protected) or the node was created. Anything else is ignored, as
    Karpenter ignores it.
    """
    # Read in place (`objects.annotations` copies): every machine, every pass.
    value = (objects.meta(obj).get("annotations") or {}).get(DO_NOT_DISRUPT)
    if value is None:
        return False, ""
    if value == "true":
        return True, f'{DO_NOT_DISRUPT}: "true"'
    try:
        seconds = parse_duration(value, allow_negative=True)
    except ValueError:
        return False, ""
    if seconds <= 0:
        return False, ""
    started_text = (obj.get("status") or {}).get("startTime")
    if started_text:
        started: datetime | None = parse_time(started_text)
    elif obj.get("kind") == "Pod":
        # Not started yet: Karpenter's IsDoNotDisruptActive fails safe, however long ago
        # the pod was created.
        started = None
    else:
        started = objects.creation_time(obj)
    if started is None:
        return True, f'{DO_NOT_DISRUPT}: "{value}"'
    until = started + timedelta(seconds=seconds)
    if now < until:
        return True, f'{DO_NOT_DISRUPT}: "{value}" until {until:%Y-%m-%dT%H:%M:%SZ}'
    return False, ""


def _go_duration_error(value: str) -> str:
    """parseDoNotDisrupt's error for a value Go's time.ParseDuration refuses or finds not
    positive, as Karpenter words it."""
    quoted = golang.quote(value)
    try:
        parse_duration(value, allow_negative=True)
    except DurationError as error:
        return f"failed to parse {quoted} as a duration: {error.go_message}"
    return f"duration {quoted} must be positive"


def do_not_disrupt_event(pod: Obj, now: datetime) -> Event | None:
    """The event Karpenter publishes when it checks an active pod's do-not-disrupt
    annotation (pkg/utils/pod IsDoNotDisruptActive): an unreadable value is ignored with
    InvalidDoNotDisruptAnnotation; a duration says DoNotDisruptUntil while it protects the
    pod and DoNotDisruptGracePeriodElapsed after. "true", and a duration on a pod not yet
    started, say nothing."""
    value = objects.annotations(pod).get(DO_NOT_DISRUPT)
    if value is None or value == "true":
        return None
    uid = objects.uid(pod)
    try:
        seconds = parse_duration(value, allow_negative=True)
    except ValueError:
        seconds = None
    if seconds is None or seconds <= 0:
        problem = _go_duration_error(value)
        return Event(regarding=pod, type="Warning", reason="InvalidDoNotDisruptAnnotation",
                     note=f"Invalid {DO_NOT_DISRUPT} annotation: {problem}, ignoring "
                          "annotation", dedupe_values=(uid, problem))
    started = (pod.get("status") or {}).get("startTime")
    if not started:
        return None
    until = parse_time(str(started)) + timedelta(seconds=seconds)
    if now < until:
        at = format_time(until)
        return Event(regarding=pod, type="Normal", reason="DoNotDisruptUntil",
                     note=f"The {DO_NOT_DISRUPT} grace period will elapse at {at}",
                     dedupe_values=(uid, at))
    return Event(regarding=pod, type="Normal", reason="DoNotDisruptGracePeriodElapsed",
                 note=f"The {DO_NOT_DISRUPT} grace period has elapsed, pod is now "
                      "disruptable", dedupe_values=(uid,))


def eviction_cost(pod: Obj) -> float:
    """Karpenter's cost of evicting one pod: 1, moved by its deletion cost and priority,
    clamped to [-10, 10]."""
    cost = 1.0
    raw = objects.annotations(pod).get(POD_DELETION_COST)
    if raw is not None:
        with contextlib.suppress(ValueError):
            cost += float(raw) / 2**27
    priority = (pod.get("spec") or {}).get("priority")
    if isinstance(priority, int):
        cost += priority / 2**25
    return max(-10.0, min(10.0, cost))


def is_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or objects.is_deleting(pod):
        return False
    ready = objects.condition(pod, "Ready")
    return ready is None or ready.get("status") == "True"


# ---------------------------------------------------------------------------------------
# PodDisruptionBudgets


@dataclass(frozen=True)
class PdbLimit:
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int
    fully_blocking: bool
    always_evict_unhealthy: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: Obj) -> bool:
        return objects.namespace(pod) == self.namespace and self.selector.matches(
            objects.labels(pod)
        )


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def pdb_limit(pdb: Obj, pods: Sequence[Obj]) -> PdbLimit:
    """A PDB with the disruptions it allows now: its status when the API server's
    disruption controller wrote one, otherwise worked out from the pods it selects.
    Raises SpecError for a selector that cannot be read."""
    spec = pdb.get("spec") or {}
    namespace = objects.namespace(pdb)
    selector = parse_label_selector(spec.get("selector") or {}, "spec.selector")
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    fully_blocking = max_unavailable in (0, "0%") or min_available == "100%"
    status = pdb.get("status") or {}
    if "disruptionsAllowed" in status:
        allowed = int(status["disruptionsAllowed"])
    else:
        selected = [
            p for p in pods
            if objects.namespace(p) == namespace and selector.matches(objects.labels(p))
            and not is_terminal(p)
        ]
        healthy = sum(1 for p in selected if is_ready(p))
        expected = len(selected)
        if max_unavailable is not None:
            desired = expected - _scaled(max_unavailable, expected, round_up=True)
        elif min_available is not None:
            desired = _scaled(min_available, expected, round_up=True)
        else:
            desired = expected
        allowed = max(healthy - desired, 0)
    return PdbLimit(
        namespace,
        objects.name(pdb),
        selector,
        allowed,
        fully_blocking,
        spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
    )


class PdbLimits:
    """Every PDB in the cluster, asked about pods."""

    def __init__(self, limits: Iterable[PdbLimit]) -> None:
        self._by_namespace: dict[str, list[PdbLimit]] = {}
        for limit in limits:
            self._by_namespace.setdefault(limit.namespace, []).append(limit)

    @classmethod
    def build(cls, pdbs: Sequence[Obj], pods: Sequence[Obj]) -> tuple[PdbLimits, list[str]]:
        """The limits and, for PDBs that cannot be read, why (they are left out)."""
        limits, problems = [], []
        for pdb in pdbs:
            try:
                limits.append(pdb_limit(pdb, pods))
            except (SpecError, ValueError) as error:
                problems.append(f"PodDisruptionBudget {objects.key(pdb)}: {error}")
        return cls(limits), problems

    def __bool__(self) -> bool:
        return bool(self._by_namespace)

    def matching(self, pod: Obj) -> list[PdbLimit]:
        return [limit for limit in self._by_namespace.get(objects.namespace(pod), ()) if
                limit.selects(pod)]

    def blocking(self, pod: Obj, now: datetime, *, fully_only: bool = False) -> str | None:
        """Why a PDB forbids evicting the pod now (naming it), or None."""
        if not self._by_namespace:
            return None  # no PDB at all (asked for every moving pod of every simulation)
        if objects.namespace(pod) not in self._by_namespace:
            return None  # no PDB can select it
        if not is_evictable(pod, now):
            return None
        matching = self.matching(pod)
        if len(matching) > 1:
            names = ", ".join(limit.key for limit in matching)
            return f"pod {objects.key(pod)} is selected by several PodDisruptionBudgets ({names})"
        for limit in matching:
            if limit.always_evict_unhealthy and not is_ready(pod):
                return None
            if limit.fully_blocking or (not fully_only and limit.disruptions_allowed == 0):
                return (
                    f"PodDisruptionBudget {limit.key} allows no disruption of pod "
                    f"{objects.key(pod)}"
                )
        return None
