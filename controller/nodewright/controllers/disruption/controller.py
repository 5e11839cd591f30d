"""The disruption loop (Karpenter's disruption controller): a singleton reconciler that,
once the state cache is synced, looks every 10 seconds for one thing to disrupt.

As Karpenter's orchestration queue, commands run concurrently: each one in flight moves
on by itself (waiting for its replacements to initialize, then deleting its candidates)
while the loop decides the next. Each pass untaints nodes left tainted by a command that
died with an earlier process, then tries the methods in order (emptiness, drift,
multi-node, single-node consolidation) and takes the first command one of them proposes;
candidates of commands in flight are marked for deletion, so budgets count them and no
pass picks them again. Consolidation commands (emptiness included) are re-checked
15 seconds later against the cluster as it is then (`methods.validation`) and dropped when
something changed; drift commands start at once. Never sleeping, the loop keeps the
command awaiting validation and asks to run again when it is due.

A pass is CPU-heavy: the loop reads the state under its lock, but works out the pass on a
snapshot of it outside the lock (other controllers and the watch events go on meanwhile),
and before it starts a command checks under the lock again that the candidates are as
the pass saw them (`_changed_since`); when one is not, the pass starts over.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.cloud.provider import CloudProvider
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.podrules import PdbLimits
from nodewright.controllers.disruption import balanced
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import REASONS, next_change
from nodewright.controllers.disruption.candidates import CandidateContext, PodFacts
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions, Pass, Resume
from nodewright.controllers.disruption.methods.order import METHODS, VALIDATED
from nodewright.controllers.disruption.methods.validation import (
    CHURN,
    Invalid,
    failed,
    failure_reason,
    validate,
)
from nodewright.controllers.disruption.orchestration import CommandFailed, Orchestrator
from nodewright.controllers.disruption.simulation import (
    EarlierPass,
    PodModels,
    SimulationBase,
)
from nodewright.controllers.disruption.verdict_publishing import PassVerdicts, VerdictPublisher
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state.cluster import ClusterState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DisruptionOptions:
    poll_seconds: float = 10.0
    validation_seconds: float = 15.0
    in_flight_poll_seconds: float = 1.0
    unsynced_retry_seconds: float = 1.0
    # A command whose replacements have not initialized by then fails (Karpenter: 10 min).
    command_timeout_seconds: float = 600.0
    methods: MethodOptions = field(default_factory=MethodOptions)


@dataclass
class _Pending:
    command: Command
    due: datetime


def _on_start(event: WatchEvent) -> Iterable[str]:
    """The loop polls itself; a NodePool seen at startup is what first starts it."""
    return ("",) if event.type == "ADDED" else ()


class DisruptionController:
    name = "disruption"
    # A pass is worked out outside the state lock (see the module's docstring).
    manages_state_lock = True

    def __init__(
        self,
        cluster: ClusterAPI,
        cloud: CloudProvider,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        decisions: ex.DecisionLog | None = None,
        options: DisruptionOptions | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self.decisions = decisions if decisions is not None else ex.DecisionLog()
        self.options = options or DisruptionOptions()
        self.publisher = VerdictPublisher(cluster, recorder, self.decisions)
        self.orchestrator = Orchestrator(
            cluster, state, recorder, self.decisions,
            timedelta(seconds=self.options.command_timeout_seconds))
        self.pending: _Pending | None = None
        # When a pass that found nothing to do is followed by the next (Karpenter's polling
        # period): commands in flight move on every second meanwhile, but no pass is
        # worked out before then (Karpenter's queue is a controller of its own).
        self._next_pass: datetime | None = None
        self._consolidated: dict[str, tuple[object, ...]] = {}
        self._resume = Resume()
        self._pod_facts = PodFacts()
        self._pod_models = PodModels()
        self._earlier = EarlierPass()
        self.commands: list[Command] = []  # started commands, newest last (kept short)
        self.last_pass: Pass | None = None
        self._watches = (Watch("NodePool", _on_start),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @property
    def in_flight(self) -> Command | None:
        """The oldest command in flight (see `orchestrator.commands` for all of them)."""
        return self.orchestrator.in_flight

    def reconcile(self, key: str) -> Result:
        with self.state.lock:
            return self._reconcile()

    def _reconcile(self) -> Result:
        if not self.state.synced(self.cluster):
            return Result(requeue_after=self.options.unsynced_retry_seconds)
        now = self.clock.now()
        # As Karpenter's queue: commands in flight move on by themselves while the loop
        # decides the next; their candidates are marked for deletion, so budgets count them
        # and no pass picks them again.
        in_flight = self.orchestrator.progress(now)
        self.orchestrator.release_orphans(self.state.nodes(), now)
        if self.pending is not None:
            if now < self.pending.due:
                result = Result(requeue_after=(self.pending.due - now).total_seconds())
            else:
                result = self._validate_and_start(self.pending.command, now)
        elif self._next_pass is not None and now < self._next_pass:
            result = Result(requeue_after=(self._next_pass - now).total_seconds())
        else:
            result = self._decide(now)
        if in_flight and (result.requeue_after is None
                          or result.requeue_after > self.options.in_flight_poll_seconds):
            result = Result(requeue_after=self.options.in_flight_poll_seconds)
        return result

    # -- one pass ----------------------------------------------------------------------------

    def new_pass(self, now: datetime, state: ClusterState | None = None) -> Pass:
        """A pass over `state` (default: the state cache itself)."""
        state = state if state is not None else self.state
        self._pod_facts.begin_pass(state.pods.objects)
        self._pod_models.begin_pass(state.pods.objects)
        pdb_objects = state.pdbs()
        # A PDB without status (no disruption controller wrote one yet) is worked out from
        # the pods it selects; only then are all pods needed.
        unwritten = any("disruptionsAllowed" not in (p.get("status") or {}) for p in pdb_objects)
        pods = list(state.pods.objects.values()) if unwritten else []
        pdbs, problems = PdbLimits.build(pdb_objects, pods)
        for problem in problems:
            log.warning("disruption: %s", problem)
        base = SimulationBase(state, self.cloud, pdbs, now, self._pod_models,
                              relax_min_values=self.options.methods.relax_min_values,
                              ignore_preferences=self.options.methods.ignore_preferences,
                              earlier=self._earlier)
        context = CandidateContext(
            now=now,
            nodepools=base.nodepools,
            instance_types=base.instance_types,
            pdbs=pdbs,
            pods_on=state.kept_pods_on,
            skipped_pools=base.skipped_pools,
            pod_facts=self._pod_facts,
            recorder=self.recorder,
        )
        return Pass(now, state, base, context, PassVerdicts(now), self.options.methods,
                    self._resume)

    def _decide(self, now: datetime) -> Result:
        snapshot = self.state.snapshot()
        consolidation_mark = self._consolidation_mark(snapshot)
        with self.state.lock.released():
            current, command = self._work_out(now, snapshot, consolidation_mark)
        if command is None:
            wait = self._idle_requeue(current, now)
            self._next_pass = now + timedelta(seconds=wait)
            return Result(requeue_after=wait)
        self._next_pass = None
        if self._changed_since(command, snapshot):
            self._consolidated.clear()
            return Result(requeue_after=0.0)
        self._approved_events(command)
        if command.method in VALIDATED:
            self.pending = _Pending(command, now + timedelta(
                seconds=self.options.validation_seconds))
            self._record(command, now, started=False)
            return Result(requeue_after=self.options.validation_seconds)
        return self._start(current, command, now)

    def _work_out(self, now: datetime, state: ClusterState,
                  consolidation_mark: tuple[object, ...]) -> tuple[Pass, Command | None]:
        """One pass over `state`: every machine's verdict (published) and the command of
        the first method that proposes one. Reads nothing but `state`, which may be a
        snapshot (it runs outside the state lock)."""
        current = self.last_pass = self.new_pass(now, state)
        current.report_blocked()
        self._budget_events(current, state)
        command: Command | None = None
        # Which machines are blocked is part of the answer too: a pod losing its
        # do-not-disrupt annotation changes no binding, but frees its node.
        state_mark = (*consolidation_mark, current.blocked_signature())
        current.state_mark = state_mark
        for method, compute in METHODS:
            skippable = method != ex.DRIFT
            if skippable and self._consolidated.get(method) == state_mark:
                continue
            with metrics.measure(disruption_metrics.EVALUATION_DURATION,
                                 reason=_reason_label(method), consolidation_type=_type(method)):
                command = compute(current)
            if command is not None:
                break
            # As Karpenter: a method stopped by its budget, or by a disruption budget, may
            # find something next time although nothing changed.
            if (skippable and method not in current.stopped_early
                    and not _budget_constrained(current, method)):
                self._consolidated[method] = state_mark
        self.publisher.publish(current.verdicts)
        return current, command

    def _changed_since(self, command: Command, snapshot: ClusterState) -> bool:
        """Whether a candidate of `command` changed since `snapshot` was taken in a way
        that voids the command: gone, now being deleted, another NodeClaim, or other pods
        bound to it (status updates, a heartbeat, do not count)."""
        if snapshot is self.state:
            return False
        for candidate in command.candidates:
            live = self.state.node(candidate.provider_id)
            seen = snapshot.node(candidate.provider_id)
            if live is None or seen is None or live.is_marked_for_deletion:
                return True
            if (live.nodeclaim_name != seen.nodeclaim_name or live.deleting
                    or live.pods.requests.keys() != seen.pods.requests.keys()):
                log.debug("disruption: %s changed while the pass was worked out; "
                          "starting over", candidate.name)
                return True
        return False

    def _consolidation_mark(self, state: ClusterState) -> tuple[object, ...]:
        """What consolidation's answer depends on: the state's consolidation mark (nodes,
        NodeClaims and pods) and the versions of NodePools, their node classes and PDBs."""
        versions: list[tuple[str, str]] = []
        for pool in state.nodepools():
            versions.append((objects.name(pool), str(objects.meta(pool).get("resourceVersion"))))
            reference = ((pool.get("spec") or {}).get("template") or {}).get("spec", {}).get(
                "nodeClassRef") or {}
            node_class = state.node_class(str(reference.get("name", "")))
            if node_class is not None:
                versions.append((objects.key(node_class),
                                 str(objects.meta(node_class).get("resourceVersion"))))
        for pdb in state.pdbs():
            versions.append((objects.key(pdb), str(objects.meta(pdb).get("resourceVersion"))))
        # The live cache's mark (a snapshot's would refresh its own copy every 5 minutes).
        return (self.state.consolidation_state(), tuple(sorted(versions)))

    def _validate_and_start(self, command: Command, now: datetime) -> Result:
        self.pending = None
        snapshot = self.state.snapshot()
        with self.state.lock.released():
            current = self.new_pass(now, snapshot)
            outcome = validate(current, command)
        if not isinstance(outcome, str) and self._changed_since(outcome, snapshot):
            # What Karpenter's second look at the candidates, after the simulation, finds.
            failed(command, len(command.candidates))
            outcome = Invalid("a candidate changed while it was validated", CHURN)
        if isinstance(outcome, str):
            for candidate in command.candidates:
                message = (f"consolidation rejected after validation (reason: "
                           f"{failure_reason(outcome)}): {outcome} ({command.describe()})")
                if command.method == ex.EMPTINESS:
                    # Karpenter's Emptiness abandons the command with a log line only; the
                    # ConsolidationRejected event is single- and multi-node
                    # consolidation's (EmitRejectedEvents).
                    self.publisher.record(ex.Decision(
                        time=now, node=candidate.name, nodeclaim=candidate.nodeclaim_name,
                        nodepool=candidate.nodepool_name, method=command.method,
                        outcome=ex.REJECTED, event_reason=ex.CONSOLIDATION_REJECTED,
                        message=message, cause=ex.CAUSE_VALIDATION))
                    continue
                current.verdict(candidate.node, command.method, ex.REJECTED, ex.CAUSE_VALIDATION,
                                message, ex.CONSOLIDATION_REJECTED)
            self.publisher.publish(current.verdicts)
            self._consolidated.clear()
            return Result(requeue_after=0.0)
        return self._start(current, outcome, now)

    def _start(self, current: Pass, command: Command, now: datetime) -> Result:
        moving, _ = current.base.moving(pod for c in command.candidates for pod in c.pods)
        try:
            self.orchestrator.start(command, current.base.pools,
                                    {pod.key: pod for pod in moving}, now)
        except CommandFailed:
            return Result(requeue_after=self.options.poll_seconds)
        self._nominate_destinations(command)
        self.commands.append(command)
        del self.commands[:-50]
        self._record(command, now, started=True)
        self._consolidated.clear()
        # Karpenter requeues at once after a command starts: the next is decided while
        # this one waits for its replacements.
        return Result(requeue_after=0.0)

    def _nominate_destinations(self, command: Command) -> None:
        """As Karpenter's StartCommand (`cmd.Results.Record`): the machines the command's
        pods are to move onto are nominated, so the passes that follow at once do not
        take away the room the command counts on."""
        if not command.destinations:
            return
        wanted = set(command.destinations)
        for machine in self.state.nodes():
            if machine.name in wanted and not machine.is_marked_for_deletion:
                self.state.nominate(machine)

    # -- explanations ------------------------------------------------------------------------

    def _record(self, command: Command, now: datetime, *, started: bool) -> None:
        """A started command disrupts its candidates; one awaiting validation is news too
        (Karpenter's ConsolidationCandidate event)."""
        verdicts = PassVerdicts(now)
        for candidate in command.candidates:
            if started:
                outcome, cause, reason = ex.DISRUPTED, command.reason, ex.DISRUPTION_TERMINATING
                message = command.describe()
            else:
                outcome, cause, reason = ex.KEPT, "Candidate", ex.CONSOLIDATION_CANDIDATE
                message = (f"consolidation candidate, validating for "
                           f"{self.options.validation_seconds:g}s: {command.describe()}")
            verdicts.add(candidate.node, command.method, outcome, cause, message, reason,
                         decision=command.decision,
                         replacements=tuple(command.replacement_names),
                         savings=command.savings)
        self.publisher.publish(verdicts)

    def _approved_events(self, command: Command) -> None:
        for event in balanced.approved_events(command.candidates, command.scores,
                                              self.state.nodepool):
            self.recorder.publish(event)

    def _budget_events(self, current: Pass, state: ClusterState) -> None:
        """A DisruptionBlocked event on each NodePool whose budget allows nothing now."""
        for reason in REASONS:
            for room in current.rooms(reason).values():
                if room.nodes and room.limit.allowed == 0:
                    nodepool = state.nodepool(room.nodepool)
                    if nodepool is None:
                        continue
                    self.recorder.publish(Event(
                        regarding=nodepool, type="Normal", reason=ex.DISRUPTION_BLOCKED,
                        note=f"No allowed disruptions for disruption reason {reason} due to "
                             f"blocking budget ({room.limit.describe()})",
                        dedupe_values=(str(room.nodepool), reason), dedupe_seconds=60.0))

    def _idle_requeue(self, current: Pass, now: datetime) -> float:
        """The poll period, or sooner when a budget window opens or closes before it."""
        wait = self.options.poll_seconds
        for pool in current.context.nodepools.values():
            change = next_change(pool.spec.disruption.budgets, now)
            if change is not None:
                wait = min(wait, max((change - now).total_seconds(), 0.0) + 0.001)
        return wait


def _budget_constrained(current: Pass, method: str) -> bool:
    return any(
        v.decision.cause == ex.CAUSE_BUDGET and v.decision.method == method
        for v in current.verdicts.by_node.values()
    )


def _reason_label(method: str) -> str:
    return {ex.EMPTINESS: "empty", ex.DRIFT: "drifted"}.get(method, "underutilized")


def _type(method: str) -> str:
    return {ex.EMPTINESS: "empty", ex.MULTI_NODE: "multi", ex.SINGLE_NODE: "single"}.get(
        method, "")
