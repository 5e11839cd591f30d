"""`KubeCluster`: ClusterAPI against a real API server, through lightkube.

Reads of the kinds it caches (by default the operator's `WATCHED_KINDS`) come from the
informers' caches, as controller-runtime's client reads them, so controllers can read as
often as they like without loading the API server; they wait a few seconds for the first
list, then fail with CacheNotSyncedError (the reconcile is retried). Other
kinds are read from the server. Writes go to the server: `update` is a PUT carrying the
object's resourceVersion (409 Conflict when stale), `patch` a JSON merge patch (a
`metadata.resourceVersion` in it is a precondition), the status subresource when asked,
delete with a uid precondition, eviction through policy/v1 Eviction. What a write returns
goes into the cache at once, so the writer reads its own writes.
"""

from __future__ import annotations

import base64
import copy
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from lightkube import ApiError as LightkubeApiError
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ConfigError
from lightkube.models.meta_v1 import DeleteOptions, ObjectMeta, Preconditions
from lightkube.resources.core_v1 import Pod
from lightkube.types import PatchType

from nodewright.cluster import objects
from nodewright.cluster.api import (
    AlreadyExistsError,
    ApiError,
    NotFoundError,
    Object,
    UnreachableError,
    kind_of,
)
from nodewright.cluster.kube import gaps
from nodewright.cluster.kube.access import WATCHED_KINDS
from nodewright.cluster.kube.discovery import check_server, minor_version
from nodewright.cluster.kube.errors import translate, translate_http, unreachable
from nodewright.cluster.kube.informer import (
    DEFAULT_WATCH_READ_TIMEOUT,
    Informer,
    Subscription,
)
from nodewright.cluster.kube.resources import resource_class, status_class, to_object
from nodewright.cluster.kube.transport import ClientLimits, LimitedTransport, instrument, limit
from nodewright.cluster.names import CREATE_ID_ANNOTATION, generated_name
from nodewright.runtime.reconciler import WatchEvent

FIELD_MANAGER = "nodewright"
# A create whose answer was lost is sent again, under the same name, for this long.
UNKNOWN_OUTCOME_RETRY_SECONDS = 30.0
UNKNOWN_OUTCOME_RETRY_INTERVAL = 1.0
NAME_ATTEMPTS = 3
T = TypeVar("T")


# The longest a read waits for its kind's first list: a reconcile that finds the cache
# not synced fails with CacheNotSyncedError and is retried, rather than holding the loop.
SYNC_WAIT_SECONDS = 5.0


class CacheNotSyncedError(ApiError):
    status = 503
    reason = "CacheNotSynced"


def connect(kubeconfig: str | None = None, *, transport: httpx2.BaseTransport | None = None,
            ) -> Client:
    """A lightkube client: from `kubeconfig`, else in-cluster, else ~/.kube/config."""
    config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    return Client(config, field_manager=FIELD_MANAGER, transport=transport)


def trusted_ca_bundle(kubeconfig: str | None = None) -> str | None:
    """The base64 PEM of the CA the client trusts the API server by (the kubeconfig's
    certificate-authority(-data), the in-cluster service account's ca.crt), as Karpenter's
    operator reads it for its caBundle; None when there is no kubeconfig or no CA."""
    try:
        config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
        single = config.get()
    except (ConfigError, OSError, ValueError):  # connect() says what is wrong, not this
        return None
    if single is None:
        return None
    cluster = single.cluster
    if cluster.certificate_auth_data:
        return str(cluster.certificate_auth_data)
    if cluster.certificate_auth:
        try:
            return base64.b64encode(Path(cluster.certificate_auth).read_bytes()).decode()
        except OSError:
            return None
    return None


class KubeWatchStream:
    """Events of some kinds, withheld until every one of their informers has listed."""

    def __init__(self, informers: list[Informer]) -> None:
        self._informers = informers
        self._subscription = Subscription()
        for informer in informers:
            informer.subscribe(self._subscription)

    def poll(self) -> list[WatchEvent]:
        if not self.synced():
            return []
        return self._subscription.take()

    def synced(self) -> bool:
        return all(informer.synced() for informer in self._informers)

    def undelivered_for(self) -> float:
        """For how long the oldest event has waited for the reader, once synced (before,
        events wait for the other kinds' first list by design)."""
        return self._subscription.waiting_for() if self.synced() else 0.0

    def closed(self) -> bool:
        return self._subscription.closed

    def close(self) -> None:
        self._subscription.closed = True
        for informer in self._informers:
            informer.unsubscribe(self._subscription)


class KubeCluster:
    def __init__(
        self,
        client: Client,
        *,
        cached_kinds: Iterable[str] = WATCHED_KINDS,
        sync_timeout: float = SYNC_WAIT_SECONDS,
        informer_factory: Callable[[Client, str], Informer] | None = None,
        limits: ClientLimits | None = None,
        watch_read_timeout: float = DEFAULT_WATCH_READ_TIMEOUT,
    ) -> None:
        self.client = client
        instrument(client)
        self.transport: LimitedTransport = limit(client, limits or ClientLimits())
        self._cached_kinds = frozenset(cached_kinds)
        self._sync_timeout = sync_timeout
        self._informer_factory = informer_factory or (
            lambda client, kind: Informer(client, kind, read_timeout=watch_read_timeout))
        self._informers: dict[str, Informer] = {}
        self._streams: list[KubeWatchStream] = []
        self._lock = threading.Lock()

    # --- informers ------------------------------------------------------------------------

    def informer(self, kind: str) -> Informer:
        kind_of(kind)
        with self._lock:
            informer = self._informers.get(kind)
            if informer is None:
                informer = self._informer_factory(self.client, kind)
                self._informers[kind] = informer
                informer.start()
            return informer

    def start(self) -> None:
        """Start the informers of the cached kinds (reads wait for their first list)."""
        for kind in sorted(self._cached_kinds):
            self.informer(kind)

    def synced(self) -> bool:
        with self._lock:
            informers = list(self._informers.values())
        return all(informer.synced() for informer in informers)

    def problems(self) -> list[str]:
        """What keeps caches from syncing that a user must fix (RBAC, a missing CRD)."""
        with self._lock:
            informers = list(self._informers.values())
        return [informer.problem for informer in informers if informer.problem]

    def disconnected(self, limit: float) -> list[str]:
        """The kinds whose informers have had no open watch for longer than `limit`
        seconds (after their first sync), with for how long (for /healthz)."""
        with self._lock:
            informers = list(self._informers.values())
        return [f"{informer.kind} for {informer.disconnected_for():.0f}s"
                for informer in informers if informer.disconnected_for() > limit]

    def server_minor_version(self) -> str:
        """The API server's `major.minor` version, asked now (Karpenter's version provider
        when EKS_CONTROL_PLANE is off)."""
        return minor_version(self.client)

    def check_server(self, *, configured_by: str) -> str:
        """The API server's version once it answers and serves every kind this cluster
        caches; `ServerCheckError` says what to fix otherwise."""
        return check_server(self.client, sorted(self._cached_kinds | {"Lease", "Event"}),
                            configured_by=configured_by)

    def alive(self) -> bool:
        with self._lock:
            return all(informer.alive() for informer in self._informers.values())

    def close(self) -> None:
        with self._lock:
            for informer in self._informers.values():
                informer.stop()
        self.client.close()

    def _cache(self, kind: str) -> Informer | None:
        if kind not in self._cached_kinds:
            return None
        informer = self.informer(kind)
        if not informer.wait_synced(self._sync_timeout):
            raise CacheNotSyncedError(f"the {kind} cache has not synced with the API server")
        return informer

    # --- reads ----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        cache = self._cache(kind)
        if cache is not None:
            key = f"{namespace}/{name}" if namespace and kind_of(kind).namespaced else name
            found = cache.get(key)
            if found is None:
                raise NotFoundError(f'{kind_of(kind).plural} "{name}" not found')
            return found
        with _translated():
            item = self.client.get(resource_class(kind), name, namespace=namespace)
        return to_object(kind, item)

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> list[Object]:
        cache = self._cache(kind)
        if cache is not None:
            return [
                obj for obj in cache.items()
                if (namespace is None or objects.namespace(obj) == namespace)
                and _has_labels(obj, labels)
            ]
        scope = namespace if namespace else ("*" if kind_of(kind).namespaced else None)
        with _translated():
            items = list(self.client.list(resource_class(kind), namespace=scope,
                                          labels=dict(labels) if labels else None))
        return [to_object(kind, item) for item in items]

    def watch(self, kinds: Iterable[str]) -> KubeWatchStream:
        stream = KubeWatchStream([self.informer(kind) for kind in kinds])
        with self._lock:
            self._streams.append(stream)
        return stream

    def undelivered_for(self) -> float:
        """For how long the oldest watch event has waited for its stream's reader (the
        operator's dispatcher), for /healthz."""
        with self._lock:
            streams = list(self._streams)
        return max((stream.undelivered_for() for stream in streams
                    if not stream.closed()), default=0.0)

    # --- writes ---------------------------------------------------------------------------

    def create(self, obj: Object) -> Object:
        """Create `obj`, exactly once however its requests fare.

        A create whose outcome is unknown (the connection broke after the request went
        out, a 5xx, a timeout; or a 5xx with Retry-After that the transport sent again
        after the server had stored the first) may have stored the object. So each
        logical create carries an identity of its own (the `nodewright.io/create-id`
        annotation, drawn once here) and a name fixed before the first request (a
        `generateName` is turned into a name here, as the API server would): before
        sending again, and whenever the name turns out to be taken, the object of that
        name is read from the server; carrying this create's identity, it is the one
        stored, and is returned. A name taken by another object draws a new one (with a
        `generateName`) or raises AlreadyExists. A broken connection is retried for
        UNKNOWN_OUTCOME_RETRY_SECONDS; a 5xx is raised unless the object turns out
        stored. Without this, a retry would store a second object (a second NodeClaim: a
        second instance)."""
        kind = str(obj.get("kind") or "")
        resource = resource_class(kind)
        namespace = objects.namespace(obj) or None
        body = copy.deepcopy(obj)
        metadata = body.setdefault("metadata", {})
        annotations = dict(metadata.get("annotations") or {})
        identity = annotations.setdefault(CREATE_ID_ANNOTATION, uuid.uuid4().hex)
        metadata["annotations"] = annotations
        prefix = metadata.pop("generateName", None) if not metadata.get("name") else None
        for naming in range(NAME_ATTEMPTS if prefix else 1):
            if prefix:
                metadata["name"] = generated_name(str(prefix), secrets.choice)
            name = str(metadata["name"])
            deadline = time.monotonic() + UNKNOWN_OUTCOME_RETRY_SECONDS
            maybe_stored = False
            while True:
                try:
                    if maybe_stored:
                        stored = self._stored(kind, name, namespace)
                        if stored is not None:
                            if _created_by(stored, identity):
                                return self._observed(kind, stored)
                            break  # the name is someone else's: ours was never stored
                    with _translated():
                        created = self.client.create(resource(copy.deepcopy(body)),
                                                     namespace=namespace)
                    return self._observed(kind, created)
                except AlreadyExistsError:
                    # Ours (a request sent again stored the first), or another object's:
                    # the next turn reads it and tells.
                    if maybe_stored and time.monotonic() >= deadline:
                        raise
                    maybe_stored = True
                except UnreachableError as error:
                    if time.monotonic() >= deadline or not (
                            maybe_stored or _maybe_delivered(error)):
                        raise  # refused before anything was sent: nothing stored
                    maybe_stored = True
                    time.sleep(UNKNOWN_OUTCOME_RETRY_INTERVAL)
                except ApiError as error:
                    if error.status < 500 or not _answered_by_server(error):
                        raise  # refused, or failed here before a request went out
                    # The server failed, maybe after storing it (a 504 timeout, a 5xx
                    # answered to a request the transport sent again): ours if stored,
                    # else the error stands and the caller decides.
                    stored = self._stored(kind, name, namespace)
                    if stored is not None and _created_by(stored, identity):
                        return self._observed(kind, stored)
                    raise
            if not prefix or naming + 1 == NAME_ATTEMPTS:
                raise AlreadyExistsError(
                    f'{kind_of(kind).plural} "{name}" already exists')
        raise AssertionError("unreachable")  # the loops return or raise

    def _stored(self, kind: str, name: str, namespace: str | None) -> Object | None:
        """The object of that name on the server (not the cache, which may lag), or None."""
        try:
            with _translated():
                item = self.client.get(resource_class(kind), name, namespace=namespace)
        except NotFoundError:
            return None
        return to_object(kind, item)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        kind = str(obj.get("kind") or "")
        body = copy.deepcopy(obj)
        namespace = objects.namespace(obj) or None
        with _translated():
            if subresource == "status":
                stored = self.client.replace(status_class(kind)(body), objects.name(obj),
                                             namespace=namespace)
            elif subresource is None:
                stored = self.client.replace(resource_class(kind)(body))
            else:
                raise ValueError(f"unsupported subresource {subresource!r}")
        return self._observed(kind, stored)

    def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Object:
        if subresource not in (None, "status"):
            raise ValueError(f"unsupported subresource {subresource!r}")
        target = status_class(kind) if subresource == "status" else resource_class(kind)
        with _translated():
            stored = self.client.patch(target, name, dict(patch), namespace=namespace,
                                       patch_type=PatchType.MERGE)
        return self._observed(kind, stored)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> None:
        with _translated():
            gaps.delete_with_options(self.client, resource_class(kind), name,
                                     namespace=namespace,
                                     grace_period_seconds=grace_period_seconds, uid=uid)

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
              uid: str | None = None) -> None:
        options = (DeleteOptions(gracePeriodSeconds=grace_period_seconds,
                                 preconditions=Preconditions(uid=uid) if uid else None)
                   if grace_period_seconds is not None or uid else None)
        eviction = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace),
                                deleteOptions=options)
        with _translated():
            self.client.create(eviction, name=name, namespace=namespace)

    def _observed(self, kind: str, stored: Any) -> Object:
        obj = to_object(kind, stored)
        if kind in self._cached_kinds:
            self.informer(kind).observe_write(obj)
        return obj


def _created_by(stored: Mapping[str, Any], identity: str) -> bool:
    return objects.annotations(stored).get(CREATE_ID_ANNOTATION) == identity


def _answered_by_server(error: ApiError) -> bool:
    """Whether the error is the server's answer (translated), not one raised on this side
    before anything was sent."""
    return isinstance(error.__cause__, LightkubeApiError | httpx2.HTTPStatusError)


def _maybe_delivered(error: UnreachableError) -> bool:
    """Whether the request may have reached the server: anything but a refused connection
    (the server may have stored the object and its answer been lost)."""
    return not isinstance(error.__cause__, httpx2.ConnectError)


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except LightkubeApiError as error:
        raise translate(error) from error
    except httpx2.HTTPStatusError as error:
        raise translate_http(error) from error
    except httpx2.TransportError as error:
        raise unreachable(error) from error


def _has_labels(obj: Mapping[str, Any], wanted: Mapping[str, str] | None) -> bool:
    if not wanted:
        return True
    have = objects.labels(obj)
    return all(have.get(key) == value for key, value in wanted.items())
