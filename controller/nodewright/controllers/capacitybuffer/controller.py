"""The CapacityBuffer controller (Karpenter's capacitybuffer controller, behind the
CapacityBuffer gate): resolves each buffer's chunk (its PodTemplate, or the pod template
of the Deployment, StatefulSet or ReplicaSet its scalableRef names) and how many chunks to
keep, writes that to the buffer's status with ReadyForProvisioning, and hands the virtual
pods to the provisioner (`state.buffers`).

The count follows Cluster Autoscaler as Karpenter does: the larger of `replicas` and
`percentage` (of the workload's replicas, rounded up, at least 1), capped by how many
chunks fit `limits`; with neither, as many as fit `limits`. A missing PodTemplate or
workload is the user's to fix (ReadyForProvisioning False, looked at again on the usual
30 s requeue or when the referent appears); anything else (an unsupported kind or API
group, an API error) fails the reconcile after the status is written, so the driver logs
it and retries with backoff, as controller-runtime does with Karpenter's error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodewright.api.capacitybuffer import (
    READY_FOR_PROVISIONING,
    SCALABLE_KINDS,
)
from nodewright.api.quantity import parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import FALSE, TRUE, set_condition
from nodewright.cluster.copying import copy_object, deep_copy
from nodewright.controllers.common.patching import patch_status
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.scheduling.pods import Pod, SpecError, parse_pod_spec
from nodewright.state import ClusterState
from nodewright.state.buffers import BufferPods, virtual_pods

REQUEUE_SECONDS = 30.0
RETRY_SECONDS = 1.0

# Reasons of ReadyForProvisioning (Karpenter's constants.go).
RESOLVED = "Resolved"
SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
RESOLUTION_FAILED = "ResolutionFailed"


class ResolveError(Exception):
    """Why a buffer did not resolve: the ReadyForProvisioning reason, and whether the
    reconcile fails (retried with backoff) rather than waiting for the referent."""

    def __init__(self, reason: str, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry = retry


class Resolution:
    """A buffer's chunk and what its status records about where it came from."""

    def __init__(self, shape: Pod, *, template: Mapping[str, Any] | None = None,
                 workload_replicas: int | None = None) -> None:
        self.shape = shape
        self.template = template
        self.workload_replicas = workload_replicas


class CapacityBufferController:
    name = "capacitybuffer"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        if state.buffers is None:
            state.buffers = BufferPods()
        self.buffers: BufferPods = state.buffers
        self._watches = (
            Watch("CapacityBuffer"),
            Watch("PodTemplate", keys=self._from_template),
            *(Watch(kind, keys=self._from_workload) for kind in SCALABLE_KINDS),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    # -- triggers ------------------------------------------------------------------------

    def _referring(self, namespace: str, match: Any) -> Iterable[str]:
        try:
            buffers = self.cluster.list("CapacityBuffer", namespace=namespace)
        except ApiError:
            return ()
        return [objects.key(b) for b in buffers if match(b.get("spec") or {})]

    def _from_template(self, event: WatchEvent) -> Iterable[str]:
        name = objects.name(event.object)
        return self._referring(objects.namespace(event.object) or "default", lambda spec: (
            (spec.get("podTemplateRef") or {}).get("name") == name))

    def _from_workload(self, event: WatchEvent) -> Iterable[str]:
        name = objects.name(event.object)
        kind = event.kind

        def refers(spec: Mapping[str, Any]) -> bool:
            ref = spec.get("scalableRef") or {}
            return bool(ref.get("kind") == kind and ref.get("name") == name
                        and (ref.get("apiGroup") or "apps") == "apps")

        return self._referring(objects.namespace(event.object) or "default", refers)

    # -- one buffer ----------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        try:
            raw = self.cluster.get("CapacityBuffer", name, namespace)
        except NotFoundError:
            self.buffers.remove(key)
            return Result()
        before = copy_object(raw)
        after = deep_copy(before)
        spec: Mapping[str, Any] = after.get("spec") or {}
        status: dict[str, Any] = after.setdefault("status", {})
        now = self.clock.now()
        error: ResolveError | None = None
        try:
            resolution = self._resolve(namespace, spec)
        except ResolveError as failure:
            error = failure
            set_condition(after, READY_FOR_PROVISIONING, FALSE, now, failure.reason,
                          str(failure))
            self.buffers.remove(key)
        else:
            replicas = compute_replicas(spec, resolution)
            if resolution.template is not None:
                status["podTemplateRef"] = {"name": objects.name(resolution.template)}
                status["podTemplateGeneration"] = int(
                    (resolution.template.get("metadata") or {}).get("generation") or 0)
            else:
                status.pop("podTemplateRef", None)
                status.pop("podTemplateGeneration", None)
            status["replicas"] = replicas
            set_condition(after, READY_FOR_PROVISIONING, TRUE, now, RESOLVED,
                          "Pod template resolved successfully")
            self.buffers.update(key, virtual_pods(namespace, name, resolution.shape, replicas))
        if spec.get("provisioningStrategy") is not None:
            status["provisioningStrategy"] = spec["provisioningStrategy"]
        try:
            patch_status(self.cluster, before, after)
        except (ConflictError, NotFoundError):
            return Result(requeue_after=RETRY_SECONDS)
        if error is not None and error.retry:
            raise error
        return Result(requeue_after=REQUEUE_SECONDS)

    def _resolve(self, namespace: str, spec: Mapping[str, Any]) -> Resolution:
        template_ref = spec.get("podTemplateRef")
        scalable_ref = spec.get("scalableRef")
        if template_ref:
            template_name = str(template_ref.get("name") or "")
            template = self._get("PodTemplate", template_name, namespace,
                                 f'podtemplates "{template_name}" not found',
                                 POD_TEMPLATE_NOT_FOUND)
            body = template.get("template") or {}
            return Resolution(_shape(namespace, template_name, body, "template"),
                              template=template)
        if scalable_ref:
            group = str(scalable_ref.get("apiGroup") or "apps")
            if group != "apps":
                raise ResolveError(RESOLUTION_FAILED,
                                   f'unsupported scalableRef API group "{group}"', retry=True)
            kind = str(scalable_ref.get("kind") or "")
            if kind not in SCALABLE_KINDS:
                raise ResolveError(RESOLUTION_FAILED, f'unsupported kind "{kind}"', retry=True)
            workload_name = str(scalable_ref.get("name") or "")
            workload = self._get(kind, workload_name, namespace,
                                 f'{kind.lower()}s.apps "{workload_name}" not found',
                                 SCALABLE_REF_NOT_FOUND)
            workload_spec = workload.get("spec") or {}
            count = workload_spec.get("replicas")
            return Resolution(
                _shape(namespace, workload_name, workload_spec.get("template") or {},
                       "spec.template"),
                workload_replicas=count if isinstance(count, int) else 1)
        raise ResolveError(RESOLUTION_FAILED, "Neither podTemplateRef nor scalableRef is set",
                           retry=False)

    def _get(self, kind: str, name: str, namespace: str, missing: str,
             reason: str) -> dict[str, Any]:
        try:
            return self.cluster.get(kind, name, namespace)
        except NotFoundError:
            raise ResolveError(reason, missing, retry=False) from None
        except ApiError as error:
            raise ResolveError(RESOLUTION_FAILED, str(error), retry=True) from None


def _shape(namespace: str, name: str, template: Mapping[str, Any], path: str) -> Pod:
    labels = (template.get("metadata") or {}).get("labels") or {}
    try:
        return parse_pod_spec(namespace, name, dict(labels), template.get("spec") or {},
                              f"{path}.spec")
    except SpecError as error:
        raise ResolveError(RESOLUTION_FAILED, str(error), retry=False) from None


def percentage_replicas(workload_replicas: int, percentage: int) -> int:
    """ceil(replicas * percentage / 100), at least 1 when both are positive."""
    count = math.ceil(workload_replicas * percentage / 100)
    if count < 1 and percentage > 0 and workload_replicas > 0:
        return 1
    return count


def limit_replicas(limits: Mapping[str, Any], requests: Mapping[str, int]) -> int | None:
    """How many chunks fit `limits`: the least floor(limit / request) over the resources
    both name; None when they share none (the limits then constrain nothing)."""
    fits: list[int] = []
    for resource, raw in limits.items():
        request = requests.get(resource, 0)
        if resource == "pods" or request <= 0:
            continue  # Karpenter's requests of a spec do not count pods
        fits.append(min(parse_quantity(str(raw)) // request, 2**31 - 1))
    return min(fits) if fits else None


def compute_replicas(spec: Mapping[str, Any], resolution: Resolution) -> int:
    candidates: list[int] = []
    percentage = spec.get("percentage")
    workload = resolution.workload_replicas
    if isinstance(percentage, int) and workload:
        candidates.append(percentage_replicas(workload, percentage))
    if isinstance(spec.get("replicas"), int):
        candidates.append(int(spec["replicas"]))
    desired = max(candidates) if candidates else 0
    limits = spec.get("limits")
    if limits:
        fit = limit_replicas(limits, resolution.shape.requests)
        if fit is not None:
            return min(desired, fit) if candidates else fit
    return desired
