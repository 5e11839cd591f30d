"""JSON logs shaped like Karpenter's (pkg/operator/logging, zap's JSON encoder): one object
per line with level (`DEBUG`, `INFO`, `WARN`, `ERROR`), time, logger (`controller`, the
name Karpenter gives its one logger), at debug the caller (`provisioning/provisioner.py:120`,
as zap's short caller) and message, plus the fields a record carries in `extra` (NodeClaim,
NodePool, Node, provider-id, instance-type, ...). Object references are written as Karpenter
writes them, `"NodeClaim": {"name": "default-x7k2p"}`, so log queries written for Karpenter
work.

    log.info("launched nodeclaim", extra={"NodeClaim": name, "provider-id": pid})

As controller-runtime does for Karpenter, the driver gives every record logged during a
reconcile the reconciler's name (`controller`), the request (`namespace`, `name`; both empty
for a singleton's tick), a `reconcileID` of its own and, for controllers of one kind, the
kind (`controllerGroup`, `controllerKind`) and the object reconciled (`NodeClaim`, `Node`,
`NodePool` or `EC2NodeClass`, by the controller's name): `reconciling(controller, key)` sets
them for the current thread and `ReconcileFields`, a filter on the handler that `configure`
installs, adds them to records that do not carry those fields themselves.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import PurePath
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
# Each reconciled kind's API group (controller-runtime's controllerGroup; "" is core).
KIND_GROUPS: Mapping[str, str] = {
    "NodeClaim": "karpenter.sh",
    "Node": "",
    "NodePool": "karpenter.sh",
    "EC2NodeClass": "karpenter.k8s.aws",
}
# Karpenter's one logger: logging.NewLogger(ctx, "controller"); every line, client-go's
# included, carries this name.
LOGGER_NAME = "controller"
# zap's CapitalLevelEncoder names (Python's WARNING is zap's WARN).
LEVEL_NAMES: Mapping[str, str] = {"WARNING": "WARN"}
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
_RECONCILING: ContextVar[Mapping[str, str] | None] = ContextVar("reconciling", default=None)
# A LogRecord's `name` is its logger's: the request's name rides under this attribute and is
# written as `name`.
_REQUEST_NAME = "_reconcile_request_name"


def reconcile_fields(controller: str, key: str) -> dict[str, str]:
    """What controller-runtime logs about a reconcile (pkg/builder/controller.go's
    LogConstructor): the controller; for controllers of one (cluster-scoped) kind its group,
    its kind and the object reconciled; and the request's namespace and name (a singleton's
    tick, key "", has both empty, as operatorpkg's singletons' empty request)."""
    fields = {"controller": controller}
    kind = RECONCILED_KINDS.get(controller.split(".", 1)[0])
    if kind is not None:
        fields["controllerGroup"] = KIND_GROUPS[kind]
        fields["controllerKind"] = kind
        if key:
            fields[kind] = key
        namespace, name = "", key
    else:
        namespace, name = _request(key)
    fields["namespace"] = namespace
    fields["name"] = name
    return fields


def _request(key: str) -> tuple[str, str]:
    """(namespace, name) of a work-queue key: `namespace/name` for a namespaced object,
    `Kind/name` (a namespace is never capitalised) or a bare name for a cluster-scoped
    one."""
    first, separator, rest = key.partition("/")
    if not separator:
        return "", key
    if first[:1].isupper():
        return "", rest
    return first, rest


@contextmanager
def reconciling(controller: str, key: str) -> Iterator[Mapping[str, str]]:
    """Records logged by this thread inside the block carry `reconcile_fields` and a
    `reconcileID` of this reconcile's own (controller-runtime's uuid.NewUUID()); the block
    gets them as a record's `extra` (`name` under the attribute the formatter writes as
    `name`), for a record logged after it about the same reconcile."""
    fields = reconcile_fields(controller, key)
    fields["reconcileID"] = str(uuid.uuid4())
    token = _RECONCILING.set(fields)
    try:
        yield {_REQUEST_NAME if field == "name" else field: value
               for field, value in fields.items()}
    finally:
        _RECONCILING.reset(token)


class ReconcileFields(logging.Filter):
    """Adds the current reconcile's fields to a record (a record's own fields win)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_RECONCILING.get() or {}).items():
            attribute = _REQUEST_NAME if key == "name" else key
            if attribute not in record.__dict__:
                setattr(record, attribute, value)
        return True


class JsonFormatter(logging.Formatter):
    """Karpenter's zap encoder: `caller` only when the level is debug (its DisableCaller is
    LogLevel != "debug")."""

    def __init__(self, *, caller: bool = False) -> None:
        super().__init__()
        self.caller = caller

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "level": LEVEL_NAMES.get(record.levelname, record.levelname),
            "time": _timestamp(record.created),
            "logger": LOGGER_NAME,
        }
        if self.caller:
            path = PurePath(record.pathname)
            entry["caller"] = f"{path.parent.name}/{path.name}:{record.lineno}"
        entry["message"] = record.getMessage()
        for key, value in record.__dict__.items():
            if key == _REQUEST_NAME:
                entry["name"] = value
                continue
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
            "level": "ERROR", "time": _now(), "logger": LOGGER_NAME,
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
                 errors: Sequence[TextIO] = (), *, caller: bool = False) -> logging.Handler:
    """A handler writing JSON lines to `stream` (stdout), with the reconcile fields (and
    the caller when `caller`); its own failures go to `errors` (default: logging's,
    stderr)."""
    handler = _JsonStreamHandler(stream or sys.stdout, errors)
    handler.setFormatter(JsonFormatter(caller=caller))
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
        root.addHandler(json_handler(target, errors, caller=level == "debug"))
    root.setLevel(level.upper())
    # The HTTP client logs every request at INFO; keep that for debug runs only.
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "botocore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING if level != "debug" else logging.DEBUG)
