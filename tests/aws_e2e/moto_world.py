"""Karpenter's AWS end-to-end environment, in one process: the moto account of
`tests.aws.world` (VPC, discovery-tagged subnets and security group, EKS cluster, node role,
the public SSM AMI parameters), the AWS provider on it, Nodewright's controllers and the
in-memory cluster's actors (kube-scheduler, kubelet, workload controllers) on a virtual
clock, and `MotoKubelets`: the kubelet of every instance the provider launched, joining
the cluster as a node booting the EKS bootstrap would (its providerID, the NodeClaim's
labels and taints plus `karpenter.sh/unregistered`, Ready with the instance type's
capacity). Nothing removes startup taints: no agent runs on these nodes.

`MotoCluster` is what a story drives, as Karpenter's `environment/aws` does: apply the
NodePool, EC2NodeClass and pods, run virtual time until something holds, and read back the
cluster and the EC2 instances (`instance_of(node)` is `env.ExpectInstance`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cluster.api import NotFoundError, Object
from nodewright.cluster.memory import InMemoryCluster, cluster_actors
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.options import ControllerOptions, with_gates
from nodewright.controllers.registry import Controllers, build_controllers
from nodewright.runtime.clock import VirtualClock, format_time
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.world import CLUSTER, K8S_VERSION
from tests.harness import Source, documents

STEP_SECONDS = 5.0
# The feature gates Karpenter's e2e installation turns on (test/hack/e2e_scripts/
# install_karpenter.sh: settings.featureGates.*=true).
E2E_GATES = {"SpotToSpotConsolidation": True, "NodeRepair": True, "ReservedCapacity": True,
             "NodeOverlay": True, "StaticCapacity": True, "CapacityBuffer": True}
NODE_MONITOR_GRACE_SECONDS = 40.0
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def node_class(name: str = "default", **spec: Any) -> dict[str, Any]:
    """Karpenter's `env.DefaultEC2NodeClass()` in the moto account: the discovery-tagged
    subnets and security group, the node role, AL2023 latest; `spec` replaces fields."""
    body: dict[str, Any] = {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "tags": {"testing/cluster": CLUSTER},
    }
    body.update(spec)
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name}, "spec": body}


DEFAULT_REQUIREMENTS: tuple[dict[str, Any], ...] = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["a1"]},
)


def node_pool(name: str = "default", *, node_class_name: str = "default",
              requirements: Sequence[Mapping[str, Any]] | None = None,
              disruption: Mapping[str, Any] | None = None,
              **template_spec: Any) -> dict[str, Any]:
    """Karpenter's `env.DefaultNodePool(nodeClass)` (test/pkg/environment/aws/
    default_nodepool.yaml): on-demand linux c/m/r types of generation > 4 but a1,
    consolidation off (`consolidateAfter: Never`), nodes that never expire."""
    default_requirements = [dict(r) for r in DEFAULT_REQUIREMENTS]
    spec: dict[str, Any] = {
        "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": node_class_name},
            "requirements": [dict(r) for r in requirements] if requirements is not None
            else default_requirements,
            "expireAfter": "Never",
            **template_spec,
        }},
        "disruption": dict(disruption) if disruption is not None
        else {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "Never"},
    }
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": spec}


def pod(name: str = "pod", *, cpu: str = "100m", labels: Mapping[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    """`coretest.Pod()`: one container asking for a little CPU."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {})},
            "spec": {"containers": [{"name": "app", "image": "public.ecr.aws/eks-distro/"
                                     "kubernetes/pause:3.2",
                                     "resources": {"requests": {"cpu": cpu}}}], **spec}}


def deployment(name: str, replicas: int, *, cpu: str = "100m",
               labels: Mapping[str, str] | None = None, **pod_spec: Any) -> dict[str, Any]:
    selector = dict(labels or {"app": name})
    template = pod(name, cpu=cpu, labels=selector, **pod_spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                     "template": {"metadata": {"labels": selector},
                                  "spec": template["spec"]}}}


class MotoKubelets:
    """The kubelets of the instances the provider launched: each NodeClaim with a
    providerID whose instance runs in moto gets its Node, once. A kubelet whose instance
    stopped running posts no status: as the node lifecycle controller does after its
    40 s grace period, its Node's Ready condition goes Unknown."""

    def __init__(self, cluster: InMemoryCluster, clock: VirtualClock, clients: AwsClients
                 ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.ec2 = clients.ec2
        self.joined: set[str] = set()  # providerIDs
        self.silent: set[str] = set()  # providerIDs whose kubelet stopped
        self.ticks = 0

    def start(self) -> None:
        self.clock.call_later(STEP_SECONDS, self._tick)

    def _tick(self) -> None:
        self.join()
        self.ticks += 1
        if self.ticks % int(NODE_MONITOR_GRACE_SECONDS / STEP_SECONDS) == 0:
            self.fall_silent()
        self.clock.call_later(STEP_SECONDS, self._tick)

    def fall_silent(self) -> None:
        nodes = {str(n["spec"].get("providerID")): n for n in self.cluster.list("Node")}
        watched = {p: n for p, n in nodes.items() if p in self.joined and p not in self.silent}
        if not watched:
            return
        ids = {p.rsplit("/", 1)[-1]: p for p in watched}
        reservations = self.ec2.describe_instances(InstanceIds=sorted(ids))["Reservations"]
        for instance in (i for r in reservations for i in r["Instances"]):
            if instance["State"]["Name"] in ("pending", "running"):
                continue
            provider_id = ids[instance["InstanceId"]]
            self.silent.add(provider_id)
            node = watched[provider_id]
            stamp = format_time(self.clock.now())
            conditions = [
                {**c, "status": "Unknown", "reason": "NodeStatusUnknown",
                 "message": "Kubelet stopped posting node status.", "lastTransitionTime": stamp}
                if c.get("type") == "Ready" else c
                for c in node["status"].get("conditions") or []]
            self.cluster.patch("Node", node["metadata"]["name"],
                               {"status": {"conditions": conditions}}, subresource="status")

    def join(self) -> None:
        waiting = {
            str(claim["status"]["providerID"]): claim
            for claim in self.cluster.list("NodeClaim")
            if (claim.get("status") or {}).get("providerID")
            and claim["status"]["providerID"] not in self.joined
            and not claim["metadata"].get("deletionTimestamp")
        }
        if not waiting:
            return
        ids = {provider_id.rsplit("/", 1)[-1]: provider_id for provider_id in waiting}
        reservations = self.ec2.describe_instances(InstanceIds=sorted(ids))["Reservations"]
        for instance in (i for r in reservations for i in r["Instances"]):
            if instance["State"]["Name"] != "running":
                continue
            provider_id = ids[instance["InstanceId"]]
            self.cluster.create(self._node(waiting[provider_id], instance))
            self.joined.add(provider_id)

    def _node(self, claim: Object, instance: Mapping[str, Any]) -> dict[str, Any]:
        name = str(instance.get("PrivateDnsName") or instance["InstanceId"])
        spec = claim.get("spec") or {}
        status = claim.get("status") or {}
        taints = [*(spec.get("taints") or []), *(spec.get("startupTaints") or []),
                  dict(UNREGISTERED)]
        stamp = format_time(self.clock.now())
        labels = {**(claim["metadata"].get("labels") or {}),
                  "kubernetes.io/hostname": name}
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"providerID": status["providerID"], "taints": copy.deepcopy(taints)},
            "status": {
                "capacity": dict(status.get("capacity") or {}),
                "allocatable": dict(status.get("allocatable") or {}),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
                "nodeInfo": {"kubeletVersion": f"v{K8S_VERSION}.0-eks",
                             "architecture": labels.get("kubernetes.io/arch", "amd64"),
                             "operatingSystem": labels.get("kubernetes.io/os", "linux")},
            },
        }


class TemplateGroups:
    """moto's CreateFleet gives its instances the VPC's default security group whatever the
    launch template says; EC2 gives them the template's. After each CreateFleet, the
    launched instances get their template's groups, as EC2 would have launched them. The
    fix-up goes through a client of its own: it is EC2's doing, not a call the provider
    makes (tests/aws/test_least_privilege checks every call the provider's clients make)."""

    def __init__(self, ec2: Any) -> None:
        self.ec2 = boto3.client("ec2", region_name=ec2.meta.region_name)
        ec2.meta.events.register("after-call.ec2.CreateFleet", self)

    def __call__(self, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        for created in parsed.get("Instances") or []:
            spec = (created.get("LaunchTemplateAndOverrides") or {}).get(
                "LaunchTemplateSpecification") or {}
            if not spec.get("LaunchTemplateName"):
                continue
            data = self.ec2.describe_launch_template_versions(
                LaunchTemplateName=spec["LaunchTemplateName"],
                Versions=["$Latest"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
            groups = list(data.get("SecurityGroupIds") or [])
            for interface in data.get("NetworkInterfaces") or []:
                groups.extend(interface.get("Groups") or [])
            for instance_id in created.get("InstanceIds") or [] if groups else []:
                self.ec2.modify_instance_attribute(InstanceId=instance_id,
                                                   Groups=sorted(set(groups)))


class InstanceReservations:
    """What EC2 says of each instance's reservation (moto keeps none): the reservation its
    launch targeted, until the reservation is cancelled."""

    def __init__(self, clients: AwsClients) -> None:
        self.by_instance: dict[str, str] = {}
        self.cancelled: set[str] = set()
        clients.ec2.meta.events.register("after-call.ec2.CreateFleet", self._launched)
        clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", self._describe)
        # A client of its own, as TemplateGroups': reading the template is the fake's doing.
        self.ec2 = boto3.client("ec2", region_name=clients.ec2.meta.region_name)

    def _launched(self, parsed: dict[str, Any], **_: Any) -> None:
        for created in parsed.get("Instances") or []:
            spec = (created.get("LaunchTemplateAndOverrides") or {}).get(
                "LaunchTemplateSpecification") or {}
            data = self.ec2.describe_launch_template_versions(
                LaunchTemplateName=spec["LaunchTemplateName"],
                Versions=["$Latest"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
            target = ((data.get("CapacityReservationSpecification") or {}).get(
                "CapacityReservationTarget") or {}).get("CapacityReservationId")
            for instance_id in created.get("InstanceIds") or []:
                if target:
                    self.by_instance[instance_id] = target

    def _describe(self, parsed: dict[str, Any], **_: Any) -> None:
        for group in parsed.get("Reservations") or []:
            for instance in group.get("Instances") or []:
                reservation = self.by_instance.get(instance["InstanceId"])
                if reservation and reservation not in self.cancelled:
                    instance["CapacityReservationId"] = reservation
                    instance["CapacityReservationSpecification"] = {
                        "CapacityReservationPreference": "capacity-reservations-only"}


class MotoCluster:
    """The cluster, the controllers with the AWS provider on moto, and the kubelets."""

    def __init__(self, clients: AwsClients, *, options: ControllerOptions | None = None,
                 queue_url: str | None = None, kube_dns_ip: str | None = None) -> None:
        self.clients = clients
        TemplateGroups(clients.ec2)
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        queue = (InterruptionQueue(clients.sqs, queue_url, wait_seconds=0) if queue_url
                 else None)
        self.cloud = InterruptibleAwsCloud(
            clients=clients, cluster_name=CLUSTER, prices=OfflinePriceSource(),
            clock=lambda: self.clock.now().timestamp(), wall_clock=self.clock.now,
            interruption_queue=queue, kube_dns_ip=kube_dns_ip)
        self.cluster_driver = VirtualDriver(self.clock, self.cluster)
        self.cluster_driver.add(*cluster_actors(self.cluster))
        self.cluster_driver.start()
        self.driver = VirtualDriver(self.clock, self.cluster)
        self.controllers: Controllers = build_controllers(
            self.cluster, self.cloud, self.clock,
            options or with_gates(ControllerOptions(), E2E_GATES))
        self.controllers.attach(self.driver)
        self.driver.start()
        self.controllers.kick(self.driver)
        self.kubelets = MotoKubelets(self.cluster, self.clock, clients)
        self.kubelets.start()

    # -- changing the cluster ------------------------------------------------------------

    def deliver(self) -> None:
        self.cluster_driver.deliver()
        self.driver.deliver()

    def apply(self, *sources: Source) -> None:
        """Create each object, or replace the spec of one that exists."""
        for source in sources:
            for body in documents(source):
                kind = str(body["kind"])
                metadata = body["metadata"]
                namespace = metadata.get("namespace")
                try:
                    current = self.cluster.get(kind, str(metadata["name"]), namespace)
                except NotFoundError:
                    self.cluster.create(body)
                    continue
                merged = {**current, "spec": body.get("spec", current.get("spec"))}
                merged["metadata"] = {**current["metadata"],
                                      **{k: v for k, v in metadata.items()}}
                merged["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                self.cluster.update(merged)
        self.deliver()

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None) -> None:
        self.cluster.patch(kind, name, dict(patch), namespace)
        self.deliver()

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.cluster.delete(kind, name, namespace)
        self.deliver()

    # -- time ----------------------------------------------------------------------------

    def run_until(self, done: Callable[[], bool], timeout: float = 900.0) -> bool:
        """Advance in steps until `done()` holds or `timeout` virtual seconds pass."""
        self.deliver()
        waited = 0.0
        while not done():
            if waited >= timeout:
                return False
            self.clock.advance(STEP_SECONDS)
            waited += STEP_SECONDS
        return True

    def advance(self, seconds: float) -> None:
        self.deliver()
        self.clock.advance(seconds)

    # -- reading it back -----------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        return self.cluster.get(kind, name, namespace)

    def nodes(self) -> list[Object]:
        return self.cluster.list("Node")

    def nodeclaims(self) -> list[Object]:
        return self.cluster.list("NodeClaim")

    def node_of(self, pod_name: str) -> str:
        return str(self.get("Pod", pod_name, "default")["spec"].get("nodeName") or "")

    def healthy(self, *pod_names: str) -> bool:
        """Every pod is bound and Running (`env.EventuallyExpectHealthy`)."""
        for name in pod_names:
            found = self.get("Pod", name, "default")
            if not found["spec"].get("nodeName") or (found.get("status") or {}).get(
                    "phase") != "Running":
                return False
        return True

    def running_pods(self, labels: Mapping[str, str]) -> list[Object]:
        return [p for p in self.cluster.list("Pod", "default", labels=labels)
                if p["spec"].get("nodeName")
                and (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    def instance_of(self, node_name: str) -> dict[str, Any]:
        """The EC2 instance behind a node (`env.ExpectInstance`)."""
        provider_id = str(self.get("Node", node_name)["spec"]["providerID"])
        return self.instance(provider_id.rsplit("/", 1)[-1])

    def instance(self, instance_id: str) -> dict[str, Any]:
        reservations = self.clients.ec2.describe_instances(InstanceIds=[instance_id])
        return dict(reservations["Reservations"][0]["Instances"][0])

    def condition(self, kind: str, name: str, kind_of_condition: str) -> dict[str, Any]:
        conditions = (self.get(kind, name).get("status") or {}).get("conditions") or []
        return next((dict(c) for c in conditions if c.get("type") == kind_of_condition), {})

    @property
    def errors(self) -> list[tuple[str, str, BaseException]]:
        return list(self.driver.errors)
