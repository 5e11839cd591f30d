"""A true lower bound (and the best known packing) for the cost of holding a set of pods.

The configuration (cutting-stock) formulation: a *pattern* is an instance type and how
many pods of each pod shape one node of that type holds (cpu, memory, pod slots and any
other resource, after DaemonSet overhead). With n_s pods of shape s, the integer problem
is

    minimise   sum_j price_j x_j
    subject to sum_j a_sj x_j >= n_s  for every shape s,   x_j >= 0 integer,

and its LP relaxation (x_j fractional) is a lower bound on every plan that puts each pod
on one node. The LP has a column per pattern, far too many to write down, so it is solved
by column generation: a restricted master LP over the patterns found so far gives duals
y_s (the value of one more pod of shape s); for each instance type, an exact integer
knapsack (HiGHS MIP) finds the pattern of largest dual value v_t; a pattern with
v_t > price_t improves the master and is added.

The bound is valid at any iteration (Farley): with theta = max(1, max_t v_t / price_t),
y / theta is a feasible dual of the full LP, so sum_s n_s y_s / theta is a lower bound.
Instance types whose knapsack was not solved to optimality contribute an upper bound on
v_t (the MIP's dual bound, or a single-resource fractional knapsack), which keeps it valid.
When no type prices out, theta = 1 and the bound is the LP optimum.

The upper bound is the restricted master solved as a MIP over the generated patterns
(the best packing known from these patterns; covering may over-cover, surplus pods are
simply not placed there).

Instance types that another type dominates (no more expensive, at least as much of every
resource) are dropped first: they never make a pattern cheaper.

Needs numpy and scipy (HiGHS); a benchmark dependency only (requirements-dev.txt).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

Shape = tuple[int, ...]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """HiGHS's MIP prints a line now and then straight to file descriptor 1."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@dataclass(frozen=True)
class NodeType:
    name: str
    price: float
    room: Shape  # what the node holds for pods, after DaemonSet overhead


@dataclass
class Pattern:
    node: NodeType
    counts: Shape  # pods of each shape on one node

    def describe(self, shapes: Sequence[Shape]) -> str:
        parts = [f"{n}x{shapes[i]}" for i, n in enumerate(self.counts) if n]
        return f"{self.node.name} ${self.node.price:g}: " + ", ".join(parts)


@dataclass
class Bound:
    lower: float
    upper: float
    lp: float  # the last restricted master LP value (>= lower)
    converged: bool
    iterations: int
    seconds: float
    patterns: list[tuple[Pattern, int]] = field(default_factory=list)  # the upper-bound plan

    @property
    def gap(self) -> float:
        return self.upper / self.lower if self.lower > 0 else math.inf


def shape_counts(requests: Sequence[Mapping[str, int]], resources: Sequence[str]) -> Counter[Shape]:
    return Counter(tuple(r.get(name, 0) for name in resources) for r in requests)


def prune_dominated(types: Sequence[NodeType]) -> list[NodeType]:
    """Types no other type beats on price while having at least as much of everything."""
    ordered = sorted(types, key=lambda t: (t.price, tuple(-x for x in t.room), t.name))
    kept: list[NodeType] = []
    for node in ordered:
        if any(all(k >= r for k, r in zip(other.room, node.room, strict=True)) for other in kept):
            continue
        kept.append(node)
    return kept


def _single_resource_bound(
    room: Shape, shapes: np.ndarray, counts: np.ndarray, values: np.ndarray
) -> float:
    """An upper bound on the knapsack value: the best fractional knapsack over any one
    resource alone (each is a relaxation of the real knapsack)."""
    best = math.inf
    for r, capacity in enumerate(room):
        sizes = shapes[:, r]
        free_value = float(values[sizes == 0] @ counts[sizes == 0])
        positive = sizes > 0
        if not positive.any():
            best = min(best, free_value)
            continue
        density = values[positive] / sizes[positive]
        order = np.argsort(-density)
        left = float(capacity)
        total = free_value
        sz = sizes[positive][order]
        ct = counts[positive][order]
        vl = values[positive][order]
        for size, count, value in zip(sz, ct, vl, strict=True):
            if value <= 0 or left <= 0:
                break
            take = min(float(count), left / float(size))
            total += take * float(value)
            left -= take * float(size)
        best = min(best, total)
    return best


def _knapsack(
    room: Shape, shapes: np.ndarray, counts: np.ndarray, values: np.ndarray, time_limit: float
) -> tuple[np.ndarray | None, float, float]:
    """(best pattern found, its value, an upper bound on the optimum) by HiGHS MIP."""
    useful = values > 1e-12
    if not useful.any():
        return None, 0.0, 0.0
    idx = np.flatnonzero(useful)
    sub = shapes[idx]
    with _quiet():
        res = _knapsack_milp(idx, sub, room, values, counts, time_limit)
    if res.x is None:
        return None, 0.0, _single_resource_bound(room, shapes, counts, values)
    return _knapsack_result(res, idx, room, shapes, counts, values)


def _knapsack_milp(idx: np.ndarray, sub: np.ndarray, room: Shape, values: np.ndarray,
                   counts: np.ndarray, time_limit: float) -> Any:
    return milp(
        c=-values[idx],
        constraints=LinearConstraint(sub.T.astype(float), -np.inf, np.array(room, dtype=float)),
        integrality=np.ones(len(idx)),
        bounds=Bounds(0, counts[idx].astype(float)),
        options={"time_limit": time_limit, "mip_rel_gap": 1e-9, "disp": False},
    )


def _knapsack_result(res: Any, idx: np.ndarray, room: Shape, shapes: np.ndarray,
                     counts: np.ndarray, values: np.ndarray
                     ) -> tuple[np.ndarray | None, float, float]:
    pattern = np.zeros(len(values), dtype=np.int64)
    pattern[idx] = np.round(res.x).astype(np.int64)
    # Rounding HiGHS's integers must not break capacity.
    assert (shapes.T @ pattern <= np.array(room)).all()
    value = float(values @ pattern)
    dual = getattr(res, "mip_dual_bound", None)
    upper = -float(dual) if dual is not None and np.isfinite(dual) else math.inf
    if res.status == 0:
        upper = min(upper, value * (1 + 1e-9) + 1e-12)
    upper = max(upper, value)
    upper = min(upper, _single_resource_bound(room, shapes, counts, values))
    return pattern, value, upper


def _initial_patterns(shapes: np.ndarray, counts: np.ndarray, types: Sequence[NodeType]) -> list[
    Pattern
]:
    """For each shape, the cheapest type holding one pod, filled with as many as fit."""
    patterns = []
    for s in range(len(shapes)):
        best: tuple[float, NodeType, int] | None = None
        for node in types:
            room = np.array(node.room)
            per = [room[r] // shapes[s, r] for r in range(len(room)) if shapes[s, r] > 0]
            fit = int(min(per)) if per else int(counts[s])
            fit = min(fit, int(counts[s]))
            if fit >= 1 and (best is None or node.price / fit < best[0]):
                best = (node.price / fit, node, fit)
        if best is None:
            raise ValueError(f"no instance type holds a pod of shape {tuple(shapes[s])}")
        vector = [0] * len(shapes)
        vector[s] = best[2]
        patterns.append(Pattern(best[1], tuple(vector)))
    return patterns


def _master(
    patterns: Sequence[Pattern], counts: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    a = np.array([p.counts for p in patterns], dtype=float).T  # shapes x patterns
    c = np.array([p.node.price for p in patterns])
    res = linprog(c, A_ub=-a, b_ub=-counts.astype(float), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"master LP failed: {res.message}")
    duals = -np.asarray(res.ineqlin.marginals)
    return float(res.fun), np.maximum(duals, 0.0), np.asarray(res.x)


def _integer_master(
    patterns: Sequence[Pattern], counts: np.ndarray, time_limit: float
) -> tuple[float, list[tuple[Pattern, int]]]:
    a = np.array([p.counts for p in patterns], dtype=float)
    c = np.array([p.node.price for p in patterns])
    with _quiet():
        res = milp(
            c=c,
            constraints=LinearConstraint(a.T, counts.astype(float), np.inf),
            integrality=np.ones(len(patterns)),
            bounds=Bounds(0, np.inf),
            options={"time_limit": time_limit, "mip_rel_gap": 1e-6, "disp": False},
        )
    if res.x is None:
        return math.inf, []
    x = np.round(res.x).astype(int)
    used = [(patterns[j], int(x[j])) for j in range(len(patterns)) if x[j] > 0]
    return float(sum(p.node.price * n for p, n in used)), used


def configuration_bound(
    counts_by_shape: Mapping[Shape, int],
    node_types: Sequence[NodeType],
    *,
    time_limit: float = 300.0,
    knapsack_time_limit: float = 0.5,
    mip_time_limit: float = 60.0,
    max_columns_per_round: int = 60,
) -> Bound:
    """Column generation for the configuration LP; see the module docstring."""
    started = time.perf_counter()
    shape_list = sorted(counts_by_shape)
    shapes = np.array(shape_list, dtype=np.int64)
    counts = np.array([counts_by_shape[s] for s in shape_list], dtype=np.int64)
    types = prune_dominated(node_types)
    patterns = _initial_patterns(shapes, counts, types)
    seen = {(p.node.name, p.counts) for p in patterns}
    lower = 0.0
    converged = False
    iterations = 0
    lp_value = math.inf
    while True:
        iterations += 1
        lp_value, duals, _ = _master(patterns, counts)
        dual_value = float(duals @ counts)
        theta = 1.0
        found: list[tuple[float, Pattern]] = []
        out_of_time = time.perf_counter() - started > time_limit
        # Types by their optimistic value / price; exact knapsacks for the most promising
        # first. Once a round has columns, the rest keep their cheap bound in theta (still
        # valid); a round that finds nothing has solved every type that could price out.
        ranked = []
        for node in types:
            cheap_upper = _single_resource_bound(node.room, shapes, counts, duals)
            if cheap_upper > node.price * (1 + 1e-9):
                ranked.append((cheap_upper / node.price, node))
        ranked.sort(key=lambda item: -item[0])
        theta = max([theta] + [ratio for ratio, _ in ranked])
        exact_theta = 1.0
        solved_all = True
        for position, (_, node) in enumerate(ranked):
            # Out of time: one last pass over every type, for an exact theta.
            if found and position >= max_columns_per_round and not out_of_time:
                solved_all = False
                break
            vector, value, upper = _knapsack(node.room, shapes, counts, duals, knapsack_time_limit)
            exact_theta = max(exact_theta, upper / node.price)
            if vector is not None and value > node.price * (1 + 1e-9):
                key = (node.name, tuple(int(v) for v in vector))
                if key not in seen:
                    found.append((value / node.price, Pattern(node, key[1])))
        if solved_all:
            theta = exact_theta
        lower = max(lower, dual_value / theta)
        if not found or out_of_time:
            converged = not out_of_time and theta <= 1 + 1e-7
            break
        found.sort(key=lambda item: -item[0])
        for _, pattern in found[:max_columns_per_round]:
            seen.add((pattern.node.name, pattern.counts))
            patterns.append(pattern)
    if converged:
        lower = max(lower, lp_value * (1 - 1e-9))
    upper, plan = _integer_master(patterns, counts, mip_time_limit)
    return Bound(
        lower=lower,
        upper=upper,
        lp=lp_value,
        converged=converged,
        iterations=iterations,
        seconds=time.perf_counter() - started,
        patterns=plan,
    )


def brute_force_optimum(
    counts_by_shape: Mapping[Shape, int], node_types: Sequence[NodeType]
) -> float:
    """The integer optimum by trying every assignment of pods to nodes (tiny instances only:
    a plan never needs more nodes than pods, so each pod picks one of len(pods) node slots,
    each slot becomes the cheapest type that holds what it got)."""
    pods = [shape for shape, n in sorted(counts_by_shape.items()) for _ in range(n)]
    best = math.inf
    for assignment in itertools.product(range(len(pods)), repeat=len(pods)):
        # Slots are interchangeable: only canonical assignments (first use in order).
        next_slot = 0
        canonical = True
        for slot in assignment:
            if slot > next_slot:
                canonical = False
                break
            if slot == next_slot:
                next_slot += 1
        if not canonical:
            continue
        total = 0.0
        for slot in range(next_slot):
            load = [sum(pods[i][r] for i, s in enumerate(assignment) if s == slot)
                    for r in range(len(pods[0]))]
            prices = [t.price for t in node_types
                      if all(x <= y for x, y in zip(load, t.room, strict=True))]
            if not prices:
                total = math.inf
                break
            total += min(prices)
            if total >= best:
                break
        best = min(best, total)
    return best


def random_instance(rng: random.Random) -> tuple[Counter[Shape], list[NodeType]]:
    """A tiny random instance: up to 6 pods of 1-3 shapes, 2-4 node types."""
    shapes = [(rng.randint(1, 8), rng.randint(1, 8), 1) for _ in range(rng.randint(1, 3))]
    counts: Counter[Shape] = Counter()
    for _ in range(rng.randint(1, 6)):
        counts[rng.choice(shapes)] += 1
    types = [
        NodeType(f"t{i}", round(rng.uniform(0.5, 4.0), 3),
                 (rng.randint(8, 16), rng.randint(8, 16), rng.randint(1, 4)))
        for i in range(rng.randint(2, 4))
    ]
    return counts, types


def self_check(instances: int = 30, seed: int = 1) -> list[str]:
    """Bound <= brute-force optimum <= MIP upper bound on tiny random instances; returns
    the instances that broke it (empty when all held)."""
    rng = random.Random(seed)
    failures = []
    for n in range(instances):
        counts, types = random_instance(rng)
        optimum = brute_force_optimum(counts, types)
        bound = configuration_bound(counts, types, time_limit=30)
        if not (bound.lower <= optimum + 1e-9 and optimum <= bound.upper + 1e-9):
            failures.append(f"#{n}: bound {bound.lower} optimum {optimum} upper {bound.upper}")
    return failures


if __name__ == "__main__":
    broken = self_check()
    print("self-check:", broken or "ok")
    sys.exit(1 if broken else 0)
