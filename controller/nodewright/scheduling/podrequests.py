"""A pod's requests as the Kubernetes scheduler computes them (k8s.io/component-helpers
v0.35 `resource.PodRequests`, which Karpenter v1.14 calls with `UseStatusResources`).

- Containers are summed; restartable init containers (sidecars, `restartPolicy: Always`)
  are summed with them; each other init container runs alone beside the sidecars started
  before it, and the pod needs the larger of that peak and the running total.
- Pod-level resources (`spec.resources`, KEP-2837) replace the container total for the
  resources they set (cpu, memory and hugepages-* only).
- A container whose status reports resources (in-place resize, KEP-1287) counts the
  largest of its spec, its status `resources.requests` and `allocatedResources`; when
  the pod's resize is marked infeasible (condition `PodResizePending`, reason
  `Infeasible`), the spec is left out (it will not be applied). For init containers this
  applies to sidecars only.
- Pod overhead (`spec.overhead`) is added last.

Parsing the manifest into these pieces is `scheduling.pods`' job; here is only the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.quantity import Resources, add, maximum


@dataclass(frozen=True, slots=True)
class ContainerResources:
    name: str
    # What the API server stores: a request missing from the manifest defaults to its limit.
    requests: Resources
    # An init container with `restartPolicy: Always` (a sidecar).
    restartable: bool = False
    limits: Resources = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ContainerStatusResources:
    """What `status.(init)containerStatuses[]` reports for a container whose `resources`
    are set (the kubelet reports them once it supports in-place resize)."""

    requests: Resources
    allocated: Resources = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodResources:
    containers: Sequence[ContainerResources] = ()
    init_containers: Sequence[ContainerResources] = ()
    # spec.resources (pod-level); both as written in the manifest.
    pod_requests: Resources = field(default_factory=dict)
    pod_limits: Resources = field(default_factory=dict)
    overhead: Resources = field(default_factory=dict)
    # By container name.
    statuses: Mapping[str, ContainerStatusResources] = field(default_factory=dict)
    resize_infeasible: bool = False


def is_pod_level_resource(name: str) -> bool:
    """The resources pod-level `spec.resources` may set (IsSupportedPodLevelResource)."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _effective(pod: PodResources, container: ContainerResources) -> Resources:
    status = pod.statuses.get(container.name)
    if status is None:
        return container.requests
    if pod.resize_infeasible:
        return maximum([status.requests, status.allocated])
    return maximum([container.requests, status.requests, status.allocated])


def _aggregate(pod: PodResources,
               amounts: Callable[[ContainerResources, bool], Resources]) -> Resources:
    """Containers and sidecars summed, or the init containers' peak where larger: an init
    container runs beside the sidecars started before it. `amounts(container, runs)`:
    `runs` is False for an init container that runs to completion."""
    total = add(*(amounts(container, True) for container in pod.containers))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in pod.init_containers:
        if container.restartable:
            own = amounts(container, True)
            total = add(total, own)
            sidecars = add(sidecars, own)
            init_peak = maximum([init_peak, sidecars])
        else:
            init_peak = maximum([init_peak, add(amounts(container, False), sidecars)])
    return maximum([total, init_peak])


def container_requests(pod: PodResources) -> Resources:
    """AggregateContainerRequests, with the status resources of resized containers (those
    that keep running: the kubelet resizes no init container that runs to completion)."""
    return _aggregate(pod, lambda container, runs: (
        _effective(pod, container) if runs else container.requests))


def pod_level_requests(pod: PodResources, containers: Mapping[str, int]) -> Resources:
    """spec.resources.requests as the API server stores it: a resource with a pod-level
    limit but no pod-level request defaults to the containers' total when they request
    it, else to the limit."""
    requests = {name: amount for name, amount in pod.pod_requests.items()
                if is_pod_level_resource(name)}
    if not pod.pod_limits:
        return requests
    for name, limit in pod.pod_limits.items():
        if name in requests or not is_pod_level_resource(name):
            continue
        requests[name] = containers.get(name, limit)
    return requests


def pod_limits(pod: PodResources) -> Resources:
    """PodLimits (spec only, as Karpenter's Ceiling takes them): containers (or pod-level
    limits where set), overhead added to every non-zero limit."""
    total = _aggregate(pod, lambda container, _: container.limits)
    total.update({name: amount for name, amount in pod.pod_limits.items()
                  if is_pod_level_resource(name)})
    for name, amount in pod.overhead.items():
        if total.get(name):
            total[name] += amount
    return {name: amount for name, amount in total.items() if amount}


def pod_requests(pod: PodResources) -> Resources:
    """PodRequests(pod, UseStatusResources): containers (or pod-level where set), plus
    overhead. Resources of zero are kept out."""
    total = container_requests(pod)
    total.update(pod_level_requests(pod, total))
    total = add(total, pod.overhead)
    return {name: amount for name, amount in total.items() if amount}
