"""What a target (an existing node or a NodeClaim) answers when asked to take a pod: the
change that placing it there makes, or why it cannot."""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.targets import Narrowed, Vector


class Rejection:
    """Why the target does not take the pod; `permanent` when no later placement can change
    that for this pod shape (the target is then skipped for identical pods). `deferred`:
    Karpenter's ReservedOfferingError (the pod waits for a later simulation)."""

    __slots__ = ("deferred", "permanent", "reason")

    def __init__(self, reason: str, permanent: bool, deferred: bool = False) -> None:
        self.reason = reason
        self.permanent = permanent
        self.deferred = deferred


@dataclass
class Change:
    """An accepted placement, not yet applied."""

    requirements: Requirements | None = None
    candidates: Narrowed | None = None
    need: Vector = ()
    grew_by_efficiency: bool = False
    # The capacity reservations the NodeClaim holds once the pod is added (None: no
    # reservation is involved).
    reservations: frozenset[str] | None = None
    # Reservations it could have launched into but could hold none of (fallback mode).
    kept_out: frozenset[str] = frozenset()
