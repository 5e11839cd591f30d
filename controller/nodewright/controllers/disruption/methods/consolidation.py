"""What every consolidation (emptiness included) asks of a candidate: consolidateAfter
has passed, the NodePool's policy allows it, its instance type is known."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate, consolidation_order
from nodewright.controllers.disruption.commands import Rejection
from nodewright.controllers.disruption.methods.disruption_pass import Pass, Screened
from nodewright.controllers.nodeclaim.disruption_conditions import DRIFTED, consolidatable_at
from nodewright.state.wellknown import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL


def unconsolidatable(p: Pass, candidate: Candidate) -> tuple[str, str] | None:
    """(cause, message) when consolidateAfter has not passed since the node's recorded
    last pod event or its NodePool disables consolidation: what Karpenter's
    Consolidatable condition says."""
    ready_at = consolidatable_at(candidate.nodeclaim, candidate.nodepool)
    if ready_at is None:
        return (ex.CAUSE_CONSOLIDATION_DISABLED,
                f'NodePool "{candidate.nodepool_name}" has consolidation disabled')
    if ready_at > p.now:
        after = candidate.nodepool.spec.disruption.consolidate_after
        return (ex.CAUSE_CONSOLIDATE_AFTER,
                f"consolidateAfter {after} has not passed since the last pod event "
                f"(consolidatable from {ready_at:%Y-%m-%dT%H:%M:%SZ})")
    return None


def consolidatable(p: Pass, candidate: Candidate, method: str) -> bool:
    """consolidateAfter has passed (else a verdict), see `unconsolidatable`."""
    why = unconsolidatable(p, candidate)
    if why is not None:
        p.verdict(candidate.node, method, ex.KEPT, why[0], why[1], ex.UNCONSOLIDATABLE)
        return False
    return True


def _screen(p: Pass, candidate: Candidate) -> Screened | None:
    """How consolidation sees a non-empty candidate (None: not at all, silently), in the
    order of Karpenter's consolidation.ShouldDisrupt: what it cannot price, a NodePool that
    disables consolidation, then (empty nodes being emptiness's) the WhenEmpty policy and
    consolidateAfter. A node with several of these is told the first."""
    if candidate.nodepool.is_static:
        message = static_message(candidate)
        return None if message is None else (candidate, (ex.CAUSE_STATIC_NODEPOOL, message))
    if candidate.instance_type is None:
        type_name = candidate.node.labels.get(INSTANCE_TYPE_LABEL, "")
        return (candidate, (ex.CAUSE_INSTANCE_TYPE, f'Instance Type "{type_name}" not found'))
    if not candidate.capacity_type or not candidate.zone:
        missing = CAPACITY_TYPE_LABEL if not candidate.capacity_type else ZONE_LABEL
        return (candidate, (ex.CAUSE_INSTANCE_TYPE, f'Node does not have label "{missing}"'))
    why = unconsolidatable(p, candidate)
    if why is not None and why[0] == ex.CAUSE_CONSOLIDATION_DISABLED:
        return (candidate, why)
    if candidate.empty:
        return None
    policy = candidate.nodepool.spec.disruption.consolidation_policy
    if policy == "WhenEmpty":
        return (candidate, (ex.CAUSE_POLICY,
                            f'NodePool "{candidate.nodepool_name}" has consolidation policy '
                            "WhenEmpty, but node is not empty"))
    return (candidate, why)


def _screened(p: Pass) -> tuple[list[Screened], list[Candidate]]:
    """Every candidate of the pass as consolidation sees it, and those it may consolidate
    in `consolidation_order`: worked out once per pass (multi-node and single-node
    consolidation look at the same candidates of the same cluster at the same time)."""
    if p.consolidation is None:
        screened = [seen for c in p.candidates() if (seen := _screen(p, c)) is not None]
        p.consolidation = (screened, consolidation_order(
            [c for c, why in screened if why is None]))
    return p.consolidation


def consolidation_candidates(p: Pass, method: str) -> list[Candidate]:
    """The candidates consolidation may take, best value first (`consolidation_order`);
    a verdict for each it may not."""
    screened, ordered = _screened(p)
    for candidate, why in screened:
        if why is not None:
            p.verdict(candidate.node, method, ex.KEPT, why[0], why[1], ex.UNCONSOLIDATABLE)
    return list(ordered)


def static_message(candidate: Candidate) -> str | None:
    """Why consolidation leaves a static NodePool's node alone. A drifted one is static
    drift's to explain (None: two verdicts alternating between passes would rewrite its
    Disruptable condition every time)."""
    if objects.condition_is_true(candidate.nodeclaim, DRIFTED):
        return None
    return (f"NodePool {candidate.nodepool_name} is static (spec.replicas "
            f"{candidate.nodepool.spec.replicas}): its nodes are never consolidated; change "
            "its replicas to remove nodes")


def static_kept(p: Pass, candidate: Candidate, method: str) -> None:
    message = static_message(candidate)
    if message is not None:
        p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_STATIC_NODEPOOL, message,
                  ex.UNCONSOLIDATABLE)


def rejected(p: Pass, candidate: Candidate, method: str, rejection: Rejection) -> None:
    p.verdict(candidate.node, method, ex.KEPT, rejection.cause, rejection.message,
              ex.UNCONSOLIDATABLE)
