"""The API server's own checks of the built-in kinds controllers write (beyond
ObjectMeta), with its field paths: events.k8s.io/v1 Events are checked as the core
Events they are stored as (so `note` is reported as `message`), Leases, Nodes (taints,
providerID) and Pod status writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.api import golang
from nodewright.cluster.memory.admission import names
from nodewright.cluster.memory.admission.field_errors import (
    DUPLICATE,
    FieldError,
    GoText,
    forbidden,
    immutable,
    invalid,
    not_supported,
    required,
)

EVENT_TYPES = ("Normal", "Warning")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
_EVENT_NAMESPACES_WITHOUT_REGARDING = ("default", "kube-system")
# events.k8s.io/v1 fields that may not change, by the core name the server reports.
_EVENT_IMMUTABLE = (
    ("regarding", "involvedObject"),
    ("reason", "reason"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingController"),
    ("reportingInstance", "reportingInstance"),
)


def validate(kind: str, new: Mapping[str, Any], old: Mapping[str, Any] | None,
             subresource: str | None) -> list[FieldError]:
    if kind == "Event":
        return _event(new, old)
    if kind == "Lease":
        return _lease(new)
    if kind == "Node":
        return _node(new, old)
    if kind == "Pod" and old is not None and subresource == "status":
        return _pod_status(new, old)
    return []


# -- Event -------------------------------------------------------------------------------


def _event(event: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    errors = _legacy_event(event)
    series = event.get("series")
    if old is None or series != old.get("series"):
        errors.extend(_event_series(series))
    if old is None:
        if not event.get("eventTime"):
            errors.append(required("eventTime"))
        event_type = event.get("type") or ""
        if event_type not in EVENT_TYPES:
            errors.append(invalid("type", "", f"has invalid value: {event_type}"))
        for field, path in (("deprecatedFirstTimestamp", "firstTimestamp"),
                            ("deprecatedLastTimestamp", "lastTimestamp"),
                            ("deprecatedCount", "count"), ("deprecatedSource", "source")):
            if event.get(field):
                errors.append(invalid(path, "", "needs to be unset"))
        return errors
    for field, path in _EVENT_IMMUTABLE:
        if event.get(field) != old.get(field):
            errors.append(immutable(path, event.get(field)))
    return errors


def _legacy_event(event: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    namespace = str((event.get("metadata") or {}).get("namespace") or "")
    regarding = event.get("regarding") or {}
    regarding_namespace = str(regarding.get("namespace") or "") if isinstance(
        regarding, Mapping) else ""
    if not event.get("eventTime"):
        if (regarding_namespace and namespace != regarding_namespace) or (
                not regarding_namespace and namespace not in ("", "default")):
            errors.append(invalid("involvedObject.namespace", regarding_namespace,
                                  "does not match event.namespace"))
        return errors
    if not regarding_namespace and namespace not in _EVENT_NAMESPACES_WITHOUT_REGARDING:
        errors.append(invalid("involvedObject.namespace", regarding_namespace,
                              "does not match event.namespace"))
    controller = str(event.get("reportingController") or "")
    if not controller:
        errors.append(required("reportingController"))
    for problem in names.qualified_name(controller):
        errors.append(invalid("reportingController", controller, problem))
    for field, path, limit in (("reportingInstance", "reportingInstance",
                                REPORTING_INSTANCE_LIMIT),
                               ("action", "action", ACTION_LIMIT),
                               ("reason", "reason", REASON_LIMIT)):
        text = str(event.get(field) or "")
        if not text:
            errors.append(required(path))
        if len(text) > limit:
            errors.append(invalid(path, "", f"can have at most {limit} characters"))
    if len(str(event.get("note") or "")) > NOTE_LIMIT:
        errors.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return errors


def _event_series(series: Any) -> list[FieldError]:
    if not isinstance(series, Mapping):
        return []
    errors = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        errors.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errors.append(required("series.lastObservedTime"))
    return errors


# -- Lease -------------------------------------------------------------------------------


def _lease(lease: Mapping[str, Any]) -> list[FieldError]:
    spec = lease.get("spec") or {}
    errors = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errors.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errors.append(invalid("spec.leaseTransitions", transitions,
                              "must be greater than or equal to 0"))
    return errors


# -- Node --------------------------------------------------------------------------------


def _node(node: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    spec = node.get("spec") or {}
    errors = _taints(spec.get("taints") or [])
    if old is not None:
        before = str((old.get("spec") or {}).get("providerID") or "")
        if before and before != str(spec.get("providerID") or ""):
            errors.append(forbidden("spec.providerID", (
                'node updates may not change providerID except from "" to valid')))
    return errors


def _taints(taints: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    # The server reports a Node's taints under metadata.taints.
    for index, taint in enumerate(taints):
        here = f"metadata.taints[{index}]"
        if not isinstance(taint, Mapping):
            errors.append(invalid(here, taint, "must be an object"))
            continue
        key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
        effect = str(taint.get("effect") or "")
        for problem in names.qualified_name(key):
            errors.append(invalid(f"{here}.key", key, problem))
        problems = names.label_value(value)
        if problems:
            errors.append(invalid(f"{here}.value", value, ";".join(problems)))
        if not effect:
            errors.append(required(f"{here}.effect"))
        elif effect not in TAINT_EFFECTS:
            errors.append(not_supported(f"{here}.effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            added = taint.get("timeAdded")
            shown = GoText(
                f"core.Taint{{Key:{golang.quote(key)}, Value:{golang.quote(value)}, "
                f"Effect:{golang.quote(effect)}, "
                f"TimeAdded:{added if added else '<nil>'}}}")
            errors.append(FieldError(DUPLICATE, here, shown,
                                     "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return errors


# -- Pod status --------------------------------------------------------------------------

_SYSTEM_POD_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized"})


def _pod_status(pod: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    status = pod.get("status") or {}
    errors: list[FieldError] = []
    for index, condition in enumerate(status.get("conditions") or []):
        kind = str(condition.get("type") or "") if isinstance(condition, Mapping) else ""
        if kind in _SYSTEM_POD_CONDITIONS:
            continue
        for problem in names.qualified_name(kind):
            errors.append(invalid(f"metadata.conditions[{index}].Type", kind, problem))
    nominated = str(status.get("nominatedNodeName") or "")
    if nominated and nominated != str((old.get("status") or {}).get("nominatedNodeName") or ""):
        for problem in names.dns1123_subdomain(nominated):
            errors.append(invalid("status.nominatedNodeName", nominated, problem))
    return errors
