"""A small Kubernetes API server behind an httpx2 MockTransport, for the adapter's tests.

It speaks the REST paths, status codes and watch stream lightkube uses: list (with
limit/continue paging and label selectors), watch (newline-delimited JSON events from a
resourceVersion, BOOKMARK events when asked, 410 Gone for a version older than its
history), get, create (generateName, AlreadyExists), replace and merge patch (with
resourceVersion preconditions and the status subresource), delete (uid precondition,
finalizers), pods/eviction (429 for pods a test marks as protected by a PDB, the Eviction's
deleteOptions passed to the delete).

Every request is checked against the RBAC rules `nodewright manifests` renders for the
controller's service account, so a test that makes the adapter call something the
installed RBAC does not grant fails with 403 Forbidden.

Discovery (/version, /api/v1, /apis/<group>/<version>) lists every kind but those in
`unserved` (a CRD not installed, whose requests are answered 404).

Faults a test can inject: `expire_history()` (the next watch from an older version gets
410), `cut_watches()` (open watch streams end with a read error and new ones are refused
with 503 until `accept_watches()`), `silence_watches()` (open watch streams send nothing
more and never end, as over a connection that died without a FIN; like a real transport,
the stream raises ReadTimeout once the client's read timeout has passed),
`fail_next(n, status, retry_after=)`, `pause()` (requests wait unanswered until
`resume()`).
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import httpx2

from nodewright.cluster.api import KINDS, Kind
from nodewright.cluster.merge_patch import apply_merge_patch
from nodewright.install import InstallSettings, render


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, str]
    verb: str


@dataclass
class _Route:
    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass
class Authorizer:
    """Kubernetes RBAC over the rendered ClusterRole and Roles (no wildcards needed)."""

    cluster_rules: list[dict[str, Any]]
    namespaced_rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def for_install(cls, settings: InstallSettings) -> Authorizer:
        authorizer = cls(cluster_rules=[])
        rendered = render(settings, include_crds=False)
        # The ClusterRoles bound to the ServiceAccount (not the one aggregated into `admin`).
        bound = {m["roleRef"]["name"] for m in rendered if m["kind"] == "ClusterRoleBinding"}
        for manifest in rendered:
            if manifest["kind"] == "ClusterRole" and manifest["metadata"]["name"] in bound:
                authorizer.cluster_rules += manifest["rules"]
            elif manifest["kind"] == "Role":
                namespace = manifest["metadata"]["namespace"]
                authorizer.namespaced_rules.setdefault(namespace, []).extend(manifest["rules"])
        return authorizer

    def allows(self, verb: str, group: str, resource: str, namespace: str | None,
               name: str | None) -> bool:
        rules = list(self.cluster_rules)
        if namespace is not None:
            rules += self.namespaced_rules.get(namespace, [])
        for rule in rules:
            if group not in rule["apiGroups"] or resource not in rule["resources"]:
                continue
            if verb not in rule["verbs"]:
                continue
            names = rule.get("resourceNames")
            if names and (name is None or name not in names):
                continue
            return True
        return False


class FakeApiServer:
    def __init__(self, authorizer: Authorizer | None = None, *,
                 watch_window: float = 0.2) -> None:
        self.authorizer = authorizer
        self.watch_window = watch_window
        self.calls: list[Call] = []
        self.forbidden: list[Call] = []
        self.protected_pods: set[tuple[str, str]] = set()
        self.evictions: list[dict[str, Any]] = []  # the Eviction bodies received
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._history: list[tuple[int, str, str, dict[str, Any]]] = []
        self._version = itertools.count(100)
        self._current = 99
        self._expired_before = 0
        self._cut_generation = 0
        self._silence_generation = 0
        self._failures: list[tuple[int, int | None]] = []
        self._lost_answers = 0
        self._failed_answers: list[tuple[int, int | None]] = []
        self._refusing_watches = False
        self._paused = False
        # How an expired version is reported: an HTTP 410, or (as etcd-backed servers
        # usually do once the watch has started) a 200 stream with an ERROR event.
        self.expiry_as_event = False
        self._changed = threading.Condition()
        self.closed = False
        # Kinds the server does not serve (a CRD not installed): left out of discovery,
        # their lists answered 404.
        self.unserved: set[str] = set()
        # Namespaces that do not exist: creating in them is answered 404.
        self.missing_namespaces: set[str] = set()
        self.transport = httpx2.MockTransport(self.handle)

    # --- test controls --------------------------------------------------------------------

    def seed(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        kind = KINDS[str(obj["kind"])]
        with self._changed:
            return self._store_new(kind, copy.deepcopy(dict(obj)))

    def stored(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        found = self._objects.get((kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def objects(self, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [copy.deepcopy(obj) for (stored_kind, _, _), obj in
                    sorted(self._objects.items()) if stored_kind == kind]

    def bind(self, pod: str, node: str, namespace: str = "default") -> None:
        """What kube-scheduler's binding does to a pending pod."""
        with self._changed:
            stored = self._objects[("Pod", namespace, pod)]
            stored["spec"]["nodeName"] = node
            self._bump(stored)
            self._record("MODIFIED", stored)

    def modify(self, kind: str, name: str, namespace: str = "", **labels: str) -> None:
        """Change an object as another client would (new labels, new resourceVersion)."""
        with self._changed:
            obj = self._objects[(kind, namespace, name)]
            obj["metadata"].setdefault("labels", {}).update(labels)
            self._bump(obj)
            self._record("MODIFIED", obj)

    def remove(self, kind: str, name: str, namespace: str = "") -> None:
        with self._changed:
            obj = self._objects.pop((kind, namespace, name))
            self._bump(obj)
            self._record("DELETED", obj)

    def expire_history(self) -> None:
        """Forget the change history: watches from any version seen so far get 410 Gone."""
        with self._changed:
            self._expired_before = self._current
            self._changed.notify_all()

    def cut_watches(self) -> None:
        with self._changed:
            self._cut_generation += 1
            self._refusing_watches = True
            self._changed.notify_all()

    def silence_watches(self) -> None:
        with self._changed:
            self._silence_generation += 1
            self._changed.notify_all()

    def accept_watches(self) -> None:
        with self._changed:
            self._refusing_watches = False
        # How an expired version is reported: an HTTP 410, or (as etcd-backed servers
        # usually do once the watch has started) a 200 stream with an ERROR event.
        self.expiry_as_event = False

    def pause(self) -> None:
        """Stop answering (as a frozen API server: requests wait, none fails) until
        `resume()`."""
        with self._changed:
            self._paused = True

    def resume(self) -> None:
        with self._changed:
            self._paused = False
            self._changed.notify_all()

    def lose_next_answers(self, count: int) -> None:
        """Carry out the next `count` requests, then break their connections before the
        answer (a server that died after storing the object)."""
        with self._changed:
            self._lost_answers += count

    def fail_after_storing(self, count: int, status: int = 503, *,
                           retry_after: int | None = None) -> None:
        """Carry out the next `count` requests, then answer them with `status` (and
        Retry-After): a server that stored the object and then failed (a 504 timeout, a
        5xx from a proxy in front of it)."""
        with self._changed:
            self._failed_answers += [(status, retry_after)] * count

    def fail_next(self, count: int, status: int = 500, *,
                  retry_after: int | None = None) -> None:
        with self._changed:
            self._failures += [(status, retry_after)] * count

    def close(self) -> None:
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def verbs(self, resource: str) -> list[str]:
        return [call.verb for call in self.calls if _resource_of(call.path) == resource]

    # --- HTTP -----------------------------------------------------------------------------

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        discovery = self._discovery(request.url.path)
        if discovery is not None:
            return discovery
        params = {key: values[-1] for key, values in parse_qs(request.url.query.decode()).items()}
        route = self._route(request.url.path)
        verb = _verb(request.method, params, route)
        self.calls.append(Call(request.method, request.url.path, params, verb))
        with self._changed:
            while self._paused and not self.closed:
                self._changed.wait()
            if self._failures:
                status, retry_after = self._failures.pop(0)
                failed = _status(status, "InternalError", "injected failure")
                if retry_after is not None:
                    failed.headers["Retry-After"] = str(retry_after)
                return failed
        resource = route.kind.plural + (f"/{route.subresource}" if route.subresource else "")
        if self.authorizer is not None and not self.authorizer.allows(
                verb, route.kind.group, resource, route.namespace, route.name):
            self.forbidden.append(self.calls[-1])
            return _status(403, "Forbidden",
                           f'{resource} is forbidden: cannot {verb} in "{route.namespace}"')
        body = json.loads(request.content) if request.content else None
        if route.kind.kind in self.unserved:
            return _status(404, "NotFound", "the server could not find the requested resource")
        if verb == "create" and route.namespace in self.missing_namespaces:
            return _status(404, "NotFound", f'namespaces "{route.namespace}" not found')
        if verb == "watch":
            read_timeout = (request.extensions.get("timeout") or {}).get("read")
            return self._watch(route, params, read_timeout, self._silence_generation)
        with self._changed:
            answer = self._dispatch(request.method, verb, route, params, body, request)
            if self._lost_answers:
                self._lost_answers -= 1
                raise httpx2.ReadError("connection reset by peer", request=request)
            if self._failed_answers:
                status, retry_after = self._failed_answers.pop(0)
                failed = _status(status, "InternalError", "injected failure after the write")
                if retry_after is not None:
                    failed.headers["Retry-After"] = str(retry_after)
                return failed
            return answer

    def _discovery(self, path: str) -> httpx2.Response | None:
        """/version and the resource lists of /api/v1 and /apis/<group>/<version>, without
        the kinds in `unserved` (their CRDs not installed); None for any other path."""
        parts = path.strip("/").split("/")
        if parts == ["version"]:
            return _json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
        if parts[0] == "api" and len(parts) == 2:
            api_version = parts[1]
        elif parts[0] == "apis" and len(parts) == 3:
            api_version = f"{parts[1]}/{parts[2]}"
        else:
            return None
        resources = [{"name": kind.plural, "kind": kind.kind, "namespaced": kind.namespaced}
                     for kind in KINDS.values()
                     if kind.api_version == api_version and kind.kind not in self.unserved]
        if not resources:
            return _status(404, "NotFound", "the server could not find the requested resource")
        return _json(200, {"kind": "APIResourceList", "groupVersion": api_version,
                           "resources": resources})

    def _dispatch(self, method: str, verb: str, route: _Route, params: dict[str, str],
                  body: Any, request: httpx2.Request) -> httpx2.Response:
        if verb == "list":
            return self._list(route, params)
        if verb == "get":
            found = self._objects.get((route.kind.kind, route.namespace or "", route.name or ""))
            if found is None:
                return _not_found(route)
            return _json(200, found)
        if method == "POST" and route.subresource == "eviction":
            return self._evict(route, body or {})
        if verb == "create":
            return self._create(route, body)
        if verb == "update":
            return self._replace(route, body)
        if verb == "patch":
            if request.headers.get("content-type") != "application/merge-patch+json":
                return _status(415, "UnsupportedMediaType", "only merge patches here")
            return self._patch(route, body)
        if verb == "delete":
            return self._delete(route, body or {})
        return _status(405, "MethodNotAllowed", f"{method} {route}")

    def _route(self, path: str) -> _Route:
        parts = path.strip("/").split("/")
        if parts[0] == "api":
            api_version, rest = parts[1], parts[2:]
        else:
            api_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        namespace = None
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        kind = next(k for k in KINDS.values()
                    if k.plural == plural and k.api_version == api_version)
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return _Route(kind, namespace, name, sub)

    # --- verbs ----------------------------------------------------------------------------

    def _matching(self, route: _Route, selector: str | None) -> list[dict[str, Any]]:
        wanted = dict(item.split("=", 1) for item in selector.split(",")) if selector else {}
        found = []
        for (kind, namespace, _), obj in sorted(self._objects.items()):
            if kind != route.kind.kind:
                continue
            if route.namespace is not None and namespace != route.namespace:
                continue
            labels = obj["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in wanted.items()):
                found.append(obj)
        return found

    def _list(self, route: _Route, params: dict[str, str]) -> httpx2.Response:
        items = self._matching(route, params.get("labelSelector"))
        start = int(params.get("continue") or 0)
        limit = int(params.get("limit") or 0) or len(items) or 1
        page = items[start:start + limit]
        metadata: dict[str, Any] = {"resourceVersion": str(self._current)}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)
        # Items of a list carry neither apiVersion nor kind, as the API server sends them.
        stripped = [{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
                    for obj in page]
        return _json(200, {"apiVersion": route.kind.api_version,
                           "kind": f"{route.kind.kind}List",
                           "metadata": metadata, "items": stripped})

    def _watch(self, route: _Route, params: dict[str, str], read_timeout: float | None,
               silence: int) -> httpx2.Response:
        since = int(params.get("resourceVersion") or 0)
        with self._changed:
            if self._refusing_watches:
                return _status(503, "ServiceUnavailable", "the API server is restarting")
            if since and since < self._expired_before:
                message = f"too old resource version: {since}"
                if not self.expiry_as_event:
                    return _status(410, "Expired", message)
                status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "message": message, "reason": "Expired", "code": 410}
                return httpx2.Response(
                    200, headers={"Content-Type": "application/json"},
                    content=json.dumps({"type": "ERROR", "object": status}).encode() + b"\n")
        bookmarks = params.get("allowWatchBookmarks") == "true"
        return httpx2.Response(200, headers={"Content-Type": "application/json"},
                               content=self._stream(route, since, bookmarks, read_timeout,
                                                    silence))

    def _stream(self, route: _Route, since: int, bookmarks: bool,
                read_timeout: float | None, silence: int) -> Iterator[bytes]:
        deadline = time.monotonic() + self.watch_window
        generation = self._cut_generation
        sent = since
        while True:
            with self._changed:
                if self._cut_generation != generation:
                    raise httpx2.ReadError("connection reset by peer")
                if self._silence_generation != silence:
                    self._silent(read_timeout)
                pending = [(rv, event, obj) for rv, kind, event, obj in self._history
                           if rv > sent and kind == route.kind.kind
                           and (route.namespace is None
                                or obj["metadata"].get("namespace") == route.namespace)]
                if not pending:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self.closed:
                        break
                    self._changed.wait(remaining)
                    continue
            for rv, event, obj in pending:
                sent = rv
                yield json.dumps({"type": event, "object": obj}).encode() + b"\n"
        if bookmarks:
            with self._changed:
                current = self._current
            bookmark = {"apiVersion": route.kind.api_version, "kind": route.kind.kind,
                        "metadata": {"resourceVersion": str(current)}}
            yield json.dumps({"type": "BOOKMARK", "object": bookmark}).encode() + b"\n"

    def _silent(self, read_timeout: float | None) -> None:
        """Nothing more on this stream: wait out the client's read timeout (held
        `_changed`), then fail as the client's transport would."""
        until = time.monotonic() + (read_timeout if read_timeout is not None else 1e9)
        while not self.closed and time.monotonic() < until:
            self._changed.wait(until - time.monotonic())
        raise httpx2.ReadTimeout("timed out")

    def _create(self, route: _Route, body: dict[str, Any]) -> httpx2.Response:
        meta = body.setdefault("metadata", {})
        if route.namespace is not None:
            meta["namespace"] = route.namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        key = (route.kind.kind, route.namespace or "", meta.get("name", ""))
        if key in self._objects:
            return _status(409, "AlreadyExists",
                           f'{route.kind.plural} "{meta.get("name")}" already exists')
        return _json(201, self._store_new(route.kind, body))

    def _store_new(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        self._bump(obj)
        self._objects[(kind.kind, meta.get("namespace", ""), meta["name"])] = obj
        self._record("ADDED", obj)
        return copy.deepcopy(obj)

    def _replace(self, route: _Route, body: dict[str, Any]) -> httpx2.Response:
        key = (route.kind.kind, route.namespace or "", route.name or "")
        stored = self._objects.get(key)
        if stored is None:
            return _not_found(route)
        if body["metadata"].get("resourceVersion") != stored["metadata"]["resourceVersion"]:
            return _conflict(route)
        updated = copy.deepcopy(stored)
        if route.subresource == "status":
            updated["status"] = body.get("status")
        else:
            kept_status = stored.get("status")
            updated = {**body}
            if route.kind.has_status:
                updated["status"] = kept_status
            updated["metadata"] = {**body["metadata"],
                                   "uid": stored["metadata"]["uid"],
                                   "creationTimestamp": stored["metadata"]["creationTimestamp"]}
        return self._commit(key, stored, updated)

    def _patch(self, route: _Route, patch: dict[str, Any]) -> httpx2.Response:
        key = (route.kind.kind, route.namespace or "", route.name or "")
        stored = self._objects.get(key)
        if stored is None:
            return _not_found(route)
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != stored["metadata"]["resourceVersion"]:
            return _conflict(route)
        if route.subresource == "status":
            patch = {"status": patch.get("status")}
        elif route.kind.has_status:
            patch = {k: v for k, v in patch.items() if k != "status"}
        updated = apply_merge_patch(copy.deepcopy(stored), patch)
        return self._commit(key, stored, updated)

    def _commit(self, key: tuple[str, str, str], stored: dict[str, Any],
                updated: dict[str, Any]) -> httpx2.Response:
        if _without_version(updated) == _without_version(stored):
            return _json(200, stored)
        self._bump(updated)
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get(
                "finalizers"):
            del self._objects[key]
            self._record("DELETED", updated)
            return _json(200, updated)
        self._objects[key] = updated
        self._record("MODIFIED", updated)
        return _json(200, updated)

    def _delete(self, route: _Route, options: dict[str, Any]) -> httpx2.Response:
        key = (route.kind.kind, route.namespace or "", route.name or "")
        stored = self._objects.get(key)
        if stored is None:
            return _not_found(route)
        uid = (options.get("preconditions") or {}).get("uid")
        if uid and uid != stored["metadata"]["uid"]:
            return _status(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, "
                                            f"UID in object meta: {stored['metadata']['uid']}")
        if stored["metadata"].get("finalizers"):
            updated = copy.deepcopy(stored)
            updated["metadata"]["deletionTimestamp"] = now()
            return self._commit(key, stored, updated)
        del self._objects[key]
        self._bump(stored)
        self._record("DELETED", stored)
        return _json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    def _evict(self, route: _Route, eviction: dict[str, Any]) -> httpx2.Response:
        self.evictions.append(eviction)
        if (route.namespace, route.name) in self.protected_pods:
            return _status(429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.")
        # The Eviction's deleteOptions (a uid precondition) go to the pod's delete.
        return self._delete(_Route(KINDS["Pod"], route.namespace, route.name, None),
                            eviction.get("deleteOptions") or {})

    # --- bookkeeping ----------------------------------------------------------------------

    def _bump(self, obj: dict[str, Any]) -> None:
        self._current = next(self._version)
        obj["metadata"]["resourceVersion"] = str(self._current)

    def _record(self, event: str, obj: dict[str, Any]) -> None:
        self._history.append((self._current, obj["kind"], event, copy.deepcopy(obj)))
        self._changed.notify_all()


def _verb(method: str, params: Mapping[str, str], route: _Route) -> str:
    if method == "GET":
        if params.get("watch") == "true":
            return "watch"
        return "get" if route.name else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def _resource_of(path: str) -> str:
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest and rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    return rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")


def _without_version(obj: dict[str, Any]) -> dict[str, Any]:
    trimmed = copy.deepcopy(obj)
    trimmed["metadata"].pop("resourceVersion", None)
    return trimmed


def _json(status: int, body: Any) -> httpx2.Response:
    return httpx2.Response(status, headers={"Content-Type": "application/json"},
                           content=json.dumps(body).encode())


def _status(code: int, reason: str, message: str) -> httpx2.Response:
    return _json(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "message": message, "reason": reason, "code": code})


def _not_found(route: _Route) -> httpx2.Response:
    return _status(404, "NotFound", f'{route.kind.plural} "{route.name}" not found')


def _conflict(route: _Route) -> httpx2.Response:
    return _status(409, "Conflict",
                   f'Operation cannot be fulfilled on {route.kind.plural} "{route.name}": the '
                   "object has been modified; please apply your changes to the latest version "
                   "and try again")
