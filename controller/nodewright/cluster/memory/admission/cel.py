"""`x-kubernetes-validations` rules: each evaluated as the API server evaluates it (with
cel-python, see `celpy_runtime`), never skipped, and its verdicts remembered.

cel-python interprets its parse tree, about a millisecond a rule, and loading it costs a
tenth of a second; the same values come back again and again (every NodeClaim carries
the same requirements, every run of a scenario writes the same NodePools). So verdicts
are remembered by value: per schema node, and per rule by the fields of `self` it reads,
and they are kept on disk (`cache_folder`) between runs; cel-python is loaded on the
first verdict that is not known. A verdict depends only on the rule's text and message
(two rules may share a text, `self.size() != 0`, and say different things), the value and
the evaluator, whose versions name the cache file.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.metadata
import os
import pickle
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

MEMO_LIMIT = 8192
Frozen = Any
Verdicts = dict[Frozen, "str | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    message: str
    transition: bool  # refers to oldSelf: evaluated on updates only
    # The fields of `self` the rule reads, when it reads nothing else of it (its verdict
    # depends on those alone); None when it uses `self` as a whole.
    fields: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class Verdict:
    """One rule that did not pass: its message, or what went wrong evaluating it."""

    detail: str


_SELF = re.compile(r"\bself\b(\.([A-Za-z_][A-Za-z0-9_]*))?(\s*\()?")


def fields_read(text: str) -> tuple[str, ...] | None:
    fields: set[str] = set()
    for found in _SELF.finditer(text):
        if found.group(2) is None or found.group(3):  # bare `self`, or a method of it
            return None
        fields.add(found.group(2))
    return tuple(sorted(fields))


class RuleSet:
    """The rules of one schema node; `check` gives the failures."""

    def __init__(self, rules: Sequence[Mapping[str, Any]]) -> None:
        self.rules = [Rule(str(r["rule"]), str(r.get("message") or ""),
                           "oldSelf" in str(r["rule"]), fields_read(str(r["rule"])))
                      for r in rules]
        self._memo: dict[Frozen, list[Verdict]] = {}
        # Verdicts on a part a write left as it was stored, by the part's identity.
        self._unchanged: dict[int, tuple[Any, list[Verdict]]] = {}
        self._rule_memos = [_VERDICTS.memo(rule.text, rule.message) for rule in self.rules]
        self.has_transition = any(rule.transition for rule in self.rules)

    def check(self, value: Any, old: Any = None, *, has_old: bool = False) -> list[Verdict]:
        if self.has_transition:
            if has_old and value is old:
                return self._check_unchanged(value)
            return self._check_pair(value, old, has_old)
        key = freeze(value)
        found = self._memo.get(key)
        if found is None:
            found = self._check_rules(value)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _check_unchanged(self, value: Any) -> list[Verdict]:
        """The verdicts on a part whose new value is the stored one itself (a merge patch
        of the status keeps the stored spec object): remembered by the object's identity,
        which spares freezing it on every write. Safe because stored versions are never
        modified (tests/support/read_only.py checks it), and each entry holds its object,
        so its id cannot be reused by another while the entry is kept."""
        known = self._unchanged.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        verdicts = self._check_pair(value, value, True)
        if len(self._unchanged) >= MEMO_LIMIT:
            self._unchanged.clear()
        self._unchanged[id(value)] = (value, verdicts)
        return verdicts

    def _check_pair(self, value: Any, old: Any, has_old: bool) -> list[Verdict]:
        # A transition rule's verdict depends on `self` and `oldSelf` alone (CEL has no
        # clock, no randomness), so the verdicts are remembered by both: a status update
        # of a NodeClaim sends the same immutable spec again and again.
        pair = (freeze(value), freeze(old) if has_old else None)
        known = self._memo.get(pair)
        if known is None:
            known = self._check_transition(value, old, has_old)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[pair] = known
        return known

    def _check_transition(self, value: Any, old: Any, has_old: bool) -> list[Verdict]:
        runtime = _runtime()
        failures = []
        for rule in self.rules:
            if rule.transition and not has_old:
                continue
            detail = runtime.evaluate(rule.text, rule.message, value, old, has_old=has_old)
            if detail is not None:
                failures.append(Verdict(detail))
        return failures

    def _check_rules(self, value: Any) -> list[Verdict]:
        failures = []
        for rule, memo in zip(self.rules, self._rule_memos, strict=True):
            subject = value
            if rule.fields is not None and isinstance(value, dict):
                subject = {name: value[name] for name in rule.fields if name in value}
            key = freeze(subject)
            if key in memo:
                detail = memo[key]
            else:
                detail = _runtime().evaluate(rule.text, rule.message, subject)
                _VERDICTS.remember(memo, key, detail)
            if detail is not None:
                failures.append(Verdict(detail))
        return failures


def freeze(value: Any) -> Frozen:
    """A hashable stand-in for a JSON value (type-tagged so 1 and True differ)."""
    kind = type(value)
    if kind is dict:
        return (dict, tuple(sorted([(key, freeze(item)) for key, item in value.items()])))
    if kind is list:
        return (list, tuple([freeze(item) for item in value]))
    return (kind, value)


def cache_folder() -> Path:
    configured = os.environ.get("NODEWRIGHT_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodewright"


_rule_texts: set[str] = set()


def preload(texts: Iterable[str]) -> None:
    """The rules about to be checked (their parse trees are loaded with cel-python)."""
    _rule_texts.update(texts)


def _runtime() -> ModuleType:
    from nodewright.cluster.memory.admission import celpy_runtime

    if _rule_texts:
        celpy_runtime.preload(_rule_texts, cache_folder())
        _rule_texts.clear()
    return celpy_runtime


# Names the layout of the verdict file (files of another layout are not read).
_VERDICTS_FORMAT = "by (rule text, message)"


class _VerdictCache:
    """Verdicts by rule text and message, read from disk on first use and written back at
    exit when new ones were found (best effort: an unreadable or unwritable cache costs only
    the evaluations)."""

    def __init__(self) -> None:
        self._by_rule: dict[tuple[str, str], Verdicts] | None = None
        self._dirty = False

    def _path(self) -> Path:
        source = Path(__file__).with_name("celpy_runtime.py")
        versions = [importlib.metadata.version(name) for name in ("cel-python", "lark")]
        versions.append(_VERDICTS_FORMAT)
        with contextlib.suppress(OSError):
            versions.append(hashlib.sha256(source.read_bytes()).hexdigest())
        digest = hashlib.sha256("\n".join(versions).encode()).hexdigest()[:16]
        return cache_folder() / f"cel-verdicts-{digest}.pickle"

    def memo(self, text: str, message: str) -> Verdicts:
        if self._by_rule is None:
            self._by_rule = {}
            with contextlib.suppress(Exception):
                loaded = pickle.loads(self._path().read_bytes())
                if isinstance(loaded, dict):
                    self._by_rule = loaded
        return self._by_rule.setdefault((text, message), {})

    def remember(self, memo: Verdicts, key: Frozen, detail: str | None) -> None:
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = detail
        if not self._dirty:
            self._dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        if not self._dirty or self._by_rule is None:
            return
        self._dirty = False
        path = self._path()
        with contextlib.suppress(OSError, pickle.PicklingError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as out:
                out.write(pickle.dumps(self._by_rule))
            os.replace(out.name, path)


_VERDICTS = _VerdictCache()
