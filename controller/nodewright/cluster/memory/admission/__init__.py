"""What the API server refuses, refused in memory too: every write to the in-memory
cluster passes `admit`, which checks ObjectMeta on every kind, the custom resources
against the project's CRDs (structural schema, pruning, defaults, CEL rules) and the
built-in kinds controllers write (Events, Leases, Nodes, Pod status), and raises the
API server's 422 with its message when anything is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cluster.api import Kind
from nodewright.cluster.memory.admission import core, crd, metadata
from nodewright.cluster.memory.admission.field_errors import (
    FieldError,
    invalid_error,
    qualified_kind,
)
from nodewright.cluster.memory.admission.versions import NEWEST, KubernetesVersion

_META_FIELDS = ("generateName", "labels", "annotations", "finalizers", "ownerReferences")
# Kinds the server stores as another group's: events.k8s.io Events are core Events.
_STORED_GROUP = {"Event": ""}


def admit(info: Kind, new: dict[str, Any], old: Mapping[str, Any] | None = None,
          subresource: str | None = None, version: KubernetesVersion = NEWEST,
          ) -> dict[str, Any]:
    """`new` as the API server of `version` would store it (a custom resource pruned and
    defaulted; the same dict when nothing changed), or InvalidError."""
    errors: list[FieldError] = []
    meta = new.get("metadata") or {}
    old_meta = old.get("metadata") or {} if old is not None else None
    if old_meta is None or any(meta.get(f) != old_meta.get(f) for f in _META_FIELDS):
        errors.extend(metadata.validate(info, meta))
    if crd.is_custom(info.kind):
        new, schema_errors = crd.admit(info.kind, new, old, version)
        errors.extend(schema_errors)
    else:
        errors.extend(core.validate(info.kind, new, old, subresource))
    if errors:
        group = _STORED_GROUP.get(info.kind, info.group)
        raise invalid_error(qualified_kind(info.kind, group), str(meta.get("name") or ""),
                            errors)
    return new
