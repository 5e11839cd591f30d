"""First-fit decreasing, Karpenter's way of packing: the packer's floor."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.scheduling.packing.bins import Bins, BinType, Packed, Vector, fits, prune_dominated


def first_fit(shapes: Sequence[Vector], demand: Sequence[int], bins: Bins) -> list[Packed]:
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
        if not any(fits(shape, room) for room in rooms):
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
