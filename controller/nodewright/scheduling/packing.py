"""Packing pods that nothing ties together: a small cutting-stock problem over pod shapes.

Pods with no topology rule between them only need *some* node with room. Such pods come
in few shapes (distinct request vectors), so the cheapest set of nodes for them is a
cutting-stock problem: a *pattern* is an instance type and how many pods of each shape one
node of it holds, and the plan is the cheapest multiset of patterns covering every pod.

`pack` solves it the classic way, in pure Python:
- the LP relaxation over patterns by column generation: a revised simplex on the
  restricted master (one row per shape, warm-started from the last basis) gives the value
  y_s of one pod of shape s; for each instance type a knapsack (`knapsack.py`) looks for
  the pattern worth more than the type's price; patterns that are are added until none is;
- rounding by diving: patterns the LP uses a whole number of times are fixed, then the
  one used most is fixed once, the LP is re-solved for the pods left, and so on; plans of
  few nodes then get a small depth-first search over the same decisions (`_Rounding`);
- improvement: nodes split when two cost less, the least useful emptied into the others,
  pairs re-packed (`improve`).
Each fixed pattern's pods become one NodeClaim; the caller keeps every type that holds
them (the NodeClaim's flexibility), the cheapest of which is at most the pattern's price.

Instance types another type dominates (no cheaper... no more room) never help and are
dropped first. Ties between plans of equal price go to fewer nodes (a tiny per-node
charge). Work is bounded (`Budget`); pods the packer did not place are returned to the
caller, which places them greedily.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import le

from nodewright.scheduling.knapsack import GreedyFills, best_pattern
from nodewright.scheduling.master_lp import MasterLP

Vector = tuple[int, ...]

_EPS = 1e-9
# Ties between plans of equal price: less capacity bought (room summed over resources,
# each relative to the largest bin), then fewer nodes. Both are tiny charges relative to
# the average bin price.
_ROOM_CHARGE = 1e-6
_NODE_CHARGE = 1e-11
# A simplex pivot's work in knapsack nodes (it prices a window of columns).
_PIVOT_EFFORT = 20
# New columns a pricing round adds at most (the best first).
_COLUMNS_PER_ROUND = 100
# Plans up to this many nodes may grow a node's type while repairing.
_REPAIR_GROWTH_UP_TO = 150
# How many bins the shortlist keeps per pod mix and per shape.
_SHORTLIST_PER_MIX = 48
_SHORTLIST_PER_SHAPE = 3
# Plans of up to this many nodes get the rounding search after the dive.
_SEARCH_UP_TO_NODES = 40
# Pairs among at most this many of the least useful nodes are re-packed.
_REPACK_NODES = 60
# Plans of up to this many nodes also get three nodes re-packed onto one or two: one bin
# filled as full as it goes, the rest on the cheapest bin that holds it. Each triple holds
# one of the least useful nodes and two more among the least useful (on the benchmark's rows
# every triple that helped did).
_TRIPLES_UP_TO_NODES = 40
_TRIPLE_ANCHORS = 4
_TRIPLE_PARTNERS = 16


@dataclass(frozen=True, slots=True)
class BinType:
    """An instance type as the packer sees it: `room` is what it holds for pods (after
    DaemonSet overhead); `key` is the caller's handle."""

    key: int
    price: float
    room: Vector


@dataclass(frozen=True, slots=True)
class Packed:
    """One node: a bin type and how many pods of each shape it holds."""

    bin: BinType
    counts: Vector
    # The LP's price of the pods it holds (sum of their shape values) over the node's
    # price: how well the node is used, 1.0 for a node the optimum would also buy.
    worth: float


@dataclass
class Budget:
    """Work limits, counted in work done and never in time, so that a plan does not depend
    on the machine or its load: `effort` is knapsack branch-and-bound nodes plus simplex
    pivots (each weighted by `_PIVOT_EFFORT`) over the whole `pack`.

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
    # `_SEARCH_UP_TO_NODES` nodes `lean_dive_rounds`, each searching `lean_dive_search_bins`
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


# prune_dominated's answers for the last few catalogs: a solve packs the same NodePool's
# types several times (the greedy tails, consolidation's simulations), and the pruning is
# quadratic in the catalog (0.1-0.3 s on the real one).
_PRUNED: dict[tuple[BinType, ...], list[BinType]] = {}
_PRUNED_KEPT = 8
_PRUNED_LOCK = threading.Lock()  # controllers may solve on several threads


def prune_dominated(bins: Sequence[BinType]) -> list[BinType]:
    """Types no other type beats on price while having at least as much room in everything."""
    key = tuple(bins)
    with _PRUNED_LOCK:
        known = _PRUNED.get(key)
    if known is not None:
        return list(known)
    ordered = sorted(bins, key=lambda b: (b.price, tuple(-x for x in b.room), b.key))
    kept: list[BinType] = []
    for candidate in ordered:
        room = candidate.room
        if any(all(k >= r for k, r in zip(other.room, room, strict=True)) for other in kept):
            continue
        kept.append(candidate)
    with _PRUNED_LOCK:
        while len(_PRUNED) >= _PRUNED_KEPT:
            del _PRUNED[next(iter(_PRUNED))]
        _PRUNED[key] = kept
    return list(kept)


# ---------------------------------------------------------------------------------------
# Pricing: the most valuable pattern for one bin type.


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


# ---------------------------------------------------------------------------------------


def _fits(need: Vector, room: Vector) -> bool:
    return all(map(le, need, room))


def _load(counts: Sequence[int], shapes: Sequence[Vector]) -> Vector:
    total = [0] * len(shapes[0])
    for s, k in enumerate(counts):
        if k:
            for r, x in enumerate(shapes[s]):
                total[r] += k * x
    return tuple(total)


def cheapest_bin(load: Vector, bins: Sequence[BinType]) -> BinType | None:
    """The cheapest bin that holds the load (bins sorted cheapest first)."""
    for candidate in bins:
        if _fits(load, candidate.room):
            return candidate
    return None


class _Bins:
    """The shortlisted bins (cheapest first) with the answers the repair passes ask again
    and again memoised: the cheapest bin per load and the split of a node's pods."""

    def __init__(self, bins: Sequence[BinType], shapes: Sequence[Vector],
                 charge: Mapping[int, float]) -> None:
        self.bins = list(bins)
        self.shapes = shapes
        self.charge = charge
        self._cheapest: dict[Vector, BinType | None] = {}
        self._splits: dict[Vector, list[list[int]] | None] = {}
        self.largest = [max(max(b.room[r] for b in bins), 1) for r in range(len(shapes[0]))]
        # A pod's size: its largest share of any resource of the largest bin.
        self.sizes = [max(x / m for x, m in zip(shape, self.largest, strict=True))
                      for shape in shapes]

    def price(self, b: BinType) -> float:
        return b.price + self.charge[b.key]

    def cheapest(self, load: Vector) -> BinType | None:
        try:
            return self._cheapest[load]
        except KeyError:
            found = cheapest_bin(load, self.bins)
            self._cheapest[load] = found
            return found

    def for_counts(self, counts: Sequence[int]) -> BinType | None:
        return self.cheapest(_load(counts, self.shapes))

    def split(self, counts: Sequence[int]) -> list[list[int]] | None:
        key = tuple(counts)
        if key not in self._splits:
            self._splits[key] = _split(key, self)
        found = self._splits[key]
        return None if found is None else [list(half) for half in found]

    def largest_first(self, counts: Sequence[int]) -> list[int]:
        """One shape index per pod, the largest pods first (`sizes`)."""
        sizes = self.sizes
        return sorted((s for s, k in enumerate(counts) for _ in range(k)),
                      key=lambda s: -sizes[s])

    def fill(self, counts: Sequence[int], below: float) -> list[list[int]] | None:
        """The pods as one or two nodes costing less than `below`: one bin filled largest
        pod first as far as it goes, the rest (if any) on the cheapest bin that holds it."""
        shapes = self.shapes
        # Largest pods first, one at a time while they fit: the pods of one shape are
        # consecutive in that order and loads only grow, so as many of a shape as fit at
        # once is the same fill.
        order: list[tuple[int, list[tuple[int, int]], int]] = []
        for s in self.largest_first(counts):
            if not order or order[-1][0] != s:
                order.append((s, [(r, x) for r, x in enumerate(shapes[s]) if x], counts[s]))
        best: tuple[float, list[list[int]]] | None = None
        total = _load(counts, shapes)
        for first in self.bins:  # cheapest first
            first_price = self.price(first)
            if first_price >= below - 1e-15:
                break
            left = list(first.room)
            taken = [0] * len(counts)
            for s, sized, count in order:
                k = count
                for r, x in sized:
                    fit = left[r] // x if left[r] > 0 else 0
                    if fit < k:
                        k = fit
                if k > 0:
                    taken[s] = k
                    for r, x in sized:
                        left[r] -= k * x
            rest = [k - t for k, t in zip(counts, taken, strict=True)]
            if not any(taken):
                continue
            if not any(rest):
                cost, parts = first_price, [taken]
            else:
                # The rest's load: everything less what the first bin took.
                second = self.cheapest(tuple(
                    t - (room - x) for t, room, x in zip(total, first.room, left, strict=True)))
                if second is None:
                    continue
                cost, parts = first_price + self.price(second), [taken, rest]
            if cost < below - 1e-15 and (best is None or cost < best[0]):
                best = (cost, parts)
        return None if best is None else best[1]


def _mix_rate(room: Vector, mix: Sequence[float], price: float) -> float:
    """Price per unit of `mix` (a resource vector) in this room: price / how many times
    the mix fits."""
    units = math.inf
    for have, wanted in zip(room, mix, strict=True):
        if wanted > 0:
            units = min(units, have / wanted)
    return price / units if 0 < units < math.inf else math.inf


def shortlist(bins: Sequence[BinType], shapes: Sequence[Vector], demand: Sequence[int]
              ) -> list[BinType]:
    """The bins worth pricing (cheapest first): the most cost-efficient for the whole mix
    of pods, for its cpu-heavier and its memory-heavier halves (relative to the mix), and
    for each shape alone. On a large catalog this is a few dozen of hundreds."""
    width = len(shapes[0]) if shapes else 0
    total = [sum(k * shape[r] for shape, k in zip(shapes, demand, strict=True))
             for r in range(width)]
    share = [
        [shape[r] / total[r] if total[r] else 0.0 for r in range(width)] for shape in shapes
    ]
    # Sub-mixes: everything, and the shapes above / below the median skew of the first two
    # resources (cpu and memory in a solve).
    mixes: list[list[float]] = [[float(t) for t in total]]
    if width >= 2:
        skew = [sh[0] - sh[1] for sh in share]
        for heavy in (True, False):
            mix = [0.0] * width
            for s, shape in enumerate(shapes):
                if demand[s] and (skew[s] >= 0) == heavy:
                    for r in range(width):
                        mix[r] += demand[s] * shape[r]
            if any(mix):
                mixes.append(mix)
    chosen: dict[int, BinType] = {}
    for mix in mixes:

        rates = {b.key: _mix_rate(b.room, mix, b.price) for b in bins}
        # Equally efficient bins: the smallest and the largest (few big nodes pack best
        # when nothing is cheaper per unit, small ones hold the remainder).
        for sign in (1.0, -1.0):

            def rate(
                b: BinType, sign: float = sign, rates: dict[int, float] = rates
            ) -> tuple[float, float]:
                return rates[b.key], sign * b.price

            for b in sorted(bins, key=rate)[: _SHORTLIST_PER_MIX // 2]:
                chosen.setdefault(b.key, b)
    for s, shape in enumerate(shapes):
        if not demand[s]:
            continue
        per_pod = []
        for b in bins:
            k = demand[s]
            for r, size in enumerate(shape):
                if size:
                    k = min(k, b.room[r] // size)
            if k >= 1:
                per_pod.append((b.price / k, b.price, b.key, b))
        per_pod.sort(key=lambda item: item[:3])
        for item in per_pod[:_SHORTLIST_PER_SHAPE]:
            chosen.setdefault(item[3].key, item[3])
    return sorted(chosen.values(), key=lambda b: (b.price, tuple(-x for x in b.room), b.key))


def _price(
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


def _split(counts: Sequence[int], bins: _Bins) -> list[list[int]] | None:
    """The pods of one node as two nodes, when that costs no more (charges included):
    pods largest first, each to the half with less load so far."""
    if sum(counts) < 2:
        return None
    whole = bins.for_counts(counts)
    if whole is None:
        return None
    halves = [[0] * len(counts), [0] * len(counts)]
    weight = [0.0, 0.0]
    for s in bins.largest_first(counts):
        side = 0 if weight[0] <= weight[1] else 1
        halves[side][s] += 1
        weight[side] += bins.sizes[s]
    chosen = [bins.for_counts(half) for half in halves]
    if any(c is None for c in chosen):
        return None
    cost = sum(bins.price(c) for c in chosen if c is not None)
    if cost < bins.price(whole) - 1e-15:
        return halves
    return None


@dataclass
class _Node:
    counts: list[int]
    bin: BinType
    worth: float
    load: list[int]
    alive: bool = True


def repair(plan: list[Packed], bins: _Bins) -> list[Packed]:
    """Empty the least useful nodes (by `worth`) into the others when that saves money:
    each of its pods goes where it raises the price least (a node's type may grow into
    the cheapest that holds its new load). On plans of more than `_REPAIR_GROWTH_UP_TO`
    nodes only room already paid for is used (no type changes)."""
    if len(plan) < 2:
        return plan
    shapes = bins.shapes
    width = len(shapes[0])
    nodes = [_Node(list(p.counts), p.bin, p.worth, list(_load(p.counts, shapes))) for p in plan]
    grow = len(plan) <= _REPAIR_GROWTH_UP_TO
    price = bins.price

    for victim in sorted(nodes, key=lambda n: n.worth):
        if not victim.alive or victim.worth >= 1 - 1e-6:
            continue
        saving = price(victim.bin)
        # other node -> (its new load, its new bin, pods added per shape)
        moves: dict[int, tuple[list[int], BinType, list[int]]] = {}
        pods = sorted(
            (s for s, k in enumerate(victim.counts) for _ in range(k)),
            key=lambda s: tuple(-x for x in shapes[s]),
        )
        extra = 0.0
        for s in pods:
            best: tuple[float, int, BinType] | None = None
            for index, other in enumerate(nodes):
                if other is victim or not other.alive:
                    continue
                load, current, _ = moves.get(index, (other.load, other.bin, []))
                need = tuple(load[r] + shapes[s][r] for r in range(width))
                if _fits(need, current.room):
                    cost, target = 0.0, current
                elif grow:
                    found = bins.cheapest(need)
                    if found is None:
                        continue
                    cost, target = price(found) - price(current), found
                else:
                    continue
                if best is None or cost < best[0] - 1e-15:
                    best = (cost, index, target)
                    if cost <= 0.0:
                        break
            if best is None:
                extra = math.inf
                break
            cost, index, target = best
            extra += cost
            if extra >= saving - 1e-15:
                break
            load, _, added = moves.get(index, (nodes[index].load, nodes[index].bin, []))
            added = added or [0] * len(shapes)
            added[s] += 1
            moves[index] = ([load[r] + shapes[s][r] for r in range(width)], target, added)
        if extra >= saving - 1e-15:
            continue
        for index, (load, target, added) in moves.items():
            other = nodes[index]
            other.load = load
            other.bin = target
            other.counts = [a + b for a, b in zip(other.counts, added, strict=True)]
        victim.alive = False
    return [Packed(n.bin, tuple(n.counts), n.worth) for n in nodes if n.alive]


class _Relaxation:
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
            found = _price(pricing, self.shapes, duals, caps, self.charge, self.budget,
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


@dataclass
class _Fixed:
    """A node the rounding decided on: the pods it holds (per row) and its cheapest bin."""

    bin: BinType
    counts: list[int]
    worth: float


class _Rounding:
    """Turns the LP into nodes: patterns the LP uses whole are fixed; then a depth-first
    search fixes one pattern at a time among those the LP uses most (the first path is the
    classic dive), re-solving the LP for the pods left and pruning a branch once its fixed
    nodes plus its LP cost as much as the best plan found. Bounded by `Budget.rounding_lps`
    LP solves and the effort budget."""

    def __init__(self, relaxation: _Relaxation, budget: Budget) -> None:
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
        if sum(solution.values()) > _SEARCH_UP_TO_NODES:
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
        chosen = cheapest_bin(_load(taken, self.relaxation.shapes), self.relaxation.bins)
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


def pack(
    shapes: Sequence[Vector],
    demand: Sequence[int],
    bins: Sequence[BinType],
    budget: Budget | None = None,
) -> tuple[list[Packed], list[int]]:
    """Nodes for `demand[s]` pods of each shape, and how many of each shape were left
    unpacked (the caller places those greedily: shapes no bin holds, or the budget ran out).
    """
    budget = budget or Budget()
    budget.start()
    remaining = list(demand)
    bins = shortlist(prune_dominated(bins), shapes, remaining)
    if not bins or not shapes:
        return [], remaining
    scale = sum(b.price for b in bins) / len(bins)
    largest = [max(max(b.room[r] for b in bins), 1) for r in range(len(bins[0].room))]
    charge = {
        b.key: scale * (_ROOM_CHARGE * sum(x / m for x, m in zip(b.room, largest, strict=True))
                        + _NODE_CHARGE)
        for b in bins
    }
    # Shapes no bin holds stay with the caller.
    placeable = [any(_fits(shape, b.room) for b in bins) for shape in shapes]
    rows = [s for s in range(len(shapes)) if placeable[s] and remaining[s] > 0]
    if not rows:
        return [], remaining
    sub_shapes = [shapes[s] for s in rows]
    relaxation = _Relaxation(sub_shapes, bins, charge, budget)
    caps = [remaining[s] for s in rows]
    solved = relaxation.solve(caps, True, budget.max_rounds)
    if solved is None:
        # Numerical trouble (never seen outside contrived inputs): the caller's greedy
        # placement takes every pod.
        return [], remaining
    _, duals, solution = solved
    rounding = _Rounding(relaxation, budget)
    nodes = rounding.dive(list(caps), duals, solution)
    if len(nodes) <= _SEARCH_UP_TO_NODES and rounding.best is not None:
        # Few nodes: each rounding mistake costs a large share; search for better ones.
        nodes = rounding.search(list(caps), duals, solution) or nodes
    left = list(caps)
    for node in nodes:
        left = [c - k for c, k in zip(left, node.counts, strict=True)]
    plan = []
    sub_bins = _Bins(bins, sub_shapes, charge)
    for node in nodes:
        parts = sub_bins.split(node.counts) or [node.counts]
        for part in parts:
            chosen = sub_bins.for_counts(part) or node.bin
            full = [0] * len(shapes)
            for i, k in enumerate(part):
                full[rows[i]] = k
            plan.append(Packed(chosen, tuple(full), node.worth))
    for i, s in enumerate(rows):
        remaining[s] = left[i]
    full_bins = _Bins(bins, shapes, charge)
    plan = improve(plan, full_bins)
    # Never worse than first fit: its plan replaces one that costs more or leaves pods.
    fallback = first_fit(shapes, [demand[s] if placeable[s] else 0 for s in range(len(shapes))],
                         full_bins)
    if any(remaining[s] for s in rows) or _cost(fallback) < _cost(plan) - 1e-12:
        for s in rows:
            remaining[s] = 0
        return fallback, remaining
    return plan, remaining


def _cost(plan: Sequence[Packed]) -> float:
    return sum(node.bin.price for node in plan)


def first_fit(shapes: Sequence[Vector], demand: Sequence[int], bins: _Bins) -> list[Packed]:
    """First-fit decreasing as Karpenter plans: pods largest first, each onto the first
    node that some bin still holds it on, else onto a new node; each node then gets the
    cheapest bin that holds its pods. Pods no bin holds are left out. The packer's floor:
    its plan is never more expensive than this one."""
    rooms = [b.room for b in prune_dominated(
        [BinType(i, 0.0, b.room) for i, b in enumerate(bins.bins)])]
    loads: list[list[int]] = []
    counts: list[list[int]] = []
    # Loads only grow: a node that once refused a shape refuses it for good, so each shape
    # starts looking where the last pod of its shape went.
    start = [0] * len(shapes)
    for s in bins.largest_first(demand):
        shape = shapes[s]
        if not any(_fits(shape, room) for room in rooms):
            continue
        placed = False
        for n in range(start[s], len(loads)):
            need = [a + b for a, b in zip(loads[n], shape, strict=True)]
            if any(all(x <= r for x, r in zip(need, room, strict=True)) for room in rooms):
                loads[n] = need
                counts[n][s] += 1
                start[s] = n
                placed = True
                break
        if not placed:
            loads.append(list(shape))
            counts.append([0] * len(shapes))
            counts[-1][s] = 1
            start[s] = len(loads) - 1
    plan = []
    for load, node_counts in zip(loads, counts, strict=True):
        chosen = bins.cheapest(tuple(load))
        assert chosen is not None  # the load fits one of the rooms
        plan.append(Packed(chosen, tuple(node_counts), 0.0))
    return plan




def improve(plan: list[Packed], bins: _Bins) -> list[Packed]:
    """`repair`, then pairs of nodes re-packed: two nodes' pods on one cheaper node, or
    split anew over two nodes that cost less than the pair did. Whether a pair improves
    depends only on its two nodes' pods and types, so a pair that did not is not tried
    again while both stay as they are."""
    plan = repair(plan, bins)
    price = bins.price

    def value(node: Packed) -> float:
        return node.worth * node.bin.price

    nodes = list(plan)
    tried: set[tuple[Vector, int, Vector, int]] = set()
    tried_triples: set[tuple[tuple[Vector, int], ...]] = set()
    improved = True
    while improved and len(nodes) >= 2:
        improved = False
        order = sorted(range(len(nodes)), key=lambda i: (nodes[i].worth, i))[:_REPACK_NODES]
        for position, a in enumerate(order):
            for b in order[position + 1 :]:
                first, second = nodes[a], nodes[b]
                key = (first.counts, first.bin.key, second.counts, second.bin.key)
                if key in tried:
                    continue
                tried.add(key)
                counts = [x + y for x, y in zip(first.counts, second.counts, strict=True)]
                current = price(first.bin) + price(second.bin)
                worth = value(first) + value(second)
                one = bins.for_counts(counts)
                if one is not None and price(one) < current - 1e-12:
                    nodes[a] = Packed(one, tuple(counts), worth / max(one.price, 1e-12))
                    del nodes[b]
                    improved = True
                    break
                halves = bins.split(counts)
                if halves is None:
                    continue
                chosen = [bins.for_counts(half) for half in halves]
                if any(c is None for c in chosen):
                    continue
                cost = sum(price(c) for c in chosen if c is not None)
                if cost < current - 1e-12:
                    share = worth / max(cost, 1e-12)
                    nodes[a], nodes[b] = (
                        Packed(c, tuple(h), share) for c, h in zip(chosen, halves, strict=True)
                        if c is not None
                    )
                    improved = True
                    break
            if improved:
                break
        if not improved and len(nodes) <= _TRIPLES_UP_TO_NODES:
            improved = _repack_a_triple(nodes, bins, tried_triples)
    return nodes


def _repack_a_triple(nodes: list[Packed], bins: _Bins,
                     tried: set[tuple[tuple[Vector, int], ...]]) -> bool:
    """Three nodes' pods onto one or two nodes that cost less (`_Bins.fill`), in place;
    whether one was found. Like pairs, a triple that did not improve is not tried again."""
    by_worth = sorted(range(len(nodes)), key=lambda i: (nodes[i].worth, i))
    for anchor in by_worth[:_TRIPLE_ANCHORS]:
        others = [i for i in by_worth[:_TRIPLE_PARTNERS] if i != anchor]
        for second, third in itertools.combinations(others, 2):
            if _repack_onto_fewer(nodes, (anchor, second, third), bins, tried):
                return True
    return False


def _repack_onto_fewer(nodes: list[Packed], group: tuple[int, ...], bins: _Bins,
                     tried: set[tuple[tuple[Vector, int], ...]]) -> bool:
    """The pods of the nodes at `group` onto one or two cheaper nodes, in place, when
    `fill` finds them."""
    members = [nodes[i] for i in group]
    key = tuple(sorted((n.counts, n.bin.key) for n in members))
    if key in tried:
        return False
    tried.add(key)
    counts = [sum(column) for column in zip(*(n.counts for n in members), strict=True)]
    halves = bins.fill(counts, sum(bins.price(n.bin) for n in members))
    if halves is None:
        return False
    chosen = [bins.for_counts(half) for half in halves]
    worth = sum(n.worth * n.bin.price for n in members)
    cost = sum(c.price for c in chosen if c is not None)
    for index in sorted(group, reverse=True):
        del nodes[index]
    nodes.extend(
        Packed(c, tuple(h), worth / max(cost, 1e-12))
        for c, h in zip(chosen, halves, strict=True) if c is not None
    )
    return True
