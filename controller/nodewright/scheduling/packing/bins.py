"""The packer's vocabulary: bin types (instance types as the packer sees them), packed
nodes, and the bin questions every step asks (which bin is cheapest for a load, is a node
cheaper as two), memoised per pack in `Bins`."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import le

Vector = tuple[int, ...]


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


def fits(need: Vector, room: Vector) -> bool:
    return all(map(le, need, room))


def total_load(counts: Sequence[int], shapes: Sequence[Vector]) -> Vector:
    total = [0] * len(shapes[0])
    for s, k in enumerate(counts):
        if k:
            for r, x in enumerate(shapes[s]):
                total[r] += k * x
    return tuple(total)


def cheapest_bin(load: Vector, bins: Sequence[BinType]) -> BinType | None:
    """The cheapest bin that holds the load (bins sorted cheapest first)."""
    for candidate in bins:
        if fits(load, candidate.room):
            return candidate
    return None


class Bins:
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
        return self.cheapest(total_load(counts, self.shapes))

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


def _split(counts: Sequence[int], bins: Bins) -> list[list[int]] | None:
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
