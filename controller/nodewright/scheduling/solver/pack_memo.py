"""The packer's plans kept by their whole input (`PackMemo`): without a deadline a plan of
`packing.pack` depends on nothing but the pod shapes, their counts and the bins' prices
and rooms (the packer counts work, not time), and the simulations of a disruption pass,
pass after pass, pack the same leftover pods onto the same instance types again."""

from __future__ import annotations

from nodewright.scheduling.packing.bins import Packed
from nodewright.scheduling.targets import Vector

# Pod shapes, their counts, and each bin's (price, room) in order (a bin's key is its index).
PackKey = tuple[tuple[Vector, ...], tuple[int, ...], tuple[tuple[float, Vector], ...]]


class PackMemo:
    """Plans by their input, for one pass (the problems cut from one prepared set).
    `earlier`: the pass before's, looked up before packing again; only the plans of this
    pass and the one before are held. Plans are never changed (`Packed` is frozen)."""

    def __init__(self, earlier: PackMemo | None = None) -> None:
        self._plans: dict[PackKey, list[Packed]] = {}
        self._earlier = earlier._plans if earlier is not None else {}

    def get(self, key: PackKey) -> list[Packed] | None:
        plan = self._plans.get(key)
        if plan is None:
            plan = self._earlier.get(key)
            if plan is not None:
                self._plans[key] = plan
        return plan

    def put(self, key: PackKey, plan: list[Packed]) -> None:
        self._plans[key] = plan
