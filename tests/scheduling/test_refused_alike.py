"""Free pods of one shape fare alike until a pod lands somewhere, so the solver answers a
refusal it has just given from memory (a thousand pods over a NodePool's limits are
refused once). The plans must be exactly those worked out pod by pod."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.solver.results import SchedulingResult
from tests.scheduling.test_solver import nodepool, replicas, run

SHAPES = st.tuples(st.sampled_from(["250m", "500m", "1", "3", "7", "40"]),
                   st.sampled_from(["256Mi", "1Gi", "6Gi", "100Gi"]),
                   st.integers(1, 40))


def _plan(result: SchedulingResult) -> object:
    return ([(c.nodepool, c.instance_type, c.pods) for c in result.nodeclaims],
            result.unschedulable)


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(SHAPES, min_size=1, max_size=4),
       cpu_limit=st.integers(0, 24), interleave=st.booleans())
def test_refusals_from_memory_plan_as_pod_by_pod(
        shapes: list[tuple[str, str, int]], cpu_limit: int, interleave: bool) -> None:
    groups = [replicas(count, f"app{i}", cpu=cpu, memory=memory)
              for i, (cpu, memory, count) in enumerate(shapes)]
    pods = ([pod for row in zip(*groups, strict=False) for pod in row] +
            [pod for group in groups for pod in group[min(map(len, groups)):]]
            if interleave else [pod for group in groups for pod in group])
    pools = [nodepool(limits={"cpu": cpu_limit * 1000})]

    remembered = run(pods, pools)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Placement, "remember_refusals", False)
        worked_out = run(pods, pools)

    assert _plan(remembered) == _plan(worked_out)


def test_pods_over_the_limits_are_all_refused_with_the_limits_reason() -> None:
    pods = replicas(50, "web", cpu="1", memory="1Gi")

    result = run(pods, [nodepool(limits={"cpu": 4000})])

    placed = sum(len(claim.pods) for claim in result.nodeclaims)
    assert placed + len(result.unschedulable) == 50
    assert placed <= 4
    reasons = {reason for _, reason in result.unschedulable}
    assert len(reasons) == 1 and "limits leave no room" in reasons.pop()
