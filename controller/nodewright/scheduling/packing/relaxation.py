"""The LP relaxation: the configuration LP over patterns, solved by column generation (the
restricted master solved by HiGHS, `master_lp`; new columns from `column_pricing`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.scheduling.packing.bins import BinType, Vector
from nodewright.scheduling.packing.budget import Budget
from nodewright.scheduling.packing.column_pricing import find_columns
from nodewright.scheduling.packing.master_lp import MasterLP

# A simplex pivot's work in knapsack nodes (it prices a window of columns).
_PIVOT_EFFORT = 20
# New columns a pricing round adds at most (the best first).
_COLUMNS_PER_ROUND = 100


class Relaxation:
    """The configuration LP over the pods of `rows` (one row per shape), solved by column
    generation; columns found for one residual stay for the next."""

    def __init__(self, shapes: Sequence[Vector], bins: Sequence[BinType],
                 charge: Mapping[int, float], budget: Budget) -> None:
        self.shapes = shapes
        self.bins = bins
        self.charge = charge
        self.budget = budget
        self.master = MasterLP(len(shapes))
        self.columns: dict[tuple[int, Vector], int] = {}
        self.column_bins: list[BinType] = []
        # Bins that produced a pattern: residual problems price only these.
        self.useful: dict[int, BinType] = {}
        self.singles: dict[tuple[int, int], tuple[BinType, Vector]] = {}
        # Each bin's summed shares per shape, for the greedy fills of every round.
        self.shares: dict[Vector, list[float]] = {}
        self.solves = 0

    def add_column(self, bin_type: BinType, counts: Vector) -> int:
        key = (bin_type.key, counts)
        index = self.columns.get(key)
        if index is None:
            index = self.master.add(bin_type.price + self.charge[bin_type.key], counts)
            self.columns[key] = index
            self.column_bins.append(bin_type)
        return index

    def pattern(self, column: int) -> list[int]:
        counts = [0] * len(self.shapes)
        for s, k in self.master.columns[column]:
            counts[s] = k
        return counts

    def solve(self, caps: Sequence[int], everything: bool, max_rounds: int,
              search_bins: int | None = None
              ) -> tuple[float, list[float], dict[int, float]] | None:
        """(value, duals, {column: x}) for the pods `caps`; None on numerical trouble.
        `search_bins`: the knapsack search's bins per round (`Budget.search_bins` unless
        given)."""
        self.solves += 1
        master = self.master
        master.set_demand(caps)
        # One single-shape column per row keeps the master feasible for any demand.
        for i in range(len(caps)):
            self.add_column(*self._single_shape(i, caps[i]))
        pricing = self.bins if everything else sorted(
            self.useful.values(), key=lambda b: (b.price, b.key))
        rounds = 0
        while True:
            rounds += 1
            try:
                value, duals, solution = master.solve()
            except ArithmeticError:
                return None
            self.budget.spend(_PIVOT_EFFORT * master.pivots)
            # The first LP may use half the effort; the rounding needs the rest.
            if rounds > max_rounds or self.budget.exhausted(0.5 if everything else 1.0):
                return value, duals, solution
            found = find_columns(pricing, self.shapes, duals, caps, self.charge, self.budget,
                           self.columns, everything,
                           self.budget.search_bins if search_bins is None else search_bins,
                           self.shares)
            for _, b, counts in found[:_COLUMNS_PER_ROUND]:
                self.add_column(b, counts)
                self.useful.setdefault(b.key, b)
            # No pattern found is worth more than (1 + gap) times its bin's price: by
            # Farley's bound (value / the largest such ratio) the LP is within `gap` of its
            # optimum, over the bins priced.
            if not found or found[0][0] <= 1 + self.budget.lp_gap:
                return value, duals, solution

    def _single_shape(self, row: int, cap: int) -> tuple[BinType, Vector]:
        """The cheapest pattern of one shape alone (a diagonal basis column)."""
        known = self.singles.get((row, cap))
        if known is not None:
            return known
        shape = self.shapes[row]
        fit_best: tuple[float, BinType, int] | None = None
        for b in self.bins:
            k = max(cap, 1)
            for r, size in enumerate(shape):
                if size:
                    k = min(k, b.room[r] // size)
            if k >= 1 and (fit_best is None or b.price / k < fit_best[0] - 1e-15):
                fit_best = (b.price / k, b, k)
        assert fit_best is not None
        vector = [0] * len(self.shapes)
        vector[row] = fit_best[2]
        self.useful.setdefault(fit_best[1].key, fit_best[1])
        self.singles[(row, cap)] = (fit_best[1], tuple(vector))
        return fit_best[1], tuple(vector)
