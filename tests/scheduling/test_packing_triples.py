"""Three nodes re-packed together: a saving no pair of them shows."""

from __future__ import annotations

from nodewright.scheduling.packing import BinType, Packed, _Bins, improve

# One resource that matters (cpu), memory and pod slots to spare.
SMALL = BinType(0, 1.0, (10, 100, 100))
LARGE = BinType(1, 2.4, (25, 100, 100))
TINY = BinType(2, 0.45, (5, 100, 100))
SHAPES = [(3, 1, 1)]


def _bins(*types: BinType) -> _Bins:
    ordered = sorted(types, key=lambda b: b.price)
    return _Bins(ordered, SHAPES, {b.key: 0.0 for b in ordered})


def _cost(plan: list[Packed]) -> float:
    return round(sum(node.bin.price for node in plan), 6)


def test_three_full_small_nodes_become_one_large_one() -> None:
    # 8 pods on three small nodes ($3.00); any two of them on a large node cost more
    # ($2.40 against $2.00), all three on one large node cost less.
    plan = [Packed(SMALL, (3,), 0.9), Packed(SMALL, (3,), 0.9), Packed(SMALL, (2,), 0.6)]
    improved = improve(plan, _bins(SMALL, LARGE))
    assert _cost(improved) == 2.4
    assert [node.counts for node in improved] == [(8,)]


def test_three_nodes_become_a_large_one_and_a_tiny_one() -> None:
    # 9 pods (27 cpu) on three small nodes ($3.00): a large node holds 8 of them, a tiny
    # node the last one ($2.85). No pair re-packs cheaper.
    plan = [Packed(SMALL, (3,), 0.9), Packed(SMALL, (3,), 0.9), Packed(SMALL, (3,), 0.9)]
    bins = _bins(SMALL, LARGE, TINY)
    improved = improve(plan, bins)
    assert _cost(improved) == 2.85
    assert sorted(node.counts for node in improved) == [(1,), (8,)]
    assert sum(node.counts[0] for node in improved) == 9
    for node in improved:
        assert node.counts[0] * 3 <= node.bin.room[0]
