"""`settle`: run until the cluster is quiet, or until the timeout.

Quiet means: no NodeClaim launching, registering or terminating, no node being deleted or
tainted for disruption, and nothing the controllers would still do. The last part is
judged by time: nothing has changed in the cluster for long enough that the provisioner
has had its batch window and the disruption loop two polls and a consolidation
validation, and no node is still waiting for its consolidateAfter to run out (once it
does, consolidation looks at it). Pods that stay pending through all that are pods the
provisioner cannot place; they do not keep the cluster from being quiet.

At the timeout, a cluster with nothing in flight counts as quiet too (only a node's
consolidateAfter was still running); one with work in flight does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from nodewright.api.formats import parse_duration_or_never
from nodewright.cluster import objects
from nodewright.runtime.clock import parse_time
from nodewright.sim.world import World

# Karpenter's disruption loop polls every 10 s and validates a consolidation for 15 s.
DISRUPTION_POLL_SECONDS = 10.0
VALIDATION_SECONDS = 15.0


@dataclass(frozen=True)
class SettleOutcome:
    quiet: bool
    note: str = ""
    busy: str = ""


def settle(world: World, timeout: float) -> SettleOutcome:
    clock = world.clock
    recorder = world.recorder
    began = clock.now()
    deadline = began + timedelta(seconds=timeout)
    quiet_gap = timedelta(seconds=world.scenario.settings.batch_max_duration
                          + 2 * DISRUPTION_POLL_SECONDS + VALIDATION_SECONDS)
    memo = _ReadyMemo()
    while True:
        now = clock.now()
        busy = bool(recorder.busy_claims or recorder.busy_nodes)
        # Counting from the settle's start too gives the controllers a chance to react to
        # what the step before did (an interruption message waits on a queue).
        quiet_at = max(recorder.last_change, began) + quiet_gap
        if not busy and now >= quiet_at:
            timer = _next_consolidation(world, now, memo)
            if timer is None or timer + quiet_gap <= now:
                return SettleOutcome(True, _pending_note(world))
            quiet_at = timer + quiet_gap
        if now >= deadline:
            if not busy:
                return SettleOutcome(True, _pending_note(world) + " (quiet at the timeout; "
                                     "a consolidateAfter was still running)")
            return SettleOutcome(False, busy=_describe_busy(world))
        target = deadline if busy else min(deadline, quiet_at)
        due = clock.next_due()
        if due is not None and due <= target:
            clock.step()
        else:
            clock.run_until(target)


class _ReadyMemo:
    """`_latest_ready` of one state at one generation: the state changes only by the events
    it applies, each of which bumps its generation, so while that holds the answer does."""

    def __init__(self) -> None:
        self.key: tuple[object, int] | None = None
        self.latest: datetime | None = None

    def latest_ready(self, world: World) -> datetime | None:
        state = world.controllers.state
        key = (state, state.generation)
        if self.key is None or self.key[0] is not state or self.key[1] != key[1]:
            self.key, self.latest = key, _latest_ready(world)
        return self.latest


def _next_consolidation(world: World, now: datetime,
                        memo: _ReadyMemo | None = None) -> datetime | None:
    """The latest moment a node still becomes consolidatable (after now), if any."""
    latest = memo.latest_ready(world) if memo is not None else _latest_ready(world)
    if latest is not None and latest > now - timedelta(
            seconds=DISRUPTION_POLL_SECONDS + VALIDATION_SECONDS):
        return latest
    return None


def _latest_ready(world: World) -> datetime | None:
    """The latest moment any node becomes consolidatable, past or future."""
    state = world.controllers.state
    latest: datetime | None = None
    for node in state.nodes():
        claim = node.nodeclaim
        if claim is None or not node.initialized or node.deleting:
            continue
        parsed = state.nodepool_model(node.nodepool)
        if parsed is None or parsed.model is None:
            continue
        seconds = parse_duration_or_never(parsed.model.spec.disruption.consolidate_after)
        initialized = objects.condition(claim, "Initialized")
        if seconds is None or initialized is None:
            continue
        since = parse_time(str(initialized.get("lastTransitionTime")))
        if node.last_pod_event is not None:
            since = max(since, node.last_pod_event)
        ready = since + timedelta(seconds=seconds)
        if latest is None or ready > latest:
            latest = ready
    return latest


def _pending_note(world: World) -> str:
    pending = world.recorder.pending_pods
    return f" ({pending} pod{'s' if pending != 1 else ''} left pending)" if pending else ""


def _describe_busy(world: World) -> str:
    recorder = world.recorder
    parts = []
    if recorder.busy_claims:
        names = sorted(recorder.busy_claims)
        parts.append(f"{len(names)} NodeClaim(s) launching or terminating ({_few(names)})")
    if recorder.busy_nodes:
        names = sorted(recorder.busy_nodes)
        parts.append(f"{len(names)} node(s) draining or disrupted ({_few(names)})")
    if recorder.pending_pods:
        parts.append(f"{recorder.pending_pods} pod(s) pending")
    return "; ".join(parts)


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
