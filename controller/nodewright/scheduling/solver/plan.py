"""One plan of a problem (`Solver`): the pods topology ties go first, largest first; the
free pods follow, packed together (`free_pods`) or in a balanced order (`order`); the pods
that fit nowhere are retried while topology counts move; then the outcome (`results`)."""

from __future__ import annotations

from nodewright.scheduling.pods import Pod
from nodewright.scheduling.solver.free_pods import FreePodPacker
from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.solver.results import PlanResults, SchedulingResult
from nodewright.scheduling.solver.setup import Setup
from nodewright.scheduling.topology import Topology

_MAX_RETRY_PASSES = 3


class Solver:
    """`efficient_growth`: a NodeClaim may grow into a type among the most cost-efficient
    even when that costs more than a separate node (`fit.FitCheck`). `pack_free`: the free
    pods are packed (`free_pods`) before first fit takes what is left. `setup`: shared by
    the plans of one problem. `due`: when the operator's deadline passes
    (time.monotonic()), or None. `cutoff`: see `results.PlanResults`."""

    def __init__(
        self,
        problem: SchedulingProblem,
        efficient_growth: bool = True,
        pack_free: bool = True,
        setup: Setup | None = None,
        due: float | None = None,
        cutoff: float | None = None,
    ) -> None:
        self.problem = problem
        self.due = due
        self.cutoff = cutoff
        self.efficient_growth = efficient_growth
        self.pack_free = pack_free
        # Whether no pod is tied to another (known once `run` has sorted them).
        self.all_free = False
        setup = setup if setup is not None else Setup(problem)
        self.setup = setup
        # NodePool setups kept across the re-plans of this solve's NodeClaims.
        self.tail_pools = setup.tail_pools
        self.placement = Placement(setup, Topology(problem.namespaces), efficient_growth)
        self.pools = self.placement.pools

    def run(self, balanced: bool = True) -> SchedulingResult:
        # Pods with topology ties go first in Karpenter's order; pods nothing ties to any
        # other follow, ordered so that cpu-heavy and memory-heavy ones alternate and each
        # NodeClaim they fill ends up with a balanced mix.
        placement = self.placement
        constrained: list[Pod] = []
        free: list[Pod] = []
        for pod in self.setup.ordered_pods():
            (free if placement.is_free(pod) else constrained).append(pod)
        self.all_free = not constrained
        failures: dict[str, str] = {}
        pending = []
        for pod in constrained:
            reason = placement.schedule(pod)
            if reason is not None:
                failures[pod.key] = reason
                pending.append(pod)
        free = self.setup.balanced(free) if balanced else free
        if self.pack_free and free:
            free = FreePodPacker(placement, self.due).pack(free)
        for pod in free:
            reason = placement.schedule(pod)
            if reason is not None:
                failures[pod.key] = reason
                pending.append(pod)
        # Topology counts move as other pods land: retry the leftovers while that helps.
        for _ in range(_MAX_RETRY_PASSES):
            if not pending:
                break
            still = []
            for pod in pending:
                reason = placement.schedule(pod)
                if reason is None:
                    del failures[pod.key]
                else:
                    failures[pod.key] = reason
                    still.append(pod)
            if len(still) == len(pending):
                break
            pending = still
        results = PlanResults(placement, self.problem, self.efficient_growth, self.cutoff,
                              self._replan)
        return results.build(failures)

    def _replan(self, tail: SchedulingProblem) -> SchedulingResult:
        """A NodeClaim's pods planned alone, growth capped by the price of a separate node."""
        setup = Setup(tail, pool_memo=self.tail_pools, packs=self.setup.packs)
        return Solver(tail, False, setup=setup, due=self.due).run(False)
