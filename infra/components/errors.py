"""Validation of component arguments through nodewright.api, with `nodewright validate`'s words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from nodewright.api import ManifestError, Problem, parse_manifest
from nodewright.api.validation import Model


class InvalidResourceError(pulumi.RunError):
    """A NodePool or EC2NodeClass that nodewright.api rejects.

    Its text has one line per problem, `Kind/name: field.path: message`, the same words as
    `nodewright validate` (which adds the file and line in front). Pulumi reports a RunError
    without a stack trace.
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(describe(problem) for problem in problems))


def describe(problem: Problem) -> str:
    where = f" {problem.path}:" if problem.path else ""
    return f"{problem.kind}/{problem.name}:{where} {problem.message}"


def validated_manifest(
    api_version: str, kind: str, name: str, spec: Mapping[str, Any], labels: Mapping[str, str]
) -> tuple[Model, dict[str, Any]]:
    """The checked model and its manifest (camelCase, defaults filled in)."""
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    body = {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": dict(spec)}
    try:
        model = parse_manifest(body, source=f"<{kind} component {name}>")
    except ManifestError as error:
        raise InvalidResourceError(error.problems) from None
    return model, model.to_manifest()
