"""The RuntimeClass admission plugin: a pod naming a RuntimeClass gets the class's
`overhead.podFixed` as its `spec.overhead` (counted in its requests, as kube-scheduler
and Karpenter count it) and the class's scheduling nodeSelector and tolerations.

Karpenter itself never reads RuntimeClasses: it sees the overhead the API server wrote.
`nodewright plan` reads manifests no API server admitted, so it applies this first, and
so does the in-memory API server when a pod is created."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.api.quantity import parse_resources

Object = Mapping[str, Any]


class RuntimeClassError(ValueError):
    """The pod cannot be admitted (the message is the API server's)."""


def admitted_spec(spec: Mapping[str, Any], runtime_class: Object | None,
                  name: str) -> dict[str, Any]:
    """The pod spec as the plugin leaves it; `runtime_class` is the one the spec names
    (None: not found)."""
    result = dict(spec)
    if runtime_class is None:
        raise RuntimeClassError(f'pod rejected: RuntimeClass "{name}" not found')
    overhead = (runtime_class.get("overhead") or {}).get("podFixed")
    if overhead:
        given = spec.get("overhead")
        if given and parse_resources(given) != parse_resources(overhead):
            raise RuntimeClassError(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        result["overhead"] = dict(overhead)
    scheduling = runtime_class.get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        mine = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in mine and mine[key] != value:
                raise RuntimeClassError(
                    f"pod rejected: conflict: runtimeClass.scheduling.nodeSelector[{key}] = "
                    f"{value}; pod.spec.nodeSelector[{key}] = {mine[key]}")
            mine[key] = value
        result["nodeSelector"] = mine
    tolerations = scheduling.get("tolerations") or []
    if tolerations:
        mine_tolerations = list(spec.get("tolerations") or [])
        result["tolerations"] = mine_tolerations + [
            t for t in tolerations if t not in mine_tolerations]
    return result


def admit_manifest(body: Mapping[str, Any], classes: Mapping[str, Object]) -> Mapping[str, Any]:
    """A Pod or workload manifest with its pod spec admitted; unchanged when it names no
    RuntimeClass or one not among `classes` (left to the caller to report)."""
    if body.get("kind") == "Pod":
        spec = body.get("spec")
        name = spec.get("runtimeClassName") if isinstance(spec, Mapping) else None
        if not name or name not in classes:
            return body
        return {**body, "spec": admitted_spec(spec, classes[name], name)}  # type: ignore[arg-type]
    spec = body.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    pod_spec = template.get("spec") if isinstance(template, Mapping) else None
    name = pod_spec.get("runtimeClassName") if isinstance(pod_spec, Mapping) else None
    if not name or name not in classes:
        return body
    assert isinstance(spec, Mapping) and isinstance(template, Mapping)
    admitted = admitted_spec(pod_spec, classes[name], name)  # type: ignore[arg-type]
    return {**body, "spec": {**spec, "template": {**template, "spec": admitted}}}
