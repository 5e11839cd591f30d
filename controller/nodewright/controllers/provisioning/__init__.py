"""Provisioning: batch pending pods, solve them against the state, create NodeClaims.

`problem.scheduling_problem(state, cloud, pods, nodes=..., nodepools=...)` builds the
solver's input from the state (the disruption controller simulates with it too);
`nodeclaims.nodeclaim_manifest` turns a planned NodeClaim into the object to create;
`provisioner.Provisioner` is the reconciler.
"""

from nodewright.controllers.provisioning.batcher import Batcher
from nodewright.controllers.provisioning.problem import (
    PoolContext,
    StateProblem,
    scheduling_problem,
)
from nodewright.controllers.provisioning.provisioner import (
    Provisioner,
    ProvisionerOptions,
    ProvisioningOutcome,
)

__all__ = [
    "Batcher",
    "PoolContext",
    "Provisioner",
    "ProvisionerOptions",
    "ProvisioningOutcome",
    "StateProblem",
    "scheduling_problem",
]
