"""The pod constraints Karpenter refuses to plan for (its provisioner's `Validate`): a
required node-affinity term using `matchFields`, and a nodeSelector or required term
naming a restricted label or only unknown values of a well-known label
(`karpenter.sh/capacity-type In [ondemand]`). Karpenter ignores such a pod: nothing is
launched for it and it gets a FailedScheduling event "ignoring pod, <why>".

Pods with Dynamic Resource Allocation claims are not refused here: with Karpenter's
default IGNORE_DRA_REQUESTS=true its scheduler turns them away (`DRA_NOT_SUPPORTED`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.api.labels import runtime_restricted_label, well_known_values_problem
from nodewright.scheduling.labels import NORMALIZED

MATCH_FIELDS_NOT_SUPPORTED = "node selector term with matchFields is not supported"
DRA_NOT_SUPPORTED = ("pod has Dynamic Resource Allocation requirements that are not yet "
                     "supported by Karpenter")


def requirement_problem(key: str, operator: str, values: list[str]) -> str | None:
    key = NORMALIZED.get(key, key)
    return runtime_restricted_label(key) or well_known_values_problem(key, operator, values)


def _term_problems(term: Mapping[str, Any]) -> list[str]:
    problems = []
    if term.get("matchFields") is not None:
        problems.append(MATCH_FIELDS_NOT_SUPPORTED)
    for expression in term.get("matchExpressions") or ():
        if not isinstance(expression, Mapping):
            continue
        values = [str(value) for value in expression.get("values") or ()]
        problem = requirement_problem(str(expression.get("key") or ""),
                                      str(expression.get("operator") or ""), values)
        if problem is not None:
            problems.append(problem)
    return problems


def validation_problem(spec: Mapping[str, Any]) -> str | None:
    """Why Karpenter's provisioner ignores a pod with this spec, or None (its nodeSelector
    and required node-affinity terms; preferences are not checked)."""
    problems = []
    for key, value in sorted((spec.get("nodeSelector") or {}).items()):
        problem = requirement_problem(str(key), "In", [str(value)])
        if problem is not None:
            problems.append(problem)
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        if isinstance(term, Mapping):
            problems.extend(_term_problems(term))
    return "; ".join(problems) if problems else None
