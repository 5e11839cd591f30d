"""What a CRD's CEL rules reach, read statically.

The API server estimates the cost of every x-kubernetes-validations rule from
the schema: a list, map or string without maxItems, maxProperties or
maxLength is assumed to be as large as a whole request (3 MiB), and a rule
inside an unbounded list runs once per element that could fit in a request.
That is how a CRD gets "estimated rule cost exceeds budget". Karpenter's
published CRDs stay within budget by bounding what their rules touch and by
putting no rules on status.

This module parses the rules (a small CEL parser: literals, identifiers,
selection, indexing, calls, the comprehension macros, unary, binary and
ternary operators) and walks each one over the schema, so that a test can say
which rule reaches which unbounded value. `has(x.f)` only tests presence and
`size()` of a list or map reads a length, so neither reaches the values; map
keys cannot be bounded in an OpenAPI schema and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Schema = dict[str, Any]

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>[rR]?('([^'\\]|\\.)*'|"([^"\\]|\\.)*"))
  | (?P<number>\d+(\.\d+)?([eE][+-]?\d+)?u?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_BINARY = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "in": 3,
    "+": 4, "-": 4, "*": 5, "/": 5, "%": 5,
}


class CelSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Node:
    """One expression: kind is ident, literal, select, index, call, list, map,
    unary, binary or ternary."""

    kind: str
    value: str = ""
    children: tuple[Node, ...] = ()
    target: Node | None = None


def tokenize(rule: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(rule):
        match = _TOKEN.match(rule, position)
        if match is None:
            raise CelSyntaxError(f"unexpected {rule[position]!r} at column {position + 1}")
        position = match.end()
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group()))
    return tokens


class _Parser:
    def __init__(self, rule: str) -> None:
        self.tokens = tokenize(rule)
        self.position = 0

    def peek(self) -> str | None:
        return self.tokens[self.position][1] if self.position < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.position >= len(self.tokens):
            raise CelSyntaxError(f"expected {expected or 'more'} at the end")
        token = self.tokens[self.position]
        if expected is not None and token[1] != expected:
            raise CelSyntaxError(f"expected {expected!r}, found {token[1]!r}")
        self.position += 1
        return token

    def parse(self) -> Node:
        node = self.expression()
        if self.peek() is not None:
            raise CelSyntaxError(f"unexpected {self.peek()!r}")
        return node

    def expression(self) -> Node:
        condition = self.binary(1)
        if self.peek() == "?":
            self.take("?")
            then = self.expression()
            self.take(":")
            otherwise = self.expression()
            return Node("ternary", children=(condition, then, otherwise))
        return condition

    def binary(self, level: int) -> Node:
        left = self.unary()
        while (operator := self.peek()) in _BINARY and _BINARY[operator] >= level:
            self.take()
            right = self.binary(_BINARY[operator] + 1)
            left = Node("binary", operator, (left, right))
        return left

    def unary(self) -> Node:
        if self.peek() in ("!", "-"):
            operator = self.take()[1]
            return Node("unary", operator, (self.unary(),))
        return self.postfix(self.primary())

    def arguments(self, closing: str) -> tuple[Node, ...]:
        items: list[Node] = []
        while self.peek() != closing:
            items.append(self.expression())
            if self.peek() != closing:
                self.take(",")
        self.take(closing)
        return tuple(items)

    def primary(self) -> Node:
        kind, text = self.take()
        if kind in ("string", "number") or text in ("true", "false", "null"):
            return Node("literal", text)
        if kind == "ident":
            if self.peek() == "(":
                self.take("(")
                return Node("call", text, self.arguments(")"))
            return Node("ident", text)
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if text == "[":
            return Node("list", children=self.arguments("]"))
        if text == "{":
            entries: list[Node] = []
            while self.peek() != "}":
                key = self.expression()
                self.take(":")
                entries.append(Node("entry", children=(key, self.expression())))
                if self.peek() != "}":
                    self.take(",")
            self.take("}")
            return Node("map", children=tuple(entries))
        raise CelSyntaxError(f"unexpected {text!r}")

    def postfix(self, node: Node) -> Node:
        while True:
            if self.peek() == ".":
                self.take(".")
                kind, name = self.take()
                if kind != "ident":
                    raise CelSyntaxError(f"expected a field name after '.', found {name!r}")
                if self.peek() == "(":
                    self.take("(")
                    node = Node("call", name, self.arguments(")"), target=node)
                else:
                    node = Node("select", name, (node,))
            elif self.peek() == "[":
                self.take("[")
                index = self.expression()
                self.take("]")
                node = Node("index", children=(node, index))
            else:
                return node


def parse(rule: str) -> Node:
    return _Parser(rule).parse()


# ---------------------------------------------------------------- reaching values


@dataclass(frozen=True)
class Reach:
    """A value a rule reads: where it is in the schema, and the schema there."""

    path: str
    schema: Schema


KEY_SCHEMA: Schema = {"type": "string", "x-nodewright-map-key": True}


@dataclass
class _Walk:
    reached: list[Reach] = field(default_factory=list)

    def value(self, node: Node, scope: dict[str, Reach]) -> Reach | None:
        """The schema `node` evaluates to (None for computed or literal values), after
        recording every schema value it reads."""
        if node.kind == "ident":
            found = scope.get(node.value)
            if found is not None:
                self.read(found)
            return found
        if node.kind == "select":
            base = self.value(node.children[0], scope)
            child = _property(base, node.value)
            if child is not None:
                self.read(child)
            return child
        if node.kind == "index":
            # x[i] reads one element: x's length does not matter.
            base = self.container(node.children[0], scope)
            self.value(node.children[1], scope)
            element = _element(base)
            if element is not None:
                self.read(element)
            return element
        if node.kind == "call":
            return self.call(node, scope)
        for child in node.children:
            self.value(child, scope)
        return None

    def call(self, node: Node, scope: dict[str, Reach]) -> Reach | None:
        if node.target is None and node.value == "has":
            (argument,) = node.children
            if argument.kind == "select":
                # has(x.f): only x is read, and f only tested for presence.
                self.value(argument.children[0], scope)
            return None
        if node.value == "size":
            subject = node.target if node.target is not None else node.children[0]
            self.container(subject, scope)
            for argument in node.children if node.target is not None else node.children[1:]:
                self.value(argument, scope)
            return None
        if node.value in MACROS and node.target is not None:
            collection = self.value(node.target, scope)
            variable, *body = node.children
            element = _element(collection)
            inner = dict(scope)
            if element is not None:
                inner[variable.value] = element
            else:
                inner.pop(variable.value, None)
            for expression in body:
                self.value(expression, inner)
            return None
        if node.target is not None:
            self.value(node.target, scope)
        for argument in node.children:
            self.value(argument, scope)
        return None

    def container(self, node: Node, scope: dict[str, Reach]) -> Reach | None:
        """A list or map used only for its length (size(x)) or one element (x[i]):
        what led to x is read, x itself costs the same at any size."""
        before = len(self.reached)
        subject = self.value(node, scope)
        if subject is not None and subject.schema.get("type") in ("array", "object"):
            self.reached[before:] = [r for r in self.reached[before:] if r is not subject]
        return subject

    def read(self, reach: Reach) -> None:
        self.reached.append(reach)


def _property(base: Reach | None, name: str) -> Reach | None:
    if base is None:
        return None
    schema = base.schema
    if name in schema.get("properties", {}):
        return Reach(f"{base.path}.{name}", schema["properties"][name])
    if isinstance(schema.get("additionalProperties"), dict):
        return Reach(f"{base.path}[{name!r}]", schema["additionalProperties"])
    return None


def _element(base: Reach | None) -> Reach | None:
    """The element a comprehension or an index reaches: list items, or map keys."""
    if base is None:
        return None
    schema = base.schema
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return Reach(f"{base.path}[]", schema["items"])
    if schema.get("type") == "object" and (
        isinstance(schema.get("additionalProperties"), dict)
        or "properties" not in schema
    ):
        return Reach(f"{base.path}{{key}}", KEY_SCHEMA)
    return None


def reached_values(rule: str, site: Reach) -> list[Reach]:
    """Every schema value that `rule`, set at `site`, reads (in order, repeats kept)."""
    walk = _Walk()
    walk.value(parse(rule), {"self": site, "oldSelf": site})
    return walk.reached


def unbounded(schema: Schema) -> str | None:
    """Which bound a list, map or string lacks, or None when it is bounded (or neither)."""
    if schema.get("x-nodewright-map-key"):
        return None
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        kind = "string"
    if kind == "array" and "maxItems" not in schema:
        return "maxItems"
    if kind == "object" and "properties" not in schema and "maxProperties" not in schema:
        return "maxProperties"
    if kind == "string" and "maxLength" not in schema and "enum" not in schema:
        return "maxLength"
    return None


# ---------------------------------------------------------------- walking a schema


@dataclass(frozen=True)
class RuleSite:
    path: str
    schema: Schema
    rule: str
    ancestors: tuple[Reach, ...]


def rule_sites(schema: Schema, path: str = "", ancestors: tuple[Reach, ...] = ()) -> Iterator[
    RuleSite
]:
    """Every x-kubernetes-validations rule, with the schema nodes above it."""
    for validation in schema.get("x-kubernetes-validations", []):
        yield RuleSite(path or ".", schema, validation["rule"], ancestors)
    here = (*ancestors, Reach(path or ".", schema))
    for name, child in schema.get("properties", {}).items():
        yield from rule_sites(child, f"{path}.{name}", here)
    if isinstance(schema.get("items"), dict):
        yield from rule_sites(schema["items"], f"{path}[]", here)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from rule_sites(schema["additionalProperties"], f"{path}{{}}", here)


def problems(schema: Schema) -> list[str]:
    """Every way the rules of `schema` could run up an unbounded cost, as sentences."""
    found: list[str] = []
    for site in rule_sites(schema):
        if site.path == ".status" or site.path.startswith((".status.", ".status[")):
            found.append(f"{site.path}: a rule on status ({site.rule})")
            continue
        for ancestor in site.ancestors:
            missing = unbounded(ancestor.schema)
            if missing in ("maxItems", "maxProperties"):
                found.append(
                    f"{site.path}: the rule runs once per element of {ancestor.path}, "
                    f"which has no {missing} ({site.rule})"
                )
        reached = reached_values(site.rule, Reach(site.path, site.schema))
        seen: set[str] = set()
        for reach in reached:
            missing = unbounded(reach.schema)
            if missing is not None and reach.path not in seen:
                seen.add(reach.path)
                found.append(
                    f"{site.path}: the rule reaches {reach.path}, which has no {missing} "
                    f"({site.rule})"
                )
    return found
