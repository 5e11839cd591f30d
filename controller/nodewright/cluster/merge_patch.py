"""JSON merge patch (RFC 7386): null removes a key, objects merge, anything else (lists
included) replaces. The one implementation, both ways: `apply_merge_patch` is what an API
server does with a patch (the in-memory one, and the tests' HTTP one), `merge_patch_between`
is what a controller sends to turn what it read into what it wants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cluster.copying import deep_copy

_ABSENT = object()


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """The result of applying `patch` to `target`; neither argument is modified."""
    if not isinstance(patch, Mapping):
        return deep_copy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def merge_patch_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The patch that turns `before` into `after` (lists are replaced whole): only what
    differs, nested objects patched key by key."""
    patch: dict[str, Any] = {}
    for key in before.keys() - after.keys():
        patch[key] = None
    for key, value in after.items():
        old = before.get(key, _ABSENT)
        if old == value:
            continue
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            patch[key] = merge_patch_between(old, value)
        else:
            patch[key] = value
    return patch
