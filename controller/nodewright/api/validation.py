"""From raw documents to checked models, with every problem located precisely."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from nodewright.api import formats, rules
from nodewright.api.base import KubeModel
from nodewright.api.ec2nodeclass import ALIAS_PATTERN, EC2NodeClass
from nodewright.api.manifests import Document
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import FieldPath, Problem, format_path

Model = NodePool | EC2NodeClass | NodeClaim
KINDS: dict[str, tuple[str, type[KubeModel]]] = {
    "NodePool": ("karpenter.sh", NodePool),
    "NodeClaim": ("karpenter.sh", NodeClaim),
    "EC2NodeClass": ("karpenter.k8s.aws", EC2NodeClass),
}
SERVED_VERSION = "v1"

_PATTERN_MEANINGS = {
    formats.QUANTITY_PATTERN: "a Kubernetes quantity such as 100m, 2, 512Mi or 20Gi",
    formats.PERCENT_OR_QUANTITY_PATTERN: "a percentage such as 10% or a quantity such as 100Mi",
    formats.DURATION_PATTERN: "a duration such as 30s, 5m or 720h",
    formats.DURATION_OR_NEVER_PATTERN: "a duration such as 30s, 5m or 720h, or Never",
    formats.BUDGET_DURATION_PATTERN: "a duration in hours and minutes such as 8h or 1h30m",
    formats.BUDGET_NODES_PATTERN: "a node count such as 5 or a percentage such as 10%",
    formats.GO_DURATION_PATTERN: "a duration such as 90s, 1m30s or 2h",
    formats.LABEL_KEY_PATTERN: "a label key such as example.com/name",
    formats.LABEL_VALUE_PATTERN: (
        "a label value (alphanumerics, '-', '_' or '.', starting and ending with an "
        "alphanumeric)"
    ),
    formats.CRON_PATTERN: "a cron schedule such as '0 9 * * mon-fri' or @daily",
    ALIAS_PATTERN: "an alias in the format family@version, such as al2023@latest",
    r"^subnet-[0-9a-z]+$": "a subnet ID such as subnet-0123456789abcdef0",
    r"^sg-[0-9a-z]+$": "a security group ID such as sg-0123456789abcdef0",
    r"^ami-[0-9a-z]+$": "an AMI ID such as ami-0123456789abcdef0",
    r"^cr-[0-9a-z]+$": "a capacity reservation ID such as cr-0123456789abcdef0",
}


class ManifestError(ValueError):
    """A model that failed validation; its str lists every problem, one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(problem.format() for problem in problems))


def is_karpenter_kind(document: Document) -> bool:
    kind = KINDS.get(document.kind)
    return kind is not None and document.api_version.split("/", 1)[0] == kind[0]


def parse_document(document: Document) -> tuple[Model | None, list[Problem]]:
    """The model for a NodePool, EC2NodeClass or NodeClaim document, or its problems."""
    entry = KINDS.get(document.kind)
    if entry is None:
        return None, [
            document.problem(("kind",), f"kind {document.kind!r} is not a Karpenter kind")
        ]
    group, model_type = entry
    expected = f"{group}/{SERVED_VERSION}"
    if document.api_version != expected:
        return None, [
            document.problem(
                ("apiVersion",),
                f"apiVersion {document.api_version!r} is not served; {document.kind} is {expected}",
            )
        ]
    if not document.name:
        missing = [document.problem(("metadata", "name"), "metadata.name is required")]
    else:
        missing = []
    try:
        model = model_type.model_validate(document.body)
    except ValidationError as error:
        type_findings = list(pydantic_findings(error))
        # Karpenter's cross-field rules too, on what is left without the bad fields, so that
        # one run reports everything it can.
        rest = _semantic_findings_without(model_type, document.body, error)
        return None, missing + [
            document.problem(path, message) for path, message in [*type_findings, *rest]
        ]
    assert isinstance(model, NodePool | EC2NodeClass | NodeClaim)
    findings = list(semantic_findings(model))
    problems = missing + [document.problem(path, message) for path, message in findings]
    return (model if not problems else None), problems


def _semantic_findings_without(
    model_type: type[KubeModel], body: dict[str, Any], error: ValidationError
) -> list[rules.Finding]:
    """The cross-field findings of `body` once every optional field in error is dropped.

    Gives up (returns nothing) when a dropped field was required, since the rest would then
    describe a different object.
    """
    pruned = copy.deepcopy(body)
    dropped: list[FieldPath] = []
    for detail in error.errors(include_url=False):
        path = _location(detail)
        if detail["type"] == "missing" or not path or not _drop(pruned, path):
            return []
        dropped.append(path)
    try:
        model = model_type.model_validate(pruned)
    except ValidationError:
        return []
    assert isinstance(model, NodePool | EC2NodeClass | NodeClaim)
    return [
        (path, message)
        for path, message in semantic_findings(model)
        if not any(path[: len(gone)] == gone or gone[: len(path)] == path for gone in dropped)
    ]


def _drop(body: Any, path: FieldPath) -> bool:
    """Remove the mapping entry at `path` (never a list item: that would shift the indices)."""
    *parents, last = path
    target = body
    for part in parents:
        try:
            target = target[part]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(target, dict) and last in target:
        del target[last]
        return True
    return False


def semantic_findings(model: Model) -> Iterator[rules.Finding]:
    if isinstance(model, NodePool):
        yield from rules.check_nodepool(model)
    elif isinstance(model, EC2NodeClass):
        yield from rules.check_ec2nodeclass(model)
    else:
        yield from rules.check_nodeclaim(model)


def pydantic_findings(error: ValidationError) -> Iterator[rules.Finding]:
    for detail in error.errors(include_url=False):
        yield _location(detail), _message(detail)


def _location(detail: ErrorDetails) -> FieldPath:
    return tuple(part for part in detail["loc"] if part != "[key]")


def _message(detail: ErrorDetails) -> str:
    kind = detail["type"]
    value = detail.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (not part of the v1 API)"
    if "[key]" in detail["loc"]:
        return f"key {value!r} is not allowed: {_rephrase(detail['msg'])}"
    if kind == "string_pattern_mismatch":
        pattern = str((detail.get("ctx") or {}).get("pattern", ""))
        meaning = _PATTERN_MEANINGS.get(pattern, f"a value matching {pattern}")
        return f"{value!r} is not {meaning}"
    if kind in ("literal_error", "enum"):
        return f"{value!r} is not allowed: {_rephrase(detail['msg'])}"
    if kind == "too_short" and isinstance(value, list | dict) and not value:
        return "must not be empty"
    if kind in ("too_short", "too_long") and isinstance(value, list | dict):
        return _rephrase(detail["msg"])
    return (
        f"{_rephrase(detail['msg'])} (got {value!r})"
        if value is not None
        else _rephrase(detail["msg"])
    )


def _rephrase(message: str) -> str:
    return message.replace("Input should be", "must be").replace("Value should", "must")


def validate_documents(documents: Iterable[Document]) -> tuple[list[Model], list[Problem]]:
    """Parse every Karpenter document and cross-check NodePool -> EC2NodeClass references."""
    models: list[Model] = []
    problems: list[Problem] = []
    placed: list[tuple[Document, Model]] = []
    for document in documents:
        if not is_karpenter_kind(document) and document.kind not in KINDS:
            continue
        model, found = parse_document(document)
        problems.extend(found)
        if model is not None:
            models.append(model)
            placed.append((document, model))
    problems.extend(_cross_check(placed))
    return models, problems


def _cross_check(placed: list[tuple[Document, Model]]) -> Iterator[Problem]:
    nodeclasses = {m.name for _, m in placed if isinstance(m, EC2NodeClass)}
    for document, model in placed:
        if not isinstance(model, NodePool):
            continue
        ref = model.spec.template.spec.node_class_ref
        path = ("spec", "template", "spec", "nodeClassRef")
        if ref.group != "karpenter.k8s.aws" or ref.kind != "EC2NodeClass":
            yield document.problem(
                (*path, "kind"),
                f"nodeClassRef must name a karpenter.k8s.aws EC2NodeClass, got "
                f"{ref.group}/{ref.kind}",
            )
        elif ref.name not in nodeclasses:
            yield document.problem(
                (*path, "name"),
                f"EC2NodeClass {ref.name!r} is not among the validated manifests",
                severity="warning",
            )


def parse_manifest(body: dict[str, Any], source: str = "<manifest>") -> Model:
    """A checked model from a dict (for Pulumi components and tests); raises ManifestError."""
    document = Document(path=source, line=0, body=body)
    model, problems = parse_document(document)
    if problems or model is None:
        raise ManifestError(problems)
    return model


def check_model(model: Model, source: str = "<model>") -> list[Problem]:
    """The semantic problems of an already-built model (types are checked by pydantic)."""
    kind, name = model.kind, model.metadata.name or ""
    return [
        Problem(source, 0, kind, name, format_path(path), message)
        for path, message in semantic_findings(model)
    ]
