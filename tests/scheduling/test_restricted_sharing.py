"""NodeClaims whose requirements differ only in their hostname share one list of the
instance types they may still become (the solver's working memory over thousands of open
NodeClaims), and the list is what a fresh computation gives."""

from __future__ import annotations

from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, _Setup, _Solver
from nodewright.scheduling.targets import PoolState
from tests.scheduling.test_solver import nodepool

ZONE = "topology.kubernetes.io/zone"


def pool_state() -> PoolState:
    problem = SchedulingProblem(pods=[], nodepools=[nodepool()])
    setup = _Setup(problem)
    return _Solver(problem, setup=setup).pools[0]


def claim_requirements(pool: PoolState, hostname: str, zone: str) -> Requirements:
    requirements = pool.requirements.copy()
    requirements.add(Requirement.single(LABEL_HOSTNAME, hostname))
    requirements.add(Requirement.single(ZONE, zone))
    return requirements


def test_claims_that_differ_only_in_hostname_share_their_restricted_list() -> None:
    pool = pool_state()
    zone = pool.candidates[0].instance_type.offerings[0].zone

    first = pool.restricted(pool.candidates, 1, claim_requirements(pool, "claim-1", zone))
    second = pool.restricted(pool.candidates, 1, claim_requirements(pool, "claim-2", zone))

    assert first is second
    fresh = PoolState(pool.template, pool.requirements, pool.candidates,
                      pool.zero, None)
    recomputed = fresh.restricted(fresh.candidates, 1, claim_requirements(pool, "x", zone))
    assert [c.instance_type.name for c in first] == [c.instance_type.name for c in recomputed]
    assert len(first) == len(pool.candidates) - 1


def test_other_starting_points_get_their_own_list() -> None:
    pool = pool_state()
    zone = pool.candidates[0].instance_type.offerings[0].zone

    whole = pool.restricted(pool.candidates, 0, claim_requirements(pool, "claim-1", zone))
    tail = pool.restricted(pool.candidates, 2, claim_requirements(pool, "claim-2", zone))

    assert whole is not tail and len(whole) == len(tail) + 2
