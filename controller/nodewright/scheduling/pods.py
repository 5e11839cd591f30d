"""What the solver needs to know about pods, DaemonSets and Nodes, parsed from Kubernetes dicts.

Pods come from Pod manifests or from controllers (Deployment, ReplicaSet, StatefulSet,
Job) expanded into one pod per replica. Malformed input raises `SpecError` with the
field path and what is wrong; callers turn it into a problem report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.api.quantity import PODS, Resources, parse_resources
from nodewright.scheduling.podrequests import (
    ContainerResources,
    ContainerStatusResources,
    PodResources,
)
from nodewright.scheduling.podrequests import pod_limits as compute_pod_limits
from nodewright.scheduling.podrequests import pod_requests as compute_pod_requests
from nodewright.scheduling.podvalidation import validation_problem
from nodewright.scheduling.requirements import RequirementError, Requirements

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job")
NO_EFFECT = ""


class SpecError(ValueError):
    """A manifest field the solver cannot read; `path` is the dotted field path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


SOLVER_TAINT_PREFIX = "solver.nodewright.io/"
"""Taints under this prefix are the solver's own marks, never on a real node: a simulation
keeps some pods off some machines with them. A wildcard toleration (`operator: Exists` with
no key) does not cover them, only one that names the key: a pod that tolerates every taint
must still be kept off (Karpenter skips those machines for such pods, whatever they
tolerate)."""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def describe(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists" and not taint.key.startswith(SOLVER_TAINT_PREFIX)
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


PREFER_NO_SCHEDULE_TOLERATION = Toleration("", "Exists", "", "PreferNoSchedule")


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint no toleration covers (NoExecute, NoSchedule and PreferNoSchedule)."""
    for taint in taints:
        if not any(toleration.tolerates(taint) for toleration in tolerations):
            return taint
    return None


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector; `match_expressions` as (key, operator, values)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.match_expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


LABEL_NAMESPACE_NAME = "kubernetes.io/metadata.name"


def namespace_labels(
    name: str, given: Mapping[str, Mapping[str, str]] | None = None
) -> Mapping[str, str]:
    """A Namespace's labels: those given (from its manifest) plus the
    `kubernetes.io/metadata.name` label Kubernetes always sets; a namespace not given has
    only that label."""
    labels = dict((given or {}).get(name, {}))
    labels[LABEL_NAMESPACE_NAME] = name
    return labels


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term.

    It selects pods in the namespaces listed in `namespaces` plus those whose Namespace
    labels match `namespace_selector` (an empty selector matches every namespace). With
    neither (`namespaces` empty and `namespace_selector` None) it selects pods in the
    owner pod's own namespace.
    """

    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    weight: int = 0


def namespace_in_scope(
    namespaces: frozenset[str],
    namespace_selector: LabelSelector | None,
    owner_namespace: str,
    namespace: str,
    labels: Mapping[str, str],
) -> bool:
    """An affinity term's namespace scope (see `AffinityTerm`)."""
    if namespace in namespaces:
        return True
    if namespace_selector is None:
        return not namespaces and namespace == owner_namespace
    return namespace_selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str
    host_ip: str

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0", "::")
        return self.host_ip in wildcard or other.host_ip in wildcard or (
            self.host_ip == other.host_ip
        )


@dataclass(frozen=True, slots=True)
class VolumeClaim:
    """A pod volume backed by a PersistentVolumeClaim: `claim` names it, or None for a
    generic ephemeral volume (whose claim is named `<pod>-<volume>`)."""

    volume: str
    claim: str | None

    def claim_name(self, pod_name: str) -> str:
        return self.claim if self.claim is not None else f"{pod_name}-{self.volume}"


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Requirements, ...] = ()
    preferred_terms: tuple[tuple[int, Requirements], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: tuple[AffinityTerm, ...] = ()
    pod_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[AffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[AffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    owner: str | None = None
    node_name: str | None = None
    volume_claims: tuple[VolumeClaim, ...] = ()
    # Filled from the cluster's PVCs, PVs and StorageClasses (`scheduling.volumes`):
    # alternatives of zone (topology) requirements the node must meet, tried in order,
    # and the volumes the pod mounts as (CSI driver, "namespace/claim").
    volume_requirements: tuple[Requirements, ...] = ()
    volumes: tuple[tuple[str, str], ...] = ()
    # It asks for devices through Dynamic Resource Allocation (`has_dra_requirements`).
    dra: bool = False
    # Why Karpenter's provisioner ignores the pod (`podvalidation`): matchFields, a
    # restricted label, only unknown values of a well-known label; None when it does not.
    invalid: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def node_requirements(self) -> Requirements:
        """nodeSelector, the first required affinity term, the first volume topology
        alternative and the heaviest preferred term.

        Karpenter's reading: later required terms (ORed) and lighter preferences are
        reached by relaxation, one at a time. Volume topology narrows the node only (not
        what the pod's spread constraints count, which `required_terms` says).
        """
        requirements = Requirements.from_labels(self.node_selector)
        if self.required_terms:
            requirements = requirements.merged(self.required_terms[0])
        if self.volume_requirements:
            requirements = requirements.merged(self.volume_requirements[0])
        if self.preferred_terms:
            heaviest = max(self.preferred_terms, key=lambda wt: wt[0])
            requirements = requirements.merged(heaviest[1])
        return requirements

    def strict_node_requirements(self) -> Requirements:
        """Only what Kubernetes enforces (nodeSelector, first required term, first volume
        topology alternative)."""
        requirements = Requirements.from_labels(self.node_selector)
        if self.required_terms:
            requirements = requirements.merged(self.required_terms[0])
        if self.volume_requirements:
            requirements = requirements.merged(self.volume_requirements[0])
        return requirements

    def strict_node_alternatives(self) -> tuple[Requirements, ...]:
        """What Kubernetes enforces, one entry per ORed required term: the pod fits a node
        that satisfies the nodeSelector and any one of them."""
        selector = Requirements.from_labels(self.node_selector)
        if not self.required_terms:
            return (selector,)
        return tuple(selector.merged(term) for term in self.required_terms)


@dataclass(frozen=True, slots=True)
class DaemonSet:
    name: str
    namespace: str
    pod: Pod


@dataclass(frozen=True, slots=True)
class ExistingNode:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int] | None
    capacity: Mapping[str, int] | None = None
    unschedulable: bool = False
    # Volumes each CSI driver can attach to it (its CSINode), for `Pod.volumes`.
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    # False for a launched node not initialized yet: pods go to initialized nodes first.
    initialized: bool = True


# ---------------------------------------------------------------------------------------
# Parsing


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(path, f"expected a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(path, f"expected a list, got {type(value).__name__}")
    return value


def _string_map(value: Any, path: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, item in _mapping(value, path).items():
        if not isinstance(item, str | int | float) or isinstance(item, bool):
            raise SpecError(f"{path}.{key}", f"expected a string, got {item!r}")
        result[str(key)] = str(item)
    return result


def _resources(value: Any, path: str) -> Resources:
    """A resource list; as the API server does, a negative amount is refused (it would
    otherwise make room on a node for other pods)."""
    raw = _mapping(value, path)
    try:
        parsed = parse_resources(raw)
    except ValueError as error:
        raise SpecError(path, str(error)) from None
    for name, amount in parsed.items():
        if amount < 0:
            raise SpecError(
                f"{path}.{name}", f"must be greater than or equal to 0, got {raw[name]!r}"
            )
    return parsed


def _weight(item: Mapping[str, Any], path: str) -> int:
    """A preference's weight: an integer from 1 to 100, as the API server requires."""
    weight = item.get("weight")
    if weight is None:
        raise SpecError(f"{path}.weight", "required: an integer from 1 to 100")
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise SpecError(f"{path}.weight", f"must be an integer from 1 to 100, got {weight!r}")
    if not 1 <= weight <= 100:
        raise SpecError(f"{path}.weight", f"must be in the range 1-100, got {weight}")
    return weight


def _container_resources(container: Mapping[str, Any], path: str) -> tuple[Resources, Resources]:
    """A container's (requests, limits); a missing request defaults to its limit, as the API
    server stores it."""
    resources = _mapping(container.get("resources"), f"{path}.resources")
    limits = _resources(resources.get("limits"), f"{path}.resources.limits")
    requests = _resources(resources.get("requests"), f"{path}.resources.requests")
    return {**limits, **requests}, limits


def _containers(value: Any, path: str, init: bool) -> list[ContainerResources]:
    found = []
    for i, raw in enumerate(_list(value, path)):
        where = f"{path}[{i}]"
        container = _mapping(raw, where)
        requests, limits = _container_resources(container, where)
        found.append(ContainerResources(
            str(container.get("name") or ""), requests,
            restartable=init and container.get("restartPolicy") == "Always", limits=limits))
    return found


def _status_resources(status: Mapping[str, Any] | None,
                      path: str) -> dict[str, ContainerStatusResources]:
    """Container statuses that report resources (in-place resize), by container name."""
    found: dict[str, ContainerStatusResources] = {}
    if not status:
        return found
    for kind in ("containerStatuses", "initContainerStatuses"):
        for i, raw in enumerate(_list(status.get(kind), f"{path}.{kind}")):
            where = f"{path}.{kind}[{i}]"
            entry = _mapping(raw, where)
            if entry.get("resources") is None:
                continue
            resources = _mapping(entry.get("resources"), f"{where}.resources")
            found[str(entry.get("name") or "")] = ContainerStatusResources(
                _resources(resources.get("requests"), f"{where}.resources.requests"),
                _resources(entry.get("allocatedResources"), f"{where}.allocatedResources"))
    return found


def resize_infeasible(status: Mapping[str, Any] | None) -> bool:
    """The kubelet marked the pod's resize infeasible (condition PodResizePending, reason
    Infeasible): its spec resources will not be applied."""
    for condition in (status or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return bool(condition.get("reason") == "Infeasible")
    return False


def resize_signature(status: Any) -> Any:
    """What of a pod's status its requests depend on (None for nearly every pod: no
    container status reports resources), for caches keyed on the spec."""
    if not isinstance(status, Mapping):
        return None
    reported = tuple(
        (entry.get("name"), repr(entry.get("resources")), repr(entry.get("allocatedResources")))
        for kind in ("containerStatuses", "initContainerStatuses")
        for entry in status.get(kind) or () if isinstance(entry, Mapping)
        and entry.get("resources") is not None
    )
    if not reported:
        return None
    return reported, resize_infeasible(status)


def pod_resources(spec: Mapping[str, Any], path: str,
                  status: Mapping[str, Any] | None = None) -> PodResources:
    """The parts of a pod (spec and, for a resized pod, status) its requests come from."""
    pod_level = _mapping(spec.get("resources"), f"{path}.resources")
    return PodResources(
        containers=_containers(spec.get("containers"), f"{path}.containers", init=False),
        init_containers=_containers(spec.get("initContainers"), f"{path}.initContainers",
                                    init=True),
        pod_requests=_resources(pod_level.get("requests"), f"{path}.resources.requests"),
        pod_limits=_resources(pod_level.get("limits"), f"{path}.resources.limits"),
        overhead=_resources(spec.get("overhead"), f"{path}.overhead"),
        statuses=_status_resources(status, "status"),
        resize_infeasible=resize_infeasible(status),
    )


def pod_requests(spec: Mapping[str, Any], path: str,
                 status: Mapping[str, Any] | None = None) -> Resources:
    """The pod's requests as the Kubernetes scheduler (and Karpenter) computes them
    (`scheduling.podrequests`), plus one `pods`: the one function every caller sizes a
    pod with."""
    total = compute_pod_requests(pod_resources(spec, path, status))
    total[PODS] = 1000
    return total


def pod_limits(spec: Mapping[str, Any], path: str) -> Resources:
    """The pod's limits as Karpenter's resources.Ceiling computes them (`podrequests`)."""
    return compute_pod_limits(pod_resources(spec, path))


def has_dra_requirements(spec: Mapping[str, Any]) -> bool:
    """The pod asks for devices through Dynamic Resource Allocation: `spec.resourceClaims`
    or a container's `resources.claims` (Karpenter's pod.HasDRARequirements)."""
    if spec.get("resourceClaims"):
        return True
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or ():
            if isinstance(container, Mapping) and (
                    (container.get("resources") or {}).get("claims")):
                return True
    return False


def _selector(value: Any, path: str) -> LabelSelector:
    raw = _mapping(value, path)
    labels = tuple(sorted(_string_map(raw.get("matchLabels"), f"{path}.matchLabels").items()))
    expressions = []
    for i, item in enumerate(_list(raw.get("matchExpressions"), f"{path}.matchExpressions")):
        where = f"{path}.matchExpressions[{i}]"
        expression = _mapping(item, where)
        operator = expression.get("operator")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SpecError(f"{where}.operator", f"unknown operator {operator!r}")
        values = frozenset(str(v) for v in _list(expression.get("values"), f"{where}.values"))
        expressions.append((str(expression.get("key", "")), str(operator), values))
    return LabelSelector(labels, tuple(expressions))


def parse_label_selector(value: Any, path: str) -> LabelSelector:
    """A metav1.LabelSelector dict (matchLabels, matchExpressions); `path` names it in errors."""
    return _selector(value, path)


def _node_selector_terms(value: Any, path: str) -> tuple[Requirements, ...]:
    terms = []
    for i, raw in enumerate(_list(value, path)):
        where = f"{path}[{i}]"
        term = _mapping(raw, where)
        expressions = _list(term.get("matchExpressions"), f"{where}.matchExpressions")
        try:
            terms.append(Requirements.from_node_selector(expressions))
        except RequirementError as error:
            raise SpecError(f"{where}.matchExpressions", str(error)) from None
    return tuple(terms)


def _affinity_terms(value: Any, path: str, weighted: bool) -> tuple[AffinityTerm, ...]:
    terms = []
    for i, raw in enumerate(_list(value, path)):
        where = f"{path}[{i}]"
        item = _mapping(raw, where)
        weight = 0
        if weighted:
            weight = _weight(item, where)
            item = _mapping(item.get("podAffinityTerm"), f"{where}.podAffinityTerm")
            where = f"{where}.podAffinityTerm"
        topology_key = item.get("topologyKey")
        if not isinstance(topology_key, str) or not topology_key:
            raise SpecError(f"{where}.topologyKey", "a non-empty topology key is required")
        namespaces = frozenset(str(n) for n in _list(item.get("namespaces"), f"{where}.namespaces"))
        namespace_selector_raw = item.get("namespaceSelector")
        namespace_selector = (
            _selector(namespace_selector_raw, f"{where}.namespaceSelector")
            if namespace_selector_raw is not None
            else None
        )
        selector_raw = item.get("labelSelector")
        # A missing selector selects no pods at all.
        selector = (
            _selector(selector_raw, f"{where}.labelSelector")
            if selector_raw is not None
            else LabelSelector(match_expressions=(("", "In", frozenset()),))
        )
        terms.append(
            AffinityTerm(selector, topology_key, namespaces, namespace_selector, weight)
        )
    if weighted:
        terms.sort(key=lambda term: -term.weight)
    return tuple(terms)


def _spread_constraints(
    value: Any, path: str, labels: Mapping[str, str]
) -> tuple[SpreadConstraint, ...]:
    constraints = []
    for i, raw in enumerate(_list(value, path)):
        where = f"{path}[{i}]"
        item = _mapping(raw, where)
        max_skew = item.get("maxSkew")
        if not isinstance(max_skew, int) or max_skew < 1:
            raise SpecError(f"{where}.maxSkew", "must be an integer of at least 1")
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise SpecError(f"{where}.topologyKey", "a non-empty topology key is required")
        when = item.get("whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise SpecError(f"{where}.whenUnsatisfiable", f"unknown value {when!r}")
        selector_raw = item.get("labelSelector")
        # As in kube-scheduler, a missing selector counts no pods: the constraint is moot.
        selector = (
            _selector(selector_raw, f"{where}.labelSelector")
            if selector_raw is not None
            else LabelSelector(match_expressions=(("", "In", frozenset()),))
        )
        match_keys = [str(k) for k in _list(item.get("matchLabelKeys"), f"{where}.matchLabelKeys")]
        extra = tuple((k, labels[k]) for k in match_keys if k in labels)
        if extra:
            selector = LabelSelector(
                tuple(sorted({*selector.match_labels, *extra})), selector.match_expressions
            )
        min_domains = item.get("minDomains")
        if min_domains is not None and (not isinstance(min_domains, int) or min_domains < 1):
            raise SpecError(f"{where}.minDomains", "must be an integer of at least 1")
        affinity_policy = item.get("nodeAffinityPolicy", "Honor")
        taints_policy = item.get("nodeTaintsPolicy", "Ignore")
        for name, policy in (
            ("nodeAffinityPolicy", affinity_policy),
            ("nodeTaintsPolicy", taints_policy),
        ):
            if policy not in ("Honor", "Ignore"):
                raise SpecError(f"{where}.{name}", f"expected Honor or Ignore, got {policy!r}")
        constraints.append(
            SpreadConstraint(
                max_skew, key, str(when), selector, min_domains, affinity_policy, taints_policy
            )
        )
    return tuple(constraints)


def _tolerations(value: Any, path: str) -> tuple[Toleration, ...]:
    tolerations = []
    for i, raw in enumerate(_list(value, path)):
        item = _mapping(raw, f"{path}[{i}]")
        operator = item.get("operator", "Equal")
        if operator not in ("Equal", "Exists"):
            raise SpecError(f"{path}[{i}].operator", f"expected Equal or Exists, got {operator!r}")
        tolerations.append(
            Toleration(
                str(item.get("key") or ""),
                str(operator),
                str(item.get("value") or ""),
                str(item.get("effect") or NO_EFFECT),
            )
        )
    return tuple(tolerations)


def parse_taints(value: Any, path: str) -> tuple[Taint, ...]:
    taints = []
    for i, raw in enumerate(_list(value, path)):
        item = _mapping(raw, f"{path}[{i}]")
        effect = item.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise SpecError(f"{path}[{i}].effect", f"unknown taint effect {effect!r}")
        taints.append(Taint(str(item.get("key", "")), str(item.get("value") or ""), str(effect)))
    return tuple(taints)


def _host_ports(containers: list[Any], path: str) -> tuple[HostPort, ...]:
    ports = []
    for i, raw in enumerate(containers):
        container = _mapping(raw, f"{path}[{i}]")
        for j, port_raw in enumerate(_list(container.get("ports"), f"{path}[{i}].ports")):
            port = _mapping(port_raw, f"{path}[{i}].ports[{j}]")
            host_port = port.get("hostPort")
            if host_port:
                if not isinstance(host_port, int):
                    raise SpecError(f"{path}[{i}].ports[{j}].hostPort", "must be an integer")
                protocol = str(port.get("protocol", "TCP"))
                ports.append(HostPort(host_port, protocol, str(port.get("hostIP", ""))))
    return tuple(ports)


def _volume_claims(value: Any, path: str) -> tuple[VolumeClaim, ...]:
    claims = []
    for i, raw in enumerate(_list(value, path)):
        volume = _mapping(raw, f"{path}[{i}]")
        name = str(volume.get("name") or "")
        if "persistentVolumeClaim" in volume:
            source = _mapping(volume.get("persistentVolumeClaim"),
                              f"{path}[{i}].persistentVolumeClaim")
            claim = source.get("claimName")
            if not isinstance(claim, str) or not claim:
                raise SpecError(f"{path}[{i}].persistentVolumeClaim.claimName",
                                "a claim name is required")
            claims.append(VolumeClaim(name, claim))
        elif "ephemeral" in volume:
            claims.append(VolumeClaim(name, None))
    return tuple(claims)


def parse_pod_spec(
    namespace: str,
    name: str,
    labels: Mapping[str, str],
    spec_value: Any,
    path: str,
    owner: str | None = None,
    status: Mapping[str, Any] | None = None,
) -> Pod:
    """A Pod from a pod spec dict (`path` is where the spec sits, for messages); `status`,
    when given, is read for the resources of resized containers."""
    spec = _mapping(spec_value, path)
    affinity = _mapping(spec.get("affinity"), f"{path}.affinity")
    node_affinity = _mapping(affinity.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
    na_path = f"{path}.affinity.nodeAffinity"
    required = _mapping(
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution",
    )
    required_terms = _node_selector_terms(
        required.get("nodeSelectorTerms"),
        f"{na_path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    )
    preferred: list[tuple[int, Requirements]] = []
    preferred_path = f"{na_path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        _list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), preferred_path)
    ):
        item = _mapping(raw, f"{preferred_path}[{i}]")
        weight = _weight(item, f"{preferred_path}[{i}]")
        (term,) = _node_selector_terms([item.get("preference") or {}], f"{preferred_path}[{i}]")
        preferred.append((weight, term))
    preferred.sort(key=lambda wt: -wt[0])

    def affinity_block(kind: str) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
        block = _mapping(affinity.get(kind), f"{path}.affinity.{kind}")
        where = f"{path}.affinity.{kind}"
        return (
            _affinity_terms(
                block.get("requiredDuringSchedulingIgnoredDuringExecution"),
                f"{where}.requiredDuringSchedulingIgnoredDuringExecution",
                weighted=False,
            ),
            _affinity_terms(
                block.get("preferredDuringSchedulingIgnoredDuringExecution"),
                f"{where}.preferredDuringSchedulingIgnoredDuringExecution",
                weighted=True,
            ),
        )

    pod_affinity, preferred_affinity = affinity_block("podAffinity")
    anti_affinity, preferred_anti = affinity_block("podAntiAffinity")
    containers = _list(spec.get("containers"), f"{path}.containers")
    node_name = spec.get("nodeName")
    return Pod(
        namespace=namespace,
        name=name,
        labels=dict(labels),
        requests=pod_requests(spec, path, _mapping(status, "status") if status else None),
        node_selector=_string_map(spec.get("nodeSelector"), f"{path}.nodeSelector"),
        required_terms=required_terms,
        preferred_terms=tuple(preferred),
        tolerations=_tolerations(spec.get("tolerations"), f"{path}.tolerations"),
        pod_affinity=pod_affinity,
        pod_anti_affinity=anti_affinity,
        preferred_pod_affinity=preferred_affinity,
        preferred_pod_anti_affinity=preferred_anti,
        spread=_spread_constraints(
            spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints", labels
        ),
        host_ports=_host_ports(containers, f"{path}.containers"),
        owner=owner,
        node_name=str(node_name) if node_name else None,
        volume_claims=_volume_claims(spec.get("volumes"), f"{path}.volumes"),
        dra=has_dra_requirements(spec),
        invalid=validation_problem(spec),
    )


def _metadata(body: Mapping[str, Any]) -> tuple[str, str]:
    metadata = _mapping(body.get("metadata"), "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("metadata.name", "a name is required")
    return str(metadata.get("namespace") or "default"), name


# A plan is for a cluster, and no cluster runs more pods than this; a bigger count is a typo.
MAX_REPLICAS = 200_000


def replicas_of(body: Mapping[str, Any]) -> int:
    spec = _mapping(body.get("spec"), "spec")
    field_name = "parallelism" if body.get("kind") == "Job" else "replicas"
    count = spec.get(field_name, 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise SpecError(f"spec.{field_name}", f"must be a non-negative integer, got {count!r}")
    if count > MAX_REPLICAS:
        raise SpecError(f"spec.{field_name}", f"{count} is more than the {MAX_REPLICAS} pods "
                        "a plan can take")
    return count


def pods_from_manifest(body: Mapping[str, Any], replicas: int | None = None) -> list[Pod]:
    """The pods a Pod or workload manifest stands for; `replicas` overrides spec.replicas."""
    kind = body.get("kind")
    namespace, name = _metadata(body)
    if kind == "Pod":
        labels = _string_map(_mapping(body.get("metadata"), "metadata").get("labels"), "metadata")
        status = body.get("status")
        return [parse_pod_spec(namespace, name, labels, body.get("spec"), "spec",
                               status=status if isinstance(status, Mapping) else None)]
    if kind not in WORKLOAD_KINDS:
        raise SpecError("kind", f"{kind!r} does not describe pods")
    count = replicas_of(body) if replicas is None else replicas
    spec = _mapping(body.get("spec"), "spec")
    template = _mapping(spec.get("template"), "spec.template")
    labels = _string_map(
        _mapping(template.get("metadata"), "spec.template.metadata").get("labels"),
        "spec.template.metadata.labels",
    )
    first = parse_pod_spec(
        namespace, f"{name}-0", labels, template.get("spec"), "spec.template.spec", f"{kind}/{name}"
    )
    templates = _claim_templates(spec, kind)
    if not count:
        return []
    return [_renamed(first, f"{name}-{n}", templates, name) if n or templates else first
            for n in range(count)]


def _claim_templates(spec: Mapping[str, Any], kind: Any) -> tuple[str, ...]:
    """A StatefulSet's volumeClaimTemplates names (each pod mounts its own claim)."""
    if kind != "StatefulSet":
        return ()
    names = []
    for i, raw in enumerate(_list(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates")):
        metadata = _mapping(_mapping(raw, f"spec.volumeClaimTemplates[{i}]").get("metadata"),
                            f"spec.volumeClaimTemplates[{i}].metadata")
        template_name = metadata.get("name")
        if not isinstance(template_name, str) or not template_name:
            raise SpecError(f"spec.volumeClaimTemplates[{i}].metadata.name", "a name is required")
        names.append(template_name)
    return tuple(names)


def statefulset_claim_name(template: str, statefulset: str, ordinal: int) -> str:
    return f"{template}-{statefulset}-{ordinal}"


def _renamed(pod: Pod, name: str, templates: tuple[str, ...] = (), owner: str = "") -> Pod:
    if not templates:
        return replace(pod, name=name)
    ordinal = int(name.rsplit("-", 1)[1])
    claims = tuple(c for c in pod.volume_claims if c.volume not in templates) + tuple(
        VolumeClaim(t, statefulset_claim_name(t, owner, ordinal)) for t in templates)
    return replace(pod, name=name, volume_claims=claims)


def daemonset_from_manifest(body: Mapping[str, Any]) -> DaemonSet:
    namespace, name = _metadata(body)
    spec = _mapping(body.get("spec"), "spec")
    template = _mapping(spec.get("template"), "spec.template")
    labels = _string_map(
        _mapping(template.get("metadata"), "spec.template.metadata").get("labels"),
        "spec.template.metadata.labels",
    )
    pod = parse_pod_spec(
        namespace, name, labels, template.get("spec"), "spec.template.spec", f"DaemonSet/{name}"
    )
    return DaemonSet(name, namespace, pod)


def node_from_manifest(body: Mapping[str, Any]) -> ExistingNode:
    metadata = _mapping(body.get("metadata"), "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("metadata.name", "a name is required")
    labels = _string_map(metadata.get("labels"), "metadata.labels")
    labels.setdefault("kubernetes.io/hostname", name)
    spec = _mapping(body.get("spec"), "spec")
    status = _mapping(body.get("status"), "status")
    allocatable_raw = status.get("allocatable")
    allocatable = (
        _resources(allocatable_raw, "status.allocatable") if allocatable_raw is not None else None
    )
    capacity_raw = status.get("capacity")
    capacity = _resources(capacity_raw, "status.capacity") if capacity_raw is not None else None
    return ExistingNode(
        name=name,
        labels=labels,
        taints=parse_taints(spec.get("taints"), "spec.taints"),
        allocatable=allocatable,
        capacity=capacity,
        unschedulable=bool(spec.get("unschedulable", False)),
    )


# The taint the node lifecycle controller puts on a cordoned (spec.unschedulable) node.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def namespace_from_manifest(body: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A Namespace manifest's name and labels (with `kubernetes.io/metadata.name`)."""
    metadata = _mapping(body.get("metadata"), "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("metadata.name", "a name is required")
    labels = _string_map(metadata.get("labels"), "metadata.labels")
    labels[LABEL_NAMESPACE_NAME] = name
    return name, labels
