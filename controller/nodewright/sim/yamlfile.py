"""Reading the scenario file itself: one YAML mapping, with the line of every field.

Timestamps stay text (YAML would turn `start: 2026-01-05T00:00:00Z` into a datetime, and
refuse an impossible date with an exception instead of a message); `start` is checked
as RFC 3339 by the loader. Syntax mistakes are reported with their line, together with
the layout mistakes `nodewright validate` finds in a broken file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from nodewright.api.layout import find_layout_mistakes
from nodewright.api.manifests import Document
from nodewright.api.problems import FieldPath, Problem, format_path

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """SafeLoader without implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

# libyaml's parser, when PyYAML was built with it, reads a snapshot of thousands of nodes
# several times faster; its nodes carry the same lines. A file it refuses is read again
# with the pure-Python parser, whose messages the problems quote.
_CLoader: type[Any] | None = None
if hasattr(yaml, "CSafeLoader"):
    _CLoader = type("_CLoader", (yaml.CSafeLoader,), {
        "yaml_implicit_resolvers": _Loader.yaml_implicit_resolvers})


def read_single_document(text: str, filename: str) -> tuple[Document | None, list[Problem]]:
    if _CLoader is not None:
        fast = _CLoader(text)
        try:
            found = _read(fast, filename)
        except (yaml.YAMLError, RecursionError):
            found = None
        finally:
            fast.dispose()
        if found is not None:
            return found
    loader = _Loader(text)
    try:
        nodes: list[yaml.Node] = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                nodes.append(node)
        if len(nodes) != 1:
            count = "no document" if not nodes else f"{len(nodes)} documents"
            line = nodes[1].start_mark.line + 1 if len(nodes) > 1 else 1
            return None, [Problem(filename, line, "", "", "",
                                  f"a scenario file holds one YAML mapping; it has {count}")]
        node = nodes[0]
        body = loader.construct_document(node)
        lines: dict[FieldPath, int] = {}
        problems = list(_index(node, (), lines, filename))
    except yaml.MarkedYAMLError as error:
        return None, _syntax_problems(error, text, filename)
    except yaml.YAMLError as error:
        return None, [Problem(filename, 0, "", "", "", f"YAML error: {error}")]
    except RecursionError:
        return None, [Problem(filename, 0, "", "", "", "the YAML is nested too deeply to read")]
    finally:
        loader.dispose()
    if not isinstance(body, dict):
        problems.append(Problem(filename, node.start_mark.line + 1, "", "", "",
                                "a scenario is a mapping of keys (name, manifests, steps, ...)"))
    if problems:
        return None, problems
    return Document(filename, node.start_mark.line + 1, body, lines,
                    node.end_mark.line + 1), []


def _read(loader: Any, filename: str) -> tuple[Document | None, list[Problem]] | None:
    """The document as libyaml reads it; None when it is not one well-formed mapping (the
    pure-Python reading then says what is wrong)."""
    nodes: list[yaml.Node] = []
    while loader.check_node():
        node = loader.get_node()
        if node is not None:
            nodes.append(node)
    if len(nodes) != 1:
        return None
    node = nodes[0]
    body = loader.construct_document(node)
    lines: dict[FieldPath, int] = {}
    problems = list(_index(node, (), lines, filename))
    if problems or not isinstance(body, dict):
        return None
    return Document(filename, node.start_mark.line + 1, body, lines,
                    node.end_mark.line + 1), []


def _syntax_problems(error: yaml.MarkedYAMLError, text: str, filename: str) -> list[Problem]:
    mark = error.problem_mark or error.context_mark
    message = " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
    line = mark.line + 1 if mark is not None else 0
    found = {line: Problem(filename, line, "", "", "", f"YAML syntax error: {message}")}
    for mistake in find_layout_mistakes(text):
        found[mistake.line] = Problem(filename, mistake.line, "", "", "",
                                      f"YAML syntax error: {mistake.message}")
    return [found[number] for number in sorted(found)]


def _index(
    node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], filename: str
) -> Iterator[Problem]:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            key_line = key_node.start_mark.line + 1
            if key in seen:
                yield Problem(filename, key_line, "", "", format_path((*path, key)),
                              f"duplicate key {key!r} (first at line {seen[key]})")
            seen[key] = key_line
            yield from _index(value_node, (*path, key), lines, filename)
            lines[(*path, key)] = key_line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _index(item, (*path, index), lines, filename)
