"""What every plan of one problem builds alike, built once (`Setup`): the resource slots,
the pods topology ties together, each NodePool's setup (`pools`) and each existing node's
usage (`existing_nodes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import chain
from operator import is_

from nodewright.api.quantity import CPU, MEMORY, PODS
from nodewright.scheduling.growth import GrowthJudge
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import DaemonSet, Pod
from nodewright.scheduling.reservations import ReservationBook
from nodewright.scheduling.solver.context import Signatures
from nodewright.scheduling.solver.existing_nodes import (
    Fleet,
    PreparedNodes,
    is_tied,
    node_setups,
    same_objects,
)
from nodewright.scheduling.solver.order import balanced_order, pod_order
from nodewright.scheduling.solver.pack_memo import PackMemo
from nodewright.scheduling.solver.pools import (
    PoolMemo,
    PoolSetup,
    limits_room,
    pool_order,
    pool_setup,
)
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.targets import ResourceIndex
from nodewright.scheduling.topology import DomainSource


class Setup:
    """What every solver of one problem builds alike (resource slots, each NodePool's
    compatible types and limits, each existing node's usage), built once and shared by
    the plans `solve` compares. Solvers only read it."""

    def __init__(self, problem: SchedulingProblem, prepared: PreparedNodes | None = None,
                 pool_memo: PoolMemo | None = None, packs: PackMemo | None = None
                 ) -> None:
        self.problem = problem
        self.prepared = prepared if prepared is not None and prepared.usable_for(problem) else None
        # NodePool setups by template, kept across the re-plans of one solve's NodeClaims
        # (`results.PlanResults`; each would filter the whole catalog again), and across
        # the solves of a disruption pass when the problem was cut from a prepared one.
        self.tail_pools: PoolMemo = (
            self.prepared.tail_pool_memo if self.prepared is not None else {})
        # The pass before's setups, looked up before working one out again (only for the
        # problem's own pools, not the re-plans').
        self.earlier_pool_memo: PoolMemo = {}
        if pool_memo is None and self.prepared is not None:
            pool_memo = self.prepared.pool_memo
            self.earlier_pool_memo = self.prepared.earlier_pool_memo
        self.pool_memo = pool_memo
        # The prepared nodes this problem took away (none without prepared nodes).
        self.gone = (self.prepared.gone_from(problem) if self.prepared is not None
                     else frozenset[str]())
        names = {CPU, MEMORY, PODS}
        if self.prepared is not None:
            for pod in chain(problem.pods, (d.pod for d in problem.daemonsets)):
                names.update(pod.requests)
            names.update(self.prepared.resource_names(self.gone))
        else:
            for pod in chain(problem.pods, problem.bound_pods,
                             (d.pod for d in problem.daemonsets)):
                names.update(pod.requests)
        self.index = ResourceIndex(sorted(names))
        # Registering a pod without spread or (anti-)affinity terms creates no group.
        # A problem cut from a prepared one whose bound pods none are tied has none either
        # (its bound pods are those of the kept nodes): tens of thousands not walked.
        bound = (problem.bound_pods if self.prepared is None or self.prepared.any_tied
                 else ())
        self.tied = [pod for pod in chain(problem.pods, bound) if is_tied(pod)]
        self._pools: list[PoolSetup] | None = None
        self._fleet: Fleet | None = None
        self._absent: frozenset[int] | None = None
        # The growth rule's memo (best price per unit of a mix, per NodePool): the same
        # for every solver of this setup (its pools are this setup's).
        self.growth = GrowthJudge()
        # Each pod's signature, for every plan's pod contexts (and every problem cut from
        # the prepared one).
        self.signatures = (self.prepared.signatures if self.prepared is not None
                           else Signatures())
        # The packer's plans by their input (for every problem cut from the prepared one,
        # and the re-plans of their NodeClaims).
        if packs is None:
            packs = self.prepared.packs if self.prepared is not None else PackMemo()
        self.packs = packs
        # The instances each capacity reservation has left (each plan counts a copy).
        self.reservations = ReservationBook.of(problem.nodepools)
        self._ordered: list[Pod] | None = None
        self._balanced: tuple[list[Pod], list[Pod]] | None = None
        self._node_domains: list[tuple[Mapping[str, str], DomainSource]] | None = None

    def ordered_pods(self) -> list[Pod]:
        """The problem's pods largest first (Karpenter's order), sorted once for its plans."""
        if self._ordered is None:
            self._ordered = sorted(self.problem.pods, key=pod_order)
        return self._ordered

    def balanced(self, free: list[Pod]) -> list[Pod]:
        """`balanced_order(free)`, `free` taken from `ordered_pods` in order. The plans of
        one problem sort out the same free pods, so the order is kept for the next plan
        that asks with the same ones."""
        kept = self._balanced
        if kept is None or len(kept[0]) != len(free) or not all(map(is_, kept[0], free)):
            kept = self._balanced = (list(free), balanced_order(free, presorted=True))
        return list(kept[1])

    @property
    def node_domains(self) -> list[tuple[Mapping[str, str], DomainSource]]:
        """The labels (and their source) of every existing node but those taken away, in
        the fleet's order: the domains each plan's topology is offered."""
        if self._node_domains is None:
            fleet = self.fleet
            gone = self.gone
            self._node_domains = (
                fleet.domain_sources if not gone
                else [entry for entry, name in zip(fleet.domain_sources, fleet.names,
                                                   strict=True) if name not in gone])
        return self._node_domains

    @property
    def pools(self) -> list[PoolSetup]:
        if self._pools is None:
            self._pools = [
                self._memoised_pool(t)
                for t in sorted(self.problem.nodepools, key=pool_order, reverse=True)
            ]
        return self._pools

    def _memoised_pool(self, template: NodePoolTemplate) -> PoolSetup:
        """A pool's setup depends on its template's name, requirements and taints, its
        instance types, the DaemonSets and the resource names, except the room its limits
        leave, which depends on the existing nodes and is worked out for each problem. The
        memo is shared by the re-plans of one solve and by the disruption simulations cut
        from one problem (`PreparedNodes`), and taken over from the pass before while the
        instance types and DaemonSets are the very same objects (a provisioning pass with
        nothing new would otherwise filter the whole catalog again)."""
        if self.pool_memo is None:
            return self._pool_setup(template)
        daemonsets = self.problem.daemonsets
        key = (template.name, template.requirements, template.taints, self.index.names,
               tuple(map(id, template.instance_types)), tuple(map(id, daemonsets)))
        found = self.pool_memo.get(key)
        if found is None or not _holds(found[0], template, daemonsets):
            earlier = self.earlier_pool_memo.get(key)
            if earlier is not None and _holds(earlier[0], template, daemonsets):
                found = earlier
                if len(earlier[1].filter_cache) > _CARRIED_FILTERS:
                    # Its answers per requirements start afresh: carried from pass to pass
                    # they would grow with every pod shape the cluster ever had.
                    found = (earlier[0], replace(earlier[1], filter_cache={}))
            else:
                # What the ids name is kept in the value, so that no id is reused while
                # cached.
                found = ((template.instance_types, daemonsets), self._pool_setup(template))
            self.pool_memo[key] = found
        setup = found[1]
        if setup.template is template and template.limits is None:
            return setup
        # The template of this problem (a NodeClaim takes its labels, startup taints,
        # expiry... from it), and its own limits' room.
        return replace(setup, template=template,
                       remaining=limits_room(template, self.problem.nodes),
                       filter_cache=setup.filter_cache)

    @property
    def fleet(self) -> Fleet:
        """The existing nodes in the order pods try them: the prepared nodes' (shared by
        every problem cut from them, the `absent` positions left out), else the problem's."""
        if self._fleet is None:
            if self.prepared is not None:
                self._fleet = self.prepared.fleet(self.index)
            else:
                self._fleet = Fleet.of(node_setups(self.problem, None, self.index))
        return self._fleet

    @property
    def absent(self) -> frozenset[int]:
        """The positions among `fleet.targets` of the nodes this problem took away."""
        if self._absent is None:
            self._absent = self.fleet.absent(self.gone)
        return self._absent


    def _pool_setup(self, template: NodePoolTemplate) -> PoolSetup:
        return pool_setup(template, self.index, self.problem.daemonsets,
                          limits_room(template, self.problem.nodes))


# At most this many of a NodePool setup's answers per requirements (each a list of its
# types) are carried to the next pass.
_CARRIED_FILTERS = 1024


def _holds(kept: object, template: NodePoolTemplate, daemonsets: Sequence[DaemonSet]) -> bool:
    """Whether a memo entry was made of these very instance types and DaemonSets."""
    return (isinstance(kept, tuple) and same_objects(kept[0], template.instance_types)
            and same_objects(kept[1], daemonsets))
