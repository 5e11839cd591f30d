"""Which bin types are worth pricing: on a large catalog a few dozen of hundreds."""

from __future__ import annotations

import math
from collections.abc import Sequence

from nodewright.scheduling.packing.bins import BinType, Vector

# How many bins the shortlist keeps per pod mix and per shape.
_SHORTLIST_PER_MIX = 48
_SHORTLIST_PER_SHAPE = 3


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
