"""Putting the fleet a scenario starts from into the world before the controllers run.

Each `nodeClaims` entry becomes what a restarted controller finds: an instance running in
the simulated EC2 (launched there for the NodeClaim, so its providerID, price and tags are
EC2's), its Node registered and Ready, and the NodeClaim object, created `age` before the
scenario's start with the NodePool and EC2NodeClass hashes it was launched with but no
status. The real lifecycle controller then adopts it as it adopts any NodeClaim whose
status write was lost: the cloud's create is idempotent per NodeClaim and returns the
running instance, registration finds the Node by providerID, initialization sees it
Ready. `boundPods` places pods of the manifests' workloads on those nodes (and on the
unmanaged Nodes), created as the workload controllers would create them and bound.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_VALUE,
    NODEPOOL_HASH,
)
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodeclaim_template import nodeclaim_from_template
from nodewright.api.nodepool import NodePool
from nodewright.cloud.sim.machines import RUNNING
from nodewright.cloud.sim.node import node_object
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.memory.workloads.common import pod_from_template
from nodewright.cluster.memory.workloads.deployments import DeploymentController, template_hash
from nodewright.cluster.memory.workloads.jobs import JobController
from nodewright.cluster.memory.workloads.statefulsets import StatefulSetController
from nodewright.sim.recorder import ClaimRecord
from nodewright.sim.scenario import BoundPods, FleetClaim
from nodewright.sim.world import World

NODEPOOL_LABEL = "karpenter.sh/nodepool"
NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
_PINNED = (INSTANCE_TYPE_LABEL, ZONE_LABEL, CAPACITY_TYPE_LABEL)


class FleetError(Exception):
    """The fleet could not be put in place (the message names the entry)."""


def start_fleet(world: World) -> list[str]:
    """Create the scenario's running fleet; returns the problems (one per failed entry)."""
    scenario = world.scenario
    problems: list[str] = []
    node_names: dict[str, str] = {}
    for claim in scenario.node_claims:
        try:
            node_names[claim.name] = _adopt(world, claim)
        except (FleetError, ApiError) as error:
            problems.append(f"nodeClaims {claim.name}: {error}")
    placer = _Placer(world, node_names)
    for bound in scenario.bound_pods:
        try:
            placer.place(bound)
        except (FleetError, ApiError) as error:
            problems.append(f"boundPods (line {bound.line}) {bound.owner}: {error}")
    if scenario.node_claims or scenario.bound_pods:
        world.recorder.note(
            "scenario", "fleet",
            f"started from a running fleet: {len(node_names)} NodeClaims, "
            f"{placer.placed} bound pods", nodeClaims=len(node_names), pods=placer.placed)
    return problems


@contextmanager
def _created_at(world: World, when: datetime) -> Iterator[None]:
    """Objects created in this block get `when` as their creationTimestamp (nothing runs
    meanwhile: the controllers have not started)."""
    cluster = world.cluster
    real = cluster.clock

    class _Then:
        def now(self) -> datetime:
            return when

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    cluster.clock = _Then()
    try:
        yield
    finally:
        cluster.clock = real


def _adopt(world: World, claim: FleetClaim) -> str:
    cluster = world.cluster
    pool_body = cluster.peek("NodePool", claim.node_pool)
    if pool_body is None:
        raise FleetError(f"NodePool {claim.node_pool!r} does not exist")
    pool = NodePool.model_validate(pool_body)
    class_name = pool.spec.template.spec.node_class_ref.name
    class_body = cluster.peek("EC2NodeClass", class_name)
    if class_body is None:
        raise FleetError(f"EC2NodeClass {class_name!r} of NodePool {claim.node_pool!r} does "
                         "not exist")
    node_class = EC2NodeClass.model_validate(class_body)
    manifest = _nodeclaim_manifest(claim, pool, objects.uid(pool_body))
    created_at = world.scenario.start - timedelta(seconds=claim.age)
    with _created_at(world, created_at):
        stored = cluster.create(manifest)
    model = NodeClaim.model_validate({k: v for k, v in stored.items() if k != "status"})
    try:
        view = world.ec2.create(model, node_class)
    except Exception as error:  # the simulated EC2's errors name the offering
        cluster.delete("NodeClaim", claim.name)
        raise FleetError(f"the simulated EC2 could not run it: {error}") from error
    instance = world.ec2._instances[view.instance_id]  # the sim's own record
    if claim.node_class_hash is not None:
        # The launch that adopts it takes these from the instance, as from the one that
        # launched it (with this controller's hash version: nothing re-stamps it).
        instance.launch_annotations = {NODECLASS_HASH: claim.node_class_hash,
                                       NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION_VALUE}
    start = world.scenario.start
    instance.state = RUNNING
    instance.running_at = start
    instance.registered_at = start
    if claim.node_name:
        instance.node_name = claim.node_name
    node = node_object(instance, instance.node_name, start,
                       world.ec2.settings.kubernetes_version)
    cluster.create(node)
    world.ec2._emit("running", instance.instance_id,  # recompute billing
                    f"{instance.instance_id} adopted, running")
    world.recorder.claims[claim.name] = ClaimRecord(
        claim.name, claim.node_pool, -claim.age, launched=0.0, initialized=0.0,
        instance_type=claim.instance_type, capacity_type=claim.capacity_type, zone=claim.zone)
    return instance.node_name


def _nodeclaim_manifest(claim: FleetClaim, pool: NodePool, pool_uid: str) -> dict[str, Any]:
    """As the provisioner would have written it for this one offering, with the hashes it
    was launched with."""
    requirements = [dict(r) for r in pool.spec.template.spec.to_manifest().get("requirements")
                    or [] if r.get("key") not in _PINNED]
    requirements += [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [claim.instance_type]},
        {"key": ZONE_LABEL, "operator": "In", "values": [claim.zone]},
        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [claim.capacity_type]},
    ]
    annotations: dict[str, str] = {}
    if claim.node_pool_hash is not None:
        annotations[NODEPOOL_HASH] = claim.node_pool_hash
    if claim.node_class_hash is not None:
        annotations[NODECLASS_HASH] = claim.node_class_hash
    annotations.update(claim.annotations)
    return nodeclaim_from_template(pool, pool_uid, requirements,
                                   labels=claim.labels, annotations=annotations, name=claim.name)


class _Placer:
    """Creates the bound pods as their workload controllers would, already on a node."""

    def __init__(self, world: World, node_names: dict[str, str]) -> None:
        self.cluster = world.cluster
        self.node_names = node_names
        self.ordinals: Counter[tuple[str, str]] = Counter()
        self.placed = 0

    def place(self, bound: BoundPods) -> None:
        ref = bound.owner
        owner = self.cluster.peek(ref.kind, ref.name, ref.namespace)
        if owner is None:
            raise FleetError("does not exist")
        node = self.node_names.get(bound.node, bound.node)
        if self.cluster.peek("Node", node) is None:
            raise FleetError(f"node {node!r} does not exist")
        for _ in range(bound.count):
            self.cluster.bind(self._pod(ref.kind, owner), ref.namespace, node)
            self.placed += 1

    def _pod(self, kind: str, owner: dict[str, Any]) -> str:
        cluster = self.cluster
        template = (owner.get("spec") or {}).get("template") or {}
        if kind == "Pod":
            return objects.name(owner)
        if kind == "ReplicaSet":
            return cluster.insert(pod_from_template(owner, template))
        if kind == "Job":
            return cluster.insert(JobController(cluster)._pod(owner))
        if kind == "StatefulSet":
            key = (objects.namespace(owner), objects.name(owner))
            ordinal = self.ordinals[key]
            self.ordinals[key] += 1
            StatefulSetController(cluster)._create(owner, ordinal)
            return f"{objects.name(owner)}-{ordinal}"
        return cluster.insert(pod_from_template(*self._replica_set(owner)))

    def _replica_set(self, deployment: dict[str, Any]) -> tuple[dict[str, Any],
                                                                 dict[str, Any]]:
        """The ReplicaSet the Deployment controller will look for (its current template's),
        created now if missing, and its pod template."""
        cluster = self.cluster
        template = (deployment.get("spec") or {}).get("template") or {}
        name = f"{objects.name(deployment)}-{template_hash(template)}"
        namespace = objects.namespace(deployment)
        replica_set = cluster.peek("ReplicaSet", name, namespace)
        if replica_set is None:
            replicas = (deployment.get("spec") or {}).get("replicas", 1)
            cluster.create(DeploymentController(cluster)._replica_set(
                deployment, name, replicas))
            replica_set = cluster.peek("ReplicaSet", name, namespace)
        assert replica_set is not None
        return replica_set, (replica_set.get("spec") or {}).get("template") or {}
