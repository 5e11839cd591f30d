"""Which taints a toleration covers: Kubernetes' rules, except that the solver's own marks
(taints under SOLVER_TAINT_PREFIX, which no real node carries) are covered only by a
toleration that names them."""

from __future__ import annotations

from nodewright.scheduling.pods import SOLVER_TAINT_PREFIX, Taint, Toleration, untolerated

GPU = Taint("dedicated", "gpu", "NoSchedule")
MARK = Taint(f"{SOLVER_TAINT_PREFIX}not-initialized", "", "NoSchedule")
EVERYTHING = Toleration("", "Exists", "", "")


def test_a_wildcard_toleration_covers_every_real_taint() -> None:
    assert EVERYTHING.tolerates(GPU)
    assert Toleration("", "Exists", "", "NoSchedule").tolerates(GPU)
    assert not Toleration("", "Exists", "", "NoExecute").tolerates(GPU)


def test_a_key_value_toleration_covers_its_taint_only() -> None:
    assert Toleration("dedicated", "Equal", "gpu", "NoSchedule").tolerates(GPU)
    assert not Toleration("dedicated", "Equal", "cpu", "NoSchedule").tolerates(GPU)
    assert Toleration("dedicated", "Exists", "", "").tolerates(GPU)


def test_the_solvers_own_marks_need_a_toleration_that_names_them() -> None:
    assert untolerated((MARK,), (EVERYTHING,)) == MARK
    assert untolerated((MARK,), (Toleration(MARK.key, "Exists", "", "NoSchedule"),)) is None
