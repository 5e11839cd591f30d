"""The provisioner: pending pods -> batch -> solve -> NodeClaims (Karpenter's Provisioner).

A singleton reconciler. Pod events for pods kube-scheduler marked unschedulable (and Node
events for nodes tainted `karpenter.sh/disrupted`) trigger the batcher; when the window
closes and the state is synced, every provisionable pod (plus the reschedulable pods of
machines being deleted) is solved against the machines that exist or are launching and
the ready NodePools. New NodeClaims are created within their NodePool's limits, a
round's together (`creates`: the ones refused are reported, the others stand); pods get
a Nominated event naming where they should land, or FailedScheduling with the solver's
reason. While pods stay pending the provisioner looks again every 10 seconds (Karpenter's
pod controller requeues each pending pod that often).

Every solve starts from the whole state, so a crash between two steps loses nothing: the
NodeClaims already created are machines of the next solve and their pods fit there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright import metrics
from nodewright.api.quantity import format_quantity, parse_quantity
from nodewright.cloud.provider import CloudProvider
from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common.logfields import duration, listed, nodeclaim_fields
from nodewright.controllers.common.podrules import PdbLimits, do_not_disrupt_until
from nodewright.controllers.provisioning.batcher import (
    DEFAULT_IDLE_SECONDS,
    DEFAULT_MAX_SECONDS,
    Batcher,
)
from nodewright.controllers.provisioning.buffers import (
    BufferPlacements,
    write_provisioning_conditions,
)
from nodewright.controllers.provisioning.creates import create_together, failures
from nodewright.controllers.provisioning.nodeclaims import (
    claim_capacity,
    nodeclaim_manifest,
    truncation_problem,
)
from nodewright.controllers.provisioning.nominations import still_fitting
from nodewright.controllers.provisioning.problem import (
    AWAITING_OVERLAYS,
    BEING_DELETED,
    NO_INSTANCE_TYPES,
    STATIC_POOL,
    UNSUPPORTED_NODE_CLASS,
    PoolContext,
    StateProblem,
    scheduling_problem,
)
from nodewright.controllers.provisioning.solve_metrics import scheduling_simulation
from nodewright.runtime.clock import Clock
from nodewright.runtime.ratelimit import TokenBucket, clock_seconds
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    allowed_offerings,
    compatible_mask,
    min_values_problem,
    nodepool_template,
)
from nodewright.scheduling.pods import Pod, SpecError
from nodewright.scheduling.podvalidation import DRA_NOT_SUPPORTED
from nodewright.scheduling.solver import (
    PreparedNodes,
    SchedulingResult,
    solve,
    zone_constraints,
)
from nodewright.scheduling.targets import PlannedNodeClaim
from nodewright.state import NODES_RESOURCE, ClusterState, StateNode, podutil
from nodewright.state.pods import pod_key
from nodewright.state.wellknown import DISRUPTED_TAINT, NODEPOOL_LABEL, has_taint

log = logging.getLogger(__name__)

PENDING_RECHECK_SECONDS = 10.0
UNSYNCED_RETRY_SECONDS = 1.0
FAILED_SCHEDULING_DEDUPE_SECONDS = 300.0
NO_COMPATIBLE_DEDUPE_SECONDS = 60.0
NO_COMPATIBLE_TYPES = "NodePool requirements filtered out all compatible available instance types"
NO_DYNAMIC_NODEPOOLS = "no dynamic nodepools found"
# Karpenter's KarpenterManagedLabelDoesNotExistError.
AVOIDS_KARPENTER = ("configured to not run on a Karpenter provisioned node "
                    "(requirement=karpenter.sh/nodepool DoesNotExist)")


@dataclass(frozen=True)
class ProvisionerOptions:
    batch_idle_seconds: float = DEFAULT_IDLE_SECONDS
    batch_max_seconds: float = DEFAULT_MAX_SECONDS
    # MIN_VALUES_POLICY=BestEffort.
    relax_min_values: bool = False
    # SOLVE_DEADLINE (wall seconds; None: plans depend only on the cluster's state).
    solve_deadline: float | None = None
    # PREFERENCE_POLICY=Ignore.
    ignore_preferences: bool = False


@dataclass
class ProvisioningOutcome:
    """What one solve decided (for tests, the simulator's report and the benchmark)."""

    pods: int = 0
    placed: int = 0  # pending pods kept where an earlier solve put them
    created: list[str] = field(default_factory=list)
    nominated: dict[str, str] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    # Pods left for the next solve for want of a capacity reservation (with why).
    deferred: dict[str, str] = field(default_factory=dict)
    skipped_pools: Mapping[str, str] = field(default_factory=dict)


class Provisioner:
    name = "provisioner"
    # The solve runs outside the state lock (see `reconcile`).
    manages_state_lock = True

    def __init__(
        self,
        cluster: ClusterAPI,
        cloud: CloudProvider,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        options: ProvisionerOptions | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.recorder = recorder
        options = options or ProvisionerOptions()
        self.batcher = Batcher(clock, options.batch_idle_seconds, options.batch_max_seconds)
        self.relax_min_values = options.relax_min_values
        self.solve_deadline = options.solve_deadline
        self.ignore_preferences = options.ignore_preferences
        # Karpenter rate-limits Nominated events across all pods: 5 a second, bursts of 10.
        self._nomination_limiter = TokenBucket(5.0, 10, now=clock_seconds(clock))
        self.outcomes: list[ProvisioningOutcome] = []
        self._ignored = 0
        # Pending pods this solve refused (Karpenter's Validate), by key.
        self._rejected: list[str] = []
        # Pods of this solve from machines being deleted (the rest are pending or virtual).
        self._from_deleting = 0
        # Pods of this solve that claim devices (DRA), with why nothing launches for them.
        self._dra: dict[str, str] = {}
        # The machines of the previous solve with their usage: the next solve works out
        # again only the machines whose model, bound pods or DaemonSets changed since.
        self._prepared: PreparedNodes | None = None
        self._watches: tuple[Watch, ...] = (
            Watch("Pod", keys=self._on_pod),
            Watch("Node", keys=self._on_node),
        )
        if state.buffers is not None:
            # A buffer resolved again (its replicas or chunk may have changed).
            self._watches += (Watch("CapacityBuffer", keys=self._on_buffer),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    # -- triggers (called by the driver for each event, after the state saw it) ----------

    def _on_pod(self, event: WatchEvent) -> Iterable[str]:
        if event.type == "DELETED" or not podutil.is_provisionable(event.object):
            return ()
        uid = (event.object.get("metadata") or {}).get("uid") or event.key
        self.batcher.trigger(("pod", uid))
        return ("",)

    def _on_node(self, event: WatchEvent) -> Iterable[str]:
        if event.type == "DELETED":
            return ()
        if not has_taint((event.object.get("spec") or {}).get("taints") or [], DISRUPTED_TAINT):
            return ()
        uid = (event.object.get("metadata") or {}).get("uid") or event.key
        self.batcher.trigger(("node", uid))
        return ("",)

    def _on_buffer(self, event: WatchEvent) -> Iterable[str]:
        if event.type == "DELETED" and self.state.buffers is not None:
            # Whichever of this and the capacitybuffer controller sees it first.
            self.state.buffers.remove(event.key)
        uid = (event.object.get("metadata") or {}).get("uid") or event.key
        version = (event.object.get("metadata") or {}).get("resourceVersion")
        self.batcher.trigger(("buffer", uid, version))
        return ("",)

    # -- the loop ------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        """Under the state lock, but for the solve itself: the problem is built from the
        state under it and the result acted on under it again, so other controllers run
        (and events arrive) while the solver works. What the solve did not see (a pod bound
        meanwhile, a node gone) the next solve corrects, as in Karpenter."""
        with self.state.lock:
            return self._reconcile()

    def _reconcile(self) -> Result:
        if not self.batcher.open:
            if not self._has_work():
                return Result()
            # Pods still pending: open a window as their periodic requeue would.
            self.batcher.trigger(("recheck", self.clock.now()))
        left = self.batcher.seconds_left()
        if left:
            return Result(requeue_after=left)
        if not self.state.synced(self.cluster):
            return Result(requeue_after=UNSYNCED_RETRY_SECONDS)
        self.batcher.close()
        self.provision()
        return Result(requeue_after=PENDING_RECHECK_SECONDS) if self._has_work() else Result()

    def _has_work(self) -> bool:
        buffers = self.state.buffers
        if buffers is not None and buffers.buffers():
            return True  # headroom is looked at as often as pending pods
        if self.state.has_provisionable_pods():
            return True
        names = self._deleting_node_names()
        if not names:
            return False
        pdbs = self._pdbs()
        return any(self._reschedulable(node_name, pdbs) for node_name in names)

    def _deleting_node_names(self) -> list[str]:
        return [n.node_name for n in self.state.deleting_nodes() if n.node is not None]

    def _pdbs(self) -> PdbLimits:
        pdbs, _ = PdbLimits.build(self.state.pdbs(), list(self.state.pods.objects.values()))
        return pdbs

    def _reschedulable(self, node_name: str, pdbs: PdbLimits) -> list[Mapping[str, Any]]:
        """Pods of a deleting node that will need a place soon (Karpenter's
        IsCurrentlyReschedulable): not a do-not-disrupt pod that waits out its node's
        terminationGracePeriod, nor one a PodDisruptionBudget fully blocks (maxUnavailable
        0 or 0%, minAvailable 100%). Capacity launched for those would wait idle."""
        now = self.clock.now()
        return [
            pod for pod in self.state.pods_on(node_name)
            if podutil.is_reschedulable(pod)
            and not (podutil.is_active(pod) and do_not_disrupt_until(pod, now)[0])
            and pdbs.blocking(pod, now, fully_only=True) is None
        ]

    # -- one solve -----------------------------------------------------------------------

    def pods_to_schedule(self) -> tuple[list[Pod], list[tuple[Pod, StateNode]]]:
        """(pods to place, pods already placed with their machine). To place: pending pods
        (unreadable ones reported and skipped) and the currently reschedulable pods of
        machines being deleted (they will need a place once their node drains). Already
        placed: pending pods whose nomination to a machine still holds
        (`ClusterState.nominated_machine`) and that still fit there beside what is bound
        (`nominations.still_fitting`); they keep their room there, so a later solve does not
        launch for them again, and the others are placed anew."""
        pods: list[Pod] = []
        placed: list[tuple[Pod, StateNode]] = []
        refreshed: dict[str, str] = {}
        self._dra = {}
        self._rejected = []
        for obj in self.state.provisionable_pods():
            model = self._model(obj)
            if model is None:
                self._ignored += 1
                continue
            if _avoids_karpenter(model):
                # Karpenter's Validate, with no event for this one.
                self._reject(model, AVOIDS_KARPENTER)
                continue
            if model.invalid is not None:
                # Karpenter's Validate: the pod is ignored, with an event saying why
                # (PodFailedToScheduleEvent of the validation error itself).
                self._reject(model, model.invalid)
                self._failed(obj, f"Failed to schedule pod, {model.invalid}")
                continue
            if model.dra:
                self._refuse_dra(obj, model)
                continue
            volume_problem = self.state.volume_problem(model)
            if volume_problem is not None:
                # Karpenter ignores the pod until its volumes can be planned for.
                self._reject(model, volume_problem)
                self._failed(obj, f"Failed to schedule pod, {volume_problem}")
                continue
            machine = self.state.nominated_machine(model.key)
            if machine is None:
                pods.append(model)
                continue
            placed.append((model, machine))
        placed, released = still_fitting(self.state, placed)
        pods.extend(released)
        for model, machine in placed:
            if not machine.initialized:
                refreshed[model.key] = str(self.state.pod_nomination(model.key))
        self.state.record_pod_nominations(refreshed)
        names = self._deleting_node_names()
        pdbs = self._pdbs() if names else PdbLimits(())
        self._from_deleting = 0
        for node_name in names:
            for obj in self._reschedulable(node_name, pdbs):
                model = self._model(obj)
                if model is not None and model.dra:
                    self._refuse_dra(obj, model)
                elif model is not None:
                    pods.append(replace(model, node_name=None))
                    self._from_deleting += 1
        if self.state.buffers is not None:
            # After the real pods, as Karpenter adds them after its Validate filter.
            pods.extend(self.state.buffers.all())
        return pods, placed

    def _reject(self, model: Pod, why: str) -> None:
        """A pod Karpenter's Validate refuses (GetPendingPods): counted as ignored, logged
        at debug level, and a failed scheduling decision is remembered for it
        (MarkPodSchedulingDecisions, which the pod metrics read)."""
        self._ignored += 1
        self._rejected.append(model.key)
        log.debug("ignoring pod", extra={"Pod": model.key, "error": why})

    def _refuse_dra(self, obj: Mapping[str, Any], model: Pod) -> None:
        """IGNORE_DRA_REQUESTS=true (Karpenter's default, the only mode nodewright has):
        nothing is launched for a pod that claims devices through DRA."""
        self._dra[model.key] = DRA_NOT_SUPPORTED
        self._failed(obj, f"Failed to schedule pod, {DRA_NOT_SUPPORTED}")
        log.info("skipping pod with Dynamic Resource Allocation requirements, not yet "
                 "supported by Karpenter", extra={"Pod": model.key})

    def _model(self, obj: Mapping[str, Any]) -> Pod | None:
        try:
            return self.state.pod_model(pod_key(obj))
        except SpecError as error:
            self._failed(obj, f"Failed to schedule pod, {error}")
            return None
        except KeyError:
            return None

    def provision(self) -> ProvisioningOutcome:
        self._ignored = 0
        pods, placed = self.pods_to_schedule()
        metrics.SCHEDULER_IGNORED_PODS.set(self._ignored)
        buffers = self.state.buffers
        outcome = ProvisioningOutcome(pods=len(pods), placed=len(placed),
                                      unschedulable=dict(self._dra))
        if self._dra or self._rejected:
            self.state.record_scheduling_decisions([*self._rejected, *self._dra], {})
        for kept_pod, machine in placed:
            # Karpenter simulates these again each pass and places them where they fit, the
            # same machine: it nominates the machine again and tells the pod (deduplicated
            # per pod for two minutes: a pod that waits longer is told again).
            self.state.nominate(machine)
            self._nominated(kept_pod.key, _shown_target(machine))
        if not pods:
            self._buffer_status(built=None, result=None)
            return outcome
        kept = [replace(pod, node_name=machine.name) for pod, machine in placed]
        log.debug("computing scheduling decision for provisionable pod(s)", extra={
            "pending-pods": len(pods) - self._from_deleting,
            "deleting-pods": self._from_deleting})
        started = self.clock.now()
        pending = [pod for pod in pods if podutil.phase(self.state.pod(pod.key) or {}) == "Pending"]
        with scheduling_simulation(self.name, len(pods), pending) as simulation, \
                metrics.measure(metrics.PROVISIONER_SCHEDULING_DURATION):
            built = scheduling_problem(self.state, self.cloud, pods, placed=kept,
                                       relax_min_values=self.relax_min_values,
                                       ignore_preferences=self.ignore_preferences,
                                       reserved_capacity_fallback=False)
            if not built.pools and not built.unresolved:
                outcome.skipped_pools = built.skipped_pools
                return self._no_dynamic_nodepools(pods, outcome)
            with self.state.lock.released():
                # The plan is the same with or without the prepared machines (`solve`);
                # a machine is kept only while its model, its bound pod models (the
                # same objects, in order) and the DaemonSets are the same.
                prepared = PreparedNodes(built.problem, earlier=self._prepared)
                simulation.zones = zone_constraints(built.problem, pending, prepared)
                result = solve(built.problem, prepared, deadline=self.solve_deadline)
                self._prepared = prepared
        self._report_incompatible_pools(built)
        outcome.skipped_pools = built.skipped_pools
        if result.nodeclaims:
            log.info("found provisionable pod(s)", extra={
                "Pods": listed([_shown(pod) for pod in pods]),
                "duration": duration((self.clock.now() - started).total_seconds())})
            log.info("computed new nodeclaim(s) to fit pod(s)", extra={
                "nodeclaims": len(result.nodeclaims),
                "pods": sum(len(planned.pods) for planned in result.nodeclaims)})
            fitting = [keys for _, keys in result.existing if keys]
            if fitting:
                log.info("computed unready node(s) will fit pod(s)", extra={
                    "nodes": len(fitting), "pods": sum(len(keys) for keys in fitting)})
        _log_skipped_pools(built)
        by_key = {pod.key: pod for pod in pods}
        failed = self._create_nodeclaims(built, result, by_key, outcome)
        self._nominate_existing(built, result, outcome)
        for key, reason in result.unschedulable:
            if buffers is not None and buffers.is_virtual(key):
                continue
            outcome.unschedulable[key] = reason
            pod = self.state.pod(key)
            if pod is not None:
                self._unschedulable(pod, reason)
        if result.deferred:
            # Not unschedulable: the reservation they need is taken by NodeClaims this
            # solve launches; the next solve sees it used up (no event, as Karpenter).
            outcome.deferred = dict(result.deferred)
            log.debug("deferring scheduling decision for provisionable pod(s) to future "
                      "simulation due to limited reserved offering capacity",
                      extra={"Pods": listed([_shown(by_key[key]) if key in by_key else key
                                             for key, _ in result.deferred])})
        if buffers is not None:
            # Virtual pods are never nominated nor have decisions: nothing waits for them.
            outcome.nominated = {key: target for key, target in outcome.nominated.items()
                                 if not buffers.is_virtual(key)}
            self._buffer_status(built, result)
        self.state.record_pod_nominations(outcome.nominated)
        self.state.record_scheduling_decisions(
            [pod.key for pod in pods if buffers is None or not buffers.is_virtual(pod.key)],
            outcome.nominated)
        metrics.SCHEDULER_UNSCHEDULABLE_PODS.labels(controller=self.name).set(
            len(outcome.unschedulable))
        self.outcomes.append(outcome)
        del self.outcomes[:-20]
        if failed is not None:
            # Once the round is recorded: the NodeClaims created stand, the key is retried.
            raise failed
        return outcome

    def _no_dynamic_nodepools(self, pods: Sequence[Pod], outcome: ProvisioningOutcome
                              ) -> ProvisioningOutcome:
        """Karpenter's ErrNodePoolsNotFound (provisioner.go Schedule): no NodePool that is
        dynamic, Ready and not being deleted, so there is no scheduler at all. It says so in
        its log and remembers a failed decision for each pod; no pod is nominated or told
        anything (no FailedScheduling event), not even one an in-flight node would take."""
        log.info("no dynamic nodepools found")
        real = self._real(pod.key for pod in pods)
        outcome.unschedulable.update((key, NO_DYNAMIC_NODEPOOLS) for key in real)
        self.state.record_scheduling_decisions(real, ())
        self._buffer_status(built=None, result=None)
        self.outcomes.append(outcome)
        del self.outcomes[:-20]
        return outcome

    def _create_nodeclaims(
        self,
        built: StateProblem,
        result: SchedulingResult,
        pods: Mapping[str, Pod],
        outcome: ProvisioningOutcome,
    ) -> ApiError | None:
        """Create the round's NodeClaims within their NodePools' limits, all together (as
        Karpenter's CreateNodeClaims), then record each created one in the state; what to
        report for the refused ones. A NodeClaim's room under its NodePool's limits is
        taken, one NodeClaim after another, before any request goes out, so creates in
        flight together never exceed a limit; one whose create fails leaves its room
        unused until the next round."""
        usage = {name: self.state.nodepool_resources(name) for name in built.pools}
        launches: list[tuple[PlannedNodeClaim, PoolContext, dict[str, Any]]] = []
        for planned in result.nodeclaims:
            pool = built.pools[planned.nodepool]
            limited = bool(pool.model.spec.limits)
            capacity = claim_capacity(planned, pool) if limited else {}
            exceeded = _limits_exceeded(pool, usage[pool.name], capacity) if limited else None
            # Its types cut to the most a NodeClaim lists may break a minValues (Karpenter
            # drops such NodeClaims before the limits are looked at).
            reason = truncation_problem(planned, pool)
            if reason is None and exceeded is not None:
                reason = f'NodePool "{pool.name}": {exceeded}'
            if reason is not None:
                for key in self._real(planned.pods):
                    outcome.unschedulable[key] = reason
                    pod = self.state.pod(key)
                    if pod is not None:
                        self._unschedulable(pod, reason)
                continue
            _add(usage[pool.name], capacity)
            usage[pool.name][NODES_RESOURCE] = usage[pool.name].get(NODES_RESOURCE, 0) + 1000
            launches.append((planned, pool, nodeclaim_manifest(planned, pool, pods)))
        answers = create_together(self.cluster, self.state.lock,
                                  [manifest for _, _, manifest in launches])
        for (planned, pool, _), created in zip(launches, answers, strict=True):
            if isinstance(created, ApiError):
                log.error("creating a NodeClaim for NodePool %s: %s", pool.name, created)
                continue
            # Seen at once, not only when its watch event arrives (Karpenter does the same).
            self.state.observe_written(created)
            name = str(created["metadata"]["name"])
            outcome.created.append(name)
            metrics.NODECLAIMS_CREATED.labels(
                reason="provisioned", nodepool=pool.name,
                min_values_relaxed=str(planned.min_values_relaxed).lower()).inc()
            log.info("created nodeclaim", extra={
                **nodeclaim_fields(created),
                "requests": ((created.get("spec") or {}).get("resources") or {}).get("requests"),
                "instance-types": _type_list(planned)})
            for key in self._real(planned.pods):
                outcome.nominated[key] = f"nodeclaim/{name}"
                self._nominated(key, f"nodeclaim/{name}")
        return failures(answers)

    def _nominate_existing(
        self, built: StateProblem, result: SchedulingResult, outcome: ProvisioningOutcome
    ) -> None:
        for node_name, keys in result.existing:
            machine = built.nodes.get(node_name)
            if machine is None:
                continue
            real = self._real(keys)
            if not real:
                # Only buffer headroom landed here: no nomination (it would keep emptiness
                # and consolidation off the machine for pods that will never come).
                continue
            self.state.nominate(machine)
            target = (
                f"node/{machine.node_name}" if machine.node is not None and machine.registered
                else f"nodeclaim/{machine.nodeclaim_name}"
            )
            shown = _shown_target(machine)
            for key in real:
                outcome.nominated[key] = target
                self._nominated(key, shown)

    def _real(self, keys: Iterable[str]) -> list[str]:
        buffers = self.state.buffers
        return list(keys) if buffers is None else buffers.real(keys)

    def _buffer_status(self, built: StateProblem | None,
                       result: SchedulingResult | None) -> None:
        """Where this solve put the buffers' virtual pods: the machines hosting some (for
        emptiness) and each buffer's Provisioning condition."""
        buffers = self.state.buffers
        if buffers is None:
            return
        placements = BufferPlacements.of(buffers, built, result)
        if buffers.record_placements(placements.on_machines):
            # Machines that lost (or gained) headroom are (no longer) empty.
            self.state.mark_unconsolidated()
        write_provisioning_conditions(self.cluster, self.clock.now(), placements)

    # -- events --------------------------------------------------------------------------

    def _nominated(self, key: str, target: str) -> None:
        pod = self.state.pod(key)
        if pod is None:
            return
        uid = str((pod.get("metadata") or {}).get("uid") or key)
        self.recorder.publish(Event(
            regarding=pod, type="Normal", reason="Nominated",
            note=f"Pod should schedule on: {target}", action="Nominate",
            dedupe_values=(uid,), rate_limiter=self._nomination_limiter,
        ))

    def _report_incompatible_pools(self, built: StateProblem) -> None:
        """Karpenter's NoCompatibleInstanceTypes: a NodePool whose requirements leave none
        of its instance types (or too few for a minValues) is told so, once a minute."""
        templates = {name: pool.template for name, pool in built.pools.items()}
        for name in sorted(built.unresolved):
            # Kept by Karpenter's scheduler with no instance types at all.
            parsed = self.state.nodepool_model(name)
            if parsed is not None and parsed.model is not None:
                templates[name] = nodepool_template(parsed.model, [],
                                                    relax_min_values=self.relax_min_values)
        for name, template in templates.items():
            why = incompatible_instance_types(template)
            if why is None:
                continue
            nodepool = self.state.nodepool(name)
            if nodepool is None:
                continue
            uid = str((nodepool.get("metadata") or {}).get("uid") or "")
            log.info("skipping, nodepool requirements filtered out all instance types",
                     extra={"NodePool": name, **({"minValuesIncompatibleErr": why}
                                                 if why != NO_COMPATIBLE_TYPES else {})})
            self.recorder.publish(Event(
                regarding=nodepool, type="Warning", reason="NoCompatibleInstanceTypes",
                note=(NO_COMPATIBLE_TYPES if why == NO_COMPATIBLE_TYPES else
                      f"{NO_COMPATIBLE_TYPES} due to minValues incompatibility"),
                action="Schedule", dedupe_values=(uid or name,),
                dedupe_seconds=NO_COMPATIBLE_DEDUPE_SECONDS,
            ))

    def _unschedulable(self, pod: Mapping[str, Any], reason: str) -> None:
        """A pod the solve found no place for (Karpenter's Results.Record): logged as an
        error and told with FailedScheduling."""
        log.error("could not schedule pod", extra={"Pod": pod_key(pod), "error": reason})
        self._failed(pod, f"Failed to schedule pod, {reason}")

    def _failed(self, pod: Mapping[str, Any], message: str) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or pod_key(pod))
        self.recorder.publish(Event(
            regarding=pod, type="Warning", reason="FailedScheduling", note=message,
            action="Schedule", dedupe_values=(uid,),
            dedupe_seconds=FAILED_SCHEDULING_DEDUPE_SECONDS,
        ))


def _log_skipped_pools(built: StateProblem) -> None:
    """Each NodePool left out of the solve, logged as Karpenter's NewScheduler logs it
    (provisioner.go): silently when static, being deleted or of another provider's node
    class; "ignoring nodepool, not ready" (an error) when it would not be Ready (invalid,
    its EC2NodeClass missing or not ready); and for a Ready one without instance types
    "skipping, unable to resolve instance types" (an error), "skipping, no resolved
    instance types found" or, at debug level, "skipping, awaiting nodeoverlay evaluation"."""
    for name, why in sorted(built.skipped_pools.items()):
        fields: dict[str, str] = {"NodePool": name}
        if name in built.unresolved:
            if why == AWAITING_OVERLAYS:
                log.debug("skipping, awaiting nodeoverlay evaluation", extra=fields)
            elif why.endswith(NO_INSTANCE_TYPES):
                log.info("skipping, no resolved instance types found", extra=fields)
            else:
                log.error("skipping, unable to resolve instance types",
                          extra={**fields, "error": why})
        elif why in (STATIC_POOL, BEING_DELETED) or why.endswith(UNSUPPORTED_NODE_CLASS):
            continue
        else:
            log.error("ignoring nodepool, not ready", extra={**fields, "error": why})


def incompatible_instance_types(template: NodePoolTemplate) -> str | None:
    """Why no NodeClaim can launch from the pool whatever its pods: no instance type with
    an offering its requirements allow (NO_COMPATIBLE_TYPES), or, with MIN_VALUES_POLICY
    Strict, too few for a minValues (the unmet minValues); None when some can."""
    requirements = template.requirements
    types = template.instance_types
    compatible = [it for it, fits in zip(types, compatible_mask(types, requirements), strict=True)
                  if fits and allowed_offerings(it, requirements)]
    if template.relax_min_values:
        return None if compatible else NO_COMPATIBLE_TYPES
    # Strict: with none left a minValues is unmet too, and Karpenter says so
    # (filterInstanceTypesByRequirements checks minValues on what remains, even nothing).
    return min_values_problem(compatible, requirements) or (
        None if compatible else NO_COMPATIBLE_TYPES)


def _shown_target(machine: StateNode) -> str:
    """Where Karpenter's NominatePodEvent says a pod should go on an existing machine: its
    NodeClaim, then its Node (even before it registers)."""
    parts = []
    if machine.nodeclaim is not None:
        parts.append(f"nodeclaim/{machine.nodeclaim_name}")
    if machine.node is not None:
        parts.append(f"node/{machine.node_name}")
    return ", ".join(parts)


def _shown(pod: Pod) -> str:
    """`namespace/name`, as Karpenter's logs name a pod (klog.KObj): a virtual pod's key
    is its own (`state.buffers.VirtualPod`), its name Karpenter's."""
    return f"{pod.namespace}/{pod.name}"


def _avoids_karpenter(pod: Pod) -> bool:
    """A pod requiring `karpenter.sh/nodepool DoesNotExist` asks not to run on our nodes."""
    requirement = pod.strict_node_requirements().get(NODEPOOL_LABEL)
    return requirement is not None and requirement.operator == "DoesNotExist"


def _limits_exceeded(
    pool: PoolContext, usage: Mapping[str, int], capacity: Mapping[str, int]
) -> str | None:
    limits = pool.model.spec.limits
    if not limits:
        return None
    for resource, raw in sorted(limits.items()):
        limit = parse_quantity(raw)
        wanted = usage.get(resource, 0) + (
            1000 if resource == NODES_RESOURCE else capacity.get(resource, 0)
        )
        if wanted > limit:
            return (
                f"limits exceeded: {resource} {format_quantity(wanted, resource)} of "
                f"{format_quantity(limit, resource)} with another node"
            )
    return None


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _type_list(planned: PlannedNodeClaim) -> str:
    names = [name for name, _ in planned.instance_types]
    text = ", ".join(names[:5])
    return f"{text} and {len(names) - 5} other(s)" if len(names) > 5 else text
