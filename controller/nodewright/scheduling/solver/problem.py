"""The solver's input: the pods to place, the NodePools that may launch nodes for them, and
the nodes that exist already with what runs on them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import DaemonSet, ExistingNode, Pod


@dataclass(frozen=True)
class SchedulingProblem:
    """The solver's input.

    `nodes` are existing (or in-flight) nodes; `bound_pods` are pods already running on
    them (their `node_name` says where). A node labelled `karpenter.sh/nodepool` counts
    its capacity (or allocatable) against that NodePool's limits, on top of the
    template's own `usage`. A cordoned node (`unschedulable`) takes no new pods, but the
    pods bound to it count toward spread and (anti-)affinity, as in Kubernetes.
    `namespaces` maps Namespace names to their labels (for affinity terms with a
    namespaceSelector); a namespace not in it has only `kubernetes.io/metadata.name`.
    `reserved_capacity_fallback`: False is Karpenter's DisableReservedCapacityFallback
    (the provisioner's): a pod whose NodeClaim would need a capacity reservation that is
    used up waits for a later simulation (`SchedulingResult.deferred`) instead of launching
    outside it (`nodewright.scheduling.reservations`).
    """

    pods: Sequence[Pod]
    nodepools: Sequence[NodePoolTemplate]
    nodes: Sequence[ExistingNode] = ()
    bound_pods: Sequence[Pod] = ()
    daemonsets: Sequence[DaemonSet] = ()
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    reserved_capacity_fallback: bool = True

