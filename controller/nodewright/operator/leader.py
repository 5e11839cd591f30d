"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A candidate tries every `retry_period` to take the Lease: it may when nobody holds it, when
it holds it already, or when the holder has not renewed it for `lease_duration` as *this*
process observed (the record's timestamps come from another host's clock, so expiry is
judged by when the record last changed here, never by comparing clocks). Writes carry the
resourceVersion read, so two candidates never both win.

The leader renews in rounds: each round tries every `retry_period` and must succeed within
`renew_deadline` of its start, and no single attempt may run past that deadline (a request
to an API server that does not answer is abandoned there, as client-go cancels its
context). A leader that misses a round stops leading at once (the operator then exits, as
Karpenter does, and is restarted as a candidate): it stops at most `retry_period +
renew_deadline` after its last renewal, before a standby, which waits `lease_duration`
after it last saw the record change, may take over. The leader renews with a single
update of the Lease it last wrote; only when that fails does it read the Lease again.

The record is written as client-go writes it: `acquireTime` and `leaseTransitions` kept on
renewal; a new holder sets `acquireTime` and adds one transition. On a clean shutdown the
leader releases the Lease (an empty holder, a 1 s duration) so a standby takes over at its
next retry instead of a lease duration later.

`unsure()` says why this process cannot be sure it leads: it does not hold the Lease, or
its last successful write of it started more than `renew_deadline` ago (a standby may take
over `lease_duration` after it saw that write). Every write is fenced on it
(`cluster.fencing`), so work in flight when a renewal stalls writes nothing.

What a user must fix (the Lease's namespace does not exist, RBAC refuses the Lease) is
logged at ERROR with what to do, and `problem()` says it for /readyz; the candidate keeps
trying and recovers once it is fixed.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nodewright import metrics
from nodewright.cluster.api import (
    AlreadyExistsError,
    ApiError,
    ClusterAPI,
    ConflictError,
    NotFoundError,
)

log = logging.getLogger(__name__)

# A problem that persists is logged again this often (it is logged at once when it changes).
PROBLEM_REPEAT_SECONDS = 30.0


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


def _forbidden(error: ApiError) -> bool:
    return error.status == 403


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
        self._lock = threading.Lock()
        self._observed_spec: dict[str, Any] = {}
        self._observed_at = 0.0
        # The Lease as last read or written (its resourceVersion makes the next write safe).
        self._lease: dict[str, Any] | None = None
        self._problem: str | None = None
        self._problem_logged_at = 0.0
        # Since when a leader's renewals have failed (monotonic; None while they succeed).
        self._renewal_failing_since: float | None = None
        # When the attempt that last wrote the Lease started (monotonic), and the current one.
        self._renewed_at = float("-inf")
        # Whether the campaign's thread has ended, and whether an exception ended it.
        self._ended = False
        self._crashed = False
        self._attempt_started = 0.0
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

    def problem(self) -> str | None:
        """What keeps this candidate from taking part in the election, that a user must fix
        (None when it can read and write the Lease)."""
        return self._problem

    def renewal_problem(self) -> str | None:
        """Why a leader is not ready: its Lease is not being renewed (None otherwise)."""
        since = self._renewal_failing_since
        if since is None or not self._leading.is_set():
            return None
        return (f"the leader Lease has not been renewed for {time.monotonic() - since:.0f}s "
                f"(it is given up after {self.timing.renew_deadline:g}s)")

    def unsure(self) -> str | None:
        """Why this process cannot be sure it leads (None when it can): see the module."""
        if not self._leading.is_set():
            return "it does not hold the leader Lease"
        since = time.monotonic() - self._renewed_at
        if since > self.timing.renew_deadline:
            return (f"the leader Lease was last renewed {since:.1f}s ago, past the "
                    f"{self.timing.renew_deadline:g}s renew deadline")
        return None

    def holder(self) -> str:
        """The identity the Lease names now ('' when free or unreadable)."""
        try:
            lease = self.cluster.get("Lease", self.name, self.namespace)
        except ApiError:
            return ""
        return str(lease.get("spec", {}).get("holderIdentity") or "")

    def alive(self) -> bool:
        """False once the campaign's thread has died: it ends on its own only when the
        Lease is lost or `stop` is called."""
        thread = self._thread
        return (thread is None or thread.is_alive() or self._stop.is_set()
                or (self._ended and not self._crashed))

    def _run(self) -> None:
        completed = False
        try:
            self._campaign()
            completed = True
        except Exception:
            log.exception("the leader election campaign stopped on an unexpected error; "
                          "/healthz fails so that the process is restarted")
        finally:
            self._crashed = not completed
            self._ended = True

    def _campaign(self) -> None:
        while not self._stop.is_set():
            try:
                acquired = self.try_acquire_or_renew()
            except Exception:  # not an API error (those are handled): a bug, a library's
                log.exception("trying to take the leader Lease %s/%s failed; retrying in "
                              "%gs", self.namespace, self.name, self.timing.retry_period)
                acquired = False
            if acquired:
                if not self._leading.is_set():
                    log.info("acquired the leader Lease %s/%s", self.namespace, self.name,
                             extra={"identity": self.identity})
                    self._set_leading(True)
                self._renew_until_lost()
                return
            self._stop.wait(self.timing.retry_period)

    def _renew_until_lost(self) -> None:
        """client-go's renew loop: rounds of attempts, each round bounded by the renew
        deadline; the first round that fails ends the leadership."""
        timing = self.timing
        while not self._stop.wait(timing.retry_period):
            deadline = time.monotonic() + timing.renew_deadline
            while True:
                renewed = self._attempt_before(deadline)
                if self._stop.is_set():
                    return
                if renewed:
                    self._renewal_failing_since = None
                    break
                if self._renewal_failing_since is None:
                    self._renewal_failing_since = time.monotonic()
                left = deadline - time.monotonic()
                if left <= 0:
                    log.error("lost the leader Lease %s/%s: not renewed within %.1fs",
                              self.namespace, self.name, timing.renew_deadline,
                              extra={"identity": self.identity})
                    self._set_leading(False)
                    return
                if self._stop.wait(min(timing.retry_period, left)):
                    return

    def _attempt_before(self, deadline: float) -> bool:
        """One try, abandoned (False) if it has not answered by `deadline`: a request
        that hangs must not keep a leader that cannot renew believing it leads."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        done = threading.Event()
        outcome: list[bool] = []

        def attempt() -> None:
            try:
                outcome.append(self.try_acquire_or_renew())
            except Exception:  # a bug must not look like a hang
                log.exception("renewing the leader Lease failed")
                outcome.append(False)
            finally:
                done.set()

        threading.Thread(target=attempt, name="leader-renewal", daemon=True).start()
        if not done.wait(left):
            log.warning("renewing the leader Lease %s/%s: the API server did not answer "
                        "within the renew deadline", self.namespace, self.name)
            return False
        return outcome[0]

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
        with self._lock:
            self._attempt_started = time.monotonic()
            now = datetime.now(UTC)
            if self._holds_valid_lease() and self._renew_optimistically(now):
                return True
            try:
                lease = self.cluster.get("Lease", self.name, self.namespace)
            except NotFoundError:
                return self._create(now)
            except ApiError as error:
                self._failed("get", error)
                return False
            spec = dict(lease.get("spec") or {})
            if spec != self._observed_spec:
                self._observe(lease)
            self._lease = lease
            if (self._observed_holder() not in ("", self.identity)
                    and self._observed_valid()):
                self._fine()
                return False
            return self._write(lease, now)

    def _holds_valid_lease(self) -> bool:
        return (self._lease is not None and self._observed_holder() == self.identity
                and self._observed_valid())

    def _renew_optimistically(self, now: datetime) -> bool:
        """client-go's fast path: update the Lease last written, without reading it."""
        assert self._lease is not None
        try:
            return self._write(copy.deepcopy(self._lease), now, quiet=True)
        except ApiError:
            return False

    def _write(self, lease: dict[str, Any], now: datetime, *, quiet: bool = False) -> bool:
        spec = dict(lease.get("spec") or {})
        renewing = self._observed_holder() == self.identity
        new_spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._duration_seconds(),
            "renewTime": _micro_time(now),
            "acquireTime": spec.get("acquireTime") if renewing else _micro_time(now),
            "leaseTransitions": (int(spec.get("leaseTransitions") or 0)
                                 + (0 if renewing else 1)),
        }
        lease["spec"] = new_spec
        try:
            stored = self.cluster.update(lease)
        except ApiError as error:
            if quiet:
                log.debug("renewing the leader Lease without reading it failed: %s", error)
                raise
            self._failed("update", error)
            return False
        self._observe(stored)
        self._renewed_at = self._attempt_started
        self._fine()
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
        except ApiError as error:
            self._failed("create", error)
            return False
        self._observe(stored)
        self._renewed_at = self._attempt_started
        self._fine()
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        self._observed_spec = dict(lease.get("spec") or {})
        self._observed_at = time.monotonic()

    def _observed_holder(self) -> str:
        return str(self._observed_spec.get("holderIdentity") or "")

    def _observed_valid(self) -> bool:
        duration = float(self._observed_spec.get("leaseDurationSeconds")
                         or self.timing.lease_duration)
        return time.monotonic() < self._observed_at + duration

    def _duration_seconds(self) -> int:
        return max(1, round(self.timing.lease_duration))

    # --- what went wrong ------------------------------------------------------------------

    def _failed(self, verb: str, error: ApiError) -> None:
        where = f"{self.namespace}/{self.name}"
        if isinstance(error, ConflictError | AlreadyExistsError):
            # Another candidate wrote first: the election working as meant.
            log.debug("%s of the leader Lease %s lost a race: %s", verb, where, error)
            self._fine()
            return
        retry = f"retrying every {self.timing.retry_period:g}s"
        if isinstance(error, NotFoundError) and verb == "create":
            self._report(
                f"cannot create the leader Lease {where}: the namespace {self.namespace!r} "
                f"does not exist ({error}). Create it (kubectl create namespace "
                f"{self.namespace}), or set LEADER_ELECTION_NAMESPACE (or POD_NAMESPACE) to "
                f"the namespace the controller is installed in; {retry}")
        elif _forbidden(error):
            self._report(
                f"the API server refused to {verb} the leader Lease {where} (403 Forbidden: "
                f"{error}). The Role that `nodewright manifests` installs in the controller's "
                f"namespace grants get, create and update of this Lease: apply the "
                f"manifests, or set LEADER_ELECTION_NAMESPACE (or POD_NAMESPACE) to the "
                f"namespace they install to; {retry}")
        else:
            log.warning("%s of the leader Lease %s failed: %s", verb, where, error)

    def _report(self, problem: str) -> None:
        now = time.monotonic()
        if problem != self._problem or now - self._problem_logged_at >= PROBLEM_REPEAT_SECONDS:
            log.error("%s", problem, extra={"Lease": f"{self.namespace}/{self.name}"})
            self._problem_logged_at = now
        self._problem = problem

    def _fine(self) -> None:
        if self._problem is not None:
            log.info("the leader Lease %s/%s can be read and written again", self.namespace,
                     self.name)
        self._problem = None

    # --- release --------------------------------------------------------------------------

    def _release(self) -> None:
        """Give the Lease up as client-go does (an empty holder, a 1 s duration), so a
        standby need not wait for it to expire."""
        try:
            lease = self.cluster.get("Lease", self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = _micro_time(datetime.now(UTC))
            lease["spec"] = {"holderIdentity": "", "leaseDurationSeconds": 1,
                             "acquireTime": now, "renewTime": now,
                             "leaseTransitions": int(spec.get("leaseTransitions") or 0)}
            self.cluster.update(lease)
            log.info("released the leader Lease %s/%s", self.namespace, self.name)
        except ApiError as error:
            log.warning("releasing the leader Lease failed: %s", error)
