"""From manifests to a scheduling problem: what `nodewright plan` solves.

NodePools and EC2NodeClasses go through `nodewright.api`; Pods, workloads (expanded to
their replicas), DaemonSets, Nodes and Namespaces (their labels, for affinity terms with a
namespaceSelector) are read by `nodewright.scheduling.pods`. Every
NodePool is solved against the offline catalog built for its EC2NodeClass (kubelet
settings change allocatable). Anything unreadable becomes a `Problem`, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.manifests import Document
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import FieldPath, Problem
from nodewright.api.validation import parse_document
from nodewright.scheduling import runtimeclasses, volumes
from nodewright.scheduling.catalog import InstanceType, offline_catalog
from nodewright.scheduling.nodepools import NodePoolTemplate, nodepool_template
from nodewright.scheduling.pods import (
    WORKLOAD_KINDS,
    DaemonSet,
    ExistingNode,
    Pod,
    SpecError,
    daemonset_from_manifest,
    namespace_from_manifest,
    node_from_manifest,
    pods_from_manifest,
)
from nodewright.scheduling.podvalidation import DRA_NOT_SUPPORTED
from nodewright.scheduling.requirements import LABEL_INSTANCE_TYPE, LABEL_NODEPOOL
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve

CatalogSource = Callable[[EC2NodeClass | None], Sequence[InstanceType]]

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def field_path(dotted: str) -> FieldPath:
    """'spec.containers[0].resources' -> ('spec', 'containers', 0, 'resources')."""
    parts: list[str | int] = []
    for name, number in _PATH_PART.findall(dotted):
        parts.append(int(number) if number else name)
    return tuple(parts)


def offline_catalogs(region: str, zones: Sequence[str] | None) -> CatalogSource:
    """One offline catalog per EC2NodeClass (the catalog module caches them)."""

    def catalog_for(node_class: EC2NodeClass | None) -> Sequence[InstanceType]:
        return offline_catalog(region, zones, node_class=node_class)

    return catalog_for


@dataclass
class _Collected:
    nodepools: list[tuple[Document, NodePool]]
    node_classes: dict[str, EC2NodeClass]
    pending: list[Pod]
    bound: list[Pod]
    daemonsets: list[DaemonSet]
    nodes: list[tuple[Document, ExistingNode]]
    namespaces: dict[str, dict[str, str]]


def build_problem(
    documents: Sequence[Document],
    catalogs: CatalogSource,
    replicas: Mapping[str, int] | None = None,
) -> tuple[SchedulingProblem | None, list[Problem]]:
    """The scheduling problem the manifests describe, or None with the problems found.

    `replicas` overrides spec.replicas of workloads by name (the `--replicas` option).
    """
    problems: list[Problem] = []
    overrides = dict(replicas or {})
    collected = _collect(documents, overrides, problems)
    for name in sorted(set(overrides) - _workload_names(documents)):
        problems.append(
            Problem("<command line>", 0, "", "", "--replicas",
                    f"no Deployment, ReplicaSet, StatefulSet or Job is named {name!r}")
        )
    if any(problem.severity == "error" for problem in problems):
        return None, problems
    templates: list[NodePoolTemplate] = []
    for document, nodepool in collected.nodepools:
        if nodepool.is_static:
            # Karpenter launches nothing from a static NodePool for pods.
            problems.append(document.problem(
                ("spec", "replicas"),
                f"static NodePool: its {nodepool.spec.replicas} node(s) are kept whatever "
                "the pods ask; the plan launches nothing from it", severity="warning"))
            continue
        reference = nodepool.spec.template.spec.node_class_ref.name
        node_class = collected.node_classes.get(reference)
        if node_class is None:
            problems.append(
                document.problem(
                    ("spec", "template", "spec", "nodeClassRef", "name"),
                    f"EC2NodeClass {reference!r} is not among the manifests; "
                    "planning with default kubelet settings",
                    severity="warning",
                )
            )
        templates.append(nodepool_template(nodepool, catalogs(node_class)))
    nodes = _with_allocatable(collected, catalogs, problems)
    node_names = {node.name for node in nodes}
    for pod in collected.bound:
        if pod.node_name not in node_names:
            problems.append(
                Problem("<manifests>", 0, "Pod", pod.name, "spec.nodeName",
                        f"node {pod.node_name!r} is not among the manifests; pod ignored",
                        "warning")
            )
    if any(problem.severity == "error" for problem in problems):
        return None, problems
    pending, waiting = volumes.plan_pods([d.body for d in documents],
                                         _karpenter_plans_for(collected.pending, problems))
    for pod, why in waiting:
        problems.append(Problem("<manifests>", 0, "Pod", pod.name, "spec.volumes",
                                f"{why}; Karpenter does not plan for this pod yet", "warning"))
    problem = SchedulingProblem(
        pods=pending,
        nodepools=templates,
        nodes=nodes,
        bound_pods=[pod for pod in collected.bound if pod.node_name in node_names],
        # IGNORE_DRA_REQUESTS=true: DaemonSets claiming devices take no room Karpenter counts.
        daemonsets=[daemonset for daemonset in collected.daemonsets if not daemonset.pod.dra],
        namespaces=collected.namespaces,
    )
    return problem, problems


def _karpenter_plans_for(pending: Sequence[Pod], problems: list[Problem]) -> list[Pod]:
    """The pending pods Karpenter would plan for; the others are reported, once per
    workload: those its provisioner ignores (`podvalidation`) and those claiming devices
    through DRA (IGNORE_DRA_REQUESTS=true)."""
    kept: list[Pod] = []
    reported: set[str] = set()
    for pod in pending:
        why = (f"ignoring pod, {pod.invalid}" if pod.invalid is not None
               else f"Failed to schedule pod, {DRA_NOT_SUPPORTED}" if pod.dra else None)
        if why is None:
            kept.append(pod)
            continue
        name = pod.owner or f"Pod/{pod.name}"
        if name in reported:
            continue
        reported.add(name)
        kind, _, short = name.partition("/")
        problems.append(Problem("<manifests>", 0, kind, short, "spec",
                                f"{why}; Karpenter launches nothing for it", "warning"))
    return kept


def plan(
    documents: Sequence[Document],
    catalogs: CatalogSource,
    replicas: Mapping[str, int] | None = None,
) -> tuple[SchedulingResult | None, list[Problem]]:
    problem, problems = build_problem(documents, catalogs, replicas)
    if problem is None:
        return None, problems
    return solve(problem), problems


def _workload_names(documents: Sequence[Document]) -> set[str]:
    return {d.name for d in documents if d.kind in WORKLOAD_KINDS}


def _collect(
    documents: Sequence[Document], overrides: Mapping[str, int], problems: list[Problem]
) -> _Collected:
    collected = _Collected([], {}, [], [], [], [], {})
    runtime_classes = {d.name: d.body for d in documents if d.kind == "RuntimeClass"}
    for document in documents:
        kind = document.kind
        try:
            if kind in ("NodePool", "EC2NodeClass"):
                model, found = parse_document(document)
                problems.extend(found)
                if isinstance(model, NodePool):
                    collected.nodepools.append((document, model))
                elif isinstance(model, EC2NodeClass):
                    collected.node_classes[model.name] = model
            elif kind == "Pod" or kind in WORKLOAD_KINDS:
                body = runtimeclasses.admit_manifest(document.body, runtime_classes)
                for pod in pods_from_manifest(body, overrides.get(document.name)):
                    (collected.bound if pod.node_name else collected.pending).append(pod)
            elif kind == "DaemonSet":
                collected.daemonsets.append(daemonset_from_manifest(document.body))
            elif kind == "Node":
                collected.nodes.append((document, node_from_manifest(document.body)))
            elif kind == "Namespace":
                name, labels = namespace_from_manifest(document.body)
                collected.namespaces[name] = labels
        except SpecError as error:
            problems.append(document.problem(field_path(error.path), error.message))
        except runtimeclasses.RuntimeClassError as error:
            problems.append(document.problem(("spec",), str(error)))
    return collected


def _with_allocatable(
    collected: _Collected, catalogs: CatalogSource, problems: list[Problem]
) -> list[ExistingNode]:
    """Nodes without status.allocatable get their instance type's from the catalog."""
    pools = {nodepool.name: nodepool for _, nodepool in collected.nodepools}
    nodes = []
    for document, node in collected.nodes:
        if node.allocatable is not None:
            nodes.append(node)
            continue
        type_name = node.labels.get(LABEL_INSTANCE_TYPE)
        pool = pools.get(node.labels.get(LABEL_NODEPOOL, ""))
        node_class = (
            collected.node_classes.get(pool.spec.template.spec.node_class_ref.name)
            if pool is not None
            else None
        )
        found = next((it for it in catalogs(node_class) if it.name == type_name), None)
        if found is None:
            problems.append(
                document.problem(
                    ("status", "allocatable"),
                    "status.allocatable is missing and the node's "
                    f"{LABEL_INSTANCE_TYPE} label ({type_name!r}) is not in the catalog",
                )
            )
            continue
        nodes.append(replace(node, allocatable=found.allocatable, capacity=found.capacity))
    return nodes
