"""JSON merge patch (RFC 7386): null removes a key, objects merge, anything else replaces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cluster.memory.copying import deep_copy


def merge_patch(target: Any, patch: Any) -> Any:
    """The result of applying `patch` to `target`; neither argument is modified."""
    if not isinstance(patch, Mapping):
        return deep_copy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
