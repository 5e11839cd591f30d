"""Reading a hand-written YAML mapping field by field, collecting every mistake.

Each accessor returns the value when it is right and None when it is not, after
recording a problem at the line of the field (`FILE:LINE: path: message`), so the
caller keeps going and the user sees all mistakes of a file in one run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

from nodewright.api.formats import DURATION_EXAMPLES as EXAMPLES
from nodewright.api.formats import parse_duration
from nodewright.api.manifests import Document
from nodewright.api.problems import FieldPath, Problem, format_path


def describe(value: object) -> str:
    """How a YAML value reads to its author: 'a list', 'the string 'x'', 'nothing'."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, datetime | date):
        return f"the timestamp {value.isoformat()}"
    return type(value).__name__


def unknown_key_message(key: str, allowed: Sequence[str], what: str) -> str:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r} in {what} ({hint}known keys: {', '.join(allowed)})"


def format_problem(problem: Problem) -> str:
    """A manifest problem as `nodewright validate` prints it; a scenario problem as
    `FILE:LINE: path: message`."""
    if problem.kind:
        return problem.format()
    location = f"{problem.file}:{problem.line}"
    if problem.column is not None:
        location += f":{problem.column}"
    prefix = "warning: " if problem.severity == "warning" else ""
    where = f" {problem.path}:" if problem.path else ""
    return f"{location}:{where} {prefix}{problem.message}{step_number(problem.path)}"


def step_number(path: str) -> str:
    """` (step N)` for a problem inside `steps[N-1]`: the timeline counts steps from 1,
    field paths index them from 0."""
    match = _STEP_INDEX.match(path)
    return f" (step {int(match[1]) + 1})" if match else ""


_STEP_INDEX = re.compile(r"^steps\[(\d+)\]")


class FieldReader:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.problems: list[Problem] = []

    def error(self, path: FieldPath, message: str, *, warning: bool = False) -> None:
        self.problems.append(Problem(
            self.document.path, self.document.line_of(path), "", "", format_path(path),
            message, "warning" if warning else "error",
        ))

    def has_errors(self) -> bool:
        return any(problem.severity == "error" for problem in self.problems)

    def mapping(
        self,
        value: object,
        path: FieldPath,
        what: str,
        allowed: Sequence[str],
        required: Sequence[str] = (),
    ) -> dict[str, Any] | None:
        """A mapping with only `allowed` keys and every `required` key."""
        if not isinstance(value, dict):
            self.error(path, f"{what} must be a mapping, got {describe(value)}")
            return None
        for key in value:
            if not isinstance(key, str):
                self.error((*path, str(key)), f"keys of {what} are names, got {describe(key)}")
            elif key not in allowed:
                self.error((*path, key), unknown_key_message(key, allowed, what))
        for key in required:
            if key not in value:
                self.error(path, f"{what} needs {key!r}")
        return value

    def string(
        self, value: object, path: FieldPath, what: str, choices: Sequence[str] | None = None
    ) -> str | None:
        if not isinstance(value, str) or not value:
            self.error(path, f"{what} must be a non-empty string, got {describe(value)}")
            return None
        if choices is not None and value not in choices:
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.error(path, f"{what} {value!r} is not one of: {', '.join(choices)}{hint}")
            return None
        return value

    def integer(self, value: object, path: FieldPath, what: str, minimum: int = 0) -> int | None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(path, f"{what} must be a whole number, got {describe(value)}")
            return None
        if value < minimum:
            bound = "negative" if minimum == 0 else f"less than {minimum}"
            self.error(path, f"{what} must not be {bound}, got {value}")
            return None
        return value

    def number(self, value: object, path: FieldPath, what: str) -> float | None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.error(path, f"{what} must be a number, got {describe(value)}")
            return None
        if value < 0:
            self.error(path, f"{what} must not be negative, got {value}")
            return None
        return float(value)

    def duration(self, value: object, path: FieldPath, what: str) -> float | None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.error(path, f"{what} needs a unit: write {value}s or {value}m ({EXAMPLES})")
            return None
        if not isinstance(value, str):
            self.error(path, f"{what} must be a duration such as {EXAMPLES}, got "
                             f"{describe(value)}")
            return None
        try:
            return parse_duration(value.strip())
        except ValueError as error:
            self.error(path, f"{what}: {error}")
            return None

    def list_of(self, value: object, path: FieldPath, what: str) -> list[Any] | None:
        if not isinstance(value, list):
            self.error(path, f"{what} must be a list, got {describe(value)}")
            return None
        return value

    def counts(
        self,
        value: object,
        path: FieldPath,
        what: str,
        check_key: Callable[[str], str | None],
    ) -> dict[str, int] | None:
        """A mapping of names to counts; `check_key` says what is wrong with a name."""
        if not isinstance(value, dict):
            self.error(path, f"{what} must be a mapping of names to counts, got "
                             f"{describe(value)}")
            return None
        result: dict[str, int] = {}
        good = True
        for key, count in value.items():
            name = str(key)
            problem = check_key(name)
            if problem is not None:
                self.error((*path, name), problem)
                good = False
            number = self.integer(count, (*path, name), f"the count for {name!r}")
            if number is None:
                good = False
            else:
                result[name] = number
        return result if good else None
