"""The NodeClaim lifecycle: launch, registration, initialization, liveness and the
finalizer that terminates the instance (Karpenter's nodeclaim/lifecycle)."""

from nodewright.controllers.nodeclaim.lifecycle import NodeClaimLifecycle
from nodewright.controllers.nodeclaim.liveness import (
    LAUNCH_TIMEOUT_SECONDS,
    REGISTRATION_TIMEOUT_SECONDS,
)

__all__ = ["LAUNCH_TIMEOUT_SECONDS", "REGISTRATION_TIMEOUT_SECONDS", "NodeClaimLifecycle"]
