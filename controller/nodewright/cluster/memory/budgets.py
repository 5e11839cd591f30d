"""PodDisruptionBudget arithmetic, as Kubernetes' disruption controller does it.

`expectedPods` is the number of matching pods when minAvailable is an integer; otherwise
(a percentage, or maxUnavailable) it is the scale of the pods' controllers (a
Deployment's replicas for its ReplicaSets' pods, a StatefulSet's or a bare ReplicaSet's
replicas), and a pod without such a controller makes the budget fail safe (no disruption
allowed). Percentages round up. `currentHealthy` counts matching pods that are Ready and
not being deleted (nor recently evicted); `disruptionsAllowed` is what is left above
`desiredHealthy`, never negative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.conditions import set_condition
from nodewright.runtime.clock import format_time, parse_time
from nodewright.scheduling.pods import LabelSelector, SpecError, parse_label_selector

# The eviction API records evicted pods; the disruption controller forgets them after this
# long even when they were never deleted.
DISRUPTED_POD_TIMEOUT = timedelta(minutes=2)

ALWAYS_ALLOW = "AlwaysAllow"

# (kind, namespace, name) of a controller -> its desired replicas, or None if unknown.
ScaleLookup = Callable[[str, str, str], "int | None"]


class BudgetError(ValueError):
    """A budget that cannot be computed (bad spec, pods without a scalable controller)."""


@dataclass(frozen=True)
class BudgetStatus:
    expected_pods: int
    desired_healthy: int
    current_healthy: int
    disruptions_allowed: int
    disrupted_pods: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None

    def to_status(self, previous: Mapping[str, Any], generation: int, now: datetime
                  ) -> dict[str, Any]:
        """The PDB's status block (conditions keep their transition time when unchanged)."""
        status: dict[str, Any] = {
            "observedGeneration": generation,
            "expectedPods": self.expected_pods,
            "desiredHealthy": self.desired_healthy,
            "currentHealthy": self.current_healthy,
            "disruptionsAllowed": self.disruptions_allowed,
        }
        if self.disrupted_pods:
            status["disruptedPods"] = dict(sorted(self.disrupted_pods.items()))
        holder: dict[str, Any] = {
            "metadata": {"generation": generation},
            "status": {"conditions": [dict(c) for c in previous.get("conditions") or []]},
        }
        if self.error is not None:
            reason, message = "SyncFailed", self.error
        elif self.disruptions_allowed > 0:
            reason, message = "SufficientPods", ""
        else:
            reason, message = "InsufficientPods", ""
        allowed = "True" if self.error is None and self.disruptions_allowed > 0 else "False"
        set_condition(holder, "DisruptionAllowed", allowed, now, reason=reason,
                      message=message)
        status["conditions"] = holder["status"]["conditions"]
        return status


def budget_selector(pdb: Mapping[str, Any]) -> LabelSelector | None:
    """The PDB's selector; None (matches nothing) when unset. policy/v1: an empty
    selector matches every pod of the namespace."""
    spec = pdb.get("spec") or {}
    if spec.get("selector") is None:
        return None
    try:
        return parse_label_selector(spec["selector"], "spec.selector")
    except SpecError as error:
        raise BudgetError(str(error)) from None


def selects(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    if objects.namespace(pdb) != objects.namespace(pod):
        return False
    try:
        selector = budget_selector(pdb)
    except BudgetError:
        return False
    return selector is not None and selector.matches(objects.labels(pod))


def is_ready(pod: Mapping[str, Any]) -> bool:
    return objects.condition_is_true(pod, "Ready")


def _scaled(value: Any, total: int, field_name: str) -> int:
    """An IntOrString against `total`: an integer, or a percentage rounded up."""
    if isinstance(value, bool):
        raise BudgetError(f"spec.{field_name}: expected an integer or a percentage")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise BudgetError(f"spec.{field_name}: invalid percentage {value!r}") from None
        return math.ceil(percent * total / 100)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise BudgetError(f"spec.{field_name}: expected an integer or a percentage, got {value!r}")


def _expected_scale(pods: Sequence[Mapping[str, Any]], scale_of: ScaleLookup) -> int:
    counted: dict[tuple[str, str], int] = {}
    for pod in pods:
        owner = objects.controller_owner(pod)
        if owner is None:
            raise BudgetError(f"found no controller ref for pod {objects.name(pod)!r}")
        ref = (str(owner.get("kind")), str(owner.get("name")))
        if ref in counted:
            continue
        scale = scale_of(ref[0], objects.namespace(pod), ref[1])
        if scale is None:
            raise BudgetError(
                f"found no scalable controller for pod {objects.name(pod)!r} ({ref[0]}/{ref[1]})"
            )
        counted[ref] = scale
    return sum(counted.values())


def _live_disruptions(
    previous: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime
) -> dict[str, str]:
    """Recorded evictions still pending: the pod exists, is not yet deleting, and the
    record is younger than the timeout."""
    by_name = {objects.name(pod): pod for pod in pods}
    live: dict[str, str] = {}
    for name, when in (previous.get("disruptedPods") or {}).items():
        pod = by_name.get(name)
        if pod is None or objects.is_deleting(pod):
            continue
        if parse_time(str(when)) + DISRUPTED_POD_TIMEOUT < now:
            continue
        live[name] = str(when)
    return live


def compute(
    pdb: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    scale_of: ScaleLookup,
    now: datetime,
) -> BudgetStatus:
    """The budget's status given the pods of its namespace (it selects among them)."""
    previous = pdb.get("status") or {}
    try:
        selector = budget_selector(pdb)
        matching = [] if selector is None else [
            pod for pod in pods if selector.matches(objects.labels(pod))
        ]
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected = _expected_scale(matching, scale_of)
            unavailable = _scaled(spec["maxUnavailable"], expected, "maxUnavailable")
            desired = max(0, expected - unavailable)
        elif isinstance(spec.get("minAvailable"), int) and not isinstance(
                spec.get("minAvailable"), bool):
            desired = int(spec["minAvailable"])
            expected = len(matching)
        elif spec.get("minAvailable") is not None:
            expected = _expected_scale(matching, scale_of)
            desired = _scaled(spec["minAvailable"], expected, "minAvailable")
        else:
            raise BudgetError("spec: one of minAvailable or maxUnavailable is required")
    except BudgetError as error:
        return BudgetStatus(0, 0, 0, 0, error=str(error))
    disrupted = _live_disruptions(previous, matching, now)
    healthy = sum(
        1 for pod in matching
        if not objects.is_deleting(pod) and is_ready(pod) and objects.name(pod) not in disrupted
    )
    return BudgetStatus(expected, desired, healthy, max(0, healthy - desired), disrupted)


def record_eviction(status: BudgetStatus, pod_name: str, now: datetime) -> BudgetStatus:
    """The status after the eviction API let one pod go."""
    disrupted = dict(status.disrupted_pods)
    disrupted[pod_name] = format_time(now)
    return BudgetStatus(
        status.expected_pods,
        status.desired_healthy,
        status.current_healthy,
        max(0, status.disruptions_allowed - 1),
        disrupted,
        status.error,
    )
