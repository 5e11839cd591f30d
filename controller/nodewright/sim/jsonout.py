"""`--json`: the run as one JSON document. Keys are sorted, floats rounded and nothing
depends on the wall clock or the machine, so the same scenario and seed give the same
bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nodewright.sim.compare import Comparison
from nodewright.sim.result import RunResult

FORMAT_VERSION = 1


def _document(result: RunResult, comparison: Comparison | None,
              extra: dict[str, Any] | None) -> dict[str, Any]:
    document: dict[str, Any] = {"format": FORMAT_VERSION, **result.to_dict(), **(extra or {})}
    if comparison is not None:
        document["compare"] = comparison.to_dict()
    return document


def write_json(path: Path, result: RunResult, comparison: Comparison | None = None,
               extra: dict[str, Any] | None = None) -> None:
    """The run as JSON, streamed to the file (`extra`: more top-level keys, a snapshot's
    `whatItWouldDo`): a snapshot's run is tens of megabytes of JSON, whose millions of
    pieces need not all be held at once."""
    document = _document(result, comparison, extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as file:
        json.dump(document, file, sort_keys=True, indent=2, ensure_ascii=False)
        file.write("\n")
