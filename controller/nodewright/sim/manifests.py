"""The Kubernetes objects of a scenario: where they come from and whether the simulator
can run them.

An item of `manifests` (or of an `apply` step) is a path to a file or directory,
relative to the scenario file, or an inline object. Inline objects become documents of
the scenario file itself, so a mistake in one is reported at its own line. Every object
is checked as `nodewright validate` checks Karpenter kinds and as `nodewright plan` reads
pods and workloads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodewright.api.manifests import Document, load_documents
from nodewright.api.problems import FieldPath, Problem
from nodewright.api.validation import KINDS as KARPENTER_KINDS
from nodewright.api.validation import parse_document
from nodewright.cluster.api import KINDS
from nodewright.scheduling.planning import field_path
from nodewright.scheduling.pods import (
    WORKLOAD_KINDS,
    SpecError,
    daemonset_from_manifest,
    namespace_from_manifest,
    node_from_manifest,
    parse_label_selector,
    parse_pod_spec,
    pods_from_manifest,
    replicas_of,
)
from nodewright.scheduling.volumes import check_manifest
from nodewright.sim.reader import FieldReader, describe
from nodewright.sim.scenario import CLUSTER_SCOPED_KINDS, MANIFEST_KINDS, ObjectRef


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    resolved = os.path.normpath(path)
    try:
        relative = os.path.relpath(resolved)
    except ValueError:  # another drive (Windows)
        return resolved
    return resolved if relative.startswith("..") else relative


def object_ref(document: Document) -> ObjectRef:
    kind = document.kind
    namespace = "" if kind in CLUSTER_SCOPED_KINDS else (document.namespace or "default")
    return ObjectRef(kind, document.name, namespace)


def inline_document(source: Document, path: FieldPath,
                    lines: dict[FieldPath, int] | None = None) -> Document:
    """The object at `path` of the scenario file as a document of its own, keeping the
    lines of its fields (`lines`: those already cut out of the file's, by `lines_by_item`)."""
    body = source.body
    for part in path:
        body = body[part]  # type: ignore[index]
    if lines is None:
        depth = len(path)
        lines = {
            field[depth:]: line for field, line in source.lines.items() if field[:depth] == path
        }
    start = source.line_of(path)
    return Document(source.path, start, body, lines, max(lines.values(), default=start))


def read_items(
    reader: FieldReader, value: object, path: FieldPath, base: Path, what: str
) -> list[Document]:
    """The documents of a path, an inline object, or a list of them."""
    if isinstance(value, list):
        if not value:
            reader.error(path, f"{what} is an empty list")
        # A snapshot lists tens of thousands of inline objects: the file's lines are cut
        # into theirs in one walk, not one walk per object.
        lines = lines_by_item(reader.document, path)
        documents: list[Document] = []
        for index, item in enumerate(value):
            documents.extend(_read_item(reader, item, (*path, index), base, what,
                                        lines.get(index, {})))
        return documents
    return _read_item(reader, value, path, base, what)


def lines_by_item(source: Document, path: FieldPath) -> dict[object, dict[FieldPath, int]]:
    """The lines of the fields under the list at `path`, per item: item index -> the lines
    of that item's fields, relative to the item (as `inline_document` keeps them)."""
    depth = len(path)
    grouped: dict[object, dict[FieldPath, int]] = {}
    for field, line in source.lines.items():
        if len(field) > depth and field[:depth] == path:
            grouped.setdefault(field[depth], {})[field[depth + 1:]] = line
    return grouped


def _read_item(
    reader: FieldReader, item: object, path: FieldPath, base: Path, what: str,
    lines: dict[FieldPath, int] | None = None,
) -> list[Document]:
    if isinstance(item, str):
        target = base / item
        if not target.exists():
            reader.error(path, f"no such file or directory: {display_path(target)}")
            return []
        try:
            documents, problems = load_documents([display_path(target)])
        except ValueError as error:  # YAML refusing an impossible timestamp
            reader.error(path, f"{display_path(target)}: cannot read: {error}")
            return []
        reader.problems.extend(problems)
        if not documents and not problems:
            reader.error(path, f"{display_path(target)} holds no manifests (.yaml, .yml or "
                               ".json documents)")
        return documents
    if isinstance(item, dict):
        if not isinstance(item.get("apiVersion"), str) or not isinstance(item.get("kind"), str):
            reader.error(path, f"an inline object in {what} needs apiVersion and kind "
                               "(or give a path to a manifest file)")
            return []
        return [inline_document(reader.document, path, lines)]
    reader.error(path, f"{what} items are paths or inline objects, got {describe(item)}")
    return []


def check_document(document: Document) -> list[Problem]:
    """What stops the simulator from creating this object, or makes it ignore it."""
    kind = document.kind
    if not kind:
        return [document.problem(("kind",), "kind is required")]
    if kind not in MANIFEST_KINDS:
        return [document.problem(
            ("kind",), f"kind {kind!r} is not simulated and is ignored (simulated kinds: "
                       f"{', '.join(MANIFEST_KINDS)})", severity="warning",
        )]
    if kind in KARPENTER_KINDS:
        return parse_document(document)[1]
    expected = KINDS[kind].api_version
    if document.api_version != expected:
        return [document.problem(
            ("apiVersion",), f"apiVersion {document.api_version!r} does not serve {kind}; "
                             f"use {expected}",
        )]
    if not document.name:
        return [document.problem(("metadata", "name"), "metadata.name is required")]
    if kind in CLUSTER_SCOPED_KINDS and document.namespace:
        return [document.problem(("metadata", "namespace"),
                                 f"{kind} is cluster-scoped and takes no namespace")]
    try:
        _read_spec(document.body, kind)
    except SpecError as error:
        return [document.problem(field_path(error.path), error.message)]
    return []


def _read_spec(body: Mapping[str, Any], kind: str) -> None:
    if kind in WORKLOAD_KINDS:
        replicas_of(body)
        pods_from_manifest(body, 1)  # one pod is enough to read the template
    elif kind == "Pod":
        pods_from_manifest(body)
    elif kind == "DaemonSet":
        daemonset_from_manifest(body)
    elif kind == "Node":
        node_from_manifest(body)
    elif kind == "Namespace":
        namespace_from_manifest(body)
    elif kind == "PodDisruptionBudget":
        _read_pdb(body)
    elif kind == "PodTemplate":
        _read_pod_template(body)
    else:
        check_manifest(kind, body)


def _read_pod_template(body: Mapping[str, Any]) -> None:
    """A PodTemplate (the chunk of a CapacityBuffer) holds a pod template at `template`."""
    template = body.get("template")
    if not isinstance(template, dict):
        raise SpecError("template", "a PodTemplate needs a template")
    metadata = template.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise SpecError("template.metadata", f"must be a mapping, got {describe(metadata)}")
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        raise SpecError("template.metadata.labels", "must be a mapping")
    own = body.get("metadata")
    name = own.get("name") if isinstance(own, dict) else None
    parse_pod_spec("default", name if isinstance(name, str) else "",
                   labels, template.get("spec"), "template.spec")


def _read_pdb(body: Mapping[str, Any]) -> None:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        raise SpecError("spec", "a PodDisruptionBudget needs a spec")
    parse_label_selector(spec.get("selector") or {}, "spec.selector")
    given = [key for key in ("minAvailable", "maxUnavailable") if key in spec]
    if len(given) != 1:
        raise SpecError("spec", "set exactly one of minAvailable and maxUnavailable")
    value = spec[given[0]]
    path = f"spec.{given[0]}"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SpecError(path, f"must be a number or a percentage, got {describe(value)}")
    if isinstance(value, int) and value < 0:
        raise SpecError(path, f"must not be negative, got {value}")
    if isinstance(value, str):
        digits = value.removesuffix("%")
        if not value.endswith("%") or not digits.isdigit() or int(digits) > 100:
            raise SpecError(path, f"must be a number or a percentage such as 50%, got {value!r}")


def check_all(documents: Sequence[Document]) -> list[Problem]:
    problems: list[Problem] = []
    for document in documents:
        problems.extend(check_document(document))
    return problems


def simulated(documents: Sequence[Document]) -> Iterator[Document]:
    """The documents the simulator creates (other kinds are ignored)."""
    return (document for document in documents if document.kind in MANIFEST_KINDS)


def duplicates(documents: Sequence[Document]) -> list[Problem]:
    """Objects given twice in one list of manifests."""
    first: dict[ObjectRef, Document] = {}
    problems: list[Problem] = []
    for document in simulated(documents):
        if not document.name:
            continue
        ref = object_ref(document)
        if ref in first:
            earlier = first[ref]
            problems.append(document.problem(
                ("metadata", "name"), f"{ref} is defined twice (first at "
                                      f"{earlier.path}:{earlier.line})",
            ))
        else:
            first[ref] = document
    return problems


def node_class_references(
    documents: Sequence[Document], node_classes: set[str]
) -> list[Problem]:
    """NodePools naming an EC2NodeClass the scenario does not have: nothing could launch."""
    problems: list[Problem] = []
    for document in documents:
        if document.kind != "NodePool":
            continue
        name = _dig(document.body, ("spec", "template", "spec", "nodeClassRef", "name"))
        if isinstance(name, str) and name not in node_classes:
            problems.append(document.problem(
                ("spec", "template", "spec", "nodeClassRef", "name"),
                f"EC2NodeClass {name!r} is not in the scenario, so this NodePool could not "
                f"launch nodes (EC2NodeClasses: {', '.join(sorted(node_classes)) or 'none'})",
            ))
    return problems


def _dig(body: object, path: Sequence[str]) -> object:
    for part in path:
        if not isinstance(body, dict):
            return None
        body = body.get(part)
    return body
