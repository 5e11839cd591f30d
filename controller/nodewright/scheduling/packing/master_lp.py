"""The packer's restricted master LP, solved by HiGHS (`highspy`).

minimise c.x subject to A x >= demand, x >= 0, with one row per pod shape and one column
per pattern. Column generation adds columns and the rounding changes the demand between
solves; HiGHS keeps its basis across both, so each solve starts from the last one (a new
column enters a primal-feasible basis, a new demand leaves a dual-feasible one for its dual
simplex). The pure-Python revised simplex this replaces took 40-130 microseconds a pivot
and needed hundreds of pivots per re-solve on the rows that matter (docs/decisions.md).

HiGHS runs single-threaded with presolve off: the same model and the same sequence of
changes give the same solution, so plans stay deterministic. It is imported on first use
(numpy and HiGHS take about 0.1 s to load), so commands that never pack do not pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Vector = tuple[int, ...]

_EPS = 1e-9


def _highs() -> Any:
    from highspy._core import _Highs  # the bare binding: no callback machinery, no banner

    solver = _Highs()
    for name, value in (
        ("output_flag", False),
        ("presolve", "off"),
        ("threads", 1),
        ("simplex_max_concurrency", 1),
        ("random_seed", 0),
    ):
        solver.setOptionValue(name, value)
    return solver


class MasterLP:
    """The restricted master. `columns` holds each column sparse as (row, count) pairs;
    `pivots` is the simplex iterations of the last solve (the caller's measure of work)."""

    def __init__(self, rows: int) -> None:
        import numpy as np

        self._np = np
        self.rows = rows
        self.costs: list[float] = []
        self.columns: list[list[tuple[int, int]]] = []
        self.pivots = 0
        self._demand: list[float] = [0.0] * rows
        self._solver = _highs()
        self._inf = float(self._solver.getInfinity())
        self._row_index = np.arange(rows, dtype=np.int32)
        self._solver.addRows(
            rows, np.zeros(rows), np.full(rows, self._inf), 0,
            np.zeros(rows, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0),
        )

    def add(self, cost: float, counts: Vector) -> int:
        np = self._np
        entries = [(s, k) for s, k in enumerate(counts) if k]
        self.costs.append(cost)
        self.columns.append(entries)
        self._solver.addCol(
            float(cost), 0.0, self._inf, len(entries),
            np.array([s for s, _ in entries], dtype=np.int32),
            np.array([float(k) for _, k in entries]),
        )
        return len(self.costs) - 1

    def set_demand(self, demand: Sequence[int]) -> None:
        wanted = [float(d) for d in demand]
        if wanted != self._demand:
            np = self._np
            self._demand = wanted
            self._solver.changeRowsBounds(
                self.rows, self._row_index, np.array(wanted), np.full(self.rows, self._inf))

    def solve(self) -> tuple[float, list[float], dict[int, float]]:
        """(value, duals, {column: x > 0}); ArithmeticError when HiGHS does not reach the
        optimum (the caller falls back to greedy placement)."""
        solver = self._solver
        solver.run()
        status = solver.getModelStatus()
        info = solver.getInfo()
        self.pivots = int(info.simplex_iteration_count)
        if status.name != "kOptimal":
            raise ArithmeticError(f"master LP: {status.name}")
        solution = solver.getSolution()
        duals = [float(y) for y in solution.row_dual]
        x = solution.col_value
        values = {j: float(v) for j, v in enumerate(x) if v > _EPS}
        return float(info.objective_function_value), duals, values
