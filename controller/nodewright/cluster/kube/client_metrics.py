"""client-go's request metrics as a Karpenter process exports them (operatorpkg's
RegisterClientMetrics behind client-go's REST client):

- `client_go_request_total{code,method}`: every attempt sent, by the answer's status code
  (`<error>` when none came back) and the HTTP method;
- `client_go_request_duration_seconds{verb,group,version,kind,subresource}`: each request
  but a watch, from the start of the call (its client-side throttling and Retry-After
  retries included) to the answer.

The duration's labels are read from the path as client-go templates it (finalURLTemplate:
names and namespaces replaced by `{name}` and `{namespace}`) and operatorpkg parses the
template (parsePath); its verb is operatorpkg's: POST is CREATE, a GET or PUT without a
`{name}` is LIST or CREATE, a PUT with one UPDATE, the others the HTTP method. A path that
is not under /api or /apis (discovery of the root, /version, /openapi) is not observed.
"""

from __future__ import annotations

from nodewright import metrics

LATENCY_LABELS = ("verb", "group", "version", "kind", "subresource")


def url_template(path: str) -> str:
    """client-go's finalURLTemplate of a request path: the name and namespace it addresses
    replaced by `{name}` and `{namespace}` (a status or finalize subresource keeps the
    name's place), as client-go does it, quirks included."""
    segments = ("/" + path.lstrip("/")).split("/")
    if len(segments) <= 2:
        return path
    if segments[1] == "api":
        index = 3
    elif segments[1] == "apis":
        index = 4
    else:
        return "/{prefix}"
    tail = len(segments) - index
    if tail == 2:
        segments[index + 1] = "{name}"
    elif tail == 3:
        segments[index + 1] = ("{name}" if segments[index + 2] in ("finalize", "status")
                               else "{namespace}")
    elif tail >= 4:
        segments[index + 1] = "{namespace}"
        if segments[index + 3] not in ("finalize", "status"):
            segments[index + 3] = "{name}"
    return "/" + "/".join(segment for segment in segments if segment)


def latency_labels(method: str, path: str) -> dict[str, str] | None:
    """operatorpkg's labels of a request's latency (None: not observed)."""
    template = url_template(path)
    parts = template.split("/")[1:]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    group_index = 0 if parts[0] == "api" else 1
    if len(parts) < group_index + 3:
        return None
    version_index = group_index + 1
    if parts[group_index + 2] == "namespaces" and len(parts) > group_index + 4:
        kind_index = version_index + 3
    else:
        kind_index = version_index + 1
    subresource = parts[kind_index + 2] if len(parts) == kind_index + 3 else ""
    named = "{name}" in template
    verb = {"POST": "CREATE", "GET": method if named else "LIST",
            "PUT": "UPDATE" if named else "CREATE"}.get(method, method)
    return {"verb": verb, "group": "" if group_index == 0 else parts[group_index],
            "version": parts[version_index], "kind": parts[kind_index],
            "subresource": subresource}


def attempted(method: str, code: int | None) -> None:
    """One attempt sent; `code` None when no answer came back."""
    metrics.CLIENT_GO_REQUESTS.labels(code="<error>" if code is None else str(code),
                                      method=method).inc()


def requested(method: str, path: str, seconds: float) -> None:
    """One request (not a watch) done after `seconds`, whatever came of it."""
    labels = latency_labels(method, path)
    if labels is not None:
        metrics.CLIENT_GO_REQUEST_DURATION.labels(**labels).observe(seconds)
