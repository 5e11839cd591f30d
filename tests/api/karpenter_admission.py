"""Shared plumbing for the ports of Karpenter's API test files: build a body from
Karpenter's BeforeEach object with dotted-path changes, ask the in-memory API server
whether it admits it (our generated CRD's schema and CEL rules), and ask our model whether
it passes the checks Karpenter's RuntimeValidate makes."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document
from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster

DELETE = object()
_names = itertools.count()


def changed(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with each dotted path ("spec.template.spec.taints") set (DELETE removes it)."""
    body = copy.deepcopy(base)
    for path, value in changes.items():
        *parents, last = path.split(".")
        here = body
        for part in parents:
            here = here.setdefault(part, {})
        if value is DELETE:
            here.pop(last, None)
        else:
            here[last] = copy.deepcopy(value)
    return body


def admitted(cluster: InMemoryCluster, body: dict[str, Any]) -> bool:
    """Whether the API server stores `body` (under a fresh name, so one cluster serves a
    whole module); a refusal must be the server's 422."""
    fresh = copy.deepcopy(body)
    fresh["metadata"]["name"] = f"{body['metadata']['name']}-{next(_names)}"
    try:
        cluster.create(fresh)
    except InvalidError as refusal:
        assert refusal.status == 422
        return False
    return True


def runtime_valid(body: dict[str, Any]) -> bool:
    """Whether our model takes `body` without a problem (Karpenter's RuntimeValidate)."""
    _, problems = parse_document(Document("karpenter.yaml", 1, body))
    return not problems


def expect_decisions(cluster: InMemoryCluster, karpenter: str, bodies: list[dict[str, Any]],
                     admit: bool, runtime: bool | None = None) -> None:
    """Each body is admitted by the API server exactly when Karpenter's test expects it
    (`karpenter` names the It or Entry), and, where `runtime` is given, passes or fails
    runtime validation as it does there."""
    for body in bodies:
        assert admitted(cluster, body) is admit, f"{karpenter}: {body['spec']}"
        if runtime is not None:
            assert runtime_valid(body) is runtime, f"{karpenter}: {body['spec']}"
