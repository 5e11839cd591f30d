"""The configuration objects the state cache keeps: NodePools and EC2NodeClasses (with
their validated models), DaemonSets (parsed for the solver), Namespaces' labels and
PodDisruptionBudgets. Each model is built once per object version; an object that does
not validate keeps the reason, which the controllers report."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import format_path
from nodewright.api.rules import Finding, check_nodepool_runtime
from nodewright.scheduling.pods import DaemonSet, SpecError, daemonset_from_manifest

Object = Mapping[str, Any]
M = TypeVar("M")
T = TypeVar("T")


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def object_key(obj: Object) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata.get('name', '')}" if namespace else str(metadata.get("name"))


@dataclass
class Parsed(Generic[M]):
    """A model, or why the object could not become one."""

    source: Object
    model: M | None
    problem: str | None


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for detail in error.errors()[:5]:
        location = ".".join(str(part) for part in detail.get("loc", ()))
        parts.append(f"{location}: {detail.get('msg', '')}" if location else detail["msg"])
    return "; ".join(parts)


def _without_status(obj: Object) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key != "status"}


def with_copied_containers(obj: T) -> T:
    """A shallow copy of `obj` whose dict, set and list attributes are copies too (one
    level: what they hold is shared)."""
    copied = copy.copy(obj)
    for name, value in vars(obj).items():
        if isinstance(value, dict | set | list):
            setattr(copied, name, copy.copy(value))
    return copied


class ModelCache(Generic[M]):
    """Objects of one cluster-scoped kind by name, each validated lazily into a model;
    `runtime` finds what the API server let through but the controller refuses (the first
    finding is the object's problem)."""

    def __init__(self, model_type: type[M],
                 runtime: Callable[[M], Iterable[Finding]] | None = None) -> None:
        self._type = model_type
        self._runtime = runtime
        self.objects: dict[str, Object] = {}
        self._parsed: dict[str, Parsed[M]] = {}

    def put(self, obj: Object) -> None:
        name = _name(obj)
        self.objects[name] = obj
        self._parsed.pop(name, None)

    def remove(self, obj: Object) -> None:
        name = _name(obj)
        self.objects.pop(name, None)
        self._parsed.pop(name, None)

    def get(self, name: str) -> Object | None:
        return self.objects.get(name)

    def parsed(self, name: str) -> Parsed[M] | None:
        obj = self.objects.get(name)
        if obj is None:
            return None
        cached = self._parsed.get(name)
        if cached is not None and cached.source is obj:
            return cached
        try:
            model = self._type.model_validate(_without_status(obj))  # type: ignore[attr-defined]
            finding = next(iter(self._runtime(model)), None) if self._runtime else None
            cached = (Parsed(obj, model, None) if finding is None else
                      Parsed(obj, None, f"{format_path(finding[0])}: {finding[1]}"))
        except ValidationError as error:
            cached = Parsed(obj, None, describe_validation_error(error))
        self._parsed[name] = cached
        return cached

    def model(self, name: str) -> M | None:
        parsed = self.parsed(name)
        return parsed.model if parsed is not None else None


def _daemonset_owner(pod: Object) -> str | None:
    """The uid of the DaemonSet controlling the pod, if one does."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("kind") == "DaemonSet" and ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def _created(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("creationTimestamp") or "")


def _sized_by_pod(daemonset: Object, pod: Object) -> Object:
    """The DaemonSet with its pod's spec as template (Karpenter's getDaemonSetPods): the
    pod's requests count (a LimitRange or webhook may have changed them), but not the node
    its controller pinned it to; the template's required node affinity stays."""
    template = ((daemonset.get("spec") or {}).get("template")) or {}
    template_affinity = ((template.get("spec") or {}).get("affinity") or {}).get("nodeAffinity")
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    required = (template_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    else:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
    return {**daemonset, "spec": {**(daemonset.get("spec") or {}),
                                  "template": {**template, "spec": spec}}}


class DaemonSetCache:
    """DaemonSets parsed for the solver; one that cannot be read is left out (and named).
    A DaemonSet is sized by its newest pod once it has one (Karpenter's daemonset
    informer), by its template before."""

    def __init__(self) -> None:
        self.objects: dict[str, Object] = {}
        self._models: list[DaemonSet] | None = None
        # The models last made, by key: one made again equal is taken as it was, so that
        # what solvers keep by the DaemonSets' identity (`PreparedNodes`) stays valid
        # when a DaemonSet's newest pod changes but not what it requests.
        self._made: dict[str, DaemonSet] = {}
        self.problems: dict[str, str] = {}
        # The newest pod of each DaemonSet, by the DaemonSet's uid.
        self._pods: dict[str, Object] = {}

    def observe_pod(self, pod: Object, deleted: bool) -> None:
        owner = _daemonset_owner(pod)
        if owner is None:
            return
        held = self._pods.get(owner)
        same = held is not None and object_key(held) == object_key(pod)
        if deleted:
            if same:
                del self._pods[owner]
                self._models = None
            return
        if held is not None and not same and _created(pod) < _created(held):
            return
        if not same or (held or {}).get("spec") != pod.get("spec"):
            self._models = None
        self._pods[owner] = pod

    def put(self, obj: Object) -> None:
        self.objects[object_key(obj)] = obj
        self._models = None

    def remove(self, obj: Object) -> None:
        self.objects.pop(object_key(obj), None)
        self._models = None

    def models(self) -> list[DaemonSet]:
        if self._models is None:
            made: dict[str, DaemonSet] = {}
            self.problems = {}
            for key, obj in sorted(self.objects.items()):
                try:
                    model = self._model(obj)
                except SpecError as error:
                    self.problems[key] = str(error)
                    continue
                before = self._made.get(key)
                made[key] = before if before is not None and before == model else model
            self._made = made
            self._models = list(made.values())
        return self._models

    def _model(self, obj: Object) -> DaemonSet:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        pod = self._pods.get(uid) if uid else None
        if pod is not None:
            try:
                return daemonset_from_manifest(_sized_by_pod(obj, pod))
            except SpecError:
                pass  # sized by its template, as before it had a pod
        return daemonset_from_manifest(obj)


class StorageObjects:
    """PersistentVolumeClaims, PersistentVolumes, StorageClasses (a `VolumeLookup`),
    VolumeAttachments and CSINodes (each node's attach limits)."""

    def __init__(self) -> None:
        self.claims: dict[str, Object] = {}
        self.volumes: dict[str, Object] = {}
        self.classes: dict[str, Object] = {}
        self.attachments: dict[str, Object] = {}
        self.csi_nodes: dict[str, Object] = {}

    def claim(self, namespace: str, name: str) -> Object | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> Object | None:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> Object | None:
        return self.classes.get(name)

    def attachments_on(self, node_name: str) -> list[Object]:
        return [
            attachment for _, attachment in sorted(self.attachments.items())
            if (attachment.get("spec") or {}).get("nodeName") == node_name
        ]

    def attach_limits(self, node_name: str) -> dict[str, int]:
        """Volumes each CSI driver can attach to the node (its CSINode's allocatable)."""
        csi_node = self.csi_nodes.get(node_name)
        limits: dict[str, int] = {}
        for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or []:
            count = (driver.get("allocatable") or {}).get("count")
            if isinstance(count, int) and driver.get("name"):
                limits[str(driver["name"])] = count
        return limits

    def observe(self, kind: str, obj: Object, deleted: bool) -> bool:
        store = {
            "PersistentVolumeClaim": self.claims,
            "PersistentVolume": self.volumes,
            "StorageClass": self.classes,
            "VolumeAttachment": self.attachments,
            "CSINode": self.csi_nodes,
        }.get(kind)
        if store is None:
            return False
        key = object_key(obj)
        if deleted:
            store.pop(key, None)
        else:
            store[key] = obj
        return True


class ConfigObjects:
    """Everything in the cluster that shapes scheduling but is not a pod or a machine."""

    def __init__(self) -> None:
        self.nodepools: ModelCache[NodePool] = ModelCache(NodePool, check_nodepool_runtime)
        self.node_classes: ModelCache[EC2NodeClass] = ModelCache(EC2NodeClass)
        self.overlays: ModelCache[NodeOverlay] = ModelCache(NodeOverlay)
        self.daemonsets = DaemonSetCache()
        self.namespaces: dict[str, dict[str, str]] = {}
        self.pdbs: dict[str, Object] = {}
        self.storage = StorageObjects()

    def observe(self, kind: str, obj: Object, deleted: bool) -> bool:
        """Take an event of a kind this class keeps; False for any other kind."""
        if kind == "NodePool":
            (self.nodepools.remove if deleted else self.nodepools.put)(obj)
        elif kind == "EC2NodeClass":
            (self.node_classes.remove if deleted else self.node_classes.put)(obj)
        elif kind == "NodeOverlay":
            (self.overlays.remove if deleted else self.overlays.put)(obj)
        elif kind == "DaemonSet":
            (self.daemonsets.remove if deleted else self.daemonsets.put)(obj)
        elif kind == "Namespace":
            name = _name(obj)
            if deleted:
                self.namespaces.pop(name, None)
            else:
                labels = dict((obj.get("metadata") or {}).get("labels") or {})
                labels["kubernetes.io/metadata.name"] = name
                self.namespaces[name] = labels
        elif kind == "PodDisruptionBudget":
            key = object_key(obj)
            if deleted:
                self.pdbs.pop(key, None)
            else:
                self.pdbs[key] = obj
        else:
            return self.storage.observe(kind, obj, deleted)
        return True

    def copy(self) -> ConfigObjects:
        copied = with_copied_containers(self)
        for name, value in vars(self).items():
            if isinstance(value, ModelCache | DaemonSetCache | StorageObjects):
                setattr(copied, name, with_copied_containers(value))
        return copied
