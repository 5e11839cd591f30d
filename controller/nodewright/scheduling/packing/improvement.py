"""Improving a packed plan by local search: the least useful nodes emptied into the others
(`repair`), pairs of nodes re-packed onto one or two cheaper ones, and on small plans
triples re-packed onto one or two (`improve`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.scheduling.packing.bins import Bins, BinType, Packed, Vector, fits, total_load

# Plans up to this many nodes may grow a node's type while repairing.
_REPAIR_GROWTH_UP_TO = 150


# Pairs among at most this many of the least useful nodes are re-packed.
_REPACK_NODES = 60
# Plans of up to this many nodes also get three nodes re-packed onto one or two: one bin
# filled as full as it goes, the rest on the cheapest bin that holds it. Each triple holds
# one of the least useful nodes and two more among the least useful (on the benchmark's rows
# every triple that helped did).
_TRIPLES_UP_TO_NODES = 40
_TRIPLE_ANCHORS = 4
_TRIPLE_PARTNERS = 16


@dataclass
class _Node:
    counts: list[int]
    bin: BinType
    worth: float
    load: list[int]
    alive: bool = True


def repair(plan: list[Packed], bins: Bins) -> list[Packed]:
    """Empty the least useful nodes (by `worth`) into the others when that saves money:
    each of its pods goes where it raises the price least (a node's type may grow into
    the cheapest that holds its new load). On plans of more than `_REPAIR_GROWTH_UP_TO`
    nodes only room already paid for is used (no type changes)."""
    if len(plan) < 2:
        return plan
    shapes = bins.shapes
    width = len(shapes[0])
    nodes = [_Node(list(p.counts), p.bin, p.worth, list(total_load(p.counts, shapes)))
             for p in plan]
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
                if fits(need, current.room):
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


def improve(plan: list[Packed], bins: Bins) -> list[Packed]:
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


def _repack_a_triple(nodes: list[Packed], bins: Bins,
                     tried: set[tuple[tuple[Vector, int], ...]]) -> bool:
    """Three nodes' pods onto one or two nodes that cost less (`_fill_one_or_two`), in place;
    whether one was found. Like pairs, a triple that did not improve is not tried again."""
    by_worth = sorted(range(len(nodes)), key=lambda i: (nodes[i].worth, i))
    for anchor in by_worth[:_TRIPLE_ANCHORS]:
        others = [i for i in by_worth[:_TRIPLE_PARTNERS] if i != anchor]
        for second, third in itertools.combinations(others, 2):
            if _repack_onto_fewer(nodes, (anchor, second, third), bins, tried):
                return True
    return False


def _repack_onto_fewer(nodes: list[Packed], group: tuple[int, ...], bins: Bins,
                     tried: set[tuple[tuple[Vector, int], ...]]) -> bool:
    """The pods of the nodes at `group` onto one or two cheaper nodes, in place, when
    `_fill_one_or_two` finds them."""
    members = [nodes[i] for i in group]
    key = tuple(sorted((n.counts, n.bin.key) for n in members))
    if key in tried:
        return False
    tried.add(key)
    counts = [sum(column) for column in zip(*(n.counts for n in members), strict=True)]
    halves = _fill_one_or_two(bins, counts, sum(bins.price(n.bin) for n in members))
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


def _fill_one_or_two(bins: Bins, counts: Sequence[int], below: float
                     ) -> list[list[int]] | None:
    """The pods as one or two nodes costing less than `below`: one bin filled largest
    pod first as far as it goes, the rest (if any) on the cheapest bin that holds it."""
    shapes = bins.shapes
    # Largest pods first, one at a time while they fit: the pods of one shape are
    # consecutive in that order and loads only grow, so as many of a shape as fit at
    # once is the same fill.
    order: list[tuple[int, list[tuple[int, int]], int]] = []
    for s in bins.largest_first(counts):
        if not order or order[-1][0] != s:
            order.append((s, [(r, x) for r, x in enumerate(shapes[s]) if x], counts[s]))
    best: tuple[float, list[list[int]]] | None = None
    total = total_load(counts, shapes)
    for first in bins.bins:  # cheapest first
        first_price = bins.price(first)
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
            second = bins.cheapest(tuple(
                t - (room - x) for t, room, x in zip(total, first.room, left, strict=True)))
            if second is None:
                continue
            cost, parts = first_price + bins.price(second), [taken, rest]
        if cost < below - 1e-15 and (best is None or cost < best[0]):
            best = (cost, parts)
    return None if best is None else best[1]
