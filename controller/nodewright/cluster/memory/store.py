"""The in-memory API server: `InMemoryCluster` implements `ClusterAPI` with the semantics
controllers depend on.

- One global resourceVersion counter; each write stamps the object and produces one
  watch event, in order. A write that changes nothing produces no event and keeps the
  resourceVersion, so reconcilers converge.
- Updates carrying a stale resourceVersion fail with 409 Conflict; patches carrying one
  use it as a precondition, as does `delete(uid=...)`.
- Kinds with a status subresource: a plain update or patch leaves status alone, the
  `status` subresource changes nothing else; `generation` moves on spec changes, and
  once more when the object starts being deleted.
  `create` keeps the status it is given (the simulated EC2 creates Nodes with status).
- Deletion: finalizers hold an object with `deletionTimestamp` set until the last one is
  removed, and no finalizer may be added meanwhile. A Pod bound to a node is deleted
  gracefully (`deletionTimestamp` = now + grace period; the kubelet actor removes it);
  an unbound or finished Pod goes at once. Dependents whose owners are all gone are
  deleted (background propagation); deleting a Namespace deletes what is in it.
- The eviction subresource checks PodDisruptionBudgets (see `budgets`).

Stored objects are never modified in place: every write stores a new dict (sharing the
parts it did not change with the previous version, and its nested parts equal to another
stored object's with that object: see `sharing`). Reads hand out copies;
`peek`/`peek_all` give the stored objects themselves to the in-process actors, and watch
events carry them too (a watcher keeping the objects it was sent, as the state cache
does, holds the very versions the server stores instead of copies of them): both must be
treated as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import (
    KINDS,
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    Kind,
    NotFoundError,
    Object,
    TooManyRequestsError,
    kind_of,
)
from nodewright.cluster.copying import deep_copy
from nodewright.cluster.memory import budgets
from nodewright.cluster.memory.admission import admit, crd
from nodewright.cluster.memory.admission.versions import emulated_version
from nodewright.cluster.memory.names import NameSource
from nodewright.cluster.memory.pod_status import set_pod_condition
from nodewright.cluster.memory.sharing import SubtreeSharing
from nodewright.cluster.memory.timestamps import time_text
from nodewright.cluster.memory.watch import MemoryWatchStream
from nodewright.cluster.merge_patch import apply_merge_patch
from nodewright.runtime.clock import Clock, format_time
from nodewright.runtime.reconciler import EventType, WatchEvent
from nodewright.scheduling.runtimeclasses import RuntimeClassError, admitted_spec

INITIAL_NAMESPACES = ("default", "kube-system", "kube-node-lease")
DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_GRACE_SECONDS = 30
TERMINAL_PHASES = ("Succeeded", "Failed")
# Metadata the server owns: writes cannot change these.
SERVER_METADATA = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)
_GENERATE_ATTEMPTS = 16

Key = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name
ReplaceHook = Callable[[str, str, Object | None, Object | None], None]
# The class defines `list` (the ClusterAPI method), which hides the builtin in its body.
Objects = list[Object]


class WriteJournal:
    """The objects of one kind written or removed since the journal was last taken: per
    (namespace or "", name), the stored version now, or None when it was removed. An
    in-process actor that keeps an index of a kind reads this instead of every object."""

    def __init__(self) -> None:
        self._written: dict[tuple[str, str], Object | None] = {}

    def note(self, scope: str, name: str, obj: Object | None) -> None:
        self._written[(scope, name)] = obj

    def take(self) -> dict[tuple[str, str], Object | None]:
        """What was written since the last take (in the order first written since)."""
        written, self._written = self._written, {}
        return written


class InMemoryCluster:
    """An API server in memory (see the module docstring). It knows nothing of its clients:
    the actors that play the rest of a cluster on it are built by `actors.cluster_actors`."""

    def __init__(self, clock: Clock, *, seed: int = 0,
                 kubernetes_version: str | None = None) -> None:
        self.clock = clock
        # The API server this cluster answers as (its validation differs between versions);
        # the newest emulated unless named.
        self.kubernetes_version = emulated_version(kubernetes_version)
        self._names = NameSource(seed)
        self._store: dict[str, dict[str, dict[str, Object]]] = {kind: {} for kind in KINDS}
        self._uids: dict[str, Key] = {}
        self._dependents: dict[str, dict[Key, None]] = {}
        self._version = 0
        self._kind_versions: dict[str, int] = {kind: 0 for kind in KINDS}
        self._streams: list[MemoryWatchStream] = []
        self._journals: dict[str, list[WriteJournal]] = {}
        # Told (kind, scope, stored version or None, next version or None) before a stored
        # version gives way: tests/support/read_only.py checks nobody modified it in place.
        self.before_replace: ReplaceHook | None = None
        # Equal parts of stored versions are one object (replicas' specs, conditions).
        self.sharing = SubtreeSharing()
        for namespace in INITIAL_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    # -- reads -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        return deep_copy(self._require(kind_of_checked(kind), name, namespace))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> Objects:
        kind_of_checked(kind)
        return [
            deep_copy(obj)
            for obj in self.peek_all(kind, namespace, sort=True)
            if not labels or _has_labels(obj, labels)
        ]

    def peek(self, kind: str, name: str, namespace: str | None = None) -> Object | None:
        """The stored object itself, or None. Read-only: never modify it."""
        info = kind_of_checked(kind)
        return self._store[kind].get(self._scope(info, namespace), {}).get(name)

    def peek_all(
        self, kind: str, namespace: str | None = None, *, sort: bool = False
    ) -> Objects:
        """The stored objects of a kind (in one namespace when given). Read-only."""
        by_namespace = self._store[kind_of_checked(kind).kind]
        if namespace is not None and KINDS[kind].namespaced:
            found = list(by_namespace.get(namespace, {}).values())
            return sorted(found, key=objects.name) if sort else found
        result: Objects = []
        for scope in sorted(by_namespace) if sort else list(by_namespace):
            items = by_namespace[scope]
            if sort:
                result.extend(items[name] for name in sorted(items))
            else:
                result.extend(items.values())
        return result

    def dependents(self, owner_uid: str, kind: str | None = None) -> Objects:
        """Stored objects with an ownerReference to `owner_uid` (of `kind` when given), in
        the order they became dependents. Read-only."""
        found: Objects = []
        for dependent_kind, scope, name in self._dependents.get(owner_uid, {}):
            if kind is not None and dependent_kind != kind:
                continue
            obj = self._store[dependent_kind].get(scope, {}).get(name)
            if obj is not None:
                found.append(obj)
        return found

    def count(self, kind: str) -> int:
        return sum(len(items) for items in self._store[kind].values())

    @property
    def resource_version(self) -> int:
        """The last resourceVersion handed out (any kind)."""
        return self._version

    def kind_version(self, kind: str) -> int:
        """The last resourceVersion of a write to this kind (0 when none yet)."""
        return self._kind_versions[kind]

    def journal(self, kind: str) -> WriteJournal:
        """A new journal of the writes to `kind` from now on (see `WriteJournal`)."""
        journal = WriteJournal()
        self._journals.setdefault(kind_of_checked(kind).kind, []).append(journal)
        return journal

    # -- writes ----------------------------------------------------------------------------

    def create(self, obj: Object) -> Object:
        info = kind_of_checked(obj.get("kind") if isinstance(obj, Mapping) else None)
        return deep_copy(self._create(info, deep_copy(dict(obj))))

    def insert(self, obj: Object) -> str:
        """`create` for in-process actors: `obj` is handed over (the caller must not touch
        it again) and only the new name is returned, which saves `create`'s copies."""
        info = kind_of_checked(obj.get("kind") if isinstance(obj, Mapping) else None)
        return str(self._create(info, obj)["metadata"]["name"])

    def set_status(
        self, kind: str, name: str, namespace: str | None, status: dict[str, Any]
    ) -> None:
        """The status subresource for in-process actors: `status` is handed over and
        replaces the stored one (no resourceVersion check, no copy returned)."""
        info = kind_of_checked(kind)
        old = self._require(info, name, namespace)
        if not info.has_status:
            raise NotFoundError(f"{info.plural} have no status subresource")
        new = dict(old)
        new["metadata"] = dict(old["metadata"])
        new["status"] = status
        self._write(info, old, new, "status")

    def _create(self, info: Kind, new: Object) -> Object:
        api_version = new.setdefault("apiVersion", info.api_version)
        if api_version != info.api_version:
            raise InvalidError(
                f"{info.kind}: apiVersion {api_version!r} is not served (expected "
                f"{info.api_version!r})"
            )
        meta = new.get("metadata")
        if meta is None:
            meta = new["metadata"] = {}
        if not isinstance(meta, dict):
            raise InvalidError(f"{info.kind}: metadata must be a mapping")
        if meta.get("resourceVersion"):
            raise InvalidError(
                f"{info.kind} {meta.get('name')!r}: metadata.resourceVersion must not be set "
                "on objects to be created"
            )
        if info.namespaced:
            namespace = meta.get("namespace") or "default"
            meta["namespace"] = namespace
            if self.peek("Namespace", str(namespace)) is None:
                raise NotFoundError(f'namespaces "{namespace}" not found')
        else:
            meta.pop("namespace", None)
        meta["name"] = self._new_name(info, meta)
        if info.has_status and crd.is_custom(info.kind):
            new.pop("status", None)  # the status subresource's alone to write
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        _apply_defaults(info, new)
        if info.kind == "PersistentVolumeClaim":
            self._default_storage_class(new)
        elif info.kind == "Pod" and (new.get("spec") or {}).get("runtimeClassName"):
            self._runtime_class(new)
        new = admit(info, new, version=self.kubernetes_version)
        meta = new["metadata"]
        if self.peek(info.kind, meta["name"], meta.get("namespace")) is not None:
            raise AlreadyExistsError(f'{info.plural} "{meta["name"]}" already exists')
        meta["uid"] = self._names.uid()
        meta["creationTimestamp"] = time_text(self.clock.now())
        meta["generation"] = 1
        self._commit(info, new, "ADDED")
        return new

    def _runtime_class(self, pod: Object) -> None:
        """The RuntimeClass admission plugin (`scheduling.runtimeclasses`)."""
        name = str(pod["spec"]["runtimeClassName"])
        try:
            pod["spec"] = admitted_spec(pod["spec"], self.peek("RuntimeClass", name), name)
        except RuntimeClassError as error:
            raise InvalidError(f'pods "{pod["metadata"].get("name")}" is forbidden: '
                               f"{error}") from None

    def _default_storage_class(self, claim: Object) -> None:
        """The DefaultStorageClass admission plugin: a claim that names no class gets the
        one annotated as the default (the newest when several are)."""
        spec = claim.setdefault("spec", {})
        if "storageClassName" in spec:
            return
        defaults = [
            sc for sc in self.peek_all("StorageClass")
            if (sc["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
        ]
        if defaults:
            newest = max(defaults, key=lambda sc: (sc["metadata"].get("creationTimestamp", ""),
                                                   sc["metadata"]["name"]))
            spec["storageClassName"] = newest["metadata"]["name"]

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        info = kind_of_checked(obj.get("kind") if isinstance(obj, Mapping) else None)
        meta = objects.meta(obj)
        old = self._require(info, objects.name(obj), meta.get("namespace"))
        self._check_preconditions(info, old, meta.get("resourceVersion"), meta.get("uid"))
        if subresource is None:
            candidate = deep_copy(dict(obj))
            _keep_status(info, old, candidate)
        else:
            candidate = _with_status_of(info, old, obj, subresource)
        return deep_copy(self._write(info, old, candidate, subresource))

    def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Object:
        info = kind_of_checked(kind)
        if not isinstance(patch, Mapping):
            raise InvalidError(f'{info.plural} "{name}": a merge patch must be a mapping')
        old = self._require(info, name, namespace)
        patch_meta = patch.get("metadata")
        if isinstance(patch_meta, Mapping):
            self._check_preconditions(
                info, old, patch_meta.get("resourceVersion"), patch_meta.get("uid")
            )
        merged = apply_merge_patch(old, patch)
        if not isinstance(merged.get("metadata"), dict):
            raise InvalidError(f'{info.plural} "{name}": metadata must be a mapping')
        if subresource is None:
            _keep_status(info, old, merged)
            candidate = merged
        else:
            # The merged status is the store's own: the patch's values were copied into it
            # and the rest is the stored version's, which nobody modifies.
            candidate = _with_status_of(info, old, merged, subresource, owned=True)
        return deep_copy(self._write(info, old, candidate, subresource))

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> None:
        info = kind_of_checked(kind)
        old = self._require(info, name, namespace)
        if uid is not None and uid != objects.uid(old):
            raise ConflictError(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{objects.uid(old)}"
            )
        grace = _pod_grace(old, grace_period_seconds) if info.kind == "Pod" else 0
        meta = old["metadata"]
        now = self.clock.now()
        deadline = format_time(_after(now, grace))
        if objects.is_deleting(old):
            current = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace >= current:
                return
            deadline = min(deadline, str(meta["deletionTimestamp"]))
        elif grace == 0 and not objects.finalizers(old):
            self._remove(info, old)
            return
        new = dict(old)
        new["metadata"] = {
            **meta,
            "deletionTimestamp": deadline,
            "deletionGracePeriodSeconds": grace,
        }
        if not objects.is_deleting(old) and int(meta.get("generation") or 0) > 0:
            # The API server moves the generation on when it sets the deletionTimestamp
            # (markAsDeleting; BeforeDelete for graceful kinds).
            new["metadata"]["generation"] = int(meta["generation"]) + 1
        if _removable(new):
            self._remove(info, new)
        else:
            self._commit(info, new, "MODIFIED")

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
              uid: str | None = None) -> None:
        """The eviction subresource: PodDisruptionBudgets decide (see `budgets`). A `uid`
        precondition is checked by the delete, after the budget, as the API server's
        eviction does (a budget that refuses answers 429 first)."""
        pod = self._require(KINDS["Pod"], name, namespace)
        if _ignores_budgets(pod):
            self.delete("Pod", name, namespace, grace_period_seconds=grace_period_seconds,
                        uid=uid)
            return
        matching = [pdb for pdb in self.peek_all("PodDisruptionBudget", namespace, sort=True)
                    if budgets.selects(pdb, pod)]
        if len(matching) > 1:
            raise ApiError(
                "This pod has more than one PodDisruptionBudget, which the eviction "
                f"subresource does not support ({', '.join(objects.name(p) for p in matching)})"
            )
        if matching:
            self._charge_budget(matching[0], pod)
        self.delete("Pod", name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)

    def bind(self, name: str, namespace: str, node_name: str) -> None:
        """The binding subresource: set spec.nodeName and PodScheduled=True in one write."""
        pod = self._require(KINDS["Pod"], name, namespace)
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            raise ConflictError(f'pod {name} is already assigned to node "{bound}"')
        if objects.is_deleting(pod):
            raise ConflictError(f"pod {name} is being deleted, cannot be assigned to a host")
        # Shallow copies: stored objects are never modified in place, and keeping the
        # untouched parts lets kube-scheduler's parse cache recognise the pod.
        new = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node_name},
               "status": {**(pod.get("status") or {}), "conditions": [
                   dict(c) for c in (pod.get("status") or {}).get("conditions") or []]}}
        set_pod_condition(new, "PodScheduled", "True", self.clock.now())
        self._write(KINDS["Pod"], pod, new)

    def watch(self, kinds: Iterable[str]) -> MemoryWatchStream:
        wanted = [kind_of_checked(kind).kind for kind in kinds]
        existing = sorted(
            (obj for kind in wanted for obj in self.peek_all(kind)),
            key=lambda obj: int(obj["metadata"]["resourceVersion"]),
        )
        stream = MemoryWatchStream(
            wanted, [WatchEvent("ADDED", obj) for obj in existing], self._close
        )
        self._streams.append(stream)
        return stream

    # -- internals -------------------------------------------------------------------------

    def _scope(self, info: Kind, namespace: str | None) -> str:
        return (namespace or "default") if info.namespaced else ""

    def _require(self, info: Kind, name: str, namespace: str | None) -> Object:
        found = self._store[info.kind].get(self._scope(info, namespace), {}).get(name)
        if found is None:
            raise NotFoundError(f'{info.plural} "{name}" not found')
        return found

    def _new_name(self, info: Kind, meta: dict[str, Any]) -> str:
        name = meta.get("name")
        if name:
            return str(name)
        prefix = meta.get("generateName")
        if not isinstance(prefix, str) or not prefix:
            return ""  # admission says what is missing
        for _ in range(_GENERATE_ATTEMPTS):
            candidate = self._names.name(prefix)
            if self.peek(info.kind, candidate, meta.get("namespace")) is None:
                return candidate
        raise AlreadyExistsError(f"{info.plural}: no free name with prefix {prefix!r}")

    def _check_preconditions(
        self, info: Kind, old: Object, resource_version: Any, uid: Any
    ) -> None:
        stored = old["metadata"]["resourceVersion"]
        if resource_version and str(resource_version) != stored:
            raise ConflictError(
                f'Operation cannot be fulfilled on {info.plural} "{objects.name(old)}": the '
                "object has been modified; please apply your changes to the latest version "
                f"and try again (resourceVersion {resource_version} is not {stored})"
            )
        if uid and uid != objects.uid(old):
            raise ConflictError(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{objects.uid(old)}"
            )

    def _write(self, info: Kind, old: Object, new: Object, subresource: str | None = None
               ) -> Object:
        """Store `new` in place of `old` (server metadata kept, admitted as the server
        admits it), or nothing if unchanged."""
        old_meta = old["metadata"]
        meta = dict(new.get("metadata") or {})
        for field in SERVER_METADATA:
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        new["metadata"] = meta
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        new = admit(info, new, old, subresource, self.kubernetes_version)
        meta = new["metadata"]
        if objects.is_deleting(old):
            added = [f for f in objects.finalizers(new) if f not in objects.finalizers(old)]
            if added:
                raise InvalidError(
                    f'{info.kind} "{objects.name(old)}": metadata.finalizers: Forbidden: no new '
                    f"finalizers can be added if the object is being deleted, found new "
                    f"finalizers {added}"
                )
        if _spec_of(info, new) != _spec_of(info, old):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if new == old:
            return old
        if _removable(new):
            self._remove(info, new)
            return new
        self._commit(info, new, "MODIFIED", old)
        return new

    def _commit(
        self, info: Kind, obj: Object, event: EventType, old: Object | None = None
    ) -> None:
        self._version += 1
        self._kind_versions[info.kind] = self._version
        obj["metadata"]["resourceVersion"] = str(self._version)
        scope = obj["metadata"].get("namespace") or ""
        self.sharing.share(obj)
        if self.before_replace is not None:
            self.before_replace(info.kind, scope, self._store[info.kind].get(scope, {})
                                .get(obj["metadata"]["name"]), obj)
        self._store[info.kind].setdefault(scope, {})[obj["metadata"]["name"]] = obj
        for journal in self._journals.get(info.kind, ()):
            journal.note(scope, obj["metadata"]["name"], obj)
        key: Key = (info.kind, scope, obj["metadata"]["name"])
        self._uids[obj["metadata"]["uid"]] = key
        old_owners = _owner_uids(old) if old is not None else []
        new_owners = _owner_uids(obj)
        if old_owners != new_owners:
            for owner in old_owners:
                self._dependents.get(owner, {}).pop(key, None)
            for owner in new_owners:
                self._dependents.setdefault(owner, {})[key] = None
        self._emit(event, obj)

    def _remove(self, info: Kind, obj: Object) -> None:
        self._version += 1
        self._kind_versions[info.kind] = self._version
        final = dict(obj)
        final["metadata"] = {**obj["metadata"], "resourceVersion": str(self._version)}
        meta = final["metadata"]
        scope = meta.get("namespace") or ""
        if self.before_replace is not None:
            self.before_replace(
                info.kind, scope, self._store[info.kind].get(scope, {}).get(meta["name"]), None)
        items = self._store[info.kind].get(scope, {})
        items.pop(meta["name"], None)
        if not items:
            self._store[info.kind].pop(scope, None)
        self._uids.pop(meta["uid"], None)
        for journal in self._journals.get(info.kind, ()):
            journal.note(scope, meta["name"], None)
        key: Key = (info.kind, scope, meta["name"])
        for owner in _owner_uids(final):
            self._dependents.get(owner, {}).pop(key, None)
        self._emit("DELETED", final)
        self._collect_dependents(meta["uid"])
        if info.kind == "Namespace":
            self._empty_namespace(meta["name"])

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background garbage collection: dependents with no owner left are deleted; those
        with another owner lose the dangling reference."""
        for kind, scope, name in list(self._dependents.pop(owner_uid, {})):
            dependent = self._store[kind].get(scope, {}).get(name)
            if dependent is None:
                continue
            refs = objects.owner_references(dependent)
            alive = [ref for ref in refs if ref.get("uid") in self._uids]
            if alive:
                self.patch(kind, name, {"metadata": {"ownerReferences": alive}}, scope or None)
            else:
                self.delete(kind, name, scope or None)

    def _empty_namespace(self, namespace: str) -> None:
        for kind, info in KINDS.items():
            if not info.namespaced:
                continue
            for name in list(self._store[kind].get(namespace, {})):
                if name in self._store[kind].get(namespace, {}):
                    self.delete(kind, name, namespace)

    def _emit(self, event_type: EventType, obj: Object) -> None:
        kind = obj["kind"]
        listeners = [stream for stream in self._streams if kind in stream.kinds]
        if not listeners:
            return
        event = WatchEvent(event_type, obj)  # the stored version itself (read-only)
        for stream in listeners:
            stream.push(event)

    def _close(self, stream: MemoryWatchStream) -> None:
        if stream in self._streams:
            self._streams.remove(stream)

    def _charge_budget(self, pdb: Object, pod: Object) -> None:
        """Refuse (429) when the budget allows no disruption now; otherwise record the
        eviction in its status, as the eviction API does."""
        namespace = objects.namespace(pod)
        now = self.clock.now()
        status = budgets.compute(pdb, self.peek_all("Pod", namespace), self.scale_of, now)
        spec = pdb.get("spec") or {}
        if not budgets.is_ready(pod):
            if spec.get("unhealthyPodEvictionPolicy") == budgets.ALWAYS_ALLOW:
                return
            if status.current_healthy >= status.desired_healthy > 0:
                return
        if status.error is not None or status.disruptions_allowed <= 0:
            detail = status.error or (
                f"needs {status.desired_healthy} healthy pods and has "
                f"{status.current_healthy} currently"
            )
            raise TooManyRequestsError(
                "Cannot evict pod as it would violate the pod's disruption budget. The "
                f"disruption budget {objects.name(pdb)} {detail}"
            )
        charged = budgets.record_eviction(status, objects.name(pod), now)
        new = dict(pdb)
        new["metadata"] = dict(pdb["metadata"])
        new["status"] = charged.to_status(
            pdb.get("status") or {}, int(pdb["metadata"].get("generation") or 1), now
        )
        self._write(KINDS["PodDisruptionBudget"], pdb, new, "status")

    def scale_of(self, kind: str, namespace: str, name: str) -> int | None:
        """Desired replicas of a pod's controller, as the disruption controller finds it
        (a Deployment's for the pods of its ReplicaSets); None when it has no scale."""
        if kind not in ("ReplicaSet", "Deployment", "StatefulSet"):
            return None
        found = self.peek(kind, name, namespace)
        if found is None:
            return None
        owner = objects.controller_owner(found)
        if kind == "ReplicaSet" and owner is not None and owner.get("kind") == "Deployment":
            return self.scale_of("Deployment", namespace, str(owner.get("name")))
        return _replicas(found)


# ---------------------------------------------------------------------------------------


DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def kind_of_checked(kind: Any) -> Kind:
    """The Kind, or InvalidError naming the unsupported kind."""
    try:
        return kind_of(str(kind))
    except ValueError as error:
        raise InvalidError(str(error)) from None


def _has_labels(obj: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = objects.meta(obj).get("labels") or {}
    return all(labels.get(key) == value for key, value in wanted.items())


def _apply_defaults(info: Kind, obj: Object) -> None:
    """The defaults the API server fills in that controllers read."""
    if info.kind == "Pod":
        spec = obj.setdefault("spec", {})
        spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        spec.setdefault("restartPolicy", "Always")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif info.kind == "PersistentVolumeClaim":
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif info.kind == "Namespace":
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}),
                          "kubernetes.io/metadata.name": meta["name"]}
        obj.setdefault("status", {}).setdefault("phase", "Active")


def _keep_status(info: Kind, old: Object, new: Object) -> None:
    if not info.has_status:
        return
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)


def _with_status_of(info: Kind, old: Object, source: Mapping[str, Any], subresource: str,
                    *, owned: bool = False) -> Object:
    if subresource != "status":
        raise NotFoundError(f"{info.plural} have no subresource {subresource!r} (only status)")
    if not info.has_status:
        raise NotFoundError(f"{info.plural} have no status subresource")
    new = dict(old)
    new["metadata"] = dict(old["metadata"])
    if "status" in source:
        new["status"] = source["status"] if owned else deep_copy(source["status"])
    else:
        new.pop("status", None)
    return new


def _spec_of(info: Kind, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What `generation` tracks: everything but metadata (and status when it is a
    subresource)."""
    skip = ("metadata", "status") if info.has_status else ("metadata",)
    return {key: value for key, value in obj.items() if key not in skip}


def _owner_uids(obj: Mapping[str, Any]) -> list[str]:
    refs = obj["metadata"].get("ownerReferences") or ()
    return [str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")]


def _removable(obj: Mapping[str, Any]) -> bool:
    """Deleting, no finalizer left, and no graceful termination still under way."""
    meta = objects.meta(obj)
    return (
        objects.is_deleting(obj)
        and not meta.get("finalizers")
        and not meta.get("deletionGracePeriodSeconds")
    )


def _after(now: datetime, seconds: int) -> datetime:
    """`seconds` after now, or the calendar's last second when that is further (a grace
    period is any int64; Go's API server wraps around there, we stop at year 9999)."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        return datetime.max.replace(microsecond=0, tzinfo=UTC)


def _pod_grace(pod: Mapping[str, Any], requested: int | None) -> int:
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in TERMINAL_PHASES:
        return 0
    grace = requested if requested is not None else spec.get("terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE_SECONDS if grace is None else int(grace)
    return 1 if grace < 0 else grace


def _ignores_budgets(pod: Mapping[str, Any]) -> bool:
    """Pods the eviction API deletes without asking their budget: not running yet,
    finished, or already being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", *TERMINAL_PHASES) or objects.is_deleting(pod)


def _replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)
