"""Carrying out commands (Karpenter's orchestration queue): every started command waits for
its own replacements, independently of the others, while the disruption loop goes on
deciding the next (budgets count the candidates of commands in flight, which are marked
for deletion, and no node is in two commands).

Start: taint each candidate `karpenter.sh/disrupted:NoSchedule` (no new pods land there)
and set its NodeClaim's `DisruptionReason` condition; create the replacement NodeClaims
(together, as Karpenter's CreateNodeClaims: one refused fails the command, those created
stay as capacity);
only then mark the candidates for deletion in the state cache (marking first would let the
provisioner launch capacity for their pods a second time). Progress: once every
replacement's NodeClaim is Initialized, delete the candidates' NodeClaims (the termination
controller drains them, PDBs respected). A replacement that disappears, or does not
initialize within the command timeout, fails the command: the candidates are untainted,
unmarked and left alone.

After a restart nothing is in flight: nodes still tainted by a command that died with the
process are untainted by `release_orphans` (their replacements simply stay as capacity).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright import metrics
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.logfields import listed
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.verdict_publishing import (
    DISRUPTION_REASON,
    set_nodeclaim_condition,
)
from nodewright.controllers.provisioning.creates import create_together, failures
from nodewright.controllers.provisioning.nodeclaims import MIN_VALUES_RELAXED, nodeclaim_manifest
from nodewright.controllers.provisioning.problem import PoolContext
from nodewright.controllers.static.nodeclaims import static_nodeclaim_manifest
from nodewright.scheduling.pods import Pod
from nodewright.state.cluster import ClusterState
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import (
    DISRUPTED_TAINT,
    NODEPOOL_LABEL,
    has_taint,
    matches,
    taint_dict,
    taint_of,
)

log = logging.getLogger(__name__)

INITIALIZED = "Initialized"


class CommandFailed(Exception):
    pass


def _snake(name: str) -> str:
    """WhenEmptyOrUnderutilized -> when_empty_or_underutilized (Karpenter's pretty.ToSnakeCase)."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def _title(reason: str) -> str:
    return reason[:1].upper() + reason[1:]


class Orchestrator:
    def __init__(self, cluster: ClusterAPI, state: ClusterState, recorder: EventRecorder,
                 decisions: ex.DecisionLog, timeout: timedelta) -> None:
        self.cluster = cluster
        self.state = state
        self.recorder = recorder
        self.decisions = decisions
        self.timeout = timeout
        self.commands: list[Command] = []  # in flight, oldest first

    @property
    def in_flight(self) -> Command | None:
        """The oldest command in flight."""
        return self.commands[0] if self.commands else None

    def holds(self, provider_id: str) -> bool:
        """Whether a command in flight disrupts the node `provider_id`."""
        return any(c.provider_id == provider_id for cmd in self.commands
                   for c in cmd.candidates)

    # -- taints ----------------------------------------------------------------------------

    def _set_taint(self, node_name: str, present: bool) -> None:
        """Add or remove the disrupted taint (re-read and retried once on a conflict)."""
        for _ in range(3):
            try:
                node = self.cluster.get("Node", node_name)
            except NotFoundError:
                return
            taints = list((node.get("spec") or {}).get("taints") or [])
            has = has_taint(taints, DISRUPTED_TAINT)
            if has == present:
                return
            if present:
                taints.append(taint_dict(DISRUPTED_TAINT))
            else:
                taints = [t for t in taints if not matches(taint_of(t), DISRUPTED_TAINT)]
            try:
                self.cluster.patch("Node", node_name, {
                    "metadata": {"resourceVersion": objects.meta(node).get("resourceVersion")},
                    "spec": {"taints": taints or None},
                })
                return
            except ConflictError:
                continue
        raise CommandFailed(f"could not {'taint' if present else 'untaint'} node {node_name}")

    # -- start -----------------------------------------------------------------------------

    def start(self, command: Command, pools: Mapping[str, PoolContext],
              pods: Mapping[str, Pod], now: datetime) -> None:
        busy = [c.name for c in command.candidates if self.holds(c.provider_id)]
        if busy:  # Karpenter's "candidate is being disrupted"
            raise CommandFailed(f"{', '.join(busy)} already being disrupted")
        marked = []
        try:
            for candidate in command.candidates:
                self._set_taint(candidate.node.node_name, True)
                set_nodeclaim_condition(self.cluster, candidate.nodeclaim_name,
                                        DISRUPTION_REASON, "True", now, command.reason,
                                        command.reason)
                marked.append(candidate)
            manifests = [nodeclaim_manifest(planned, pools[planned.nodepool], pods)
                         for planned in command.replacements]
            manifests.extend(self._static_manifest(pool) for pool in command.static_replacements)
            answers = create_together(self.cluster, self.state.lock, manifests)
            for created in answers:
                if isinstance(created, ApiError):
                    continue
                nodepool = objects.labels(created).get(NODEPOOL_LABEL, "")
                self.state.observe_written(created)
                name = str(created["metadata"]["name"])
                command.replacement_names.append(name)
                metrics.NODECLAIMS_CREATED.labels(
                    reason=command.reason.lower(), nodepool=nodepool,
                    min_values_relaxed=objects.annotations(created).get(
                        MIN_VALUES_RELAXED, "false")).inc()
            failed = failures(answers)
            if failed is not None:
                # The replacements created stay as capacity; the candidates are left alone.
                raise failed
        except (ApiError, CommandFailed) as error:
            log.error("disruption command %s could not start: %s", command.describe(), error)
            self._release(marked, now)
            raise CommandFailed(str(error)) from error
        command.created = now
        self.state.mark_for_deletion(*(c.provider_id for c in command.candidates))
        self.commands.append(command)
        labels = {"decision": command.decision, "reason": command.reason.lower(),
                  "consolidation_type": command.consolidation_type}
        metrics.DISRUPTION_DECISIONS.labels(**labels).inc()
        for pool in sorted({c.nodepool_name for c in command.candidates}):
            disruption_metrics.DECISIONS_BY_NODEPOOL.labels(nodepool=pool, **labels).inc()
        log.info("disrupting node(s)", extra={
            "command": command.describe(), "reason": command.reason, "method": command.method,
            "decision": command.decision, "disrupted-node-count": len(command.candidates),
            "replacement-node-count": len(command.replacements),
            "pod-count": sum(len(c.pods) for c in command.candidates),
            "disrupted-nodes": [{
                "Node": {"name": c.node.node_name}, "NodeClaim": {"name": c.nodeclaim_name},
                "instance-type": c.instance_type.name if c.instance_type else "",
                "capacity-type": c.capacity_type} for c in command.candidates],
            "replacement-nodes": [{
                "NodeClaim": {"name": name},
                "instance-types": listed([option[0] for option in planned.instance_types])}
                for name, planned in zip(command.replacement_names, command.replacements,
                                         strict=False)]})

    def _static_manifest(self, pool: str) -> dict[str, Any]:
        parsed = self.state.nodepool_model(pool)
        raw = self.state.nodepool(pool)
        if parsed is None or parsed.model is None or raw is None:
            raise CommandFailed(f"static NodePool {pool} is gone or invalid")
        return static_nodeclaim_manifest(parsed.model, objects.uid(raw))

    # -- progress --------------------------------------------------------------------------

    def progress(self, now: datetime) -> bool:
        """Move every command in flight on, each on its own; True while any is in flight."""
        for command in list(self.commands):
            if not self._progress_one(command, now):
                self.commands.remove(command)
        return bool(self.commands)

    def _progress_one(self, command: Command, now: datetime) -> bool:
        """True while `command` is still waiting for its replacements."""
        try:
            waiting = self._waiting(command, now)
        except CommandFailed as error:
            self._fail(command, str(error), now)
            return False
        if waiting:
            assert command.created is not None
            if now - command.created > self.timeout:
                self._fail(command, f"replacements {', '.join(waiting)} did not initialize "
                                    f"within {self.timeout}", now)
                return False
            return True
        self._terminate(command, now)
        return False

    def _waiting(self, command: Command, now: datetime) -> list[str]:
        waiting = []
        for name in command.replacement_names:
            if name in command.initialized:
                continue
            try:
                claim = self.cluster.get("NodeClaim", name)
            except NotFoundError:
                if self.state.nodeclaim(name) is None:
                    raise CommandFailed(f"replacement NodeClaim {name} was deleted") from None
                waiting.append(name)
                continue
            if objects.is_deleting(claim):
                raise CommandFailed(f"replacement NodeClaim {name} is being deleted")
            # Karpenter's queue says so at each look at a replacement not yet known
            # initialized (deduplicated for two minutes): a slow one is told again.
            self.recorder.publish(Event(
                regarding=claim, type="Normal", reason=ex.DISRUPTION_LAUNCHING,
                note=f"Launching NodeClaim: {_title(command.reason)}",
                dedupe_values=(objects.uid(claim), command.reason)))
            if objects.condition_is_true(claim, INITIALIZED):
                command.initialized.add(name)
                continue
            self.recorder.publish(Event(
                regarding=claim, type="Normal", reason=ex.DISRUPTION_WAITING_READINESS,
                note="Waiting on readiness to continue disruption",
                dedupe_values=(objects.uid(claim),)))
            waiting.append(name)
        return waiting

    def _terminate(self, command: Command, now: datetime) -> None:
        for candidate in command.candidates:
            claim = candidate.node.nodeclaim
            if claim is None:
                # Gone while the replacements came up (an interruption or an expiry took
                # it): nothing left to delete, as Karpenter's queue ignores NotFound.
                continue
            try:
                self.cluster.delete("NodeClaim", candidate.nodeclaim_name,
                                    uid=objects.uid(claim) or None)
            except NotFoundError:
                continue
            except ConflictError:
                continue
            for obj in (candidate.node.node, candidate.node.nodeclaim):
                if obj is not None:
                    self.recorder.publish(Event(
                        regarding=obj, type="Normal", reason=ex.DISRUPTION_TERMINATING,
                        note=f"Disrupting {obj.get('kind')}: {_title(command.reason)}",
                        dedupe_values=(objects.uid(obj), command.reason)))
            # Drift also goes through here: only consolidation reports a policy.
            policy = _snake(candidate.nodepool.spec.disruption.consolidation_policy) \
                if command.consolidation_type else ""
            labels = metrics.disrupted_labels(claim, command.reason.lower(),
                                              policy)
            labels[metrics.CAPACITY_TYPE] = candidate.capacity_type or "unknown"
            metrics.NODECLAIMS_DISRUPTED.labels(**labels).inc()
            metrics.PODS_DISRUPTION_INITIATED.labels(**labels).inc(len(candidate.pods))
        log.info("disruption command done: %s", command.describe())

    def _fail(self, command: Command, why: str, now: datetime) -> None:
        log.error("disruption command failed: %s: %s", command.describe(), why)
        # As Karpenter v1.14.1's queue counts a failed command: by its replacements that did
        # not initialize, with the decision in the consolidation_type label too.
        unlaunched = [name for name in command.replacement_names
                      if name not in command.initialized]
        disruption_metrics.QUEUE_FAILURES.labels(
            decision=command.decision, reason=command.reason.lower(),
            consolidation_type=command.decision).inc(len(unlaunched))
        self._release(command.candidates, now)
        self.state.unmark_for_deletion(*(c.provider_id for c in command.candidates))
        for candidate in command.candidates:
            self.decisions.record(ex.Decision(
                time=now, node=candidate.name, nodeclaim=candidate.nodeclaim_name,
                nodepool=candidate.nodepool_name, method=command.method,
                outcome=ex.REJECTED, event_reason=ex.DISRUPTION_BLOCKED,
                message=f"the {command.decision} command failed: {why}",
                cause=ex.CAUSE_VALIDATION))

    def _release(self, candidates: Sequence[Any], now: datetime) -> None:
        for candidate in candidates:
            try:
                self._set_taint(candidate.node.node_name, False)
            except CommandFailed as error:
                log.warning("%s", error)
            set_nodeclaim_condition(self.cluster, candidate.nodeclaim_name, DISRUPTION_REASON,
                                    None, now)

    # -- after a restart -------------------------------------------------------------------

    def release_orphans(self, nodes: Sequence[StateNode], now: datetime) -> None:
        """Untaint nodes a command no longer in flight left tainted, and clear their
        NodeClaims' DisruptionReason (Karpenter does both at the start of every pass, to
        every machine that no command holds and that is not marked for deletion: a
        condition whose removal failed, or whose taint went another way, does not stay)."""
        for node in nodes:
            # The cheap reads first: it runs every second over every node, and few carry
            # either.
            tainted = node.node is not None and has_taint(
                (node.node.get("spec") or {}).get("taints") or [], DISRUPTED_TAINT)
            stale = (node.nodeclaim is not None and node.initialized
                     and objects.condition(node.nodeclaim, DISRUPTION_REASON) is not None)
            if not (tainted or stale):
                continue
            if node.is_marked_for_deletion or self.holds(node.provider_id):
                continue
            # A Node being deleted keeps its taint (the termination controller owns it).
            if tainted and node.node is not None and not objects.is_deleting(node.node):
                log.info("releasing node %s: no disruption command holds it", node.node_name)
                try:
                    self._set_taint(node.node_name, False)
                except CommandFailed as error:
                    log.warning("%s", error)
            if stale:
                set_nodeclaim_condition(self.cluster, node.nodeclaim_name, DISRUPTION_REASON,
                                        None, now)
