"""When a NodeClaim may grow into a pricier instance type.

Karpenter keeps adding pods to a NodeClaim while any type can hold them, which on a
large catalog ends in huge, exotic and expensive types. The solver lets a claim grow
when either
- the extra price is no more than a node of its own for the pod would cost (what a
  second node would cost anyway), or
- the type it grows into is among the most cost-efficient for the claim's mix of pods:
  its price per "unit of the mix" (the claim's pod requests scaled until the type's
  room, after DaemonSet overhead, runs out in one resource) is within `SLACK` of the
  best such price over every type the claim could still become. The type is judged as
  if full: later pods fill the room an upgrade opens.

The best price per unit depends only on the direction of the mix, so it is memoised per
NodePool by a coarse direction key, over every type of the pool (a claim whose
requirements narrowed the pool is judged against the pool's best, which is stricter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from nodewright.scheduling.targets import Candidate, Narrowed, PoolState, Vector

SLACK = 1.10
# Directions are bucketed to a quarter of a doubling per resource.
_BUCKETS_PER_DOUBLING = 4


def price_per_mix_unit(candidate: Candidate, mix: Vector, overhead: Vector) -> float:
    """The candidate's price divided by how many times `mix` fits in its free room."""
    units = math.inf
    for have, reserved, wanted in zip(candidate.allocatable, overhead, mix, strict=True):
        if wanted > 0:
            units = min(units, (have - reserved) / wanted)
    if units <= 0:
        return math.inf
    if units == math.inf:
        return 0.0
    return candidate.price / units


def _direction(mix: Vector) -> tuple[int | None, ...]:
    total = sum(mix)
    return tuple(
        round(_BUCKETS_PER_DOUBLING * math.log2(amount / total)) if amount > 0 else None
        for amount in mix
    )


class _PoolArrays:
    """A pool's types as arrays (free room per resource, price), to rank them for a mix in
    one vectorised pass: on the real catalog the pool has 1,366 types and a solve asks for
    a hundred and more directions."""

    def __init__(self, candidates: list[Candidate], overhead: Vector) -> None:
        import numpy as np

        self.candidates = candidates  # held so that the id keying this stays theirs
        self.overhead = overhead
        self.rooms = np.array([[have - reserved for have, reserved
                                in zip(c.allocatable, overhead, strict=True)]
                               for c in candidates], dtype=float).reshape(len(candidates), -1)
        self.prices = np.array([c.price for c in candidates], dtype=float)

    def best(self, mix: Vector) -> float:
        """min(price_per_mix_unit(c, mix, overhead) for c in candidates), exactly: numpy
        finds the few types near the minimum, which are then priced as one would."""
        import numpy as np

        wanted = [r for r, amount in enumerate(mix) if amount > 0]
        if not self.candidates or not wanted:
            return min((price_per_mix_unit(c, mix, self.overhead) for c in self.candidates),
                       default=math.inf)
        units = (self.rooms[:, wanted] / np.array([mix[r] for r in wanted], dtype=float)
                 ).min(axis=1)
        with np.errstate(divide="ignore"):
            rates = np.where(units > 0, self.prices / np.where(units > 0, units, 1.0), np.inf)
        lowest = float(rates.min())
        if lowest == math.inf:
            return math.inf
        near = np.flatnonzero(rates <= lowest * (1 + 1e-9) + 1e-300)
        return min(price_per_mix_unit(self.candidates[int(i)], mix, self.overhead)
                   for i in near)


@dataclass
class GrowthJudge:
    best_cache: dict[tuple[str, tuple[int | None, ...]], float] = field(default_factory=dict)
    arrays: dict[tuple[str, int, Vector], _PoolArrays] = field(default_factory=dict)

    def worth_growing(self, pool: PoolState, kept: Narrowed, need: Vector) -> bool:
        # Candidates' allocatable is already less their DaemonSets: nothing to reserve.
        overhead = pool.zero
        mix = need
        if not any(mix):
            return False
        best = self._best(pool, mix)
        return price_per_mix_unit(kept.cheapest, mix, overhead) <= best * SLACK + 1e-12

    def _best(self, pool: PoolState, mix: Vector) -> float:
        key = (pool.name, _direction(mix))
        best = self.best_cache.get(key)
        if best is None:
            overhead = pool.zero
            arrays_key = (pool.name, id(pool.candidates), overhead)
            arrays = self.arrays.get(arrays_key)
            if arrays is None or arrays.candidates is not pool.candidates:
                arrays = _PoolArrays(pool.candidates, overhead)
                self.arrays[arrays_key] = arrays
            best = arrays.best(mix)
            self.best_cache[key] = best
        return best
