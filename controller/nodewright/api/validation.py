"""From raw documents to checked models, with every problem located precisely."""

from __future__ import annotations

import copy
import difflib
import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from nodewright.api import formats, rules
from nodewright.api.base import KubeModel
from nodewright.api.capacitybuffer import CapacityBuffer
from nodewright.api.ec2nodeclass import ALIAS_PATTERN, VOLUME_SIZE_PATTERN, EC2NodeClass
from nodewright.api.managed import supports_node_class
from nodewright.api.manifests import Document
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import FieldPath, Problem, format_path
from nodewright.api.schema import JSONSchema, object_schema

Model = NodePool | EC2NodeClass | NodeClaim | NodeOverlay | CapacityBuffer
KINDS: dict[str, tuple[str, type[KubeModel]]] = {
    "NodePool": ("karpenter.sh", NodePool),
    "NodeClaim": ("karpenter.sh", NodeClaim),
    "EC2NodeClass": ("karpenter.k8s.aws", EC2NodeClass),
    "NodeOverlay": ("karpenter.sh", NodeOverlay),
    "CapacityBuffer": ("autoscaling.x-k8s.io", CapacityBuffer),
}
SERVED_VERSION = "v1"
# Kinds served at another version than v1.
SERVED_VERSIONS = {"NodeOverlay": "v1alpha1", "CapacityBuffer": "v1beta1"}

_PATTERN_MEANINGS = {
    formats.QUANTITY_PATTERN: "a Kubernetes quantity such as 100m, 2, 512Mi or 20Gi",
    formats.PERCENT_OR_QUANTITY_PATTERN: "a percentage such as 10% or a quantity such as 100Mi",
    formats.DURATION_PATTERN: "a duration such as 30s, 5m or 720h",
    formats.DURATION_OR_NEVER_PATTERN: "a duration such as 30s, 5m or 720h, or Never",
    formats.BUDGET_DURATION_PATTERN: "a duration in hours and minutes such as 8h or 1h30m",
    formats.BUDGET_NODES_PATTERN: "a node count such as 5 or a percentage such as 10%",
    formats.LABEL_KEY_PATTERN: "a label key such as example.com/name",
    formats.TAINT_VALUE_PATTERN: (
        "a taint value (alphanumerics, '-', '_' or '.', starting and ending with an "
        "alphanumeric, optionally after a DNS prefix and '/')"
    ),
    formats.LABEL_VALUE_PATTERN: (
        "a label value (alphanumerics, '-', '_' or '.', starting and ending with an "
        "alphanumeric)"
    ),
    formats.CRON_PATTERN: "a cron schedule such as '0 9 * * mon-fri' or @daily",
    ALIAS_PATTERN: "an alias in the format family@version, such as al2023@latest",
    VOLUME_SIZE_PATTERN: (
        "an EBS volume size in Gi, G, Ti or T between 1Gi and 64T, such as 20Gi or 100G"),
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
    expected = f"{group}/{SERVED_VERSIONS.get(document.kind, SERVED_VERSION)}"
    if document.api_version != expected:
        return None, [
            document.problem(
                ("apiVersion",),
                f"apiVersion {document.api_version!r} is not served; {document.kind} is {expected}",
            )
        ]
    missing = [
        document.problem(("metadata", "name"), message)
        for message in name_problems(document.kind, document.name)
    ]
    removed = _removed_value(document.body)
    try:
        model = model_type.model_validate(document.body)
    except ValidationError as error:
        type_findings = [
            (path, removed[1] if removed is not None and path == removed[0]
             else _with_suggestion(model_type, path, message))
            for path, message in pydantic_findings(error)
        ]
        # Karpenter's cross-field rules too, on what is left without the bad fields, so that
        # one run reports everything it can.
        rest = _semantic_findings_without(model_type, document.body, error)
        return None, missing + [
            document.problem(path, message) for path, message in [*type_findings, *rest]
        ]
    assert isinstance(model, Model)
    findings = list(semantic_findings(model))
    problems = missing + [document.problem(path, message) for path, message in findings]
    return (model if not problems else None), problems


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(formats.LABEL_VALUE_PATTERN)
MAX_NAME = 253
MAX_LABEL_VALUE = 63


def name_problems(kind: str, name: str) -> list[str]:
    """What is wrong with an object's metadata.name, as the API server (and, for NodePools,
    the karpenter.sh/nodepool label that carries the name) would say."""
    if not name:
        return ["metadata.name is required"]
    problems: list[str] = []
    if len(name) > MAX_NAME or not _DNS_SUBDOMAIN.match(name):
        problems.append(
            f"{name!r} is not a valid name: a DNS subdomain of lowercase letters, digits, "
            f"'-' and '.', starting and ending with a letter or digit, at most {MAX_NAME} "
            "characters"
        )
    if kind == "NodePool" and (len(name) > MAX_LABEL_VALUE or not _LABEL_VALUE.match(name)):
        problems.append(
            f"{name!r} cannot be a NodePool name: nodes carry it as the karpenter.sh/nodepool "
            f"label, whose values have at most {MAX_LABEL_VALUE} characters"
        )
    return problems


# Values Karpenter's v1 API no longer has, with what to use instead.
_REMOVED_VALUES: dict[FieldPath, dict[object, str]] = {
    ("spec", "amiFamily"): {
        "Ubuntu": (
            "amiFamily Ubuntu was removed in Karpenter v1: use amiFamily: AL2023 (or the alias "
            "al2023@latest) for an EKS-optimized AMI, or amiFamily: Custom with "
            "amiSelectorTerms naming your Ubuntu AMI and userData that joins the cluster"
        ),
    },
}


def _removed_value(body: dict[str, Any]) -> tuple[FieldPath, str] | None:
    for path, removed in _REMOVED_VALUES.items():
        value: Any = body
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, str) and value in removed:
            return path, removed[value]
    return None


def _semantic_findings_without(
    model_type: type[KubeModel], body: dict[str, Any], error: ValidationError
) -> list[rules.Finding]:
    """The cross-field findings of `body` once everything in error is set aside.

    A bad optional field is dropped; a bad or missing required field inside a list item
    (a requirement's `operator`, say) takes its item out of the list, so that one bad
    operator does not hide every other problem of the document. Findings are reported at
    the original indices. Gives up (returns nothing) when a required field outside any list
    is in error, since the rest would then describe a different object.
    """
    pruned = copy.deepcopy(body)
    aside = _SetAside()
    details = error.errors(include_url=False)
    model: KubeModel | None = None
    for _ in range(_MAX_PRUNING_ROUNDS):
        for detail in details:
            path = _location(detail)
            if not path or not aside.remove(pruned, path, detail["type"] == "missing"):
                return []
        try:
            model = model_type.model_validate(pruned)
            break
        except ValidationError as again:
            details = again.errors(include_url=False)
    if model is None:
        return []
    assert isinstance(model, Model)
    findings = []
    for path, message in semantic_findings(model):
        original = aside.original(path)
        if not any(
            original[: len(gone)] == gone or gone[: len(original)] == original
            for gone in aside.gone
        ):
            findings.append((original, message))
    return findings


_MAX_PRUNING_ROUNDS = 5


class _SetAside:
    """Fields and list items taken out of a copy of a document, and how the copy's paths
    map back to the original's (list items removed shift the indices after them)."""

    def __init__(self) -> None:
        self.gone: list[FieldPath] = []
        # list path in original indices -> original indices of the items removed from it
        self.items: dict[FieldPath, list[int]] = {}

    def original(self, path: FieldPath) -> FieldPath:
        result: list[str | int] = []
        for part in path:
            if isinstance(part, int):
                removed = sorted(self.items.get(tuple(result), []))
                index = part
                for taken in removed:
                    if taken <= index:
                        index += 1
                result.append(index)
            else:
                result.append(part)
        return tuple(result)

    def remove(self, body: Any, path: FieldPath, missing: bool) -> bool:
        """Drop the field at `path` (a path in `body`), or its innermost list item when the
        field is missing or cannot be dropped. False when neither is possible."""
        if not missing and _drop(body, path):
            self.gone.append(self.original(path))
            return True
        for end in range(len(path), 0, -1):
            if isinstance(path[end - 1], int):
                item = path[:end]
                original = self.original(item)
                container = _resolve(body, item[:-1])
                index = item[-1]
                if not isinstance(container, list) or not isinstance(index, int):
                    return False
                if index >= len(container):
                    return False
                del container[index]
                self.items.setdefault(original[:-1], []).append(int(original[-1]))
                self.gone.append(original)
                return True
        return False


def _resolve(body: Any, path: FieldPath) -> Any:
    target = body
    for part in path:
        try:
            target = target[part]
        except (KeyError, IndexError, TypeError):
            return None
    return target


def _drop(body: Any, path: FieldPath) -> bool:
    """Remove the mapping entry at `path` (list items are removed by _SetAside)."""
    *parents, last = path
    target = _resolve(body, tuple(parents))
    if isinstance(target, dict) and last in target:
        del target[last]
        return True
    return False


def semantic_findings(model: Model) -> Iterator[rules.Finding]:
    if isinstance(model, NodePool):
        yield from rules.check_nodepool(model)
    elif isinstance(model, EC2NodeClass):
        yield from rules.check_ec2nodeclass(model)
    elif isinstance(model, NodeOverlay):
        yield from rules.check_nodeoverlay(model)
    elif isinstance(model, CapacityBuffer):
        yield from rules.check_capacitybuffer(model)
    else:
        yield from rules.check_nodeclaim(model)


def pydantic_findings(error: ValidationError) -> Iterator[rules.Finding]:
    for detail in error.errors(include_url=False):
        yield _location(detail), _message(detail)


UNKNOWN_FIELD = "unknown field (not part of the v1 API)"


def _with_suggestion(model_type: type[BaseModel], path: FieldPath, message: str) -> str:
    """An unknown field's message, naming the known field it most looks like."""
    if message != UNKNOWN_FIELD or not path or not isinstance(path[-1], str):
        return message
    close = difflib.get_close_matches(path[-1], _known_fields(model_type, path[:-1]), n=1,
                                      cutoff=0.6)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def _known_fields(model_type: type[BaseModel], parent: FieldPath) -> list[str]:
    """The wire names of the fields the object at `parent` may have."""
    schema = _wire_schema(model_type)
    for part in parent:
        schema = (schema.get("items") if isinstance(part, int)
                  else (schema.get("properties") or {}).get(part)) or {}
    return list(schema.get("properties") or {})


@functools.cache
def _wire_schema(model_type: type[BaseModel]) -> JSONSchema:
    return object_schema(model_type)


def _location(detail: ErrorDetails) -> FieldPath:
    return tuple(part for part in detail["loc"] if part != "[key]")


def _message(detail: ErrorDetails) -> str:
    kind = detail["type"]
    value = detail.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return UNKNOWN_FIELD
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
        if isinstance(model, EC2NodeClass):
            problems.extend(document.problem(path, message, severity="warning")
                            for path, message in rules.selector_warnings(model))
    problems.extend(_cross_check(placed))
    return models, problems


def _cross_check(placed: list[tuple[Document, Model]]) -> Iterator[Problem]:
    nodeclasses = {m.name for _, m in placed if isinstance(m, EC2NodeClass)}
    for document, model in placed:
        if not isinstance(model, NodePool):
            continue
        ref = model.spec.template.spec.node_class_ref
        path = ("spec", "template", "spec", "nodeClassRef")
        if not supports_node_class(ref.group, ref.kind):
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
