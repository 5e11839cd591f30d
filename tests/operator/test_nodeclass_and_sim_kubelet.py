"""The reconcilers the operator adds per cloud: the EC2NodeClass status controller (aws)
and, for sim, the simulated kubelet of the simulated nodes, each on the virtual driver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.amis import Image
from nodewright.cloud.aws.discovery import SecurityGroup, Subnet
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.cloud.sim.kubelet_actors import instances_kubelet, sim_kubelet
from nodewright.cloud.sim.lost import LostInstances
from nodewright.cluster import objects
from nodewright.cluster.kube.access import permissions
from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.workloads import JobController
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.nodeclass.status import NodeClassStatus
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from tests.conftest import EXAMPLES
from tests.operator.world import AuditedCluster
from tests.support.rbac import Request, allows, request_for

NODE_CLASS = yaml.safe_load((EXAMPLES / "workshop" / "ec2nodeclass.yaml").read_text())


class Resolver:
    def __init__(self, resolution: Resolution) -> None:
        self.resolution = resolution

    def resolve(self, node_class: EC2NodeClass) -> Resolution:
        return self.resolution


RESOLVED = Resolution(
    subnets=(Subnet("subnet-1", "us-west-2a", "usw2-az1", 200),),
    security_groups=(SecurityGroup("sg-1", "nodes"),),
    images=(Image("ami-1", "al2023", "amd64", "2026-01-01T00:00:00Z", False),),
    instance_profile="workshop-profile",
)


def conditions(obj: dict[str, object]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"])
            for c in obj["status"]["conditions"]}  # type: ignore[index]


def test_a_node_class_reports_what_it_resolved_and_why_it_is_not_ready() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS)
    resolver = Resolver(Resolution(subnets=RESOLVED.subnets,
                                   security_groups=RESOLVED.security_groups,
                                   problems={"AMIsReady": "no AMI matches al2023@latest"}))
    controller = NodeClassStatus(cluster, resolver, clock)
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(controller)
    driver.start()
    clock.advance(1)
    stored = cluster.get("EC2NodeClass", "default")
    assert stored["status"]["subnets"] == [{"id": "subnet-1", "zone": "us-west-2a",
                                            "zoneID": "usw2-az1"}]
    found = conditions(stored)
    assert found["Ready"] == ("False", "UnhealthyDependents")  # operatorpkg's root
    assert found["AMIsReady"] == ("False", "AMINotFound")
    assert found["SubnetsReady"] == ("True", "SubnetsReady")
    ready = next(c for c in stored["status"]["conditions"] if c["type"] == "Ready")
    assert "AMIsReady" in ready["message"]

    resolver.resolution = RESOLVED
    version = stored["metadata"]["resourceVersion"]
    clock.advance(61)  # it resolves again every minute
    stored = cluster.get("EC2NodeClass", "default")
    assert conditions(stored)["Ready"] == ("True", "Ready")
    assert stored["status"]["instanceProfile"] == "workshop-profile"
    assert stored["metadata"]["resourceVersion"] != version
    settled = stored["metadata"]["resourceVersion"]
    clock.advance(61)  # nothing changed: no write
    assert cluster.get("EC2NodeClass", "default")["metadata"]["resourceVersion"] == settled


@pytest.fixture
def sim_world() -> Iterator[tuple[VirtualClock, InMemoryCluster, SimulatedEC2]]:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cloud = SimulatedEC2(clock, cluster=cluster, settings=SimSettings(
        launch_delay=1, registration_delay=1, startup_taint_delay=None))
    yield clock, cluster, cloud


def launch_node(clock: VirtualClock, cluster: InMemoryCluster, cloud: SimulatedEC2) -> str:
    from nodewright.api.nodeclaim import NodeClaim

    cluster.create(NODE_CLASS)
    claim = NodeClaim.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "default-a", "uid": "uid-a",
                     "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": [{"key": "node.kubernetes.io/instance-type",
                                   "operator": "In", "values": ["m5.large"]}]},
    })
    cloud.create(claim, EC2NodeClass.model_validate(NODE_CLASS))
    clock.advance(5)
    (node,) = cluster.list("Node")
    return str(node["metadata"]["name"])


def test_simulated_nodes_renew_their_lease_and_run_their_pods(
        sim_world: tuple[VirtualClock, InMemoryCluster, SimulatedEC2]) -> None:
    clock, cluster, cloud = sim_world
    name = launch_node(clock, cluster, cloud)
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real-node"},
                    "spec": {"providerID": "aws:///us-west-2a/i-someone-elses"}})
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(*instances_kubelet(cluster, cloud, clock))
    driver.start()
    clock.advance(1)
    lease = cluster.get("Lease", name, "kube-node-lease")
    first_renewal = lease["spec"]["renewTime"]
    assert lease["spec"]["leaseDurationSeconds"] == 40
    clock.advance(30)
    assert cluster.get("Lease", name, "kube-node-lease")["spec"]["renewTime"] > first_renewal
    assert [obj["metadata"]["name"] for obj in cluster.list("Lease", "kube-node-lease")] == [name]

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    cluster.create(pod)
    cluster.bind("web", "default", name)
    driver.deliver()  # the test's writes happened outside the clock's callbacks
    clock.advance(1)
    running = cluster.get("Pod", "web", "default")
    assert running["status"]["phase"] == "Running"
    assert running["status"]["containerStatuses"][0]["state"]["running"]

    cluster.delete("Pod", "web", "default")  # graceful: the kubelet must confirm
    assert cluster.get("Pod", "web", "default")["metadata"]["deletionTimestamp"]
    driver.deliver()
    clock.advance(1)
    assert cluster.list("Pod", "default") == []

    # The instance goes, its Node is deleted, and the Lease with it (its owner reference).
    cloud.delete(cloud.list()[0].provider_id)
    clock.advance(120)
    assert [n["metadata"]["name"] for n in cluster.list("Node")] == ["real-node"]
    assert cluster.list("Lease", "kube-node-lease") == []


def test_a_node_event_makes_due_the_pods_bound_to_it_and_only_those() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    _, runner = instances_kubelet(cluster, SimulatedEC2(clock), clock)
    pods, nodes = (next(w for w in runner.watches if w.kind == kind) for kind in ("Pod", "Node"))

    def pod(name: str, node: str | None) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"nodeName": node} if node else {}}

    node_a = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}
    for event in (WatchEvent("ADDED", pod("p1", "a")), WatchEvent("ADDED", pod("p2", None)),
                  WatchEvent("MODIFIED", pod("p2", "a")), WatchEvent("ADDED", pod("p3", "b"))):
        assert list(pods.keys(event)) == [event.key]
    assert list(nodes.keys(WatchEvent("MODIFIED", node_a))) == ["default/p1", "default/p2"]
    pods.keys(WatchEvent("DELETED", pod("p1", "a")))
    assert list(nodes.keys(WatchEvent("MODIFIED", node_a))) == ["default/p2"]
    assert list(nodes.keys(WatchEvent("DELETED", node_a))) == []


def test_a_job_pod_with_a_run_duration_completes_on_a_simulated_node(
        sim_world: tuple[VirtualClock, InMemoryCluster, SimulatedEC2]) -> None:
    """The `--cloud sim` process plays its nodes' kubelet with the simulated kubelet
    `simulate` runs: a Job's pod that runs for 30 s (`nodewright.io/run-duration`) starts
    with its addresses, succeeds 30 s later, and the Job is Complete (kube-controller-
    manager's part, played here by the in-memory Job controller). The kubelet talks to the
    cluster as to a real API server, and the sim's RBAC grants every request it makes."""
    clock, cluster, cloud = sim_world
    node_name = launch_node(clock, cluster, cloud)
    requests: list[Request] = []
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(*sim_kubelet(AuditedCluster(cluster, requests), cloud, clock),
               JobController(cluster))
    driver.start()
    cluster.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "report", "namespace": "default"},
        "spec": {"template": {
            "metadata": {"annotations": {"nodewright.io/run-duration": "30s"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "report", "image": "busybox"}]}}},
    })
    driver.deliver()
    clock.advance(1)
    (pod,) = cluster.list("Pod", "default")
    pod_name = pod["metadata"]["name"]
    cluster.bind(pod_name, "default", node_name)  # as kube-scheduler does
    driver.deliver()
    clock.advance(1)
    running = cluster.get("Pod", pod_name, "default")
    assert running["status"]["phase"] == "Running"
    internal_ip = next(a["address"] for a in cluster.get("Node", node_name)["status"]["addresses"]
                       if a["type"] == "InternalIP")
    assert running["status"]["hostIP"] == internal_ip
    assert running["status"]["podIP"].startswith("10.244.")

    clock.advance(27)
    assert cluster.get("Pod", pod_name, "default")["status"]["phase"] == "Running"
    clock.advance(3)
    done = cluster.get("Pod", pod_name, "default")
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    job = cluster.get("Job", "report", "default")
    assert job["status"]["succeeded"] == 1
    assert objects.condition_is_true(job, "Complete")

    status_write = request_for("patch", "Pod", name=pod_name, namespace="default",
                               subresource="status")
    assert requests.count(status_write) == 2  # started, then completed
    assert [r for r in requests if not allows(permissions("sim"), r, "nodewright")] == []


def claim_with_instance(cluster: InMemoryCluster, name: str, provider_id: str,
                        node: str | None = None) -> None:
    cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}, "requirements": []},
    })
    claim = cluster.get("NodeClaim", name)
    conditions = [{"type": "Launched", "status": "True", "reason": "Launched", "message": "",
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    if node is not None:
        conditions.append({"type": "Registered", "status": "True", "reason": "Registered",
                           "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    claim["status"] = {"providerID": provider_id, "conditions": conditions,
                       **({"nodeName": node} if node else {})}
    cluster.update(claim, subresource="status")


def set_ready(cluster: InMemoryCluster, node: str, ready: str) -> None:
    cluster.patch("Node", node, {"status": {"conditions": [
        {"type": "Ready", "status": ready, "reason": "KubeletReady", "message": "",
         "lastHeartbeatTime": "2026-01-01T00:00:00Z",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, subresource="status")


def test_nodeclaims_of_instances_another_process_launched_are_replaced(
        sim_world: tuple[VirtualClock, InMemoryCluster, SimulatedEC2]) -> None:
    clock, cluster, cloud = sim_world
    launch_node(clock, cluster, cloud)
    claim_with_instance(cluster, "default-a", cloud.list()[0].provider_id)  # this process's
    # A previous controller process launched these; its simulated instances died with it.
    claim_with_instance(cluster, "never-registered", "aws:///us-west-2a/i-0aaaaaaaaaaaaaaaa")
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "orphan"},
                    "spec": {"providerID": "aws:///us-west-2a/i-0bbbbbbbbbbbbbbbb"}})
    set_ready(cluster, "orphan", "True")
    claim_with_instance(cluster, "registered", "aws:///us-west-2a/i-0bbbbbbbbbbbbbbbb",
                        node="orphan")
    # Not a simulated instance at all: none of this reconciler's business.
    claim_with_instance(cluster, "elsewhere", "kwok://elsewhere")

    lost = LostInstances(cluster, cloud)
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(lost)
    driver.start()
    clock.advance(1)
    names = {claim["metadata"]["name"] for claim in cluster.list("NodeClaim")}
    # The one whose node never came is replaced at once; the registered one waits while its
    # Node still says Ready (a kubelet may be alive), as Karpenter's garbage collection does.
    assert "never-registered" not in names
    assert {"default-a", "registered", "elsewhere"} <= names
    assert lost.collected == ["never-registered"]

    set_ready(cluster, "orphan", "Unknown")  # the node lifecycle controller's verdict
    driver.deliver()
    clock.advance(1)
    names = {claim["metadata"]["name"] for claim in cluster.list("NodeClaim")}
    assert names == {"default-a", "elsewhere"}
    assert lost.collected == ["never-registered", "registered"]
