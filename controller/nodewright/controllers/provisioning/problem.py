"""The scheduling problem the cluster state describes (what the provisioner solves, and what
the disruption controller simulates with some machines taken away).

Machines: the state's active nodes (launched NodeClaims included, before their Node
registers) as the solver's `ExistingNode`s, with the non-terminal pods bound to them.
NodePools: every NodePool that is not being deleted, validates, and whose EC2NodeClass
exists and is not reported unready, with the instance types the cloud offers for that
node class now (offerings out of capacity are marked unavailable by the cloud). Limits
count every machine of the pool not marked for deletion: those in the problem through
the solver, the others through the template's `usage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.managed import supports_node_class
from nodewright.api.nodepool import NodePool
from nodewright.api.quantity import Resources
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.daemons import DaemonLoad, daemon_loads, least_overhead
from nodewright.scheduling.nodepools import NodePoolTemplate, nodepool_template
from nodewright.scheduling.pods import ExistingNode, Pod
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver import SchedulingProblem
from nodewright.scheduling.solver import ignore_preferences as ignore_preferences_of
from nodewright.state import ClusterState, StateNode


@dataclass(frozen=True)
class PoolContext:
    """One NodePool taking part in a solve, with what NodeClaim creation needs."""

    name: str
    uid: str
    model: NodePool
    node_class: EC2NodeClass
    template: NodePoolTemplate
    instance_types: Mapping[str, InstanceType]
    # The DaemonSets a node of each type would run, by type name.
    daemon_loads: Mapping[str, DaemonLoad]

    def daemon_overhead(self, instance_types: Iterable[str]) -> Resources:
        """What a NodeClaim that may become any of these types requests for its
        DaemonSets: per resource the least of theirs (Karpenter's addDaemonRequests)."""
        return least_overhead([self.daemon_loads[name] for name in instance_types
                               if name in self.daemon_loads])


@dataclass(frozen=True)
class StateProblem:
    """A `SchedulingProblem` built from the state, and how to map its answer back."""

    problem: SchedulingProblem
    pools: Mapping[str, PoolContext]
    # NodePools left out, with the reason (not ready, invalid, no instance types, ...).
    skipped_pools: Mapping[str, str]
    # The problem's node names -> the state's machines.
    nodes: Mapping[str, StateNode] = field(default_factory=dict)
    # Of `skipped_pools`, those Karpenter's provisioner keeps as dynamic and Ready but
    # without instance types now (none offered, the cloud's error, awaiting NodeOverlay
    # evaluation): its scheduler still holds them (NoCompatibleInstanceTypes).
    unresolved: frozenset[str] = frozenset()


BEING_DELETED = "NodePool is being deleted"
AWAITING_OVERLAYS = "awaiting NodeOverlay evaluation"
NO_INSTANCE_TYPES = "offers no instance types"
UNSUPPORTED_NODE_CLASS = "is not supported"
STATIC_POOL = ("static NodePool (spec.replicas): it keeps its replica count, pods do not "
               "launch its nodes")


def ready_pools(
    state: ClusterState, cloud: CloudProvider, only: Iterable[str] | None = None,
    *, static: bool = False,
) -> tuple[dict[str, tuple[NodePool, EC2NodeClass, list[InstanceType], str]], dict[str, str]]:
    """NodePools that can launch now: (model, node class, instance types, uid) by name,
    and why the others cannot. Static NodePools only with `static` (the disruption loop
    looks at their nodes; nothing launches for pods from them)."""
    ready, skipped, _ = classified_pools(state, cloud, only, static=static)
    return ready, skipped


def classified_pools(
    state: ClusterState, cloud: CloudProvider, only: Iterable[str] | None = None,
    *, static: bool = False,
) -> tuple[dict[str, tuple[NodePool, EC2NodeClass, list[InstanceType], str]], dict[str, str],
           frozenset[str]]:
    """`ready_pools`, and which of the skipped pools got that far that only their instance
    types are missing (Karpenter's NewScheduler keeps those: `StateProblem.unresolved`)."""
    wanted = set(only) if only is not None else None
    ready: dict[str, tuple[NodePool, EC2NodeClass, list[InstanceType], str]] = {}
    skipped: dict[str, str] = {}
    unresolved: set[str] = set()
    for raw in sorted(state.nodepools(), key=lambda obj: obj["metadata"]["name"]):
        metadata = raw.get("metadata") or {}
        name = str(metadata.get("name"))
        if wanted is not None and name not in wanted:
            continue
        if metadata.get("deletionTimestamp"):
            skipped[name] = BEING_DELETED
            continue
        parsed = state.nodepool_model(name)
        if parsed is None or parsed.model is None:
            skipped[name] = f"NodePool is invalid: {parsed.problem if parsed else 'unknown'}"
            continue
        model = parsed.model
        if model.is_static and not static:
            skipped[name] = STATIC_POOL
            continue
        reference = model.spec.template.spec.node_class_ref
        if not supports_node_class(reference.group, reference.kind):
            skipped[name] = (f"nodeClassRef {reference.group}/{reference.kind} "
                             f"{UNSUPPORTED_NODE_CLASS}")
            continue
        why = node_class_problem(state, reference.name)
        node_class = state.node_class_model(reference.name)
        if why is not None or node_class is None or node_class.model is None:
            skipped[name] = why or f"EC2NodeClass {reference.name!r} is invalid"
            continue
        unresolved.add(name)
        try:
            instance_types = list(cloud.get_instance_types(node_class.model))
        except CloudProviderError as error:
            skipped[name] = f"instance types of EC2NodeClass {reference.name!r}: {error}"
            continue
        if not instance_types:
            skipped[name] = f"EC2NodeClass {reference.name!r} {NO_INSTANCE_TYPES}"
            continue
        store = state.overlay_store
        if store is not None:
            overlaid = store.apply(name, instance_types)
            if overlaid is None:
                skipped[name] = AWAITING_OVERLAYS
                continue
            instance_types = overlaid
        unresolved.discard(name)
        ready[name] = (model, node_class.model, instance_types, str(metadata.get("uid") or ""))
    return ready, skipped, frozenset(unresolved)


def node_class_problem(state: ClusterState, name: str) -> str | None:
    """Why an EC2NodeClass cannot back NodeClaims now, or None."""
    raw = state.node_class(name)
    if raw is None:
        return f"EC2NodeClass {name!r} not found"
    if (raw.get("metadata") or {}).get("deletionTimestamp"):
        return f"EC2NodeClass {name!r} is being deleted"
    parsed = state.node_class_model(name)
    if parsed is None or parsed.model is None:
        return f"EC2NodeClass {name!r} is invalid: {parsed.problem if parsed else 'unknown'}"
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "False":
            return f"EC2NodeClass {name!r} is not ready: {condition.get('message') or ''}".strip()
    return None


def scheduling_problem(
    state: ClusterState,
    cloud: CloudProvider,
    pods: Sequence[Pod],
    *,
    nodes: Iterable[StateNode] | None = None,
    nodepools: Iterable[str] | None = None,
    placed: Sequence[Pod] = (),
    relax_min_values: bool = False,
    ignore_preferences: bool = False,
    reserved_capacity_fallback: bool = True,
) -> StateProblem:
    """The problem of placing `pods` on `nodes` (default: the state's active machines)
    and on new NodeClaims of the ready NodePools (default: all of them). `placed` are
    pods already promised to machines of the problem (their `node_name` is the machine's
    `name`): they take room there as if bound. `relax_min_values`: MIN_VALUES_POLICY is
    BestEffort; `ignore_preferences`: PREFERENCE_POLICY is Ignore;
    `reserved_capacity_fallback`: False for the provisioner (Karpenter's
    DisableReservedCapacityFallback), see `SchedulingProblem`."""
    machines = list(state.active_nodes() if nodes is None else nodes)
    existing: list[ExistingNode] = []
    by_name: dict[str, StateNode] = {}
    renamed: dict[str, str] = {}
    for machine in sorted(machines, key=lambda m: m.name):
        node = machine.existing_node()
        if node.name in by_name:
            continue
        limits = state.volume_limits(machine.node_name) if machine.node_name else {}
        if limits:
            node = replace(node, volume_limits=limits)
        by_name[node.name] = machine
        existing.append(node)
        if machine.node_name and machine.node_name != node.name:
            renamed[machine.node_name] = node.name
    bound = [
        replace(pod, node_name=renamed[pod.node_name])
        if pod.node_name in renamed else pod
        for pod in state.bound_pod_models([*by_name, *renamed])
    ]
    bound.extend(pod for pod in placed if pod.node_name in by_name)
    daemonsets = state.daemonsets()
    ready, skipped, unresolved = classified_pools(state, cloud, nodepools)
    pools: dict[str, PoolContext] = {}
    templates = []
    for name, (model, node_class, instance_types, uid) in ready.items():
        template = nodepool_template(model, instance_types, _usage_outside(state, name, by_name),
                                     relax_min_values=relax_min_values)
        pools[name] = PoolContext(
            name=name,
            uid=uid,
            model=model,
            node_class=node_class,
            template=template,
            instance_types={it.name: it for it in instance_types},
            daemon_loads=daemon_loads(template, instance_types, daemonsets),
        )
        templates.append(template)
    problem = SchedulingProblem(
        pods=[ignore_preferences_of(pod) for pod in pods] if ignore_preferences else pods,
        nodepools=templates,
        nodes=existing,
        bound_pods=bound,
        daemonsets=daemonsets,
        namespaces=state.namespaces(),
        reserved_capacity_fallback=reserved_capacity_fallback,
    )
    return StateProblem(problem, pools, skipped, by_name, unresolved)


def _usage_outside(
    state: ClusterState, pool: str, included: Mapping[str, StateNode]
) -> dict[str, int]:
    """The pool's usage by machines not in the problem (the solver counts those in it)."""
    usage = state.nodepool_resources(pool)
    for machine in included.values():
        if machine.nodepool != pool:
            continue
        for resource, amount in machine.capacity().items():
            usage[resource] = usage.get(resource, 0) - amount
    return {resource: amount for resource, amount in usage.items() if amount > 0}


def without_hostname(requirements: Requirements) -> Requirements:
    return Requirements(r for key, r in requirements.items() if key != "kubernetes.io/hostname")
