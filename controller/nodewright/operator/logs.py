"""JSON logs shaped like Karpenter's: one object per line with level, time, logger and
message, plus the fields a record carries in `extra` (controller, NodeClaim, NodePool,
Node, provider-id, ...). Object references are written as Karpenter writes them,
`"NodeClaim": {"name": "default-x7k2p"}`, so log queries written for Karpenter work.

    log.info("launched nodeclaim", extra={"NodeClaim": name, "provider-id": pid})
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

# Fields written as {"name": value} (Karpenter logs Kubernetes objects that way).
OBJECT_FIELDS = ("NodeClaim", "NodePool", "Node", "Pod", "EC2NodeClass", "Lease")
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "level": record.levelname,
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
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


def configure(level: str, stream: TextIO | None = None) -> None:
    """Send every log record to `stream` (stdout) as JSON at `level` (debug, info, ...)."""
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The HTTP client logs every request at INFO; keep that for debug runs only.
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "botocore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING if level != "debug" else logging.DEBUG)
