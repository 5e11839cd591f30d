"""`x-kubernetes-validations` rules evaluated with cel-python (`celpy`), plus the
Kubernetes CEL library functions cel-python lacks (regex `find`/`findAll`, the strings
and lists extensions), so a rule is evaluated as the API server evaluates it, never
skipped.

cel-python interprets its parse tree, which costs about a millisecond a rule; the same
values come back again and again (every NodeClaim carries the same requirements), so each
`RuleSet` remembers its verdicts by value. Building cel-python's parser and parsing the
rules cost a quarter of a second per process, so the parse trees are kept on disk
(`cache_folder`) and the parser is built only when a rule is not there.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import itertools
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParser
from celpy.evaluation import CELEvalError

MEMO_LIMIT = 8192
Frozen = Any


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    message: str
    transition: bool  # refers to oldSelf: evaluated on updates only

    @property
    def failure(self) -> str:
        return self.message or f"failed rule: {self.text}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One rule that did not pass: its message, or what went wrong evaluating it."""

    detail: str


class RuleSet:
    """The rules of one schema node, compiled once; `check` gives the failures."""

    def __init__(self, rules: Sequence[Mapping[str, Any]]) -> None:
        self.rules = [Rule(str(r["rule"]), str(r.get("message") or ""),
                           "oldSelf" in str(r["rule"])) for r in rules]
        self._programs = [_program(rule.text) for rule in self.rules]
        self._memo: dict[Frozen, list[Verdict]] = {}
        self.has_transition = any(rule.transition for rule in self.rules)

    def check(self, value: Any, old: Any = None, *, has_old: bool = False) -> list[Verdict]:
        if not self.has_transition:
            key = freeze(value)
            found = self._memo.get(key)
            if found is None:
                found = self._evaluate(value, None, has_old=False)
                if len(self._memo) >= MEMO_LIMIT:
                    self._memo.clear()
                self._memo[key] = found
            return found
        return self._evaluate(value, old, has_old=has_old)

    def _evaluate(self, value: Any, old: Any, *, has_old: bool) -> list[Verdict]:
        activation = {"self": json_to_cel(value)}
        if has_old:
            activation["oldSelf"] = json_to_cel(old)
        failures = []
        for rule, program in zip(self.rules, self._programs, strict=True):
            if rule.transition and not has_old:
                continue
            try:
                result = program.evaluate(activation)
            except CELEvalError as error:
                failures.append(Verdict(f"{_error_text(error)} evaluating rule: "
                                        f"{rule.message or rule.text}"))
                continue
            if isinstance(result, CELEvalError):
                failures.append(Verdict(f"{_error_text(result)} evaluating rule: "
                                        f"{rule.message or rule.text}"))
            elif not (isinstance(result, celtypes.BoolType) and bool(result)):
                failures.append(Verdict(rule.failure))
        return failures


def freeze(value: Any) -> Frozen:
    """A hashable stand-in for a JSON value (type-tagged so 1 and True differ)."""
    kind = type(value)
    if kind is dict:
        return (dict, tuple(sorted((key, freeze(item)) for key, item in value.items())))
    if kind is list:
        return (list, tuple(freeze(item) for item in value))
    return (kind, value)


def _error_text(error: CELEvalError) -> str:
    args = error.args
    message = str(args[0]) if args else str(error)
    cause = args[1] if len(args) > 1 else None
    missing = re.match(r"no such member in mapping: '(.*)'", message)
    if missing:
        return f"no such key: {missing.group(1)}"
    if cause is ValueError and "int()" in " ".join(str(a) for a in args[2:] or ()):
        return "type conversion error from 'string' to 'int'"
    return message


@cache
def _program(text: str) -> celpy.Runner:
    environment = _environment()
    tree = _trees.get(text)
    if tree is None:
        tree = _trees[text] = environment.compile(text)
    return environment.program(tree, functions=dict(FUNCTIONS))


_trees: dict[str, lark.Tree[Any]] = {}


def cache_folder() -> Path:
    configured = os.environ.get("NODEWRIGHT_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodewright"


def preload(texts: Iterable[str]) -> None:
    """Parse trees for these rules, from the disk cache when it has them all; otherwise
    parsed now and the cache rewritten (best effort: a cache that cannot be read or
    written only costs the parse)."""
    wanted = sorted(set(texts))
    versions = [importlib.metadata.version(name) for name in ("cel-python", "lark")]
    digest = hashlib.sha256("\n".join([*versions, *wanted]).encode()).hexdigest()[:16]
    path = cache_folder() / f"cel-rules-{digest}.pickle"
    with contextlib.suppress(Exception):
        loaded = pickle.loads(path.read_bytes())
        if isinstance(loaded, dict) and all(text in loaded for text in wanted):
            _trees.update(loaded)
            return
    environment = _environment()
    parsed = {text: _trees.get(text) or environment.compile(text) for text in wanted}
    _trees.update(parsed)
    with contextlib.suppress(OSError, pickle.PicklingError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as out:
            out.write(pickle.dumps(parsed))
        os.replace(out.name, path)


class _LazyParser:
    """Stands in for cel-python's parser until a rule must be parsed."""

    def parse(self, text: str) -> Any:
        CELParser.CEL_PARSER = None
        CELParser()  # builds the real one
        assert CELParser.CEL_PARSER is not None
        return CELParser.CEL_PARSER.parse(text)


@cache
def _environment() -> celpy.Environment:
    if CELParser.CEL_PARSER is None:
        CELParser.CEL_PARSER = _LazyParser()  # type: ignore[assignment]
    return celpy.Environment()


# -- the Kubernetes CEL libraries cel-python lacks --------------------------------------


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    found = _regex(str(pattern)).search(str(text))
    return celtypes.StringType(found.group(0) if found else "")


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType:
    matches = [celtypes.StringType(m.group(0)) for m in _regex(str(pattern)).finditer(str(text))]
    if int(limit) >= 0:
        matches = matches[: int(limit)]
    return celtypes.ListType(matches)


def _index_of(target: Any, item: Any, start: Any = 0) -> celtypes.IntType:
    if isinstance(target, str):
        return celtypes.IntType(str(target).find(str(item), int(start)))
    values = list(target)
    return celtypes.IntType(values.index(item) if item in values else -1)


def _last_index_of(target: Any, item: Any) -> celtypes.IntType:
    if isinstance(target, str):
        return celtypes.IntType(str(target).rfind(str(item)))
    values = list(target)
    return celtypes.IntType(len(values) - 1 - values[::-1].index(item) if item in values
                            else -1)


def _split(text: Any, separator: Any, limit: Any = -1) -> celtypes.ListType:
    count = int(limit)
    if count == 0:
        return celtypes.ListType([])
    parts = str(text).split(str(separator), count - 1 if count > 0 else -1)
    return celtypes.ListType([celtypes.StringType(part) for part in parts])


def _join(items: Any, separator: Any = "") -> celtypes.StringType:
    return celtypes.StringType(str(separator).join(str(item) for item in items))


def _replace(text: Any, old: Any, new: Any, limit: Any = -1) -> celtypes.StringType:
    return celtypes.StringType(str(text).replace(str(old), str(new), int(limit)))


def _substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    value = str(text)
    return celtypes.StringType(value[int(start):] if end is None
                               else value[int(start):int(end)])


def _char_at(text: Any, index: Any) -> celtypes.StringType:
    value = str(text)
    return celtypes.StringType(value[int(index)] if int(index) < len(value) else "")


def _is_sorted(items: Any) -> celtypes.BoolType:
    values = list(items)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def _sum(items: Any) -> Any:
    values = list(items)
    total = values[0] if values else celtypes.IntType(0)
    for value in values[1:]:
        total = total + value
    return total


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "find": _find,
    "findAll": _find_all,
    "lowerAscii": lambda text: celtypes.StringType(str(text).lower()),
    "upperAscii": lambda text: celtypes.StringType(str(text).upper()),
    "trim": lambda text: celtypes.StringType(str(text).strip()),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "split": _split,
    "join": _join,
    "replace": _replace,
    "substring": _substring,
    "charAt": _char_at,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": lambda items: min(list(items)),
    "max": lambda items: max(list(items)),
}
