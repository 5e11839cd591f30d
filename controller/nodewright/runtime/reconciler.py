"""The reconciler contract every controller follows.

A reconciler is given a key (an object's `namespace/name`, or `""` for singletons such
as the provisioner and the disruption loop), reads the state cache, acts through
ClusterAPI/CloudProvider, and returns a `Result` saying when it wants to run again. It
never sleeps and never reads the wall clock itself (it is given a `Clock`).

`watches` says which watch events make which keys due: the driver calls each
`Watch.keys(event)` for events of that kind and queues the keys it returns
(deduplicated: a key already queued runs once). An exception from `reconcile` is
retried by the driver with exponential backoff; a `Result(requeue_after=...)` runs the
key again after that many seconds unless an event makes it due sooner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from nodewright.runtime.concurrency import DEFAULT_CPU_REQUESTS, LinearScale, worker_count
from nodewright.runtime.ratelimit import DEFAULT_RETRY, RateLimiter, RetryLimits

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: the object in its Kubernetes wire shape (a dict with
    apiVersion, kind, metadata, ...). For DELETED it is the last state seen."""

    type: EventType
    object: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.object.get("kind", ""))

    @property
    def name(self) -> str:
        return str(self.object.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.object.get("metadata", {}).get("namespace") or "")

    @property
    def key(self) -> str:
        """`namespace/name` for namespaced objects, `name` otherwise."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class Result:
    """What a reconcile wants next: `requeue_after` seconds, or None (wait for events)."""

    requeue_after: float | None = None


def object_key(event: WatchEvent) -> Iterable[str]:
    """The usual mapping: an event makes its own object's key due."""
    return (event.key,)


def singleton_key(event: WatchEvent) -> Iterable[str]:
    """For singleton reconcilers: any matching event makes the tick key `""` due."""
    return ("",)


@dataclass(frozen=True)
class Watch:
    kind: str
    keys: Callable[[WatchEvent], Iterable[str]] = object_key


@runtime_checkable
class Reconciler(Protocol):
    name: str

    @property
    def watches(self) -> Sequence[Watch]: ...

    def reconcile(self, key: str) -> Result: ...


def manages_state_lock(reconciler: Reconciler) -> bool:
    """Whether the reconciler takes the state cache's lock itself (`manages_state_lock =
    True`: the CPU-heavy ones, which compute outside it); the operator's driver holds the
    lock around every other reconcile (nodewright.runtime.statelock)."""
    return bool(getattr(reconciler, "manages_state_lock", False))


def concurrent_reconciles(reconciler: Reconciler,
                          cpu_requests: int = DEFAULT_CPU_REQUESTS) -> int:
    """How many keys of this controller the operator reconciles at once in a container
    requesting `cpu_requests` millicores: its `max_concurrent_reconciles`
    (controller-runtime's MaxConcurrentReconciles: a count, or Karpenter's CPU-scaled
    `LinearScale`; default 1), capped (`runtime.concurrency`). One key never runs twice at
    once. The simulator runs one at a time regardless."""
    declared = getattr(reconciler, "max_concurrent_reconciles", 1)
    if not isinstance(declared, int | LinearScale):
        raise TypeError(f"controller {reconciler.name}: max_concurrent_reconciles is "
                        f"{declared!r}, not a count or a LinearScale")
    return worker_count(declared, cpu_requests)


def retry_limiter(reconciler: Reconciler,
                  cpu_requests: int = DEFAULT_CPU_REQUESTS) -> RateLimiter:
    """The rate limiter of this controller's failed keys in a container requesting
    `cpu_requests` millicores: its `retry_limits` (Karpenter's per-controller
    RateLimiter option), by default controller-runtime's."""
    declared = getattr(reconciler, "retry_limits", DEFAULT_RETRY)
    if not isinstance(declared, RetryLimits):
        raise TypeError(f"controller {reconciler.name}: retry_limits is {declared!r}, "
                        f"not a RetryLimits")
    return declared.limiter(cpu_requests)


def size_for_cpu(reconciler: Reconciler, cpu_requests: int = DEFAULT_CPU_REQUESTS) -> None:
    """Tell a controller that sizes more than its workers and its queue with the CPU (a
    `size_for_cpu(millicores)` method: node termination's eviction retries) the
    container's request. The operator's driver calls it once, when it adds the
    controller; without it a controller keeps its one-core sizes."""
    sizer = getattr(reconciler, "size_for_cpu", None)
    if callable(sizer):
        sizer(cpu_requests)
