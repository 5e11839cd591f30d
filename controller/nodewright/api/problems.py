"""A problem found in a manifest, reported as `FILE:LINE: Kind/name: path: message`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]
FieldPath = tuple[str | int, ...]


def format_path(path: FieldPath) -> str:
    """spec.template.spec.requirements[0].key; map keys with dots or slashes in brackets."""
    text = ""
    for part in path:
        if isinstance(part, int) or "." in part or "/" in part or not part:
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    kind: str
    name: str
    path: str
    message: str
    severity: Severity = "error"
    column: int | None = None

    def format(self) -> str:
        location = f"{self.file}:{self.line}"
        if self.column is not None:
            location += f":{self.column}"
        subject = f"{self.kind}/{self.name}" if self.kind else "(document)"
        where = f" {self.path}:" if self.path else ""
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{location}: {subject}:{where} {prefix}{self.message}"

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }
