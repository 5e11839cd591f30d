"""Packing pods that nothing ties together: a small cutting-stock problem over pod shapes.

Pods with no topology rule between them only need *some* node with room. Such pods come
in few shapes (distinct request vectors), so the cheapest set of nodes for them is a
cutting-stock problem: a *pattern* is an instance type and how many pods of each shape one
node of it holds, and the plan is the cheapest multiset of patterns covering every pod.

`pack` solves it the classic way, in pure Python, one module per step:
- `bins`: the vocabulary (`BinType`, `Packed`), dominated types dropped, the cheapest bin
  for a load; `shortlist`: the few dozen types worth pricing;
- `relaxation`: the LP relaxation over patterns by column generation: the restricted
  master (`master_lp`, HiGHS, one row per shape, warm-started from the last basis) gives
  the value y_s of one pod of shape s; for each instance type `column_pricing` looks
  for the pattern worth more than the type's price (greedy fills, then the `knapsack`
  search); patterns that are are added until none is;
- `rounding`: by diving: patterns the LP uses a whole number of times are fixed, then the
  one used most is fixed once, the LP is re-solved for the pods left, and so on; plans of
  few nodes then get a small depth-first search over the same decisions;
- `improvement`: nodes split when two cost less, the least useful emptied into the others,
  pairs (and on small plans triples) re-packed;
- `first_fit`: Karpenter's first-fit decreasing, the floor: the plan is never dearer.
Each fixed pattern's pods become one NodeClaim; the caller keeps every type that holds
them (the NodeClaim's flexibility), the cheapest of which is at most the pattern's price.

Instance types another type dominates (no cheaper... no more room) never help and are
dropped first. Ties between plans of equal price go to fewer nodes (a tiny per-node
charge). Work is bounded (`budget.Budget`); pods the packer did not place are returned to
the caller, which places them greedily.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.scheduling.packing.bins import (
    Bins,
    BinType,
    Packed,
    Vector,
    cheapest_bin,
    fits,
    prune_dominated,
)
from nodewright.scheduling.packing.budget import Budget
from nodewright.scheduling.packing.first_fit import first_fit
from nodewright.scheduling.packing.improvement import improve, repair
from nodewright.scheduling.packing.relaxation import Relaxation
from nodewright.scheduling.packing.rounding import SEARCH_UP_TO_NODES, Rounding
from nodewright.scheduling.packing.shortlist import shortlist

__all__ = [
    "BinType",
    "Bins",
    "Budget",
    "Packed",
    "Vector",
    "_Bins",
    "cheapest_bin",
    "first_fit",
    "improve",
    "pack",
    "prune_dominated",
    "repair",
    "shortlist",
]

# The name `Bins` had when it was private to one module (tests still import it so).
_Bins = Bins

# Ties between plans of equal price: less capacity bought (room summed over resources,
# each relative to the largest bin), then fewer nodes. Both are tiny charges relative to
# the average bin price.
_ROOM_CHARGE = 1e-6
_NODE_CHARGE = 1e-11


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
    placeable = [any(fits(shape, b.room) for b in bins) for shape in shapes]
    rows = [s for s in range(len(shapes)) if placeable[s] and remaining[s] > 0]
    if not rows:
        return [], remaining
    sub_shapes = [shapes[s] for s in rows]
    relaxation = Relaxation(sub_shapes, bins, charge, budget)
    caps = [remaining[s] for s in rows]
    solved = relaxation.solve(caps, True, budget.max_rounds)
    if solved is None:
        # Numerical trouble (never seen outside contrived inputs): the caller's greedy
        # placement takes every pod.
        return [], remaining
    _, duals, solution = solved
    rounding = Rounding(relaxation, budget)
    nodes = rounding.dive(list(caps), duals, solution)
    if len(nodes) <= SEARCH_UP_TO_NODES and rounding.best is not None:
        # Few nodes: each rounding mistake costs a large share; search for better ones.
        nodes = rounding.search(list(caps), duals, solution) or nodes
    left = list(caps)
    for node in nodes:
        left = [c - k for c, k in zip(left, node.counts, strict=True)]
    plan = []
    sub_bins = Bins(bins, sub_shapes, charge)
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
    full_bins = Bins(bins, shapes, charge)
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
