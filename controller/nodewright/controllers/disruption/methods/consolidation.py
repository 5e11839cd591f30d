"""What every consolidation (emptiness included) asks of a candidate: consolidateAfter
has passed, the NodePool's policy allows it, its instance type is known."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Rejection
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.nodeclaim.disruption_conditions import DRIFTED, consolidatable_at
from nodewright.state.wellknown import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL


def consolidatable(p: Pass, candidate: Candidate, method: str) -> bool:
    """consolidateAfter has passed since the node's recorded last pod event (else a
    verdict): what Karpenter's Consolidatable condition says."""
    ready_at = consolidatable_at(candidate.nodeclaim, candidate.nodepool)
    if ready_at is None:
        p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_CONSOLIDATION_DISABLED,
                  f'NodePool "{candidate.nodepool_name}" has consolidation disabled',
                  ex.UNCONSOLIDATABLE)
        return False
    if ready_at > p.now:
        after = candidate.nodepool.spec.disruption.consolidate_after
        p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_CONSOLIDATE_AFTER,
                  f"consolidateAfter {after} has not passed since the last pod event "
                  f"(consolidatable from {ready_at:%Y-%m-%dT%H:%M:%SZ})", ex.UNCONSOLIDATABLE)
        return False
    return True


def consolidation_candidates(p: Pass, method: str) -> list[Candidate]:
    found = []
    for candidate in p.candidates():
        if candidate.nodepool.is_static:
            static_kept(p, candidate, method)
            continue
        if candidate.empty:
            continue
        policy = candidate.nodepool.spec.disruption.consolidation_policy
        if policy == "WhenEmpty":
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_POLICY,
                      f'NodePool "{candidate.nodepool_name}" has consolidation policy WhenEmpty, '
                      "but node is not empty", ex.UNCONSOLIDATABLE)
            continue
        if candidate.instance_type is None:
            type_name = candidate.node.labels.get(INSTANCE_TYPE_LABEL, "")
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_INSTANCE_TYPE,
                      f'Instance Type "{type_name}" not found', ex.UNCONSOLIDATABLE)
            continue
        if not candidate.capacity_type or not candidate.zone:
            missing = CAPACITY_TYPE_LABEL if not candidate.capacity_type else ZONE_LABEL
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_INSTANCE_TYPE,
                      f'Node does not have label "{missing}"', ex.UNCONSOLIDATABLE)
            continue
        if consolidatable(p, candidate, method):
            found.append(candidate)
    return found


def static_kept(p: Pass, candidate: Candidate, method: str) -> None:
    """Why consolidation leaves a static NodePool's node alone. A drifted one is static
    drift's to explain (two verdicts alternating between passes would rewrite its
    Disruptable condition every time)."""
    if objects.condition_is_true(candidate.nodeclaim, DRIFTED):
        return
    p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_STATIC_NODEPOOL,
              f"NodePool {candidate.nodepool_name} is static (spec.replicas "
              f"{candidate.nodepool.spec.replicas}): its nodes are never consolidated; change "
              "its replicas to remove nodes", ex.UNCONSOLIDATABLE)


def rejected(p: Pass, candidate: Candidate, method: str, rejection: Rejection) -> None:
    p.verdict(candidate.node, method, ex.KEPT, rejection.cause, rejection.message,
              ex.UNCONSOLIDATABLE)
