"""Pods parsed with the scheduling package's model, cached per pod.

The store never modifies a stored object in place and keeps the `labels` and the parts of
`spec` that a write does not touch (status updates, most patches, binding), so a parse
stays valid while the labels and every spec field but nodeName are the same objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from nodewright.cluster import objects
from nodewright.scheduling.pods import Pod, SpecError, parse_pod_spec, resize_signature


@dataclass(frozen=True, slots=True)
class ParsedPod:
    pod: Pod | None
    error: str | None
    # Pods with the same signature are interchangeable for scheduling.
    signature: str


@dataclass(slots=True)
class _Entry:
    spec: Any
    labels: Any
    parsed: ParsedPod
    resize: Any = None
    # The object last found to parse to this: the very same object again (the store
    # replaces objects, it never changes one in place) needs no look at its fields.
    source: object = None


class PodParser:
    def __init__(self) -> None:
        self._cache: dict[str, _Entry] = {}
        # Replicas share a spec: parse it once and rename.
        self._by_signature: dict[str, ParsedPod] = {}

    def parse(self, obj: Mapping[str, Any]) -> ParsedPod:
        meta = obj["metadata"]
        uid = str(meta.get("uid"))
        entry = self._cache.get(uid)
        if entry is not None and entry.source is obj:
            return entry.parsed
        spec, labels = obj.get("spec"), meta.get("labels")
        # A resized pod's requests depend on its status too.
        resize = resize_signature(obj.get("status"))
        if (entry is not None and entry.labels is labels and entry.resize == resize
                and _same_spec(entry.spec, spec)):
            entry.source = obj
            return entry.parsed
        signature = _signature(obj, resize)
        known = self._by_signature.get(signature)
        if known is not None and known.pod is not None:
            # The replica's ParsedPod keeps the first one's signature string, not its own
            # equal copy: ten thousand replicas hold a few signatures, not ten thousand.
            parsed = ParsedPod(replace(known.pod, name=str(meta["name"])), None, known.signature)
        else:
            parsed = _parse(obj, signature)
            self._by_signature[signature] = parsed
        self._cache[uid] = _Entry(spec, labels, parsed, resize, obj)
        return parsed

    def forget(self, gone_uids: Iterable[str]) -> None:
        """Drop the parses of pods no longer stored."""
        cache = self._cache
        for uid in gone_uids:
            cache.pop(uid, None)
        if len(self._by_signature) > len(cache):
            live = {entry.parsed.signature for entry in cache.values()}
            self._by_signature = {
                sig: parsed for sig, parsed in self._by_signature.items() if sig in live
            }


def _same_spec(old: Any, new: Any) -> bool:
    """The same spec but for nodeName, judged by identity of its fields."""
    if old is new:
        return True
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    keys = old.keys() | new.keys()
    keys.discard("nodeName")
    return all(old.get(key) is new.get(key) for key in keys)


def _signature(obj: Mapping[str, Any], resize: Any = None) -> str:
    """Equal for pods that schedule alike: namespace, labels, owner, spec (but nodeName)
    and the status resources of a resized pod."""
    spec = dict(obj.get("spec") or {})
    spec.pop("nodeName", None)
    owner = objects.controller_owner(obj)
    owner_key = (owner.get("kind"), owner.get("name")) if owner else None
    return repr((objects.namespace(obj), sorted(objects.labels(obj).items()), owner_key, spec,
                 resize))


def _parse(obj: Mapping[str, Any], signature: str) -> ParsedPod:
    namespace = objects.namespace(obj)
    labels = objects.labels(obj)
    owner = objects.controller_owner(obj)
    owner_key = f"{owner.get('kind')}/{owner.get('name')}" if owner else None
    try:
        pod = parse_pod_spec(namespace, objects.name(obj), labels, obj.get("spec"), "spec",
                             owner_key, status=obj.get("status"))
    except SpecError as error:
        return ParsedPod(None, f"pod {namespace}/{objects.name(obj)}: {error}", signature)
    return ParsedPod(pod, None, signature)
