"""The existing nodes pods of one request vector and one set of tolerations may still land
on during one plan (`OpenNodes`), so that first fit visits only those: the nodes each pod
would refuse for good (no room, an untolerated taint, taken away, found full since) are
passed over in near-constant time instead of being checked one by one."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection


class OpenNodes:
    """`positions`: the existing nodes (positions in first-fit order, ascending) whose room
    before new pods landed holds the request vector and whose taints the tolerations
    tolerate (`Fleet.open_to`, shared by every plan cut from the same prepared nodes).
    Within one plan the problem's `absent` nodes are closed from the start and a node found
    full is closed when found: room only shrinks and an existing node's taints never change
    while a plan runs, so every pod of that vector and those tolerations would refuse a
    closed node for good, and passing over it changes no placement.

    The closed ones are skipped with a union-find over the indexes of `positions` (each
    index points at the next one that may still be open), so a plan's cost grows with the
    nodes it closes, not with the nodes it passes over."""

    __slots__ = ("_next", "positions")

    def __init__(self, positions: list[int], absent: Collection[int]) -> None:
        self.positions = positions
        self._next = list(range(len(positions) + 1))
        for position in absent:
            index = bisect_left(positions, position)
            if index < len(positions) and positions[index] == position:
                self._next[index] = index + 1

    def first_from(self, position: int) -> int:
        """The index (into `positions`) of the first open node at `position` or after;
        `len(positions)` if none."""
        return self._find(bisect_left(self.positions, position))

    def after(self, index: int) -> int:
        """The index of the first open node after the one at `index`."""
        return self._find(index + 1)

    def close(self, index: int) -> None:
        """The node at `index` takes no more pods of this kind."""
        self._next[index] = index + 1

    def _find(self, index: int) -> int:
        nexts = self._next
        root = index
        while nexts[root] != root:
            root = nexts[root]
        while nexts[index] != root:
            nexts[index], index = root, nexts[index]
        return root
