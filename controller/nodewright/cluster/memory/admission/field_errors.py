"""Field errors as the API server words them (apimachinery's field.Error and the
StatusError of a 422), so a refusal in memory reads like the real server's:

    NodeClaim.karpenter.sh "a" is invalid: spec.requirements[0]: Invalid value: "object": ...
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.api import golang
from nodewright.cluster.api import InvalidError

REQUIRED = "Required value"
INVALID = "Invalid value"
TYPE_INVALID = "Invalid value "  # printed as "Invalid value"; blocks CEL like the server's
NOT_SUPPORTED = "Unsupported value"
DUPLICATE = "Duplicate value"
FORBIDDEN = "Forbidden"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
_BARE = frozenset({REQUIRED, FORBIDDEN, TOO_LONG})
NO_VALUE = object()


@dataclass(frozen=True, slots=True)
class FieldError:
    type: str
    path: str | None
    value: Any = NO_VALUE
    detail: str = ""

    def __str__(self) -> str:
        body = self.type.strip()
        if self.type not in _BARE:
            body = f"{body}: {go_value(self.value)}"
        if self.detail:
            body = f"{body}: {self.detail}"
        return f"{self.path if self.path is not None else '<nil>'}: {body}"


class GoText(str):
    """A bad value printed as it is (what Go's %#v shows for a struct)."""


def go_value(value: Any) -> str:
    """A bad value as Go's error printer shows it: strings quoted, numbers plain."""
    if isinstance(value, GoText):
        return str(value)
    if value is None or value is NO_VALUE:
        return '"null"'  # Go replaces a nil bad value with the string "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return golang.quote(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, detail=detail)


def invalid(path: str | None, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, path, value, detail)


def not_supported(path: str, value: Any, supported: Sequence[Any]) -> FieldError:
    quoted = ", ".join(golang.quote(item) if isinstance(item, str) else go_value(item)
                       for item in supported)
    return FieldError(NOT_SUPPORTED, path, value, f"supported values: {quoted}")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, detail=detail)


def immutable(path: str, value: Any) -> FieldError:
    return invalid(path, value, "field is immutable")


def qualified_kind(kind: str, group: str) -> str:
    """How the server names a kind in errors: Kind, or Kind.group outside the core group."""
    return f"{kind}.{group}" if group else kind


def invalid_error(kind: str, name: str, errors: Sequence[FieldError]) -> InvalidError:
    """The 422 the server answers: one error alone, several in brackets (repeats once)."""
    texts = list(dict.fromkeys(str(error) for error in errors))
    body = texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"
    failure = InvalidError(f"{kind} {golang.quote(name)} is invalid: {body}")
    failure.errors = list(errors)  # type: ignore[attr-defined]
    return failure
