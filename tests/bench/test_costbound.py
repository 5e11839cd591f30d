"""The benchmark's cost bound against brute force, and the packer against the bound.

Tiny instances only (the brute force tries every assignment of pods to nodes); no timings.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import costbound

from nodewright.scheduling.packing import BinType, pack


def test_the_bound_never_exceeds_the_optimum_and_the_packing_never_beats_it() -> None:
    assert costbound.self_check(instances=12, seed=3) == []


def test_the_packer_is_never_cheaper_than_the_optimum_and_places_every_pod() -> None:
    rng = random.Random(5)
    for _ in range(25):
        counts, types = costbound.random_instance(rng)
        optimum = costbound.brute_force_optimum(counts, types)
        shapes = sorted(counts)
        bins = [BinType(i, t.price, t.room) for i, t in enumerate(types)]
        plan, left = pack(shapes, [counts[s] for s in shapes], bins)
        if optimum == float("inf"):
            continue
        assert sum(left) == 0
        placed = [0] * len(shapes)
        for node in plan:
            load = [sum(k * shapes[s][r] for s, k in enumerate(node.counts)) for r in range(3)]
            assert all(x <= y for x, y in zip(load, node.bin.room, strict=True))
            placed = [a + b for a, b in zip(placed, node.counts, strict=True)]
        assert placed == [counts[s] for s in shapes]
        assert sum(node.bin.price for node in plan) >= optimum - 1e-9


def test_whole_pods_that_fit_only_fractionally_are_told_apart_from_a_real_fit() -> None:
    import numpy as np

    small = costbound.NodeType("small", 1.0, (5, 10, 4))
    shapes = np.array([(3, 1, 1)])
    # 9 cpu fits into 2 x 5 cpu fractionally, but a node holds one 3-cpu pod only.
    assert costbound.integer_fit(np.array([2]), shapes, np.array([3]), [small], 10) is False
    assert costbound.integer_fit(np.array([3]), shapes, np.array([3]), [small], 10) is True


def test_the_node_count_bound_is_the_optimum_when_whole_pods_fit_its_nodes() -> None:
    # Three 3-cpu pods: the LP buys 1.5 medium nodes (2.4); whole nodes cost at least a
    # medium and a small one (2.6), and the pods fit them: the bound is the optimum.
    counts = {(3, 1, 1): 3}
    types = [costbound.NodeType("small", 1.0, (5, 10, 4)),
             costbound.NodeType("medium", 1.6, (7, 10, 4))]
    bound = costbound.configuration_bound(counts, types, time_limit=30)
    assert costbound.brute_force_optimum(counts, types) == pytest.approx(2.6)
    assert bound.lp_lower == pytest.approx(2.4, rel=1e-6)
    assert bound.lower == pytest.approx(2.6, rel=1e-6)
    assert bound.optimal
