"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A candidate tries every `retry_period` to take the Lease: it may when nobody holds it, when
it holds it already, or when the holder has not renewed it for `lease_duration` as *this*
process observed (the record's timestamps come from another host's clock, so expiry is
judged by when the record last changed here, never by comparing clocks). Writes carry the
resourceVersion read, so two candidates never both win. The leader renews every
`retry_period`; if it cannot for `renew_deadline` it stops leading (the operator then
exits, as Karpenter does, and is restarted as a candidate). On a clean shutdown the leader
releases the Lease so a standby takes over at its next retry instead of a lease duration
later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nodewright import metrics
from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseTiming:
    """Karpenter's (controller-runtime's) defaults: 15 s lease, 10 s renew deadline, 2 s
    retry."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("lease timing needs retry_period < renew_deadline < lease_duration")


def _micro_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        cluster: ClusterAPI,
        *,
        name: str,
        namespace: str,
        identity: str,
        timing: LeaseTiming | None = None,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.timing = timing or LeaseTiming()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._leading = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._status = metrics.LEADER_ELECTION_STATUS.labels(name=name)
        self._status.set(0)

    # --- running ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, *, release: bool = True, timeout: float | None = None) -> None:
        """Stop campaigning; a leader gives the Lease up unless `release` is False (a
        process that dies holds it until it expires)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if release and self._leading.is_set():
            self._release()
        self._set_leading(False, notify=False)

    def is_leader(self) -> bool:
        return self._leading.is_set()

    def holder(self) -> str:
        """The identity the Lease names now ('' when free or unreadable)."""
        try:
            lease = self.cluster.get("Lease", self.name, self.namespace)
        except ApiError:
            return ""
        return str(lease.get("spec", {}).get("holderIdentity") or "")

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                if not self._leading.is_set():
                    log.info("acquired the leader Lease %s/%s", self.namespace, self.name,
                             extra={"identity": self.identity})
                    self._set_leading(True)
                self._renew_until_lost()
                if self._stop.is_set():
                    return
            self._stop.wait(self.timing.retry_period)

    def _renew_until_lost(self) -> None:
        last_renewal = time.monotonic()
        while not self._stop.wait(self.timing.retry_period):
            if self.try_acquire_or_renew():
                last_renewal = time.monotonic()
                continue
            if time.monotonic() - last_renewal >= self.timing.renew_deadline:
                log.error("lost the leader Lease %s/%s: not renewed within %.1fs",
                          self.namespace, self.name, self.timing.renew_deadline)
                self._set_leading(False)
                return

    def _set_leading(self, leading: bool, *, notify: bool = True) -> None:
        was = self._leading.is_set()
        if leading:
            self._leading.set()
        else:
            self._leading.clear()
        self._status.set(1 if leading else 0)
        if notify and leading and not was:
            self._on_started()
        elif notify and was and not leading:
            self._on_stopped()

    # --- one attempt ------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the Lease; True when this process holds it now."""
        now = datetime.now(UTC)
        try:
            lease = self.cluster.get("Lease", self.name, self.namespace)
        except NotFoundError:
            return self._create(now)
        except ApiError as error:
            log.warning("reading the leader Lease failed: %s", error)
            return False
        spec = dict(lease.get("spec") or {})
        if spec != self._observed_spec:
            self._observed_spec, self._observed_at = spec, time.monotonic()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.timing.lease_duration)
        held_by_other = holder not in ("", self.identity)
        if held_by_other and time.monotonic() < self._observed_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration_seconds(),
            "renewTime": _micro_time(now),
        }
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = transitions + (1 if holder else 0)
        lease["spec"] = new_spec
        try:
            stored = self.cluster.update(lease)
        except ApiError as error:  # a Conflict: someone else wrote it first
            log.debug("updating the leader Lease failed: %s", error)
            return False
        self._observed_spec, self._observed_at = dict(stored.get("spec") or {}), time.monotonic()
        return True

    def _create(self, now: datetime) -> bool:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._duration_seconds(),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            stored = self.cluster.create(lease)
        except ApiError as error:  # AlreadyExists: another candidate created it first
            log.debug("creating the leader Lease failed: %s", error)
            return False
        self._observed_spec, self._observed_at = dict(stored.get("spec") or {}), time.monotonic()
        return True

    def _duration_seconds(self) -> int:
        return max(1, round(self.timing.lease_duration))

    def _release(self) -> None:
        """Give the Lease up (client-go: empty holder, a 1 s duration), so a standby need
        not wait for it to expire."""
        try:
            lease = self.cluster.get("Lease", self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                             "renewTime": _micro_time(datetime.now(UTC))}
            self.cluster.update(lease)
            log.info("released the leader Lease %s/%s", self.namespace, self.name)
        except ApiError as error:
            log.warning("releasing the leader Lease failed: %s", error)
