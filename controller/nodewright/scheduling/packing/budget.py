"""How much work a pack may do (`Budget`): counted in work, never in time, unless the
operator sets a deadline."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Budget:
    """Work limits, counted in work done and never in time, so that a plan does not depend
    on the machine or its load: `effort` is knapsack branch-and-bound nodes plus simplex
    pivots (each weighted by `relaxation._PIVOT_EFFORT`) over the whole `pack`.

    `deadline` (seconds of wall time from the start of `pack`, None for none) is for an
    operator who prefers a fast plan to a reproducible one: past it the packer stops
    pricing and searching and finishes the plan it has (every placeable pod still gets a
    node: the dive always ends, and first fit is the floor). Plans then depend on the
    machine's speed, so the simulator never sets one."""

    effort: int = 2_500_000
    knapsack_nodes: int = 500
    max_rounds: int = 30
    bins_per_round: int = 12
    rounds_per_dive: int = 3
    # Pricing rounds of each re-solve in the dive; on plans of more than
    # `SEARCH_UP_TO_NODES` nodes `lean_dive_rounds`, each searching `lean_dive_search_bins`
    # bins (their columns mostly exist and one rounding mistake costs a small share).
    dive_rounds: int = 10
    lean_dive_rounds: int = 5
    lean_dive_search_bins: int = 3
    # Column generation stops once no pattern found is worth more than (1 + lp_gap) times
    # its bin's price. 0 prices until nothing is; a cheaper, rougher LP otherwise (0.005
    # halves the time of the first LP but costs 0.5-2 % on the plans measured).
    lp_gap: float = 0.0
    # The rounding search: LP solves in all, and patterns tried per decision near the root.
    rounding_lps: int = 30
    rounding_branches: int = 3
    # Price with greedy fills first, the knapsack search only when they find nothing.
    greedy_pricing: bool = True
    # ... and then searches only this many of the most promising bins.
    search_bins: int = 12
    deadline: float | None = None
    spent: int = 0
    _started: float | None = None

    def start(self) -> None:
        if self._started is None:
            self._started = time.monotonic()

    def spend(self, units: int) -> None:
        self.spent += units

    def exhausted(self, share: float = 1.0) -> bool:
        """Whether `share` of the effort (or of the time to the deadline) is used up."""
        if self.spent > self.effort * share:
            return True
        if self.deadline is None or self._started is None:
            return False
        return time.monotonic() - self._started >= self.deadline * share
