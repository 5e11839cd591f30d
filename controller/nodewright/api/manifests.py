"""Reading Kubernetes manifests from files, remembering where every field is.

Every document keeps a map from field path to line, so that a problem found in
a model can be reported at the line of the offending field.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nodewright.api.layout import find_layout_mistakes
from nodewright.api.problems import FieldPath, Problem, format_path

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class Document:
    """One YAML document: its raw body and where its fields are."""

    path: str
    line: int
    body: dict[str, Any]
    lines: dict[FieldPath, int] = field(default_factory=dict)
    end_line: int = 0

    @property
    def kind(self) -> str:
        kind = self.body.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def api_version(self) -> str:
        version = self.body.get("apiVersion")
        return version if isinstance(version, str) else ""

    @property
    def name(self) -> str:
        metadata = self.body.get("metadata")
        if isinstance(metadata, dict):
            name = metadata.get("name")
            if isinstance(name, str):
                return name
        return ""

    @property
    def namespace(self) -> str:
        metadata = self.body.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("namespace"), str):
            return str(metadata["namespace"])
        return ""

    def line_of(self, path: FieldPath) -> int:
        """The line of the field at `path`, or of its nearest ancestor that exists."""
        for end in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return self.line

    def problem(self, path: FieldPath, message: str, severity: str = "error") -> Problem:
        return Problem(
            file=self.path,
            line=self.line_of(path),
            kind=self.kind,
            name=self.name,
            path=format_path(path),
            message=message,
            severity="warning" if severity == "warning" else "error",
        )


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Files as given, directories walked for .yaml/.yml/.json files in sorted order."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES
            )
            if not found:
                problems.append(Problem(
                    str(path), 0, "", "", "",
                    f"no manifests in this directory (no {', '.join(MANIFEST_SUFFIXES)} files)",
                ))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(str(path), 0, "", "", "", "no such file or directory"))
    return files, problems


def load_documents(paths: Iterable[str | Path]) -> tuple[list[Document], list[Problem]]:
    """Every document of every file; YAML errors come back as problems, never raised."""
    files, problems = expand_paths(paths)
    documents: list[Document] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(Problem(str(file), 0, "", "", "", f"cannot read file: {error}"))
            continue
        file_documents, file_problems = parse_documents(text, str(file))
        documents.extend(file_documents)
        problems.extend(file_problems)
    return documents, problems


def parse_documents(text: str, filename: str) -> tuple[list[Document], list[Problem]]:
    """The documents of one YAML stream, and every syntax mistake in it.

    Documents before a syntax error are returned; the error is reported with its
    line and column, together with every other layout mistake in the file.
    """
    try:
        return _parse_clean(text, filename)
    except RecursionError:
        return [], [Problem(filename, 0, "", "", "", "YAML is nested too deeply to read")]
    except yaml.MarkedYAMLError as error:
        first = _syntax_problem(error, filename)
    except yaml.YAMLError as error:
        return [], [Problem(filename, 0, "", "", "", f"YAML error: {error}")]
    documents = _documents_before(text, filename, first.line)
    problems = {first.line: first}
    for mistake in find_layout_mistakes(text):
        # On the parser's line, the layout message is the clearer of the two.
        problems[mistake.line] = Problem(
            filename, mistake.line, "", "", "", f"YAML syntax error: {mistake.message}",
            column=mistake.column,
        )
    return documents, [problems[line] for line in sorted(problems)]


def _documents_before(text: str, filename: str, error_line: int) -> list[Document]:
    """The documents that end before the line of a syntax error, parsed on their own."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines[: error_line - 1]) if line.startswith("---")]
    if not starts:
        return []
    try:
        documents, _ = _parse_clean("\n".join(lines[: starts[-1]]), filename)
    except yaml.YAMLError:
        return []
    return documents


def _syntax_problem(error: yaml.MarkedYAMLError, filename: str) -> Problem:
    mark = error.problem_mark or error.context_mark
    message = " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
    if "\\t" in message or "\t" in message:
        message = "a tab character is used for indentation; YAML allows only spaces"
    if mark is None:
        return Problem(filename, 0, "", "", "", f"YAML syntax error: {message}")
    return Problem(
        filename, mark.line + 1, "", "", "", f"YAML syntax error: {message}",
        column=mark.column + 1,
    )


def _parse_clean(text: str, filename: str) -> tuple[list[Document], list[Problem]]:
    documents: list[Document] = []
    problems: list[Problem] = []
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            start = node.start_mark.line + 1
            try:
                body = loader.construct_document(node)
                if body is None:
                    continue
                if not isinstance(body, dict):
                    problems.append(
                        Problem(filename, start, "", "", "", "document is not a mapping of fields")
                    )
                    continue
                if _refers_to_itself(body):
                    problems.append(Problem(
                        filename, start, "", "", "",
                        "YAML anchors and aliases make this document contain itself",
                    ))
                    continue
                lines: dict[FieldPath, int] = {}
                found = list(_index_lines(node, (), lines, filename))
            except RecursionError:
                problems.append(Problem(
                    filename, start, "", "", "", "document is nested too deeply to read",
                ))
                continue
            problems.extend(found)
            document = Document(filename, start, body, lines, node.end_mark.line + 1)
            if _is_list(body):
                listed, list_problems = _list_items(document)
                documents.extend(listed)
                problems.extend(list_problems)
            else:
                documents.append(document)
    finally:
        loader.dispose()
    return documents, problems


def _is_list(body: dict[str, Any]) -> bool:
    """A `kind: List` (what `kubectl get -o yaml` writes): its items are the documents."""
    kind = body.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in body and (
        body.get("apiVersion") == "v1" or kind == "List"
    )


def _list_items(document: Document) -> tuple[list[Document], list[Problem]]:
    items = document.body.get("items")
    if not isinstance(items, list):
        return [], [document.problem(("items",), "items of a List must be a list")]
    documents: list[Document] = []
    problems: list[Problem] = []
    for index, item in enumerate(items):
        prefix: FieldPath = ("items", index)
        if not isinstance(item, dict):
            problems.append(document.problem(prefix, "each item of a List must be a mapping"))
            continue
        lines = {
            path[len(prefix):]: line
            for path, line in document.lines.items()
            if path[: len(prefix)] == prefix
        }
        documents.append(Document(document.path, lines.get((), document.line), item, lines))
    return documents, problems


def _refers_to_itself(body: object) -> bool:
    """True when aliases make a list or mapping contain itself (`a: &x [*x]`)."""
    stack: list[tuple[object, frozenset[int]]] = [(body, frozenset())]
    while stack:
        value, ancestors = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if id(value) in ancestors:
            return True
        inner = ancestors | {id(value)}
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, inner) for child in children)
    return False


def _index_lines(
    node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], filename: str
) -> Iterator[Problem]:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            key_line = key_node.start_mark.line + 1
            if key in seen:
                        yield Problem(
                    filename,
                    key_line,
                    "",
                    "",
                    format_path((*path, key)),
                    f"duplicate key {key!r} (first at line {seen[key]})",
                )
            seen[key] = key_line
            child = (*path, key)
            yield from _index_lines(value_node, child, lines, filename)
            lines[child] = key_line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _index_lines(item, (*path, index), lines, filename)
