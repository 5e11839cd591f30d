"""`--json`: the run as one JSON document. Keys are sorted, floats rounded and nothing
depends on the wall clock or the machine, so the same scenario and seed give the same
bytes."""

from __future__ import annotations

import json
from typing import Any

from nodewright.sim.compare import Comparison
from nodewright.sim.result import RunResult

FORMAT_VERSION = 1


def render_json(result: RunResult, comparison: Comparison | None = None,
                extra: dict[str, Any] | None = None) -> str:
    """`extra`: more top-level keys (a snapshot's `whatItWouldDo`)."""
    document: dict[str, Any] = {"format": FORMAT_VERSION, **result.to_dict(), **(extra or {})}
    if comparison is not None:
        document["compare"] = comparison.to_dict()
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
