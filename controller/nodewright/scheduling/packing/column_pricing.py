"""Column generation's pricing step: for the LP's pod values, the patterns (a bin type and
how many pods of each shape one node of it holds) worth more than their bin's price.
Greedy fills first, the knapsack search (`knapsack`) when they find nothing."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence

from nodewright.scheduling.packing.bins import BinType, Vector
from nodewright.scheduling.packing.budget import Budget
from nodewright.scheduling.packing.knapsack import GreedyFills, best_pattern

_EPS = 1e-9


class _CheapBounds:
    """Upper bounds on any pattern's value in a room, for one set of pod values: per
    resource, the fractional knapsack of that resource alone; the smallest of these. The
    shapes' order by value per unit of a resource does not depend on the room, so it is
    ranked once per pricing round (with prefix sums) and each bin costs a bisection per
    resource."""

    def __init__(self, shapes: Sequence[Vector], values: Sequence[float],
                 caps: Sequence[int]) -> None:
        self.resources: list[tuple[float, list[float], list[float], list[tuple[int, float]]]] = []
        for r in range(len(shapes[0]) if shapes else 0):
            ranked = sorted(
                ((values[s] / shape[r], shape[r], caps[s], values[s])
                 for s, shape in enumerate(shapes)
                 if shape[r] and values[s] > _EPS and caps[s] > 0),
                reverse=True,
            )
            free_total = sum(
                values[s] * caps[s]
                for s, shape in enumerate(shapes)
                if not shape[r] and values[s] > _EPS
            )
            sizes = [0.0]
            worth = [0.0]
            for _, size, cap, value in ranked:
                sizes.append(sizes[-1] + cap * size)
                worth.append(worth[-1] + cap * value)
            self.resources.append(
                (free_total, sizes, worth, [(size, value) for _, size, _, value in ranked]))

    def bound(self, room: Vector) -> float:
        result = math.inf
        for capacity, (free_total, sizes, worth, items) in zip(room, self.resources,
                                                               strict=True):
            total = free_total
            if capacity > 0:
                whole = bisect_right(sizes, capacity) - 1
                total += worth[whole]
                if whole < len(items):
                    size, value = items[whole]
                    total += (capacity - sizes[whole]) / size * value
            result = min(result, total)
        return result


def find_columns(
    bins: Sequence[BinType],
    shapes: Sequence[Vector],
    duals: Sequence[float],
    caps: Sequence[int],
    charge: Mapping[int, float],
    budget: Budget,
    columns: Mapping[tuple[int, Vector], int],
    thorough: bool,
    search_bins: int,
    shares: dict[Vector, list[float]] | None = None,
) -> list[tuple[float, BinType, Vector]]:
    """New patterns worth more than their bin's price, best ratio first. Bins are priced
    most promising first (by an optimistic bound); after `bins_per_round` of them, pricing
    stops at the first round that found something."""
    promising = []
    cheap = _CheapBounds(shapes, duals, caps)
    fills = GreedyFills(shapes, duals, caps, shares)
    for b in bins:
        cost = b.price + charge[b.key]
        upper = cheap.bound(b.room)
        if upper > cost * (1 + 1e-9):
            promising.append((upper / cost, b))
    promising.sort(key=lambda item: (-item[0], item[1].price, item[1].key))
    found: list[tuple[float, BinType, Vector]] = []
    # Greedy fills of every promising bin first (cheap); when they find nothing, a knapsack
    # search with the usual budget over the most promising bins; when that finds nothing
    # and `thorough`, one with ten times it (a capped knapsack can miss a column).
    passes = [(0, len(promising))] if budget.greedy_pricing else []
    searched = search_bins if budget.greedy_pricing else len(promising)
    passes.append((budget.knapsack_nodes, searched))
    if thorough:
        passes.append((10 * budget.knapsack_nodes, budget.bins_per_round))
    for nodes, limit in passes:
        for position, (_, b) in enumerate(promising[:limit]):
            if found and nodes and position >= budget.bins_per_round:
                break
            cost = b.price + charge[b.key]
            if nodes:
                value, counts, visited = best_pattern(b.room, shapes, duals, caps, nodes)
            else:
                (value, counts), visited = fills.best(b.room), 0
            budget.spend(visited + 1)
            pattern = tuple(counts)
            if value > cost * (1 + 1e-9) and (b.key, pattern) not in columns:
                found.append((value / cost, b, pattern))
        if found:
            break
    found.sort(key=lambda item: (-item[0], item[1].price, item[1].key))
    return found
