"""API server failures as ClusterAPI's errors, so controllers see the same exceptions
against a real cluster as against the in-memory one."""

from __future__ import annotations

import httpx2
from lightkube import ApiError as LightkubeApiError

from nodewright.cluster.api import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
)


class GoneError(ApiError):
    """410: the resourceVersion a watch asked for is older than the server keeps."""

    status = 410
    reason = "Gone"


def translate(error: LightkubeApiError) -> ApiError:
    status = error.status
    code = int(status.code or 500)
    reason = str(status.reason or "")
    message = str(status.message or error)
    by_code: dict[int, type[ApiError]] = {
        404: NotFoundError,
        410: GoneError,
        422: InvalidError,
        429: TooManyRequestsError,
    }
    if code == 409:
        kind: type[ApiError] = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
    else:
        kind = by_code.get(code, ApiError)
    translated = kind(message)
    if kind is ApiError:  # keep the server's code and reason (403 Forbidden, 500, ...)
        translated.status = code
        translated.reason = reason or "Unknown"
    return translated


def unreachable(error: httpx2.TransportError) -> ApiError:
    translated = ApiError(f"cannot reach the API server: {type(error).__name__}: {error}")
    translated.status = 503
    translated.reason = "ServiceUnavailable"
    return translated
