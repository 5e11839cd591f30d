"""JSON logs shaped like Karpenter's: one object per line with level, time, logger and
message, plus the fields a record carries in `extra` (NodeClaim, NodePool, Node,
provider-id, instance-type, ...). Object references are written as Karpenter writes them,
`"NodeClaim": {"name": "default-x7k2p"}`, so log queries written for Karpenter work.

    log.info("launched nodeclaim", extra={"NodeClaim": name, "provider-id": pid})

As controller-runtime does for Karpenter, the driver gives every record logged during a
reconcile the reconciler's name (`controller`) and the object reconciled (`NodeClaim`,
`Node`, `NodePool` or `EC2NodeClass`, by the controller's name): `reconciling(controller,
key)` sets them for the current thread and `ReconcileFields`, a filter on the handler that
`configure` installs, adds them to records that do not carry those fields themselves.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

# Fields written as {"name": value} (Karpenter logs Kubernetes objects that way).
OBJECT_FIELDS = ("NodeClaim", "NodePool", "Node", "Pod", "EC2NodeClass", "Lease")
# The kind a controller reconciles, by the first part of its name ("nodeclaim.lifecycle").
RECONCILED_KINDS: Mapping[str, str] = {
    "nodeclaim": "NodeClaim",
    "node": "Node",
    "nodepool": "NodePool",
    "nodeclass": "EC2NodeClass",
}
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
_RECONCILING: ContextVar[Mapping[str, str] | None] = ContextVar("reconciling", default=None)


def reconcile_fields(controller: str, key: str) -> dict[str, str]:
    """What controller-runtime logs about a reconcile: the controller, and for controllers
    of one (cluster-scoped) kind the object reconciled."""
    fields = {"controller": controller}
    kind = RECONCILED_KINDS.get(controller.split(".", 1)[0])
    if kind is not None and key:
        fields[kind] = key
    return fields


@contextmanager
def reconciling(controller: str, key: str) -> Iterator[None]:
    """Records logged by this thread inside the block carry `reconcile_fields`."""
    token = _RECONCILING.set(reconcile_fields(controller, key))
    try:
        yield
    finally:
        _RECONCILING.reset(token)


class ReconcileFields(logging.Filter):
    """Adds the current reconcile's fields to a record (a record's own fields win)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_RECONCILING.get() or {}).items():
            if key not in record.__dict__:
                setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "level": record.levelname,
            "time": _timestamp(record.created),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key.startswith("_"):
                continue
            if key in OBJECT_FIELDS and isinstance(value, str):
                value = {"name": value}
            entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class _JsonStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Reports its own failures (a record it cannot format or write) to `errors`, as zap
    reports them to its ErrorOutputPaths; logging's default is sys.stderr."""

    def __init__(self, stream: TextIO, errors: Sequence[TextIO] = ()) -> None:
        super().__init__(stream)
        self.errors = tuple(errors)

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.errors:
            super().handleError(record)
            return
        problem = sys.exc_info()[1]
        line = json.dumps({
            "level": "ERROR", "time": _now(), "logger": "nodewright.logging",
            "message": "could not write a log record",
            "error": f"{type(problem).__name__}: {problem}",
            "record": {"logger": record.name, "message": str(record.msg)},
        }, default=str)
        for stream in self.errors:
            try:
                stream.write(line + "\n")
                stream.flush()
            except Exception:  # nowhere left to say it
                pass


def _timestamp(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def _now() -> str:
    return _timestamp(datetime.now(UTC).timestamp())


def json_handler(stream: TextIO | None = None,
                 errors: Sequence[TextIO] = ()) -> logging.Handler:
    """A handler writing JSON lines to `stream` (stdout), with the reconcile fields; its
    own failures go to `errors` (default: logging's, stderr)."""
    handler = _JsonStreamHandler(stream or sys.stdout, errors)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ReconcileFields())
    return handler


def open_paths(paths: Sequence[str]) -> list[TextIO]:
    """zap's output paths: `stdout`, `stderr`, or files opened for appending. Raises
    OSError naming the file that cannot be opened."""
    streams: list[TextIO] = []
    for path in paths:
        if path == "stdout":
            streams.append(sys.stdout)
        elif path == "stderr":
            streams.append(sys.stderr)
        else:
            streams.append(open(path, "a", encoding="utf-8", buffering=1))  # noqa: SIM115
    return streams


def configure(level: str, stream: TextIO | None = None, *,
              outputs: Sequence[str] = ("stdout",),
              error_outputs: Sequence[str] = ("stderr",)) -> None:
    """Send every log record as JSON at `level` (debug, info, ...) to `stream`, else to
    each of `outputs` (LOG_OUTPUT_PATHS); the handlers' own failures go to
    `error_outputs` (LOG_ERROR_OUTPUT_PATHS). Raises OSError for a file that cannot be
    opened."""
    errors = open_paths(error_outputs)
    streams = [stream] if stream is not None else open_paths(outputs)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    for target in streams:
        root.addHandler(json_handler(target, errors))
    root.setLevel(level.upper())
    # The HTTP client logs every request at INFO; keep that for debug runs only.
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "botocore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING if level != "debug" else logging.DEBUG)
