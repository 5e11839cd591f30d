"""An informer: the list + watch loop of client-go's reflector, for one kind.

It lists the kind (in pages), keeps the objects in a cache, then watches from the list's
resourceVersion with bookmarks (which keep that version fresh while nothing changes).
When the watch ends it resumes from the last version seen; when the server answers 410
Gone (that version is older than it keeps) it lists again and turns the difference into
events, so subscribers never miss a deletion; any other failure is retried with
client-go's backoff (0.8 s doubling to 30 s, with jitter). A stream that stays silent past
the read timeout (no event and no bookmark, which the server sends about every minute: a
connection that died without closing) is abandoned and a new one opened from the last
resourceVersion, at once.

Subscribers are `Subscription`s: each gets ADDED for every cached object when it
subscribes, then every change, in order.
"""

from __future__ import annotations

import copy
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx2
from lightkube import ApiError as LightkubeApiError
from lightkube import Client

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, NotFoundError, Object, kind_of
from nodewright.cluster.kube import gaps
from nodewright.cluster.kube.discovery import INSTALL_CRDS
from nodewright.cluster.kube.errors import GoneError, translate, translate_http, unreachable
from nodewright.cluster.kube.resources import resource_class, to_object
from nodewright.metrics import BUFFER_DROPPED
from nodewright.runtime.ratelimit import REFLECTOR_BACKOFF, Backoff
from nodewright.runtime.reconciler import EventType, WatchEvent

log = logging.getLogger(__name__)

LIST_PAGE_SIZE = 500
# Watch events a subscription holds for its reader (see `Subscription`).
SUBSCRIPTION_CAPACITY = 1_000_000


# The API server sends a BOOKMARK about every minute to a watch that asked for them
# (Kubernetes 1.26: every 60 s or so): a stream silent for longer than this is dead.
DEFAULT_WATCH_READ_TIMEOUT = 90.0


class SilentWatchError(ApiError):
    """A watch stream sent nothing (no event, no bookmark) within the read timeout."""


class Subscription:
    """Where an informer hands its events; the stream side of `KubeCluster.watch`.

    Bounded: a reader that stops taking (a wedged dispatcher) must not make the process
    grow until it is killed for its memory. Past `capacity` the oldest event is dropped,
    counted in `nodewright_buffer_dropped_total{buffer="watch_events"}` and logged (the
    first time, then every 10000); the capacity holds the initial list of a very large
    cluster, which arrives before the reader starts taking."""

    def __init__(self, capacity: int = SUBSCRIPTION_CAPACITY,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._events: deque[WatchEvent] = deque()
        self._capacity = capacity
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self.closed = False
        self.dropped = 0
        # When the oldest event not yet taken arrived (None while none waits).
        self._oldest_at: float | None = None

    def waiting_for(self) -> float:
        """For how long the oldest event not yet taken has waited (0 when none waits)."""
        oldest = self._oldest_at
        return 0.0 if oldest is None else max(0.0, self._monotonic() - oldest)

    def push(self, event: WatchEvent) -> None:
        with self._lock:
            if self.closed:
                return
            if not self._events:
                self._oldest_at = self._monotonic()
            if len(self._events) >= self._capacity:
                self._events.popleft()
                self.dropped += 1
                BUFFER_DROPPED.labels(buffer="watch_events").inc()
                if self.dropped % 10000 == 1:
                    log.error("the watch event buffer is full (%d events: they are not "
                              "being taken); dropping the oldest, %d so far",
                              self._capacity, self.dropped)
            self._events.append(event)

    def take(self) -> list[WatchEvent]:
        with self._lock:
            events = list(self._events)
            self._events.clear()
            self._oldest_at = None
            return events


class Informer:
    def __init__(
        self,
        client: Client,
        kind: str,
        *,
        backoff: Backoff | None = None,
        watch_timeout: Callable[[], int] = lambda: random.randint(300, 600),
        read_timeout: float = DEFAULT_WATCH_READ_TIMEOUT,
        sleep: Callable[[float], bool] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.kind = kind
        self._resource = resource_class(kind)
        self._backoff = backoff or REFLECTOR_BACKOFF
        self._watch_timeout = watch_timeout
        self._read_timeout = read_timeout
        self._monotonic = monotonic
        # Since when the informer has had no open watch (None while one is open); counted
        # from the first sync on, for /healthz.
        self._down_since: float | None = None
        self.silent_restarts = 0
        self._cache: dict[str, Object] = {}
        # The resourceVersion of each object as last reported to subscribers.
        self._told: dict[str, str] = {}
        self._version = ""
        self._lock = threading.RLock()
        self._subscribers: list[Subscription] = []
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._thread: threading.Thread | None = None
        self.lists = 0
        self.failures = 0
        # A failure a user must fix, until a list or a watch event shows it fixed (/readyz).
        self.problem: str | None = None
        self._verb = "list"

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind}",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None) -> bool:
        return self._synced.wait(timeout)

    def disconnected_for(self) -> float:
        """Seconds since the informer last had an open watch (0 while it has one, and
        before its first sync: /readyz covers that)."""
        down_since = self._down_since
        if down_since is None or not self.synced():
            return 0.0
        return max(0.0, self._monotonic() - down_since)

    # --- reads --------------------------------------------------------------------------

    def get(self, key: str) -> Object | None:
        with self._lock:
            found = self._cache.get(key)
            return copy.deepcopy(found) if found is not None else None

    def items(self) -> list[Object]:
        with self._lock:
            return [copy.deepcopy(obj) for obj in self._cache.values()]

    def subscribe(self, subscription: Subscription) -> None:
        with self._lock:
            for obj in self._cache.values():
                subscription.push(WatchEvent("ADDED", copy.deepcopy(obj)))
            self._subscribers.append(subscription)

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def observe_write(self, obj: Object) -> None:
        """Put what a write returned into the cache at once (read-your-writes for the
        writer); the watch event that follows still reaches the subscribers."""
        with self._lock:
            key = objects.key(obj)
            current = self._cache.get(key)
            if _deletion_finished(obj):  # the write removed the last finalizer: it is gone
                self._cache.pop(key, None)
                return
            if current is None and _passed(self._version, obj):
                # The watch went past this version and no longer has the object: deleted
                # since (its DELETED event came before the write's answer). Never revive it.
                return
            if current is None or _newer(obj, current):
                self._cache[key] = copy.deepcopy(obj)

    # --- the loop -----------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if not self._version:
                    self._verb = "list"
                    self._list()
                self._verb = "watch"
                self._watch()
                failures = 0
            except GoneError:
                log.info("watch of %s expired (410 Gone); listing again", self.kind)
                self._version = ""
            except SilentWatchError:
                self.silent_restarts += 1
                log.warning("watch of %s silent for %.0fs (no event, no bookmark): the "
                            "connection is taken for dead; watching again from "
                            "resourceVersion %s", self.kind, self._read_timeout,
                            self._version, extra={"kind": self.kind})
            except Exception as error:  # ApiError, or a bug: never let the informer die
                if self._stop.is_set():
                    return
                failures += 1
                self.failures += 1
                delay = self._backoff.delay(failures)
                self._report(error, delay)
                self._sleep(delay)

    def _report(self, error: Exception, delay: float) -> None:
        """A failure a user must fix (RBAC, a missing CRD) at ERROR with what to do; the
        API server being away at WARNING: waiting is the fix."""
        retry = f"retrying in {delay:.1f}s"
        resource = resource_name(self.kind)
        if isinstance(error, ApiError) and error.status == 403:
            log.error("the API server refused to %s %s (403 Forbidden: %s). The ClusterRole "
                      "that `nodewright manifests` renders grants it: apply the manifests "
                      "again and check that their ClusterRoleBinding binds it to the "
                      "controller's ServiceAccount; %s", self._verb, resource, error, retry,
                      extra={"kind": self.kind})
            self.problem = f"{self._verb} {resource}: 403 Forbidden"
        elif isinstance(error, NotFoundError) and self._verb == "list":
            log.error("the API server does not serve %s (404 Not Found): its "
                      "CustomResourceDefinition is missing; install it with `%s`; %s",
                      resource, INSTALL_CRDS, retry, extra={"kind": self.kind})
            self.problem = f"{resource} is not served (CRD missing)"
        else:
            log.warning("watch of %s failed (%s); %s", self.kind, error, retry,
                        exc_info=not isinstance(error, ApiError))

    def _list(self) -> None:
        try:
            listing = self.client.list(
                self._resource,
                namespace="*" if self._namespaced() else None,
                chunk_size=LIST_PAGE_SIZE,
            )
            found = {}
            for item in listing:
                obj = to_object(self.kind, item)
                found[objects.key(obj)] = obj
            version = listing.resourceVersion
        except LightkubeApiError as error:
            raise translate(error) from error
        except httpx2.HTTPStatusError as error:
            raise translate_http(error) from error
        except httpx2.TransportError as error:
            raise unreachable(error) from error
        self.lists += 1
        self.problem = None
        with self._lock:
            # The difference is taken from what subscribers were told, not from the cache:
            # the cache also holds this process's own writes (`observe_write`), whose
            # events a watch that ended before they arrived never delivered.
            previous, self._cache = self._cache, found
            for key in [key for key in self._told if key not in found]:
                # Told about but gone: from the cache when it still holds it, else (a write
                # that finished its deletion took it out) as a reference to the object.
                self._emit("DELETED", previous.get(key) or self._reference(key))
            for key, obj in found.items():
                told = self._told.get(key)
                if told is None:
                    self._emit("ADDED", obj)
                elif told != objects.meta(obj).get("resourceVersion"):
                    self._emit("MODIFIED", obj)
            self._version = version
        if self._down_since is None:
            self._down_since = self._monotonic()
        self._synced.set()

    def _watch(self) -> None:
        events = gaps.watch_with_bookmarks(
            self.client,
            self._resource,
            resource_version=self._version,
            server_timeout=self._watch_timeout(),
            read_timeout=self._read_timeout,
            on_open=self._opened,
        )
        try:
            for event_type, item in _guarded(events):
                self.problem = None
                if self._stop.is_set():
                    return
                self._apply(event_type, to_object(self.kind, item))
        finally:
            if self._down_since is None:
                self._down_since = self._monotonic()
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _opened(self) -> None:
        self._down_since = None

    def _apply(self, event_type: str, obj: Object) -> None:
        version = str(objects.meta(obj).get("resourceVersion") or "")
        with self._lock:
            if event_type == "BOOKMARK":
                self._version = version or self._version
                return
            key = objects.key(obj)
            if event_type == "DELETED":
                self._cache.pop(key, None)
                self._emit("DELETED", obj)
            elif event_type == "ADDED":
                self._cache[key] = obj
                self._emit("ADDED", obj)
            elif event_type == "MODIFIED":
                self._cache[key] = obj
                self._emit("MODIFIED", obj)
            self._version = version or self._version

    def _emit(self, event_type: EventType, obj: Object) -> None:
        key = objects.key(obj)
        if event_type == "DELETED":
            self._told.pop(key, None)
        else:
            self._told[key] = str(objects.meta(obj).get("resourceVersion") or "")
        for subscription in self._subscribers:
            subscription.push(WatchEvent(event_type, copy.deepcopy(obj)))

    def _namespaced(self) -> bool:
        return kind_of(self.kind).namespaced

    def _reference(self, key: str) -> Object:
        namespace, _, name = key.rpartition("/")
        metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
        spec = kind_of(self.kind)
        return {"apiVersion": spec.api_version, "kind": spec.kind, "metadata": metadata}


def resource_name(kind: str) -> str:
    """`pods`, `nodeclaims.karpenter.sh`: as RBAC and kubectl name a resource."""
    spec = kind_of(kind)
    return f"{spec.plural}.{spec.group}" if spec.group else spec.plural


def _guarded(events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    try:
        yield from events
    except LightkubeApiError as error:  # an ERROR event in the stream
        raise translate(error) from error
    except httpx2.HTTPStatusError as error:  # lightkube's watch does not decode these
        raise _status_error(error) from error
    except httpx2.ReadTimeout as error:
        raise SilentWatchError(f"no data within the read timeout: {error}") from error
    except httpx2.TransportError as error:
        raise unreachable(error) from error
    except httpx2.HTTPError as error:
        raise ApiError(f"watch failed: {error}") from error


def _status_error(error: httpx2.HTTPStatusError) -> ApiError:
    response = error.response
    try:
        response.read()
        return translate(LightkubeApiError(request=error.request, response=response))
    except Exception:  # not a Status body: keep the code
        translated = ApiError(f"watch failed: HTTP {response.status_code}")
        translated.status = response.status_code
        return translated


def _deletion_finished(obj: Mapping[str, Any]) -> bool:
    meta = objects.meta(obj)
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")


def _passed(version: str, obj: Mapping[str, Any]) -> bool:
    """Whether the watch's `version` is at or past the object's (etcd's integers)."""
    written = str(objects.meta(obj).get("resourceVersion") or "")
    return version.isdigit() and written.isdigit() and int(version) >= int(written)


def _newer(candidate: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """resourceVersions are opaque, but etcd's are integers; compare them when they are."""
    new = str(objects.meta(candidate).get("resourceVersion") or "")
    old = str(objects.meta(current).get("resourceVersion") or "")
    if new.isdigit() and old.isdigit():
        return int(new) > int(old)
    return new != old
