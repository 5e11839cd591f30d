"""The NodeClaim lifecycle controller (Karpenter's nodeclaim.lifecycle).

Keyed by NodeClaim name; Node events are mapped to the NodeClaim with the Node's
provider ID. A live NodeClaim gets the karpenter.sh/termination finalizer before anything
is launched for it (so nothing launched can leak), then each reconcile runs launch,
registration, initialization and liveness and writes what changed (labels, then status
with the Launched/Registered/Initialized conditions and the Ready condition that follows
them). Registrations and liveness timeouts are counted in the NodePool's registration
health when one is given. A deleted NodeClaim is finalized (see `finalize`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodewright.cloud.provider import CloudProvider, RegistrationHook
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.copying import copy_object, deep_copy
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common.patching import patch_object, write
from nodewright.controllers.common.registration_health import (
    RegistrationHealth,
    RegistrationHealthWriter,
)
from nodewright.controllers.nodeclaim.context import (
    CONFLICT_RETRY_SECONDS,
    LifecycleContext,
    Object,
)
from nodewright.controllers.nodeclaim.finalize import Finalizer
from nodewright.controllers.nodeclaim.initialization import Initialization
from nodewright.controllers.nodeclaim.launch import Launch, log_launched
from nodewright.controllers.nodeclaim.liveness import (
    LAUNCH_TIMEOUT_SECONDS,
    REGISTRATION_TIMEOUT_SECONDS,
    Liveness,
)
from nodewright.controllers.nodeclaim.registration import Registration
from nodewright.runtime.clock import Clock
from nodewright.runtime.concurrency import LinearScale, ScaledBucket
from nodewright.runtime.ratelimit import Backoff, RetryLimits
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState
from nodewright.state.wellknown import TERMINATION_FINALIZER


class NodeClaimLifecycle:
    name = "nodeclaim.lifecycle"
    # Karpenter's (1,000 workers at one core, 5,000 at 60; capped, runtime.concurrency):
    # a burst's launches wait out their CreateFleet side by side, and a registration or a
    # deletion is not queued behind them. Each still takes the state lock between requests.
    max_concurrent_reconciles = LinearScale(1000, 5000)
    # Karpenter's: a failed key retried after 1 s doubling to a minute, and all retries
    # at 10 a second per 1,000 workers (1 % of them), bursts of ten seconds' worth.
    retry_limits = RetryLimits(Backoff(initial=1.0, maximum=60.0),
                               ScaledBucket(10, max_concurrent_reconciles))

    def __init__(
        self,
        cluster: ClusterAPI,
        cloud: CloudProvider,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        *,
        launch_timeout: float = LAUNCH_TIMEOUT_SECONDS,
        registration_timeout: float = REGISTRATION_TIMEOUT_SECONDS,
        registration_health: RegistrationHealth | None = None,
        registration_hooks: Sequence[RegistrationHook] = (),
    ) -> None:
        writer = (RegistrationHealthWriter(cluster, clock, registration_health)
                  if registration_health is not None else None)
        self.context = LifecycleContext(cluster, cloud, clock, state, recorder, writer)
        self.launch = Launch(self.context)
        self.registration = Registration(self.context, registration_hooks)
        self.initialization = Initialization(self.context)
        self.liveness = Liveness(self.context, launch_timeout, registration_timeout)
        self.finalizer = Finalizer(self.context)
        self._watches = (Watch("NodeClaim"), Watch("Node", keys=self._nodeclaims_of_node))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _nodeclaims_of_node(self, event: WatchEvent) -> Iterable[str]:
        provider_id = (event.object.get("spec") or {}).get("providerID")
        if not provider_id:
            return ()
        return self.context.state.nodeclaim_names_for_provider_id(str(provider_id))

    def reconcile(self, key: str) -> Result:
        cluster = self.context.cluster
        # The state cache holds the latest version (events are delivered before any
        # reconcile runs); a write based on an older one fails with a conflict and retries.
        cached = self.context.state.nodeclaim(key)
        if cached is None:
            return Result()
        metadata = cached.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            return Result(requeue_after=self.finalizer.reconcile(copy_object(cached)))
        # The cached NodeClaim is read, never changed: it is what the patches are computed
        # against, and `_advance` works on a copy of it.
        claim: Mapping[str, Any] = cached
        if TERMINATION_FINALIZER not in (metadata.get("finalizers") or []):
            with_finalizer = deep_copy(claim)
            with_finalizer["metadata"]["finalizers"] = [
                *(metadata.get("finalizers") or []), TERMINATION_FINALIZER
            ]
            try:
                written = patch_object(cluster, claim, with_finalizer)
            except ConflictError:
                return Result(requeue_after=CONFLICT_RETRY_SECONDS)
            except NotFoundError:
                return Result()
            claim = dict(written) if written is not None else with_finalizer
        return self._advance(claim)

    def _advance(self, claim: Mapping[str, Any]) -> Result:
        after: Object = copy_object(claim)
        NODECLAIM.initialize(after, self.context.clock.now())
        NODECLAIM.restamp(after, self.context.clock.now())
        launched = self.launch.reconcile(after)
        if launched.deleted:
            return Result()
        waits = [
            launched.requeue_after,
            self.registration.reconcile(after),
            self.initialization.reconcile(after),
        ]
        deleted, wait = self.liveness.reconcile(after)
        waits.append(wait)
        if not deleted:
            try:
                write(self.context.cluster, claim, after)
            except ConflictError:
                return Result(requeue_after=CONFLICT_RETRY_SECONDS)
            except NotFoundError:
                return Result()
            if launched.launched is not None:
                log_launched(launched.launched)
        due = [w for w in waits if w is not None]
        return Result(requeue_after=min(due)) if due else Result()
