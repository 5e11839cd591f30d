"""The packer's work is bounded by counted effort, never by time: the same pods give the
same plan on any machine, however loaded, and a small budget still places every pod."""

from __future__ import annotations

import random

from nodewright.scheduling.packing import BinType, Budget, pack

Vector = tuple[int, ...]


def _catalog() -> list[BinType]:
    # cpu (m), memory (MiB), pod slots; prices roughly per resource with some noise.
    rng = random.Random(3)
    bins = []
    for key, (cpu, mem) in enumerate(
        [(2000, 4096), (2000, 8192), (4000, 8192), (4000, 16384), (8000, 16384),
         (8000, 32768), (16000, 32768), (16000, 65536), (1000, 2048), (2000, 2048)]
    ):
        price = round((cpu / 1000 * 0.02 + mem / 1024 * 0.005) * rng.uniform(0.9, 1.1), 5)
        bins.append(BinType(key, price, (cpu, mem, 58)))
    return bins


def _pods() -> tuple[list[Vector], list[int]]:
    rng = random.Random(11)
    shapes: list[Vector] = sorted({(rng.choice([100, 250, 500, 1000, 1500]),
                      rng.choice([128, 256, 512, 1024, 2048, 4096]), 1) for _ in range(40)})
    demand = [rng.randint(1, 12) for _ in shapes]
    return shapes, demand


def _plan(budget: Budget) -> list[tuple[int, Vector]]:
    shapes, demand = _pods()
    plan, left = pack(shapes, demand, _catalog(), budget)
    assert not any(left)
    placed = [sum(node.counts[s] for node in plan) for s in range(len(shapes))]
    assert placed == demand
    for node in plan:
        load = [sum(k * shapes[s][r] for s, k in enumerate(node.counts)) for r in range(3)]
        assert all(x <= room for x, room in zip(load, node.bin.room, strict=True))
    return [(node.bin.key, node.counts) for node in plan]


def test_the_same_pods_always_get_the_same_plan() -> None:
    assert _plan(Budget()) == _plan(Budget())


def test_a_small_effort_budget_does_less_work_and_still_places_every_pod() -> None:
    generous = Budget()
    small = Budget(effort=2_000)
    _plan(generous)
    first = _plan(small)
    assert small.spent < generous.spent
    assert _plan(Budget(effort=2_000)) == first


def test_a_plan_of_many_nodes_dives_with_less_pricing_and_keeps_its_cost() -> None:
    # Over 40 nodes the dive's re-solves price `lean_dive_rounds` rounds, searching
    # `lean_dive_search_bins` bins; the same budget with the full dive's values is the
    # comparison.
    shapes, demand = _pods()
    many = [k * 8 for k in demand]
    lean = Budget()
    full = Budget(lean_dive_rounds=Budget().dive_rounds,
                  lean_dive_search_bins=Budget().search_bins)
    lean_plan, lean_left = pack(shapes, many, _catalog(), lean)
    full_plan, full_left = pack(shapes, many, _catalog(), full)
    assert not any(lean_left) and not any(full_left)
    assert len(full_plan) > 40
    assert lean.spent < full.spent
    lean_cost = sum(node.bin.price for node in lean_plan)
    full_cost = sum(node.bin.price for node in full_plan)
    assert lean_cost <= full_cost * 1.01
