"""The growth rule's best price per unit of a mix, ranked over a pool's types with numpy,
is exactly the plain minimum over them (plans must not change with the speed-up)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.catalog import offline_catalog
from nodewright.scheduling.growth import _PoolArrays, price_per_mix_unit
from nodewright.scheduling.targets import Candidate

_CATALOG = offline_catalog("us-east-1")
_CANDIDATES = [
    Candidate(it, (it.allocatable.get("cpu", 0), it.allocatable.get("memory", 0),
                   it.allocatable.get("pods", 0)), min(o.price for o in it.offerings))
    for it in _CATALOG if it.offerings
]


@settings(max_examples=60, deadline=None)
@given(mix=st.tuples(st.integers(0, 64_000), st.integers(0, 2**40 * 1000),
                     st.integers(0, 110_000)).filter(any),
       overhead=st.tuples(st.integers(0, 2_000), st.integers(0, 2**32 * 1000),
                          st.integers(0, 5_000)),
       take=st.integers(1, len(_CANDIDATES)))
def test_the_vectorised_best_is_the_plain_minimum(
        mix: tuple[int, int, int], overhead: tuple[int, int, int], take: int) -> None:
    candidates = _CANDIDATES[:take]
    plain = min(price_per_mix_unit(c, mix, overhead) for c in candidates)
    assert _PoolArrays(candidates, overhead).best(mix) == plain
