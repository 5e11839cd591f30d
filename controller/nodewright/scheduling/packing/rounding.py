"""Rounding the LP into whole nodes: the dive, then for plans of few nodes a small
depth-first search over the same decisions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.scheduling.packing.bins import BinType, cheapest_bin, total_load
from nodewright.scheduling.packing.budget import Budget
from nodewright.scheduling.packing.relaxation import Relaxation

# Plans of up to this many nodes get the rounding search after the dive.
SEARCH_UP_TO_NODES = 40


@dataclass
class _Fixed:
    """A node the rounding decided on: the pods it holds (per row) and its cheapest bin."""

    bin: BinType
    counts: list[int]
    worth: float


class Rounding:
    """Turns the LP into nodes: patterns the LP uses whole are fixed; then a depth-first
    search fixes one pattern at a time among those the LP uses most (the first path is the
    classic dive), re-solving the LP for the pods left and pruning a branch once its fixed
    nodes plus its LP cost as much as the best plan found. Bounded by `Budget.rounding_lps`
    LP solves and the effort budget."""

    def __init__(self, relaxation: Relaxation, budget: Budget) -> None:
        self.relaxation = relaxation
        self.budget = budget
        self.best: list[_Fixed] | None = None
        self.best_cost = math.inf
        self.lps = 0
        self.seen: set[tuple[tuple[int, ...], ...]] = set()

    def price(self, node: _Fixed) -> float:
        return node.bin.price + self.relaxation.charge[node.bin.key]

    def dive(self, caps: list[int], duals: list[float], solution: dict[int, float]
             ) -> list[_Fixed]:
        """The classic dive: fix the patterns used whole, else the most used one once;
        re-solve (pricing up to `Budget.dive_rounds` rounds) for the pods left; repeat."""
        fixed: list[_Fixed] = []
        budget = self.budget
        rounds, searched = budget.dive_rounds, budget.search_bins
        if sum(solution.values()) > SEARCH_UP_TO_NODES:
            rounds, searched = budget.lean_dive_rounds, budget.lean_dive_search_bins
        while True:
            if any(x >= 1 - 1e-6 for x in solution.values()):
                self._fix_whole(fixed, caps, duals, solution)
            elif solution:
                column = max(solution, key=lambda c: (solution[c], -c))
                node = self._take(column, caps, duals)
                if node is not None:
                    fixed.append(node)
            # Out of effort the LP is still re-solved (no pricing): the dive always finishes.
            if not any(caps) or not solution:
                break
            solved = self.relaxation.solve(caps, False, rounds, searched)
            if solved is None:
                break
            _, duals, solution = solved
        if not any(caps):
            self.best, self.best_cost = fixed, sum(self.price(node) for node in fixed)
        return fixed

    def search(self, caps: list[int], duals: list[float], solution: dict[int, float]
               ) -> list[_Fixed] | None:
        """A plan cheaper than the dive's, or None."""
        fixed: list[_Fixed] = []
        self._fix_whole(fixed, caps, duals, solution)
        before = self.best_cost
        self._search(fixed, caps, 0)
        return self.best if self.best_cost < before - 1e-12 else None

    def _take(self, column: int, caps: list[int], duals: Sequence[float]) -> _Fixed | None:
        taken = [min(k, c) for k, c in zip(self.relaxation.pattern(column), caps, strict=True)]
        if not any(taken):
            return None
        for i, k in enumerate(taken):
            caps[i] -= k
        chosen = cheapest_bin(total_load(taken, self.relaxation.shapes), self.relaxation.bins)
        chosen = chosen or self.relaxation.column_bins[column]
        worth = sum(d * k for d, k in zip(duals, taken, strict=True)) / max(chosen.price, 1e-12)
        return _Fixed(chosen, taken, worth)

    def _fix_whole(self, fixed: list[_Fixed], caps: list[int], duals: Sequence[float],
                   solution: Mapping[int, float]) -> None:
        whole = sorted(((j, math.floor(x + 1e-6)) for j, x in solution.items() if x >= 1 - 1e-6),
                       key=lambda item: (-item[1], item[0]))
        for j, times in whole:
            for _ in range(times):
                node = self._take(j, caps, duals)
                if node is None:
                    break
                fixed.append(node)

    def _search(self, fixed: list[_Fixed], caps: list[int], depth: int) -> None:
        cost = sum(self.price(node) for node in fixed)
        if not any(caps):
            if cost < self.best_cost - 1e-12:
                self.best_cost, self.best = cost, [replace(n, counts=list(n.counts))
                                                   for n in fixed]
            return
        if self.best is not None and (self.lps >= self.budget.rounding_lps
                                      or self.budget.exhausted()):
            return
        if cost >= self.best_cost - 1e-12:
            return
        self.lps += 1
        solved = self.relaxation.solve(caps, False, self.budget.rounds_per_dive)
        if solved is None:
            return
        value, duals, solution = solved
        if cost + value >= self.best_cost - 1e-12 or not solution:
            return
        children: list[int | None]
        if any(x >= 1 - 1e-6 for x in solution.values()):
            children = [None]
        else:
            ranked = sorted(solution, key=lambda j: (-solution[j], j))
            children = list(ranked[: self.budget.rounding_branches if depth < 8 else 1])
        for column in children:
            child_caps = list(caps)
            child = list(fixed)
            if column is None:
                self._fix_whole(child, child_caps, duals, solution)
            else:
                node = self._take(column, child_caps, duals)
                if node is None:
                    continue
                child.append(node)
            key = tuple(sorted((*n.counts, n.bin.key) for n in child))
            if key in self.seen:
                continue
            self.seen.add(key)
            self._search(child, child_caps, depth + 1)
