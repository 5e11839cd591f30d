"""The wire-shape deep copy: equal to what it copied, and sharing no dict or list with it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.cluster.copying import copy_object, deep_copy

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def containers(value: Any) -> list[Any]:
    found = []
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            found.extend(containers(item))
    elif isinstance(value, list):
        found.append(value)
        for item in value:
            found.extend(containers(item))
    return found


@given(trees)
def test_a_copy_is_equal_and_shares_no_container(tree: Any) -> None:
    copied = deep_copy(tree)

    assert copied == tree
    originals = {id(c) for c in containers(tree)}
    assert not originals & {id(c) for c in containers(copied)}


@given(st.dictionaries(st.text(), trees, max_size=5))
def test_copy_object_gives_a_dict_the_caller_may_change(obj: dict[str, Any]) -> None:
    before = deep_copy(obj)
    copied = copy_object(obj)
    for container in containers(copied):
        container.clear()

    assert obj == before


def test_tuples_and_strings_are_shared() -> None:
    leaf = ("a", "b")
    copied = deep_copy({"spec": [leaf, "text"]})

    assert copied["spec"][0] is leaf
