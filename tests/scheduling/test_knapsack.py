"""The packer's pricing knapsack against brute force on small instances."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.packing.knapsack import (
    GreedyFills,
    _folded,
    greedy_pattern,
    resource_orders,
    solve_knapsack,
)

shapes_strategy = st.lists(
    st.tuples(st.integers(1, 6), st.integers(1, 6), st.just(1)), min_size=1, max_size=4
)


def brute_force(room, shapes, values, caps) -> float:
    best = 0.0
    for counts in itertools.product(*(range(c + 1) for c in caps)):
        load = [sum(k * s[r] for k, s in zip(counts, shapes, strict=True)) for r in range(3)]
        if all(x <= y for x, y in zip(load, room, strict=True)):
            best = max(best, sum(k * v for k, v in zip(counts, values, strict=True)))
    return best


@settings(max_examples=150, deadline=None)
@given(
    room=st.tuples(st.integers(1, 16), st.integers(1, 16), st.integers(1, 6)),
    shapes=shapes_strategy,
    data=st.data(),
    node_limit=st.sampled_from([1, 3, 10_000]),
)
def test_the_pattern_fits_and_the_upper_bound_holds_whatever_the_node_budget(
    room, shapes, data, node_limit
) -> None:
    # Values of at most 1e-9 count as zero for the knapsack (the LP's noise), so none here.
    value = st.one_of(st.just(0.0), st.floats(0.01, 5.0))
    values = data.draw(st.lists(value, min_size=len(shapes), max_size=len(shapes)))
    caps = data.draw(st.lists(st.integers(0, 4), min_size=len(shapes), max_size=len(shapes)))
    result = solve_knapsack(room, shapes, values, caps, node_limit)
    load = [sum(k * s[r] for k, s in zip(result.counts, shapes, strict=True)) for r in range(3)]
    assert all(x <= y for x, y in zip(load, room, strict=True))
    assert all(k <= c for k, c in zip(result.counts, caps, strict=True))
    optimum = brute_force(room, shapes, values, caps)
    assert result.upper >= optimum - 1e-9
    if result.exact:
        assert abs(result.value - optimum) <= 1e-9


def test_a_room_for_two_of_three_takes_the_two_most_valuable() -> None:
    result = solve_knapsack((10, 10, 5), [(5, 5, 1), (4, 4, 1)], [3.0, 1.0], [3, 3], 1000)
    assert result.counts == [2, 0]
    assert result.exact and result.value == 6.0


@settings(max_examples=150, deadline=None)
@given(
    room=st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 8)),
    shapes=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 1)),
                    min_size=1, max_size=6),
    data=st.data(),
)
def test_a_rounds_greedy_fills_are_greedy_pattern_exactly(room, shapes, data) -> None:
    value = st.one_of(st.just(0.0), st.floats(0.01, 5.0))
    values = data.draw(st.lists(value, min_size=len(shapes), max_size=len(shapes)))
    caps = data.draw(st.lists(st.integers(0, 6), min_size=len(shapes), max_size=len(shapes)))
    expected = greedy_pattern(room, shapes, values, caps,
                              resource_orders(shapes, values, caps))
    assert GreedyFills(shapes, values, caps).best(room) == expected


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.floats(0, 10), min_size=3, max_size=3), min_size=1,
                     max_size=5),
       lam=st.lists(st.floats(0, 1), min_size=3, max_size=3), width=st.sampled_from([1, 2, 3]))
def test_folding_spelled_out_is_the_general_sum(rows, lam, width) -> None:
    shares = [row[:width] for row in rows]
    general = [sum(m * x for m, x in zip(lam[:width], row, strict=True)) for row in shares]
    assert _folded(shares, lam[:width]) == general
