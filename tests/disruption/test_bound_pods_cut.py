"""A simulation cuts the candidates' machines' bound pods out of the pass's list by their
spans; the list is the one the machines' pods walked one by one give, in the same order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodewright.controllers.disruption.simulation import _BoundPods
from nodewright.scheduling.pods import Pod

machines = st.sampled_from(["a", "b", "c", "d", ""])


@given(st.lists(machines, max_size=30), st.lists(machines, max_size=4))
def test_the_cut_is_every_other_machines_pods_in_their_order(
        hosts: list[str], gone: list[str]) -> None:
    pods = [Pod(name=f"p{i}", namespace="default", labels={}, requests={},
                node_name=host or None) for i, host in enumerate(hosts)]
    bound = _BoundPods(pods)
    walked = [pod for name, on_node in bound.by_node.items() if name not in set(gone)
              for pod in on_node]
    assert bound.without(gone) == walked
    assert [pod.name for pod in bound.without(gone)] == [pod.name for pod in walked]
    assert sorted(pod.name for pod in bound.without(())) == sorted(pod.name for pod in pods)
