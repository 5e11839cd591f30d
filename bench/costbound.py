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

A tighter bound when there are few nodes (the LP buys fractions of nodes): the node-count
relaxation. For any pod values y >= 0 and every type t, let U_t(y) be an upper bound on
the value of one node of t (its knapsack); a plan with z_t nodes of type t holds every pod,
so sum_t U_t(y) z_t >= sum_s n_s y_s. Over a set of such cuts, the integer program
"minimise price.z subject to the cuts, z integer" is a relaxation of the packing problem:
its optimum (or HiGHS's dual bound on it) is a lower bound too, and it counts whole nodes.
Cuts come from column generation's exact rounds and from a separation loop (Benders): for
the MIP's z*, a phase-1 LP asks whether the pods fit fractionally into z*'s nodes; when
they do not, its duals give a cut that z* violates. When they do fit fractionally, an
assignment MIP asks whether whole pods fit into z*'s nodes; when HiGHS proves they do not,
no plan with at most z*_t nodes of every type t holds them either, and binaries exclude
all of those (a combinatorial Benders cut: some type must get more nodes); when they fit,
z* is a packing and the bound is the optimum. The reported bound is the larger of the
two; `Bound.method` says which.

Pricing runs the controller's own knapsack (`nodewright.scheduling.packing.knapsack`, branch and
bound with a surrogate bound that stays valid when its node budget runs out) with a small
budget first: its patterns are real, so any that prices out is a valid column. Exact
rounds (a large budget, HiGHS for the knapsacks it does not finish) run when it finds
none, and at the end; only those rounds move the bound.

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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "controller"))

from nodewright.scheduling.packing.knapsack import solve_knapsack

Shape = tuple[int, ...]
# Column generation stops when its bound is this close (relative) to the master LP value.
_CLOSE = 5e-4


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
    lower: float  # the best valid lower bound: max(lp_lower, node_lower)
    upper: float
    lp: float  # the last restricted master LP value (>= lp_lower)
    converged: bool
    iterations: int
    seconds: float
    patterns: list[tuple[Pattern, int]] = field(default_factory=list)  # the upper-bound plan
    lp_lower: float = 0.0  # the configuration LP's (Farley) bound
    node_lower: float = 0.0  # the node-count relaxation's bound (0 when not run)
    node_proven: bool = False  # the node-count MIP was solved to optimality every time
    optimal: bool = False  # a packing costs `lower`: the bound is the optimum

    @property
    def gap(self) -> float:
        return self.upper / self.lower if self.lower > 0 else math.inf

    @property
    def method(self) -> str:
        """Which bound `lower` is: the configuration LP or the node-count MIP."""
        return "node-count MIP" if self.node_lower > self.lp_lower else "configuration LP"


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
        options={"time_limit": time_limit, "mip_rel_gap": 1e-3, "disp": False},
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


# A cut of the node-count relaxation: sum_t coefficients[t] * z_t >= rhs.
Cut = tuple[np.ndarray, float]


@dataclass
class _Pricing:
    """One instance-type pricing pass against pod values `duals`."""

    columns: list[tuple[float, Pattern]]  # patterns worth more than their threshold
    uppers: np.ndarray  # per type, a valid upper bound on one node's value (the cut)
    exact: bool  # every type's upper bound is from an exact (or fractional) knapsack


def _price_types(
    types: Sequence[NodeType],
    shapes: np.ndarray,
    counts: np.ndarray,
    duals: np.ndarray,
    thresholds: np.ndarray,
    seen: set[tuple[str, Shape]],
    *,
    exact: bool,
    knapsack_time_limit: float,
    max_columns: int,
    eligible: np.ndarray | None = None,
) -> _Pricing:
    """Patterns worth more than each type's threshold (its price, or its cap's dual).

    Heuristic passes run the controller's knapsack with a small node budget on the types
    whose optimistic bound beats the threshold and stop at `max_columns`; exact passes
    give it a large budget (HiGHS when that does not suffice) on every such type and
    record valid upper bounds for all (the cut)."""
    shape_list = [tuple(int(x) for x in row) for row in shapes]
    value_list = [float(v) for v in duals]
    cap_list = [int(c) for c in counts]
    uppers = np.array(
        [_single_resource_bound(t.room, shapes, counts, duals) for t in types], dtype=float
    )
    ranked = [
        i for i in range(len(types))
        if uppers[i] > thresholds[i] * (1 + 1e-9) + 1e-12
        and (eligible is None or eligible[i])
    ]
    ranked.sort(key=lambda i: -uppers[i] / max(thresholds[i], 1e-12))
    columns: list[tuple[float, Pattern]] = []
    for i in ranked:
        node = types[i]
        own = solve_knapsack(node.room, shape_list, value_list, cap_list,
                             20000 if exact else 300)
        value, pattern = own.value, tuple(own.counts)
        if exact:
            uppers[i] = min(uppers[i], own.upper)
            if not own.exact:
                vector, highs_value, upper = _knapsack(node.room, shapes, counts, duals,
                                                       knapsack_time_limit)
                uppers[i] = min(uppers[i], upper)
                if vector is not None and highs_value > value:
                    value, pattern = highs_value, tuple(int(v) for v in vector)
        if pattern is not None and value > thresholds[i] * (1 + 1e-9) + 1e-12:
            key = (node.name, pattern)
            if key not in seen:
                columns.append((value / max(thresholds[i], 1e-12), Pattern(node, pattern)))
        if not exact and len(columns) >= max_columns:
            break
    columns.sort(key=lambda item: -item[0])
    return _Pricing(columns[:max_columns], uppers, exact)


def configuration_bound(
    counts_by_shape: Mapping[Shape, int],
    node_types: Sequence[NodeType],
    *,
    time_limit: float = 300.0,
    knapsack_time_limit: float = 0.5,
    mip_time_limit: float = 60.0,
    max_columns_per_round: int = 60,
    node_count_time_limit: float = 900.0,
) -> Bound:
    """Column generation for the configuration LP, then the node-count relaxation (see
    the module docstring); `lower` is the larger of the two bounds."""
    started = time.perf_counter()
    shape_list = sorted(counts_by_shape)
    shapes = np.array(shape_list, dtype=np.int64)
    counts = np.array([counts_by_shape[s] for s in shape_list], dtype=np.int64)
    types = prune_dominated(node_types)
    prices = np.array([t.price for t in types], dtype=float)
    patterns = _initial_patterns(shapes, counts, types)
    seen = {(p.node.name, p.counts) for p in patterns}
    cuts: list[Cut] = []
    lower = 0.0
    converged = False
    iterations = 0
    lp_value = math.inf
    while True:
        iterations += 1
        lp_value, duals, _ = _master(patterns, counts)
        out_of_time = time.perf_counter() - started > time_limit
        # Cheap rounds first; an exact round when they find nothing (or time is up): only
        # exact rounds bound theta = max_t U_t / price_t, hence the Farley bound.
        pricing = _price_types(types, shapes, counts, duals, prices, seen, exact=False,
                               knapsack_time_limit=knapsack_time_limit,
                               max_columns=max_columns_per_round)
        if not pricing.columns or out_of_time:
            pricing = _price_types(types, shapes, counts, duals, prices, seen, exact=True,
                                   knapsack_time_limit=knapsack_time_limit,
                                   max_columns=max_columns_per_round)
            theta = max(1.0, float(np.max(pricing.uppers / prices)))
            dual_value = float(duals @ counts)
            lower = max(lower, dual_value / theta)
            cuts.append((pricing.uppers, dual_value))
            # Stop when the bound is within _CLOSE of the master LP: the rest is tailing off.
            if not pricing.columns or out_of_time or lower >= lp_value * (1 - _CLOSE):
                converged = lower >= lp_value * (1 - _CLOSE)
                break
        for _, pattern in pricing.columns:
            seen.add((pattern.node.name, pattern.counts))
            patterns.append(pattern)
    upper, plan = _integer_master(patterns, counts, mip_time_limit)
    node_lower, proven, attained = 0.0, False, False
    if node_count_time_limit > 0 and upper > lower * (1 + 1e-6):
        node_lower, proven, attained = node_count_bound(
            shapes, counts, types, patterns, seen, cuts, upper,
            time_limit=node_count_time_limit, knapsack_time_limit=knapsack_time_limit)
    return Bound(
        lower=max(lower, node_lower),
        upper=min(upper, node_lower / (1 - 1e-7)) if attained else upper,
        lp=lp_value,
        converged=converged,
        iterations=iterations,
        seconds=time.perf_counter() - started,
        patterns=plan,
        lp_lower=lower,
        node_lower=node_lower,
        node_proven=proven,
        optimal=attained,
    )


def _node_count_mip(prices: np.ndarray, cuts: Sequence[Cut], upper: float, time_limit: float,
                    excluded: Sequence[np.ndarray] = ()
                    ) -> tuple[np.ndarray | None, float, bool]:
    """min price.z subject to the cuts, z integer, and z above none of the `excluded` node
    counts (each proven not to hold the pods, so neither does anything below it):
    (z*, a valid lower bound, solved)."""
    n = len(prices)
    # No optimal plan buys more nodes of a type than the best known plan costs.
    most = np.floor(upper / prices) + 1
    matrix = np.array([c for c, _ in cuts], dtype=float)
    rhs = np.array([r for _, r in cuts], dtype=float)
    # Each cut scaled to coefficients of at most 1: memory in milli-bytes reaches 1e16,
    # beyond what HiGHS accepts in a matrix.
    scale = np.maximum(np.abs(matrix).max(axis=1), 1e-12)
    matrix, rhs = matrix / scale[:, None], rhs / scale
    rows = [np.hstack([matrix, np.zeros((len(cuts), n * len(excluded)))])]
    lows = [rhs]
    highs = [np.full(len(cuts), np.inf)]
    for k, below in enumerate(excluded):
        # Some type gets more nodes than `below` has: binaries w with z_t >= (below_t + 1) w_t
        # and sum_t w_t >= 1.
        offset = n * (k + 1)
        link = np.zeros((n, n * (len(excluded) + 1)))
        link[:, :n] = np.eye(n)
        link[:, offset:offset + n] = -np.diag(below + 1.0)
        some = np.zeros((1, n * (len(excluded) + 1)))
        some[0, offset:offset + n] = 1.0
        rows += [link, some]
        lows += [np.zeros(n), np.ones(1)]
        highs += [np.full(n, np.inf), np.full(1, np.inf)]
    cost = np.concatenate([prices, np.zeros(n * len(excluded))])
    upper_bounds = np.concatenate([most] + [(below + 1 <= most).astype(float)
                                            for below in excluded])
    with _quiet():
        res = milp(
            c=cost,
            constraints=LinearConstraint(np.vstack(rows), np.concatenate(lows),
                                         np.concatenate(highs)),
            integrality=np.ones(len(cost)),
            bounds=Bounds(0, upper_bounds),
            options={"time_limit": time_limit, "mip_rel_gap": 1e-7, "disp": False},
        )
    dual = getattr(res, "mip_dual_bound", None)
    bound = float(dual) if dual is not None and np.isfinite(dual) else 0.0
    if res.x is None:
        return None, bound, False
    if res.status == 0:
        bound = max(bound, float(res.fun) * (1 - 1e-7))
    return np.round(res.x[:n]).astype(np.int64), bound, res.status == 0


def integer_fit(z: np.ndarray, shapes: np.ndarray, counts: np.ndarray,
                types: Sequence[NodeType], time_limit: float) -> bool | None:
    """Whether the pods fit into z_t nodes of each type t, each pod whole on one node: True,
    False (proven by HiGHS), or None when the time limit came first. An assignment MIP:
    x[b, s] pods of shape s on node b."""
    rooms = [types[t].room for t in range(len(types)) for _ in range(int(z[t]))]
    kinds = [t for t in range(len(types)) for _ in range(int(z[t]))]
    nodes, rows = len(rooms), len(shapes)
    if nodes == 0:
        return not counts.any()
    variables = nodes * rows
    constraints: list[np.ndarray] = []
    lows: list[float] = []
    highs: list[float] = []
    for s in range(rows):  # every pod of every shape placed
        row = np.zeros(variables)
        row[s::rows] = 1.0
        constraints.append(row)
        lows.append(float(counts[s]))
        highs.append(float(counts[s]))
    largest = np.maximum(shapes.max(axis=0), 1).astype(float)
    for b, room in enumerate(rooms):  # each node's room, in units of the largest pod
        for r, capacity in enumerate(room):
            row = np.zeros(variables)
            row[b * rows:(b + 1) * rows] = shapes[:, r] / largest[r]
            constraints.append(row)
            lows.append(-np.inf)
            highs.append(float(capacity) / largest[r])
    for b in range(nodes - 1):  # nodes of one type are interchangeable: order them by cpu
        if kinds[b] == kinds[b + 1]:
            row = np.zeros(variables)
            row[b * rows:(b + 1) * rows] = shapes[:, 0] / largest[0]
            row[(b + 1) * rows:(b + 2) * rows] = -shapes[:, 0] / largest[0]
            constraints.append(row)
            lows.append(0.0)
            highs.append(np.inf)
    most = np.tile(counts.astype(float), nodes)
    with _quiet():
        res = milp(
            c=np.zeros(variables),
            constraints=LinearConstraint(np.array(constraints), np.array(lows),
                                         np.array(highs)),
            integrality=np.ones(variables),
            bounds=Bounds(0, most),
            options={"time_limit": max(time_limit, 1.0), "disp": False},
        )
    if res.status == 0:
        # Trust HiGHS's "fits" only once the rounded assignment checks out in integers.
        x = np.round(res.x).astype(np.int64).reshape(nodes, rows)
        placed = (x.sum(axis=0) == counts).all()
        loads = x @ shapes
        return bool(placed and (loads <= np.array(rooms)).all()) or None
    if res.status == 2:  # HiGHS proved it infeasible
        return False
    return None


def _separate(
    z: np.ndarray,
    shapes: np.ndarray,
    counts: np.ndarray,
    types: Sequence[NodeType],
    patterns: list[Pattern],
    seen: set[tuple[str, Shape]],
    knapsack_time_limit: float,
    deadline: float,
) -> Cut | None:
    """A cut z violates, or None when the pods fit fractionally into z's nodes (phase 1:
    minimise the pods left uncovered with at most z_t nodes of each type t)."""
    index = {t.name: i for i, t in enumerate(types)}
    used = z > 0
    rows = len(shapes)
    while time.perf_counter() < deadline:
        mine = [p for p in patterns if used[index[p.node.name]]]
        typed = sorted({index[p.node.name] for p in mine})
        a_cover = np.array([p.counts for p in mine], dtype=float).T.reshape(rows, len(mine))
        cap = np.zeros((len(typed), len(mine)))
        position = {t: k for k, t in enumerate(typed)}
        for j, p in enumerate(mine):
            cap[position[index[p.node.name]], j] = 1.0
        # Variables: the patterns' x, then one slack per shape (cost 1).
        cost = np.concatenate([np.zeros(len(mine)), np.ones(rows)])
        a_ub = np.block([[-a_cover, -np.eye(rows)], [cap, np.zeros((len(typed), rows))]])
        b_ub = np.concatenate([-counts.astype(float), z[typed].astype(float)])
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        if res.status != 0:
            return None
        if res.fun <= 1e-7:
            return None
        marginals = -np.asarray(res.ineqlin.marginals)
        duals = np.maximum(marginals[:rows], 0.0)
        caps = np.zeros(len(types))
        for t, k in position.items():
            caps[t] = max(marginals[rows + k], 0.0)
        pricing = _price_types(types, shapes, counts, duals, caps, seen, exact=False,
                               knapsack_time_limit=knapsack_time_limit, max_columns=40,
                               eligible=used)
        if not pricing.columns:
            pricing = _price_types(types, shapes, counts, duals, np.zeros(len(types)), seen,
                                   exact=True, knapsack_time_limit=knapsack_time_limit,
                                   max_columns=40)
            rhs = float(duals @ counts)
            if float(pricing.uppers @ z) < rhs * (1 - 1e-7):
                return pricing.uppers, rhs
            # Not violated yet: keep only the columns that beat their cap's dual.
            pricing.columns = [
                (value, p) for value, p in pricing.columns
                if used[index[p.node.name]]
                and float(duals @ np.array(p.counts)) > caps[index[p.node.name]] * (1 + 1e-9)
            ]
            if not pricing.columns:
                return None
        for _, pattern in pricing.columns:
            seen.add((pattern.node.name, pattern.counts))
            patterns.append(pattern)
    return None


def node_count_bound(
    shapes: np.ndarray,
    counts: np.ndarray,
    types: Sequence[NodeType],
    patterns: list[Pattern],
    seen: set[tuple[str, Shape]],
    cuts: list[Cut],
    upper: float,
    *,
    time_limit: float,
    knapsack_time_limit: float,
) -> tuple[float, bool, bool]:
    """The node-count relaxation's bound by cutting planes (see the module docstring):
    (bound, whether every MIP on the way was solved to optimality, whether whole pods were
    shown to fit the bound's nodes: then the bound is the optimum)."""
    started = time.perf_counter()
    deadline = started + time_limit
    prices = np.array([t.price for t in types], dtype=float)
    # Whole resources are cuts too (y = one resource's size): each node holds at most its room.
    for r in range(shapes.shape[1]):
        sizes = shapes[:, r].astype(float)
        if sizes.any():
            room = np.array([float(t.room[r]) for t in types])
            cuts.append((room, float(sizes @ counts)))
    best = 0.0
    proven = True
    excluded: list[np.ndarray] = []
    while time.perf_counter() < deadline:
        left = max(deadline - time.perf_counter(), 1.0)
        z, bound, solved = _node_count_mip(prices, cuts, upper, left, excluded)
        proven = proven and solved
        best = max(best, bound)
        if z is None or not solved:
            break
        cut = _separate(z, shapes, counts, types, patterns, seen, knapsack_time_limit, deadline)
        if cut is not None:
            cuts.append(cut)
            continue
        # The pods fit z* fractionally; whole pods may not. If they do, z* is a packing
        # and its price the optimum; if HiGHS proves they do not, no z below z* fits either.
        fits = integer_fit(z, shapes, counts, types, deadline - time.perf_counter())
        if fits is not False:
            return best, proven, bool(fits)
        excluded.append(z.astype(float))
    return best, proven, False


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
