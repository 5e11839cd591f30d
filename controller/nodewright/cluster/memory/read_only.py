"""A check, for tests, that nobody modifies the API server's stored objects in place.

The in-memory API server hands its stored versions to the in-process actors (`peek`) and
to every watcher (watch events carry them), instead of a copy per reader. That is only
sound while everyone treats them as read-only. With a `ReadOnlyGuard` installed
(`cluster.read_only_guard = ReadOnlyGuard()`), the server fingerprints each version it
stores and, when the version is replaced or deleted, checks that it still has that
fingerprint: a reader that wrote into it fails the write that follows, naming the object.
"""

from __future__ import annotations

import json
from typing import Any

from nodewright.cluster.api import Object

StoreKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name


class SharedObjectModifiedError(AssertionError):
    """A stored object was changed in place by someone holding it."""


def fingerprint(obj: Object) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


class ReadOnlyGuard:
    def __init__(self) -> None:
        self._stored: dict[StoreKey, tuple[Object, str]] = {}
        self.checked = 0

    def replace(self, kind: str, scope: str, current: Object | None, new: Object | None) -> None:
        """`current` (the stored version, if any) is about to give way to `new` (None when
        the object goes away)."""
        if current is not None:
            key = (kind, scope, str(current["metadata"]["name"]))
            self.verify(key, current)
        if new is not None:
            key = (kind, scope, str(new["metadata"]["name"]))
            self._stored[key] = (new, fingerprint(new))
        elif current is not None:
            self._stored.pop((kind, scope, str(current["metadata"]["name"])), None)

    def verify(self, key: StoreKey, current: Any) -> None:
        entry = self._stored.get(key)
        if entry is None or entry[0] is not current:
            return
        self.checked += 1
        now = fingerprint(current)
        if now != entry[1]:
            kind, scope, name = key
            where = f"{scope}/{name}" if scope else name
            raise SharedObjectModifiedError(
                f"{kind} {where} (resourceVersion "
                f"{current['metadata'].get('resourceVersion')}) was modified in place by a "
                f"reader: stored objects and watch event objects are read-only\n"
                f"stored: {entry[1]}\nnow:    {now}"
            )

    def verify_all(self, store: dict[str, dict[str, dict[str, Object]]]) -> None:
        """Check every object still stored."""
        for kind, scopes in store.items():
            for scope, items in scopes.items():
                for name, obj in items.items():
                    self.verify((kind, scope, name), obj)
