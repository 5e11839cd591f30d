"""Topology as pods land: the domains a NodePool and the existing nodes offer, the domains
a target may take a pod in (as extra requirements on a NodeClaim), and the counts each
placement adds to the spread and (anti-)affinity groups (`nodewright.scheduling.topology`
holds the groups and their rules)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from nodewright.scheduling.pods import Pod, SpreadConstraint
from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirement
from nodewright.scheduling.solver.context import PodContext
from nodewright.scheduling.solver.pools import PoolSetup
from nodewright.scheduling.solver.verdicts import Rejection
from nodewright.scheduling.targets import ClaimTarget, ExistingTarget, PoolState, Target
from nodewright.scheduling.topology import (
    ANTI_AFFINITY,
    INVERSE_ANTI_AFFINITY,
    Topology,
    TopologyGroup,
)


class TopologyTracker:
    """One plan's topology: `topology` with the pods registered, counted as they land."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology

    def add_pool_domains(self, setup: PoolSetup, pool: PoolState) -> None:
        """The domains the NodePool's nodes can be in."""
        for key, value in setup.domains:
            self.topology.add_domain(key, value, setup.source)
        # Topology on a label the NodePool leaves open (kubernetes.io/arch, an instance
        # family, ...): its domains are the values the pool's instance types carry, as
        # Karpenter's topology domain groups take them from the instance types.
        for key in sorted({group.topology_key for group in self.topology.groups}):
            requirement = setup.requirements.get(key)
            if key == LABEL_HOSTNAME or (requirement is not None and not requirement.complement):
                continue
            for value in pool.label_values(pool.candidates, 0, key) or ():
                if requirement is None or requirement.has(value):
                    self.topology.add_domain(key, value, setup.source)

    def requirements(
        self, target: Target, pod: Pod, context: PodContext
    ) -> list[Requirement] | Rejection:
        """The requirements the pod's topology groups add on the target (a NodeClaim
        narrowed to the domains they allow), or why the target cannot take it."""
        groups: Iterable[tuple[TopologyGroup, SpreadConstraint | None]] = context.owned
        inverse = self.topology.inverse_groups(pod)
        if inverse:
            groups = chain(groups, ((g, None) for g in inverse))
        extra: list[Requirement] = []
        for group, constraint in groups:
            key = group.topology_key
            if isinstance(target, ExistingTarget):
                node_domains = target.domains(key)
            else:
                assert isinstance(target, ClaimTarget)
                node_domains = target.domains(key, sorted(self.topology.domains(key)))
            kind = group.key.kind
            if not node_domains:
                if kind in (ANTI_AFFINITY, INVERSE_ANTI_AFFINITY):
                    continue
                return Rejection(f"{group.describe()}: the node has no {key} label", True)
            allowed = self.topology.allowed_domains(
                group, constraint, pod, node_domains, context.requirements.get(key)
            )
            if not allowed:
                # Anti-affinity counts only grow and a NodeClaim's domains only narrow
                # while a plan is built, so a target refused by one stays refused;
                # a spread or an affinity may allow it once other pods land.
                permanent = kind in (ANTI_AFFINITY, INVERSE_ANTI_AFFINITY) or (
                    key == LABEL_HOSTNAME and kind != "affinity")
                return Rejection(f"{group.describe()} allows no domain here", permanent)
            if (isinstance(target, ClaimTarget) and len(allowed) < len(node_domains)) or (
                isinstance(target, ClaimTarget) and key not in target.requirements
            ):
                extra.append(Requirement(key, False, frozenset(allowed)))
        return extra

    def domains_of(self, target: Target, key: str) -> list[str]:
        if isinstance(target, ExistingTarget):
            return target.domains(key)
        assert isinstance(target, ClaimTarget)
        return target.domains(key, sorted(self.topology.domains(key)))

    def _counts_on(self, group: TopologyGroup, target: Target) -> bool:
        if group.key.node_filter is None:
            return True
        if isinstance(target, ExistingTarget):
            return group.counts_node(target.labels, target.taints)
        assert isinstance(target, ClaimTarget)
        return group.counts_claim(target.requirements, target.taints)

    def record(self, target: Target, pod: Pod) -> None:
        """Count the pod, placed on the target, toward its groups. On a NodeClaim whose
        domain is still open the count waits until it is one (`flush_unrecorded`)."""
        if not self.topology.groups and not pod.pod_anti_affinity:
            # No group counts it, and it owns no inverse group (most simulations).
            return
        for group in self.topology.counting_groups(pod):
            domains = self.domains_of(target, group.topology_key)
            if len(domains) == 1 and not self._counts_on(group, target):
                continue
            if group.key.kind == ANTI_AFFINITY or len(domains) == 1:
                group.record(domains)
            elif domains:
                target.unrecorded.append((group, pod))
        for group in self.topology.owner_inverse_groups(pod):
            group.record(self.domains_of(target, group.topology_key))

    def flush_unrecorded(self, claim: ClaimTarget) -> None:
        """Count the waiting pods of a NodeClaim whose domains have narrowed to one."""
        waiting = []
        for group, pod in claim.unrecorded:
            domains = self.domains_of(claim, group.topology_key)
            if len(domains) == 1:
                if self._counts_on(group, claim):
                    group.record(domains)
            else:
                waiting.append((group, pod))
        claim.unrecorded = waiting
