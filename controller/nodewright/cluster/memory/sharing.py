"""One copy of each identical part of the stored objects (hash-consing on write).

Ten thousand replicas of a pod carry the same containers, tolerations, affinity and
labels; most NodeClaims repeat another's list of instance types; pods started at the same
instant carry equal conditions. Stored versions are read-only (tests/support/read_only.py
checks it), so equal parts can be one object. `SubtreeSharing.share` is applied to each
new version before it is stored: every dict and list two or more levels below the
object's root (the root's own fields, `metadata`, `spec`, `status`, stay the object's) is
replaced by the one canonical container equal to it, built bottom-up so that a canonical
container's children are canonical too.

Nothing already stored is modified: a container whose children change is rebuilt as a
new container, and only the new version's root (which the writer hands over) is written
into. Equality is exact JSON equality: `1`, `1.0` and `true` are never merged.

The table keeps its canonical containers alive, so it is swept when it has doubled since
the last sweep: a container no stored version refers to any more is dropped (CPython's
reference counts tell, `sys.getrefcount`).
"""

from __future__ import annotations

import sys
from typing import Any

# Below this many canonical containers the table is never swept.
_MIN_SWEEP = 4096
# References to a canonical container held by the table itself (by key and by id) plus
# getrefcount's argument and the sweep loop's variable.
_TABLE_REFERENCES = 4

Key = tuple[Any, ...]


class SubtreeSharing:
    def __init__(self) -> None:
        self._by_key: dict[Key, Any] = {}
        self._keys: dict[int, tuple[Any, Key]] = {}
        self._next_sweep = _MIN_SWEEP

    def __len__(self) -> int:
        return len(self._keys)

    def share(self, obj: dict[str, Any]) -> None:
        """Replace `obj`'s parts below its top-level fields by canonical equal ones, in
        place (`obj` itself must be the caller's own new dict; nothing it shares with
        other objects is modified)."""
        for field, value in obj.items():
            kind = type(value)
            if kind is dict or kind is list:
                shared = self._share_children(value)
                if shared is not value:
                    obj[field] = shared
        if len(self._keys) >= self._next_sweep:
            self.sweep()

    def sweep(self) -> int:
        """Forget canonical containers nothing else refers to; returns how many."""
        removed = 0
        while True:
            dead = [
                ident for ident, (value, _) in self._keys.items()
                if sys.getrefcount(value) <= _TABLE_REFERENCES
            ]
            if not dead:
                break
            for ident in dead:
                _, key = self._keys.pop(ident)
                del self._by_key[key]
            removed += len(dead)
        self._next_sweep = max(_MIN_SWEEP, 2 * len(self._keys))
        return removed

    def _share_children(self, container: Any) -> Any:
        """`container` with canonical children (a new container if any child changes;
        `container` itself is not made canonical)."""
        if type(container) is dict:
            changed: dict[str, Any] | None = None
            for key, value in container.items():
                kind = type(value)
                if kind is dict or kind is list:
                    shared = self._canonical(value)
                    if shared is not value:
                        if changed is None:
                            changed = dict(container)
                        changed[key] = shared
            return container if changed is None else changed
        replaced: list[Any] | None = None
        for index, value in enumerate(container):
            kind = type(value)
            if kind is dict or kind is list:
                shared = self._canonical(value)
                if shared is not value:
                    if replaced is None:
                        replaced = list(container)
                    replaced[index] = shared
        return container if replaced is None else replaced

    def _canonical(self, value: Any) -> Any:
        entry = self._keys.get(id(value))
        if entry is not None and entry[0] is value:
            return value
        value = self._share_children(value)
        key = _key(value)
        found = self._by_key.get(key)
        if found is not None:
            return found
        self._by_key[key] = value
        self._keys[id(value)] = (value, key)
        return value


def _key(container: Any) -> Key:
    """A hashable key equal for equal containers whose children are canonical: children
    by identity, strings as themselves, other scalars with their type (so that 1, 1.0
    and True differ)."""
    if type(container) is dict:
        parts: list[Any] = [dict]
        for name, value in container.items():
            parts.append(name)
            parts.append(_part(value))
        return tuple(parts)
    return (list, *[_part(value) for value in container])


def _part(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return value
    if kind is dict or kind is list:
        return id(value)  # canonical, kept alive by the table while the key exists
    if kind is float:
        return (float, value.hex())  # 0.0 == -0.0, but they are different JSON
    return (kind, value)
