"""The pods the state cache knows: their objects, which ones wait for capacity, which node
each is bound to with its requests, and each pod parsed once for the solver.

A pod is parsed when its spec (apart from `nodeName`) or labels change, not on every
status update, so a solve over ten thousand pods reads cached models. Replicas share one
model (renamed): the API server stores their equal labels and spec fields as the same
objects, so the parse of one is found for the next by those objects' identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from nodewright.api.quantity import PODS
from nodewright.scheduling.pods import Pod, SpecError, parse_pod_spec, resize_signature
from nodewright.state import podutil
from nodewright.state.statenode import NodePods

Object = Mapping[str, Any]
_UNPARSABLE_REQUESTS: Mapping[str, int] = {PODS: 1000}
# Namespace, owner, labels and spec fields but nodeName, by identity, and the status
# resources of resized pods (the kubelet reports them for every running container).
_ReplicaKey = tuple[str, str | None, int, tuple[tuple[str, int], ...], Any]
# Beyond this many more replica entries than parsed pods, the replica cache starts over.
_REPLICA_SLACK = 64


@dataclass(slots=True)
class _Replica:
    """A parsed model and the objects its key names by identity (kept alive with it, so
    their ids are not reused while the entry exists)."""

    labels: Mapping[str, Any]
    spec: Mapping[str, Any]
    model: Pod


def _replica_key(namespace: str, owner: str | None, labels: Mapping[str, Any],
                 spec: Mapping[str, Any], resize: Any = None) -> _ReplicaKey:
    fields = tuple((field, id(value)) for field, value in spec.items() if field != "nodeName")
    return (namespace, owner, id(labels), fields, resize)


def pod_key(pod: Object) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


@dataclass(slots=True)
class _Parsed:
    uid: str
    spec: Mapping[str, Any]
    labels: Mapping[str, Any]
    owner: str | None
    model: Pod | None
    error: SpecError | None
    # The status resources of a resized pod (None for nearly all pods).
    resize: Any = None
    # The object last found to parse to this (objects are replaced, never changed in
    # place): the same object again needs no look at its fields.
    source: object = None


def _same_spec(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Equal apart from `nodeName` (binding a pod does not change how it is parsed)."""
    keys = set(old) | set(new)
    keys.discard("nodeName")
    return all(old.get(key) == new.get(key) for key in keys)


class PodStore:
    def __init__(self) -> None:
        self.objects: dict[str, Object] = {}
        self.pending: dict[str, None] = {}
        self.bindings: dict[str, str] = {}
        self.by_node: dict[str, NodePods] = {}
        self._parsed: dict[str, _Parsed] = {}
        self._replicas: dict[_ReplicaKey, _Replica] = {}
        # The parsed models of each node's bound pods (`bound_models`), dropped whenever
        # a pod joins, leaves or changes on that node: every change of a pod object goes
        # through `update` or `delete` (objects are replaced, never edited in place).
        self._bound_models: dict[str, list[Pod]] = {}
        # The objects of each node's bound pods (`on_node`), dropped as `_bound_models`:
        # a disruption pass reads every node's pods, most of them as they were.
        self._bound_objects: dict[str, tuple[Object, ...]] = {}

    def copy(self) -> PodStore:
        """A copy later updates do not change (the objects and models are shared)."""
        copied = PodStore()
        copied.objects = dict(self.objects)
        copied.pending = dict(self.pending)
        copied.bindings = dict(self.bindings)
        copied.by_node = {name: pods.copy() for name, pods in self.by_node.items()}
        copied._parsed = {key: _Parsed(p.uid, p.spec, p.labels, p.owner, p.model, p.error,
                                       p.resize, p.source)
                          for key, p in self._parsed.items()}
        copied._replicas = dict(self._replicas)
        # The lists are never changed once made: the copy shares them.
        copied._bound_models = dict(self._bound_models)
        copied._bound_objects = dict(self._bound_objects)
        return copied

    def node_pods(self, node_name: str) -> NodePods:
        pods = self.by_node.get(node_name)
        if pods is None:
            pods = self.by_node[node_name] = NodePods()
        return pods

    def update(self, pod: Object) -> tuple[str | None, str | None]:
        """Take a new version; returns (node it left, node it joined) when its binding
        changed (None when it did not)."""
        key = pod_key(pod)
        self.objects[key] = pod
        if podutil.is_provisionable(pod):
            self.pending[key] = None
            # Parsed as it arrives (an informer decodes objects as they come, too), so a
            # solve over ten thousand pending pods starts from ready models.
            self._parse(key)
        else:
            self.pending.pop(key, None)
        node = podutil.node_name(pod)
        if podutil.is_terminal(pod) or not node:
            return self._unbind(key), None
        previous = self.bindings.get(key)
        left = self._unbind(key) if previous is not None and previous != node else None
        pods = self.node_pods(node)
        joined = node if key not in pods.requests else None
        pods.put(key, self.requests(key), podutil.is_owned_by_daemonset(pod))
        self._bound_models.pop(node, None)
        self._bound_objects.pop(node, None)
        self.bindings[key] = node
        return left, joined

    def delete(self, pod: Object) -> str | None:
        """Forget a pod; returns the node it was bound to."""
        key = pod_key(pod)
        self.objects.pop(key, None)
        self.pending.pop(key, None)
        self._parsed.pop(key, None)
        return self._unbind(key)

    def _unbind(self, key: str) -> str | None:
        node = self.bindings.pop(key, None)
        if node is None:
            return None
        self._bound_models.pop(node, None)
        self._bound_objects.pop(node, None)
        pods = self.by_node.get(node)
        if pods is not None:
            # The (possibly empty) entry stays: a StateNode may hold it.
            pods.remove(key)
        return node

    # -- parsed models -------------------------------------------------------------------

    def _parse(self, key: str) -> _Parsed:
        pod = self.objects[key]
        cached = self._parsed.get(key)
        if cached is not None and cached.source is pod:
            return cached
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        labels = metadata.get("labels") or {}
        uid = str(metadata.get("uid") or "")
        # A resized pod's requests depend on its status too.
        resize = resize_signature(pod.get("status"))
        if (
            cached is not None
            and cached.uid == uid
            and cached.labels == labels
            and cached.resize == resize
            and (cached.spec is spec or _same_spec(cached.spec, spec))
        ):
            cached.spec = spec
            cached.source = pod
            return cached
        owner = podutil.controller_owner(pod)
        namespace, name = key.split("/", 1)
        replica_key = _replica_key(namespace, owner, labels, spec, resize)
        replica = self._replicas.get(replica_key)
        if replica is not None:
            node = spec.get("nodeName")
            parsed = _Parsed(uid, spec, labels, owner, replace(
                replica.model, name=name, node_name=str(node) if node else None), None, resize,
                pod)
            self._parsed[key] = parsed
            return parsed
        try:
            model = parse_pod_spec(namespace, name, dict(labels), spec, "spec", owner,
                                   status=pod.get("status") if resize is not None else None)
            parsed = _Parsed(uid, spec, labels, owner, model, None, resize, pod)
        except SpecError as error:
            parsed = _Parsed(uid, spec, labels, owner, None, error, resize, pod)
        else:
            if len(self._replicas) > len(self._parsed) + _REPLICA_SLACK:
                self._replicas.clear()
            self._replicas[replica_key] = _Replica(labels, spec, model)
        self._parsed[key] = parsed
        return parsed

    def model(self, key: str) -> Pod:
        """The solver's view of the pod (its `node_name` as the latest object says).
        Raises SpecError (naming the field) when the pod cannot be read, KeyError when
        the pod is unknown."""
        parsed = self._parse(key)
        if parsed.model is None:
            assert parsed.error is not None
            raise parsed.error
        node = podutil.node_name(self.objects[key]) or None
        if parsed.model.node_name != node:
            parsed.model = replace(parsed.model, node_name=node)
        return parsed.model

    def bound_models(self, node_name: str) -> list[Pod]:
        """The models of the pods bound to the node, in binding order (`model` of each;
        pods that cannot be read or are unknown are left out). Kept until a pod of the
        node changes, joins or leaves, so a solve over thousands of nodes reads each
        untouched node's list as it was (the very same models)."""
        models = self._bound_models.get(node_name)
        if models is None:
            pods = self.by_node.get(node_name)
            models = []
            for key in pods.requests if pods is not None else ():
                try:
                    models.append(self.model(key))
                except (KeyError, ValueError):
                    continue
            self._bound_models[node_name] = models
        return models

    def requests(self, key: str) -> Mapping[str, int]:
        parsed = self._parse(key)
        return parsed.model.requests if parsed.model is not None else _UNPARSABLE_REQUESTS

    def on_node(self, node_name: str) -> tuple[Object, ...]:
        """The objects of the pods bound to the node, in binding order."""
        found = self._bound_objects.get(node_name)
        if found is None:
            pods = self.by_node.get(node_name)
            found = () if pods is None else tuple(
                pod for key in pods.requests if (pod := self.objects.get(key)) is not None)
            self._bound_objects[node_name] = found
        return found
