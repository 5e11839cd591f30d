"""Pricing for the packer: the most valuable set of pods one node can hold.

Given a value per pod shape (the LP's duals), a node's room and how many pods of each shape
are left, find the counts of largest total value that fit: a bounded integer knapsack with
one constraint per resource (cpu, memory, pod slots, ...).

Branch and bound over the shapes, with a *surrogate* constraint for the bound: the
resources are folded into one by multipliers lambda (each share of the room weighted),
chosen once per call so that the fractional knapsack of the folded constraint, an upper
bound on every pattern, is as small as possible. Shapes are branched in order of value per
folded size, the most each, then one fewer; a subtree whose fractional bound cannot beat
the best pattern so far is skipped. When the node budget runs out the search stops and the
largest bound of the subtrees it skipped is reported, so `upper` is always a valid bound on
the optimum (equal to `value` when the search finished).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

Vector = tuple[int, ...]

_EPS = 1e-9
# Multipliers are searched on a grid of this step, then refined by halving it this often.
_GRID = 2
_REFINEMENTS = 2


@dataclass(frozen=True, slots=True)
class KnapsackResult:
    value: float
    counts: list[int]
    # A valid upper bound on the best value (== value when `exact`).
    upper: float
    exact: bool
    # Branch-and-bound nodes the search visited (the caller's measure of work).
    nodes: int = 0


def best_pattern(
    room: Vector,
    shapes: Sequence[Vector],
    values: Sequence[float],
    caps: Sequence[int],
    node_limit: int,
) -> tuple[float, list[int], int]:
    """(value, counts, nodes visited) of the best pattern found (see `solve_knapsack`)."""
    result = solve_knapsack(room, shapes, values, caps, node_limit)
    return result.value, result.counts, result.nodes


def resource_orders(
    shapes: Sequence[Vector], values: Sequence[float], caps: Sequence[int]
) -> list[list[int]]:
    """Per resource, the shapes worth taking by value per unit of it (shapes that need
    none first): the same for every room, so a pricing round ranks them once for all the
    bins it fills (`greedy_pattern`'s `per_resource`)."""
    items = [s for s in range(len(shapes)) if values[s] > _EPS and caps[s] > 0]
    orders = []
    for r in range(len(shapes[0]) if shapes else 0):

        def denser(s: int, r: int = r) -> float:
            return -values[s] / shapes[s][r] if shapes[s][r] else -math.inf

        orders.append(sorted(items, key=denser))
    return orders


def greedy_pattern(
    room: Vector,
    shapes: Sequence[Vector],
    values: Sequence[float],
    caps: Sequence[int],
    per_resource: Sequence[Sequence[int]] | None = None,
) -> tuple[float, list[int]]:
    """(value, counts) of the best of a few greedy fills: shapes taken, as many as fit, by
    value per summed share of the room, then by value per share of each resource alone.
    No search and no bound: column generation prices with this first (a pattern worth more
    than its type's price is a valid column however it was found) and calls
    `solve_knapsack` only once greedy fills find none."""
    width = len(room)
    items = [s for s in range(len(shapes)) if values[s] > _EPS and caps[s] > 0]
    best_value = 0.0
    best_counts = [0] * len(shapes)
    if not items:
        return best_value, best_counts
    dims = [r for r in range(width) if room[r] > 0]
    share = {s: [shapes[s][r] / room[r] for r in dims] for s in items}
    orders: list[Sequence[int]] = [
        sorted(items, key=lambda s: -values[s] / max(sum(share[s]), 1e-12))]
    if per_resource is not None:
        orders.extend(per_resource[r] for r in dims)
    else:
        for d in range(len(dims)):

            def denser(s: int, d: int = d) -> float:
                return -values[s] / max(share[s][d], 1e-12)

            orders.append(sorted(items, key=denser))
    for order in orders:
        left = list(room)
        counts = [0] * len(shapes)
        value = 0.0
        for s in order:
            shape = shapes[s]
            k = caps[s]
            for r in range(width):
                if shape[r]:
                    k = min(k, left[r] // shape[r]) if left[r] > 0 else 0
            if k > 0:
                counts[s] = k
                value += k * values[s]
                for r in range(width):
                    left[r] -= k * shape[r]
        if value > best_value + 1e-12:
            best_value, best_counts = value, counts
    return best_value, best_counts


class GreedyFills:
    """`greedy_pattern` for one pricing round: what does not depend on the room (the shapes
    worth taking, each shape's non-zero resources, the per-resource orders) is worked out
    once for all the bins the round fills. `best(room)` is exactly
    `greedy_pattern(room, shapes, values, caps, resource_orders(shapes, values, caps))`:
    the same orders and the same fills, in the same arithmetic.

    `shares` (optional, kept by the caller across rounds over the same shapes) remembers
    each room's summed shares per shape: they do not depend on the values."""

    def __init__(self, shapes: Sequence[Vector], values: Sequence[float],
                 caps: Sequence[int], shares: dict[Vector, list[float]] | None = None
                 ) -> None:
        self.size = len(shapes)
        self.values = values
        self.caps = caps
        self.items = [s for s in range(len(shapes)) if values[s] > _EPS and caps[s] > 0]
        self.sized = [[(r, x) for r, x in enumerate(shape) if x] for shape in shapes]
        self.per_resource = resource_orders(shapes, values, caps)
        self.shares = {} if shares is None else shares

    def _shares(self, room: Vector) -> list[float]:
        known = self.shares.get(room)
        if known is None:
            known = [sum(x / room[r] for r, x in sized if room[r] > 0) for sized in self.sized]
            self.shares[room] = known
        return known

    def best(self, room: Vector) -> tuple[float, list[int]]:
        items = self.items
        best_value = 0.0
        best_counts = [0] * self.size
        if not items:
            return best_value, best_counts
        values, caps, sized = self.values, self.caps, self.sized
        dims = [r for r in range(len(room)) if room[r] > 0]
        shares = self._shares(room)
        keys = {s: -values[s] / max(shares[s], 1e-12) for s in items}
        orders: list[Sequence[int]] = [sorted(items, key=keys.__getitem__)]
        orders.extend(self.per_resource[r] for r in dims)
        for order in orders:
            left = list(room)
            counts = [0] * self.size
            value = 0.0
            for s in order:
                k = caps[s]
                for r, x in sized[s]:
                    have = left[r]
                    if have <= 0:
                        k = 0
                        break
                    fit = have // x
                    if fit < k:
                        k = fit
                if k > 0:
                    counts[s] = k
                    value += k * values[s]
                    for r, x in sized[s]:
                        left[r] -= k * x
            if value > best_value + 1e-12:
                best_value, best_counts = value, counts
        return best_value, best_counts


def _fractional(order: Sequence[int], weights: Sequence[float], vals: Sequence[float],
                limits: Sequence[int], capacity: float) -> float:
    free = capacity
    total = 0.0
    for i in order:
        weight = weights[i]
        if weight <= 0.0:
            total += vals[i] * limits[i]
            continue
        if free <= 0.0:
            break
        if limits[i] * weight <= free:
            total += limits[i] * vals[i]
            free -= limits[i] * weight
        else:
            total += free / weight * vals[i]
            free = 0.0
    return total


def _folded(shares: Sequence[Sequence[float]], lam: Sequence[float]) -> list[float]:
    # Spelled out for the usual two and three resources (the surrogate search calls this
    # thousands of times a solve); the same sums in the same order as the general case.
    if len(lam) == 3:
        a, b, c = lam
        return [a * x + b * y + c * z for x, y, z in shares]
    if len(lam) == 2:
        a, b = lam
        return [a * x + b * y for x, y in shares]
    return [sum(m * x for m, x in zip(lam, row, strict=True)) for row in shares]


def _surrogate(
    shares: Sequence[Sequence[float]], vals: Sequence[float], limits: Sequence[int]
) -> tuple[list[float], float]:
    """Multipliers (summing to 1) whose folded fractional knapsack is smallest: a grid
    over the simplex, then a local search on finer steps. Returns them and that bound."""
    nd = len(shares[0])
    n = len(vals)

    def evaluate(lam: list[float]) -> float:
        weights = _folded(shares, lam)
        keys = [-v / w if w > 0 else -math.inf for v, w in zip(vals, weights, strict=True)]
        order = sorted(range(n), key=keys.__getitem__)
        return _fractional(order, weights, vals, limits, 1.0)

    best_lam: list[float] = [1.0 / nd] * nd
    best = evaluate(best_lam)
    for point in _simplex_grid(nd, _GRID):
        lam = [p / _GRID for p in point]
        value = evaluate(lam)
        if value < best:
            best, best_lam = value, lam
    step = 1.0 / _GRID
    for _ in range(_REFINEMENTS):
        step /= 2
        improved = True
        while improved:
            improved = False
            for a in range(nd):
                for b in range(nd):
                    if a == b or best_lam[b] < step - 1e-12:
                        continue
                    lam = list(best_lam)
                    lam[a] += step
                    lam[b] -= step
                    value = evaluate(lam)
                    if value < best - 1e-12:
                        best, best_lam, improved = value, lam, True
    return best_lam, best


def _simplex_grid(dims: int, steps: int) -> list[tuple[int, ...]]:
    """Every way to split `steps` into `dims` non-negative parts."""
    if dims == 1:
        return [(steps,)]
    return [(k, *rest) for k in range(steps + 1) for rest in _simplex_grid(dims - 1, steps - k)]


def solve_knapsack(
    room: Vector,
    shapes: Sequence[Vector],
    values: Sequence[float],
    caps: Sequence[int],
    node_limit: int,
) -> KnapsackResult:
    """The pattern of largest value sum(values[s] * counts[s]) with counts[s] <= caps[s]
    that fits in `room` (exact unless `node_limit` branch-and-bound nodes do not suffice;
    `upper` bounds the optimum either way)."""
    width = len(room)
    items: list[tuple[int, int]] = []  # (shape, most that fit)
    for s, shape in enumerate(shapes):
        if values[s] <= _EPS or caps[s] <= 0:
            continue
        most = caps[s]
        for r in range(width):
            if shape[r]:
                most = min(most, room[r] // shape[r]) if room[r] > 0 else 0
        if most > 0:
            items.append((s, most))
    if not items:
        return KnapsackResult(0.0, [0] * len(shapes), 0.0, True)
    dims = [r for r in range(width) if room[r] > 0 and any(shapes[s][r] for s, _ in items)]
    if not dims:  # nothing takes room: every pod fits
        counts = [0] * len(shapes)
        for s, most in items:
            counts[s] = most
        value = sum(values[s] * k for s, k in enumerate(counts))
        return KnapsackResult(value, counts, value, True)
    vals = [values[s] for s, _ in items]
    limits = [most for _, most in items]
    shares = [[shapes[s][r] / room[r] for r in dims] for s, _ in items]
    lam, root_bound = _surrogate(shares, vals, limits)
    folded = _folded(shares, lam)
    n = len(items)
    order = sorted(range(n), key=lambda i: -vals[i] / folded[i] if folded[i] > 0 else -math.inf)
    weight = [folded[i] for i in order]
    value_of = [vals[i] for i in order]
    limit = [limits[i] for i in order]
    size = [[shapes[items[i][0]][r] for r in dims] for i in order]
    nd = len(dims)
    sized = [[(d, sz) for d, sz in enumerate(size[i]) if sz] for i in range(n)]

    # Greedy starts: the branching order, then by value per summed share of the room and
    # per share of each resource alone; the best is the pattern to beat.
    best_value = -1.0
    best_counts = [0] * n
    share_of = [shares[i] for i in order]
    greedy_orders = [
        list(range(n)),
        sorted(range(n), key=lambda i: -value_of[i] / sum(share_of[i])),
    ]
    for d in range(nd):

        def denser(i: int, d: int = d) -> float:
            return -value_of[i] / share_of[i][d] if share_of[i][d] else -math.inf

        greedy_orders.append(sorted(range(n), key=denser))
    for greedy in greedy_orders:
        left = [room[r] for r in dims]
        current = [0] * n
        value = 0.0
        for i in greedy:
            k = limit[i]
            for d, sz in sized[i]:
                fit = left[d] // sz
                if fit < k:
                    k = fit
            if k > 0:
                current[i] = k
                value += k * value_of[i]
                for d, sz in sized[i]:
                    left[d] -= k * sz
        if value > best_value:
            best_value, best_counts = value, current
    open_bound = 0.0
    nodes = 0
    if best_value < root_bound * (1 - 1e-9) - 1e-12:
        left = [room[r] for r in dims]
        current = [0] * n

        # The fractional bound of shapes i.. in `capacity`: those that fit whole in order
        # (prefix sums and a bisection), then a fraction of the next.
        full_weight = [0.0] * (n + 1)
        full_value = [0.0] * (n + 1)
        for j in range(n):
            full_weight[j + 1] = full_weight[j] + limit[j] * weight[j]
            full_value[j + 1] = full_value[j] + limit[j] * value_of[j]

        def rest_bound(after: int, capacity: float) -> float:
            """The fractional bound of the shapes from `after` on in `capacity`."""
            if capacity <= 0.0:
                return 0.0
            target = full_weight[after] + capacity
            j = bisect_right(full_weight, target, after) - 1
            bound = full_value[j] - full_value[after]
            if j < n:
                rest = target - full_weight[j]
                if rest > 0.0:
                    bound += rest / weight[j] * value_of[j]
            return bound

        def search(i: int, value: float, capacity: float, optimistic: float) -> None:
            """Branch on shape i; `optimistic` is this subtree's bound (already above the
            best pattern)."""
            nonlocal best_value, best_counts, nodes, open_bound
            # Shapes none of which fit (most nodes, deep in the tree) have one child, the
            # next shape with the same room: walked in this loop rather than recursed
            # into, the same nodes counted and the same bounds; `chained` is the largest
            # bound of those walked, which the budget's end reports as open (as each
            # would have on its way back).
            chained = -math.inf
            while True:
                if i == n:
                    if value > best_value + 1e-12:
                        best_value, best_counts = value, list(current)
                    break
                nodes += 1
                if nodes > node_limit:
                    open_bound = max(open_bound, optimistic)
                    break
                k = limit[i]
                for d, sz in sized[i]:
                    fit = left[d] // sz
                    if fit < k:
                        k = fit
                if k == 0:
                    child_bound = value + rest_bound(i + 1, capacity)
                    if child_bound <= best_value + 1e-12:
                        break
                    if optimistic > chained:
                        chained = optimistic
                    i, optimistic = i + 1, child_bound
                    continue
                worth, wt = value_of[i], weight[i]
                after = i + 1
                after_weight, after_value = full_weight[after], full_value[after]
                while k >= 0:
                    child_value = value + k * worth
                    child_capacity = capacity - k * wt
                    # The fractional bound of the shapes after i in the room left (inlined:
                    # the search's innermost step).
                    if child_capacity <= 0.0:
                        bound = 0.0
                    else:
                        target = after_weight + child_capacity
                        j = bisect_right(full_weight, target, after) - 1
                        bound = full_value[j] - after_value
                        if j < n:
                            rest = target - full_weight[j]
                            if rest > 0.0:
                                bound += rest / weight[j] * value_of[j]
                    child_bound = child_value + bound
                    # Fewer of shape i frees room only for less valuable shapes (they come
                    # later in the order): the bound only falls as k does.
                    if child_bound <= best_value + 1e-12:
                        break
                    for d, sz in sized[i]:
                        left[d] -= k * sz
                    current[i] = k
                    search(after, child_value, child_capacity, child_bound)
                    for d, sz in sized[i]:
                        left[d] += k * sz
                    current[i] = 0
                    if nodes > node_limit:
                        # The siblings not tried are bounded by this subtree's bound.
                        open_bound = max(open_bound, optimistic)
                        break
                    k -= 1
                break
            if nodes > node_limit and chained > open_bound:
                open_bound = chained

        search(0, 0.0, 1.0, root_bound)
    counts = [0] * len(shapes)
    for position, i in enumerate(order):
        counts[items[i][0]] = best_counts[position]
    exact = nodes <= node_limit
    upper = best_value if exact else max(best_value, min(open_bound, root_bound))
    return KnapsackResult(best_value, counts, upper, exact, nodes)
