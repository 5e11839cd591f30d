"""The part of the CEL rules that needs cel-python: parsing (parse trees kept on disk,
the parser built only when a rule is not there), evaluation, and the Kubernetes CEL
library functions cel-python lacks (regex `find`/`findAll`, the strings and lists
extensions). Imported on the first verdict that is not remembered, so a run whose
verdicts are all known does not load cel-python at all."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import itertools
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParser
from celpy.evaluation import CELEvalError


def evaluate(text: str, message: str, value: Any, old: Any = None, *,
             has_old: bool = False) -> str | None:
    """Why the rule fails for `value` (its message, or what went wrong evaluating it), or
    None when it holds."""
    activation = {"self": json_to_cel(value)}
    if has_old:
        activation["oldSelf"] = json_to_cel(old)
    result: Any
    try:
        result = _program(text).evaluate(activation)
    except CELEvalError as error:
        result = error
    if isinstance(result, CELEvalError):
        return f"{_error_text(result)} evaluating rule: {message or text}"
    if isinstance(result, celtypes.BoolType) and bool(result):
        return None
    return message or f"failed rule: {text}"


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


def preload(texts: Iterable[str], folder: Path) -> None:
    """Parse trees for these rules, from the disk cache when it has them all; otherwise
    parsed now and the cache rewritten (best effort: a cache that cannot be read or
    written only costs the parse)."""
    wanted = sorted(set(texts))
    versions = [importlib.metadata.version(name) for name in ("cel-python", "lark")]
    digest = hashlib.sha256("\n".join([*versions, *wanted]).encode()).hexdigest()[:16]
    path = folder / f"cel-rules-{digest}.pickle"
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
