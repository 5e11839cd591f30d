"""API server failures as ClusterAPI's errors, so controllers see the same exceptions
against a real cluster as against the in-memory one."""

from __future__ import annotations

import contextlib

import httpx2
from lightkube import ApiError as LightkubeApiError

from nodewright.cluster.api import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
    UnreachableError,
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


def unreachable(error: httpx2.TransportError) -> UnreachableError:
    where = ""
    with contextlib.suppress(RuntimeError):  # an error raised before a request was built
        where = f" at {error.request.url.scheme}://{error.request.url.netloc.decode()}"
    detail = str(error) or "no answer"
    return UnreachableError(f"cannot reach the API server{where}: {type(error).__name__}: "
                            f"{detail}")


def translate_http(error: httpx2.HTTPStatusError) -> ApiError:
    """An error answer that is not a Kubernetes Status (no JSON body): its HTTP code and the
    start of its body."""
    response = error.response
    try:
        body = " ".join(response.text.split())[:200]
    except httpx2.ResponseNotRead:
        body = ""
    reason = response.reason_phrase or "Unknown"
    translated = ApiError(f"HTTP {response.status_code} {reason} from "
                          f"{response.request.url}" + (f": {body}" if body else ""))
    translated.status = response.status_code
    translated.reason = reason.replace(" ", "")
    return translated
