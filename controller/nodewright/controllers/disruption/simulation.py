"""Scheduling simulation for disruption: where would the pods of some nodes go if those
nodes were gone? The provisioner's problem (`controllers.provisioning.problem`) and the
same solver (`nodewright.scheduling.solver.solve`) answer, given every other active
machine (in-flight ones included) with the pods bound to it, the ready NodePools with
their instance types, DaemonSets and Namespaces.

The pods to place are the candidates' pods that would really move (a pod a fully blocking
PDB or a do-not-disrupt annotation keeps in place is not planned for) and, as Karpenter
does, the pods of machines already being deleted, so two commands never count on the same
free room: every one of them must find a place, and every new NodeClaim the plan needs
counts, whichever pods it is for. A plan that puts a candidate's pod on a machine that
has not initialized yet is refused: that machine may never come up. Nor may a candidate's
pod move onto a machine still within its NodePool's consolidateAfter (Karpenter v1.14's
destination check); pending pods and those of machines being deleted may.

`SimulationBase` holds what does not depend on the candidates, built once per pass; each
simulation only takes the candidates' machines and pods out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.cloud.provider import CloudProvider
from nodewright.cluster import objects
from nodewright.controllers.common.podrules import (
    DO_NOT_DISRUPT,
    PdbLimits,
    do_not_disrupt_until,
)
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.prefilter import (
    FreeRoom,
    Offer,
    Room,
    could_all_land,
    offers,
    room_left,
)
from nodewright.controllers.nodeclaim.disruption_conditions import consolidatable_at
from nodewright.controllers.provisioning.nodeclaims import truncation_problem
from nodewright.controllers.provisioning.problem import (
    PoolContext,
    ready_pools,
    scheduling_problem,
)
from nodewright.controllers.provisioning.solve_metrics import scheduling_simulation
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.pods import (
    SOLVER_TAINT_PREFIX,
    ExistingNode,
    Pod,
    SpecError,
    Taint,
    Toleration,
    untolerated,
)
from nodewright.scheduling.podvalidation import DRA_NOT_SUPPORTED
from nodewright.scheduling.solver import (
    PreparedNodes,
    SchedulingProblem,
    SchedulingResult,
    ignore_preferences,
    solve,
)
from nodewright.scheduling.targets import PlannedNodeClaim
from nodewright.state import podutil
from nodewright.state.cluster import ClusterState
from nodewright.state.pods import pod_key


@dataclass
class Simulation:
    """The outcome: where everything went, and why any moving pod could not go anywhere."""

    result: SchedulingResult | None
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def all_scheduled(self) -> bool:
        return not self.failures

    @property
    def new_claims(self) -> tuple[PlannedNodeClaim, ...]:
        return self.result.nodeclaims if self.result is not None else ()

    def destinations(self, virtual: Callable[[str], bool]) -> tuple[str, ...]:
        """The machines already in the cluster this simulation put pods on (buffers'
        virtual pods aside): Karpenter's Results.Record nominates them when the command
        starts."""
        if self.result is None:
            return ()
        return tuple(name for name, pods in self.result.existing
                     if any(not virtual(pod) for pod in pods))

    def describe_failures(self, limit: int = 3) -> str:
        items = sorted(self.failures.items())
        text = "; ".join(f"pod {pod} would not fit: {why}" for pod, why in items[:limit])
        if len(items) > limit:
            text += f" (and {len(items) - limit} more pods)"
        return text


class _BoundPods:
    """The bound pods of every machine, grouped by machine (in the order each first
    appears), and each machine's span in that list: a simulation takes the candidates'
    spans out by slicing rather than walking every pod of the fleet again."""

    def __init__(self, pods: Iterable[Pod]) -> None:
        self.by_node: dict[str, list[Pod]] = {}
        for pod in pods:
            self.by_node.setdefault(pod.node_name or "", []).append(pod)
        self.all: list[Pod] = []
        self.spans: dict[str, tuple[int, int]] = {}
        for name, on_node in self.by_node.items():
            self.spans[name] = (len(self.all), len(self.all) + len(on_node))
            self.all.extend(on_node)

    def without(self, names: Iterable[str]) -> list[Pod]:
        """Every machine's bound pods but those of `names`, grouped as `by_node`."""
        cuts = sorted(self.spans[name] for name in set(names) if name in self.spans)
        kept: list[Pod] = []
        start = 0
        for begin, end in cuts:
            kept += self.all[start:begin]
            start = end
        kept += self.all[start:]
        return kept


@dataclass
class _View:
    problem: SchedulingProblem
    prepared: PreparedNodes  # each machine's usage, shared by every simulation
    pools: Mapping[str, PoolContext]
    free: FreeRoom
    uninitialized: set[str]
    bound: _BoundPods
    deleting_pods: list[Pod]
    deleting_failures: dict[str, str]
    # Machines still within their NodePool's consolidateAfter (Karpenter's
    # IsUnderConsolidateAfter): no candidate's pod may move there.
    settling: frozenset[str] = frozenset()


# How the solver is told to keep candidates' pods off a settling machine: the machine
# carries this taint, which only the pods exempt (pending ones, those of machines already
# being deleted) tolerate (a pod tolerating every taint does not: it is the solver's own).
_SETTLING = Taint(f"{SOLVER_TAINT_PREFIX}under-consolidate-after", "", "NoSchedule")
_SETTLING_OK = Toleration(_SETTLING.key, "Exists", "", _SETTLING.effect)


# How a retry keeps the candidates' pods off machines that have not initialized.
_NOT_READY = Taint(f"{SOLVER_TAINT_PREFIX}not-initialized", "", "NoSchedule")
_NOT_READY_OK = Toleration(_NOT_READY.key, "Exists", "", _NOT_READY.effect)


def _exempt(pods: list[Pod]) -> list[Pod]:
    return [replace(pod, tolerations=(*pod.tolerations, _SETTLING_OK)) for pod in pods]


@dataclass(frozen=True)
class _PodModel:
    reschedulable: bool
    annotated: bool  # do-not-disrupt, whose meaning depends on the time
    model: Pod | tuple[str, str]  # unbound, or (key, why it cannot be read)


class PodModels:
    """The solver's unbound model of each pod, remembered per stored pod object across
    passes (the state replaces a pod's object on each update). A pass keeps what it or
    the pass before used; and a model that depends on nothing but its pod object (not
    on the cluster's volumes, nor on whether the state knows the pod) is kept for as long
    as the object is one of the state's pods: a pass looks at some machines' pods only
    (the candidates its methods reach, the machines being deleted), and a validation
    pass at one command's, so what an earlier pass read is often what the next needs."""

    def __init__(self) -> None:
        self._current: dict[int, tuple[Mapping[str, Any], _PodModel]] = {}
        self._previous: dict[int, tuple[Mapping[str, Any], _PodModel]] = {}
        self._lasting: dict[int, tuple[Mapping[str, Any], _PodModel]] = {}
        # Each model's copy exempt from the settling taint (`exempt`), as the first two.
        self._exempt: dict[int, tuple[Pod, Pod]] = {}
        self._exempt_before: dict[int, tuple[Pod, Pod]] = {}

    def begin_pass(self, pods: Mapping[str, Mapping[str, Any]]) -> None:
        """`pods`: the state's pod objects by key. The lasting models of objects no
        longer among them are let go once they are a fair share of those kept."""
        self._previous, self._current = self._current, {}
        self._exempt_before, self._exempt = self._exempt, {}
        if len(self._lasting) > len(pods) + len(pods) // 4 + 256:
            live = {id(pod) for pod in pods.values()}
            # An entry holds its object, so an id among the live ones is that object.
            self._lasting = {key: known for key, known in self._lasting.items()
                             if key in live}

    def exempt(self, pods: Iterable[Pod]) -> list[Pod]:
        """`_exempt`, the same copy of the same model from pass to pass (the solver
        remembers what it works out about a pod by the pod object)."""
        found = []
        for pod in pods:
            key = id(pod)
            known = self._exempt.get(key) or self._exempt_before.get(key)
            if known is None or known[0] is not pod:
                known = (pod, _exempt([pod])[0])
            self._exempt[key] = known
            found.append(known[1])
        return found

    def of(self, pod: Mapping[str, Any], state: ClusterState) -> _PodModel:
        key = id(pod)
        known = (self._current.get(key) or self._previous.get(key)
                 or self._lasting.get(key))
        # The object is kept with its model, so its id cannot be reused meanwhile.
        if known is None or known[0] is not pod:
            known = (pod, _read(pod, state))
            model = known[1].model
            if isinstance(model, Pod) and not model.volume_claims:
                self._lasting[key] = known
        self._current[key] = known
        return known[1]


def _read(pod: Mapping[str, Any], state: ClusterState) -> _PodModel:
    key = pod_key(pod)
    model: Pod | tuple[str, str]
    try:
        model = replace(state.pod_model(key), node_name=None)
    except (SpecError, KeyError) as error:
        model = (key, f"the pod cannot be read ({error})")
    return _PodModel(podutil.is_reschedulable(pod),
                     DO_NOT_DISRUPT in objects.annotations(pod), model)


class EarlierPass:
    """The machines the last pass prepared for the solver (`PreparedNodes`), per view
    (as they are, with settling machines tainted, with uninitialized ones tainted), kept
    for the same view of the next pass: a machine whose model is as it was, with the same
    bound pods and DaemonSets, keeps its usage and its target instead of being worked out
    again from its pods."""

    def __init__(self) -> None:
        self.views: dict[str, PreparedNodes] = {}

    def prepare(self, view: str, problem: SchedulingProblem,
                like: PreparedNodes | None = None) -> PreparedNodes:
        prepared = PreparedNodes(problem, like, earlier=self.views.get(view))
        self.views[view] = prepared
        return prepared


def _prepare(earlier: EarlierPass | None, view: str, problem: SchedulingProblem,
             like: PreparedNodes | None = None) -> PreparedNodes:
    if earlier is None:
        return PreparedNodes(problem, like)
    return earlier.prepare(view, problem, like)


class SimulationBase:
    """The cluster as the solver sees it, before any candidate is taken away. Most passes
    simulate nothing (consolidation is skipped while nothing changed), so the solver's
    view is built the first time a simulation needs it."""

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        pdbs: PdbLimits,
        now: datetime,
        models: PodModels | None = None,
        *,
        relax_min_values: bool = False,
        ignore_preferences: bool = False,
        earlier: EarlierPass | None = None,
    ) -> None:
        self.state = state
        self.earlier = earlier
        self.relax_min_values = relax_min_values
        self.ignore_preferences = ignore_preferences
        self.models = models if models is not None else PodModels()
        self.cloud = cloud
        self.now = now
        self.pdbs = pdbs
        # Static NodePools' nodes are candidates too (static drift), though no simulation
        # launches from those pools.
        ready, self.skipped_pools = ready_pools(state, cloud, static=True)
        self.nodepools: Mapping[str, NodePool] = {name: entry[0] for name, entry in ready.items()}
        self.instance_types: Mapping[str, Mapping[str, InstanceType]] = {
            name: {it.name: it for it in entry[2]} for name, entry in ready.items()
        }
        self.simulations = 0  # how many times `simulate` solved
        self._moving: dict[int, tuple[Mapping[str, Any], Pod | tuple[str, str] | None]] = {}
        # The initialized-first retry's view of each problem simulations are cut from
        # (`_not_ready_view`), and each pod's copy that tolerates the retry's taint.
        self._not_ready: dict[int, tuple[SchedulingProblem, _NotReadyView]] = {}
        self._tolerant: dict[int, tuple[Pod, Pod]] = {}
        # The initialized machines' free room in each prepared nodes (`_could_stay`).
        self._rooms: dict[int, tuple[PreparedNodes, dict[str, Room]]] = {}

    @cached_property
    def _view(self) -> _View:
        built = scheduling_problem(self.state, self.cloud, [],
                                   relax_min_values=self.relax_min_values)
        deleting_pods, deleting_failures = self.moving(
            pod for node in self.state.deleting_nodes() if node.node is not None
            for pod in self.state.pods_on(node.node_name)
        )
        return _View(
            problem=built.problem,
            prepared=_prepare(self.earlier, "plain", built.problem),
            pools=built.pools,
            free=FreeRoom.of(built.nodes.values()),
            uninitialized={name for name, node in built.nodes.items()
                           if node.managed and not node.initialized},
            bound=_BoundPods(built.problem.bound_pods),
            deleting_pods=deleting_pods,
            deleting_failures=deleting_failures,
            settling=frozenset(name for name, machine in built.nodes.items()
                               if self._settling(machine.nodepool, machine.nodeclaim)),
        )

    @cached_property
    def _consolidation_view(self) -> tuple[SchedulingProblem, PreparedNodes, list[Pod]]:
        """The problem, its prepared nodes and the deleting machines' pods as consolidation
        simulates them: settling machines tainted, the deleting machines' pods exempt."""
        view = self._view
        if not view.settling:
            return view.problem, view.prepared, view.deleting_pods
        problem = replace(view.problem, nodes=[
            replace(node, taints=(*node.taints, _SETTLING)) if node.name in view.settling
            else node for node in view.problem.nodes])
        return (problem, _prepare(self.earlier, "settling", problem, view.prepared),
                self.models.exempt(view.deleting_pods))

    def _settling(self, pool: str | None, claim: Mapping[str, Any] | None) -> bool:
        """Whether the machine's last pod event (or initialization) is more recent than its
        NodePool's consolidateAfter (not for 0s or Never, nor before it initialized)."""
        nodepool = self.nodepools.get(pool or "")
        if nodepool is None or claim is None:
            return False
        ready_at = consolidatable_at(claim, nodepool)
        return ready_at is not None and ready_at > self.now

    @cached_property
    def offers(self) -> list[Offer]:
        """What a consolidation's one new node could be (for the prefilter)."""
        return offers(self.pools)

    @property
    def problem(self) -> SchedulingProblem:
        return self._view.problem

    @property
    def pools(self) -> Mapping[str, PoolContext]:
        return self._view.pools

    @property
    def free(self) -> FreeRoom:
        return self._view.free

    @property
    def uninitialized(self) -> set[str]:
        return self._view.uninitialized

    @property
    def deleting_pods(self) -> list[Pod]:
        return self._view.deleting_pods

    @property
    def deleting_failures(self) -> dict[str, str]:
        return self._view.deleting_failures

    def is_virtual(self, pod_key: str) -> bool:
        """A CapacityBuffer's virtual pod (headroom, not a pod of the cluster)."""
        buffers = self.state.buffers
        return buffers is not None and buffers.is_virtual(pod_key)

    def moving(self, pods: Iterable[Mapping[str, Any]]) -> tuple[list[Pod], dict[str, str]]:
        """The solver's models of the pods that would move (unbound), and unreadable ones."""
        found: list[Pod] = []
        failures: dict[str, str] = {}
        for pod in pods:
            # A pass looks at the same pods again (each simulation, multi-node's search).
            known = self._moving.get(id(pod))
            if known is None or known[0] is not pod:
                known = (pod, self._model_if_moving(pod))
                self._moving[id(pod)] = known
            outcome = known[1]
            if isinstance(outcome, tuple):
                failures[outcome[0]] = outcome[1]
            elif outcome is not None:
                found.append(outcome)
        return found, failures

    def _model_if_moving(self, pod: Mapping[str, Any]) -> Pod | tuple[str, str] | None:
        """The unbound model, None when the pod stays, or (key, why it cannot be read)."""
        known = self.models.of(pod, self.state)
        if not known.reschedulable:
            return None
        if known.annotated and do_not_disrupt_until(pod, self.now)[0]:
            return None
        if self.pdbs.blocking(pod, self.now, fully_only=True) is not None:
            return None
        if isinstance(known.model, Pod) and known.model.dra:
            # IGNORE_DRA_REQUESTS=true: Karpenter's scheduler places no pod that claims
            # devices, so a node running one is not disrupted for a simulated move.
            return known.model.key, DRA_NOT_SUPPORTED
        return known.model

    def simulate(self, candidates: Sequence[Candidate], *,
                 consolidation: bool = True) -> Simulation:
        """Where the candidates' pods would go. `consolidation` (Karpenter's
        IsConsolidationSimulation, not drift's): not onto machines within consolidateAfter."""
        gone = {candidate.name for candidate in candidates}
        moving, failures = self.moving(pod for c in candidates for pod in c.pods)
        if failures:
            return Simulation(None, failures)
        own = {pod.key for pod in moving}
        self.simulations += 1
        buffers = self.state.buffers
        # CapacityBuffers' headroom is placed again like pending pods (Karpenter adds the
        # virtual pods to its simulation's pending set): a command that takes it away
        # needs a replacement that hosts it, and one it does not fit is no failure.
        virtual = buffers.all() if buffers is not None else []
        base, prepared, deleting = ((self.problem, self._view.prepared, self.deleting_pods)
                                    if not consolidation else self._consolidation_view)
        if virtual and base is not self.problem:
            virtual = _exempt(list(virtual))
        simulated = moving + deleting + virtual
        if self.ignore_preferences:
            simulated = [ignore_preferences(pod) for pod in simulated]
        problem = replace(
            base,
            pods=simulated,
            nodes=[node for node in base.nodes if node.name not in gone],
            bound_pods=self._view.bound.without(gone),
        )
        with scheduling_simulation("disruption", len(simulated)):
            result = solve(problem, prepared)
        result = onto_replacements_first(result, {pod.key: pod for pod in simulated}, own,
                                         self.uninitialized)
        # As Karpenter: every pod that is not already pending must find a place, those of
        # machines being deleted included (they count on the room a command would take).
        failures = {key: why for key, why in result.unschedulable
                    if buffers is None or not buffers.is_virtual(key)}
        result = self._truncated(result, failures)
        # A machine that has not initialized may never come up: only the pods of machines
        # already going (whose replacement it may well be) may count on it.
        uninitialized = {pod for node_name, pods in result.existing
                         if node_name in self.uninitialized for pod in pods if pod in own}
        if uninitialized and not failures:
            if self._could_stay(problem, own, prepared):
                retried = self._initialized_first(problem, own,
                                                  self._not_ready_view(base, prepared))
                if retried is not None:
                    return Simulation(retried, {})
            else:
                # Still counted: the deterministic compute budget
                # (`single_node_max_simulations`) counts the retry whether it is solved or
                # shown hopeless, so the same candidates are reached.
                self.simulations += 1
        for node_name, pods in result.existing:
            if node_name not in self.uninitialized:
                continue
            for pod in pods:
                if pod in own:
                    failures[pod] = f"it would schedule against uninitialized node {node_name}"
        return Simulation(result, failures)

    def _truncated(self, result: SchedulingResult, failures: dict[str, str]
                   ) -> SchedulingResult:
        """The replacements whose instance types, cut to the most a NodeClaim lists, still
        meet their minValues; the pods of the others fail (Karpenter's
        TruncateInstanceTypes on a disruption simulation's results)."""
        kept = []
        for claim in result.nodeclaims:
            pool = self.pools.get(claim.nodepool)
            why = truncation_problem(claim, pool) if pool is not None else None
            if why is None:
                kept.append(claim)
                continue
            buffers = self.state.buffers
            for key in claim.pods:
                if buffers is None or not buffers.is_virtual(key):
                    failures[key] = why
        if len(kept) == len(result.nodeclaims):
            return result
        return replace(result, nodeclaims=tuple(kept))

    def _not_ready_view(self, base: SchedulingProblem, prepared: PreparedNodes
                        ) -> _NotReadyView:
        """The retry's view of `base` (a problem simulations are cut from, and its prepared
        nodes): its uninitialized machines tainted, worked out once per pass; only those
        machines' usage is worked out again."""
        known = self._not_ready.get(id(base))
        if known is None or known[0] is not base:
            nodes = [replace(node, taints=(*node.taints, _NOT_READY))
                     if node.name in self.uninitialized else node for node in base.nodes]
            kind = "not-ready" if base is self.problem else "not-ready, settling"
            view = _NotReadyView({node.name: node for node in nodes},
                                 _prepare(self.earlier, kind, replace(base, nodes=nodes),
                                          prepared))
            # The problem is kept with its view, so that its id is not reused meanwhile.
            known = (base, view)
            self._not_ready[id(base)] = known
        return known[1]

    def _could_stay(self, problem: SchedulingProblem, own: set[str],
                    prepared: PreparedNodes) -> bool:
        """Whether the initialized-first retry might succeed. It succeeds only when every
        one of the candidates' own pods lands on an initialized machine of `problem`; when
        their requests alone show they cannot (`could_all_land`, against the free room the
        solver itself counts on each initialized machine that takes pods), its solve would
        be refused whatever it planned, so it is not run. A pod that tolerates the retry's
        taint might land on an uninitialized machine: then it is run."""
        pods = [pod for pod in problem.pods if pod.key in own]
        if any(untolerated((_NOT_READY,), pod.tolerations) is None for pod in pods):
            return True
        known = self._rooms.get(id(prepared))
        if known is None or known[0] is not prepared:
            # Kept with the prepared nodes, so that their id is not reused meanwhile.
            known = (prepared, {
                name: room_left(usage.node.allocatable or {}, usage.requested)
                for name, usage in prepared.by_name.items()
                if name not in self.uninitialized and not usage.node.unschedulable})
            self._rooms[id(prepared)] = known
        rooms = known[1]
        return could_all_land(pods, [rooms[node.name] for node in problem.nodes
                                     if node.name in rooms])

    def _tolerating(self, pod: Pod) -> Pod:
        """The pod tolerating the retry's taint (one copy per pod object and pass)."""
        known = self._tolerant.get(id(pod))
        if known is None or known[0] is not pod:
            known = (pod, replace(pod, tolerations=(*pod.tolerations, _NOT_READY_OK)))
            self._tolerant[id(pod)] = known
        return known[1]

    def _initialized_first(self, problem: SchedulingProblem, own: set[str],
                           view: _NotReadyView) -> SchedulingResult | None:
        """As Karpenter's scheduler, which tries initialized nodes before uninitialized
        ones: the plan with the candidates' pods kept off uninitialized machines, if every
        one of them then lands on an existing (initialized) machine; None otherwise (one
        that needs a new NodeClaim would have gone to the uninitialized machine first).
        `problem` is cut from the problem `view` was made of: its machines are taken from
        the view, so the solve reuses the view's prepared usage."""
        problem = replace(
            problem,
            nodes=[view.nodes[node.name] for node in problem.nodes],
            pods=[pod if pod.key in own else self._tolerating(pod) for pod in problem.pods])
        self.simulations += 1
        with scheduling_simulation("disruption", len(problem.pods)):
            result = solve(problem, view.prepared)
        if result.unschedulable or any(key in own for claim in result.nodeclaims
                                       for key in claim.pods):
            return None
        return result


@dataclass(frozen=True)
class _NotReadyView:
    """A problem's machines as the initialized-first retry sees them (uninitialized ones
    tainted), by name, with their prepared usage."""

    nodes: Mapping[str, ExistingNode]
    prepared: PreparedNodes


class _Alike:
    """Replicas alike: the same requests, constraints, labels and owner. Each pod's
    nameless copy is made once (a search compares each pod with many)."""

    def __init__(self, models: Mapping[str, Pod]) -> None:
        self.models = models
        self._shapes: dict[str, Pod] = {}

    def _shape(self, key: str) -> Pod:
        shape = self._shapes.get(key)
        if shape is None:
            shape = replace(self.models[key], name="", node_name=None)
            self._shapes[key] = shape
        return shape

    def __call__(self, one: str, other: str) -> bool:
        return self._shape(one) == self._shape(other)


def onto_replacements_first(result: SchedulingResult, models: Mapping[str, Pod],
                            own: set[str], uninitialized: set[str]) -> SchedulingResult:
    """The placements with each of the candidates' own pods that landed on an uninitialized
    node swapped with an interchangeable pod of a machine already being disrupted that
    landed elsewhere.

    An uninitialized node is, during a roll-out, the replacement of another command in
    flight, launched for the pods of the machine that command is taking away. The solver
    does not mind which of two alike pods goes there, but the rule that a candidate's own
    pods may not count on an uninitialized node does: without the swap, a drift of many
    alike machines would wait for each replacement before it starts the next.
    """
    spare: list[tuple[str, int, int]] = []  # (where, index, position) of a disrupted pod
    for index, claim in enumerate(result.nodeclaims):
        spare += [("new", index, at) for at, key in enumerate(claim.pods)
                  if key not in own and key in models]
    for index, (node_name, keys) in enumerate(result.existing):
        if node_name not in uninitialized:
            spare += [("existing", index, at) for at, key in enumerate(keys)
                      if key not in own and key in models]
    if not spare:
        return result
    claims = [list(claim.pods) for claim in result.nodeclaims]
    existing = [list(keys) for _, keys in result.existing]
    interchangeable = _Alike(models)
    swapped = False
    for index, (node_name, _) in enumerate(result.existing):
        if node_name not in uninitialized:
            continue
        for at, key in enumerate(existing[index]):
            if key not in own or key not in models:
                continue
            for choice, (where, other_index, other_at) in enumerate(spare):
                holder = claims[other_index] if where == "new" else existing[other_index]
                other = holder[other_at]
                if other in models and interchangeable(key, other):
                    existing[index][at], holder[other_at] = other, key
                    del spare[choice]
                    swapped = True
                    break
    if not swapped:
        return result
    return replace(
        result,
        nodeclaims=tuple(replace(claim, pods=tuple(pods))
                         for claim, pods in zip(result.nodeclaims, claims, strict=True)),
        existing=tuple((name, tuple(keys))
                       for (name, _), keys in zip(result.existing, existing, strict=True)))
