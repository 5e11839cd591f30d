"""`nodewright controller --cloud aws` as production runs it, on a real control plane and
an AWS account served by moto on loopback: the ServiceAccount and environment of
`nodewright manifests --cloud aws`, boto3 reaching the account through AWS_ENDPOINT_URL,
kubelets joining from the instances' user data (tests/e2e/aws_world.py).

The stories: an EC2NodeClass resolved and its status accepted by the API server; a
Deployment scaled up, launched through CreateFleet with Karpenter's tags and the kube-dns
Service's address as the node's cluster DNS; a spot
interruption warning on the SQS queue draining the node, terminating its instance and
running the pods on a replacement; a restarted controller terminating the instances no
NodeClaim claims (one whose NodeClaim tag was never written too), and only those.
"""

from __future__ import annotations

import datetime
from typing import Any

from tests.e2e.aws_world import NODE_ROLE, REGION, AwsWorld, Kubelets, PricingApi, tags_of
from tests.e2e.conftest import StartController
from tests.e2e.harness import CLUSTER_NAME, ControlPlane, eventually

NODE_CLASS = f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  role: {NODE_ROLE}
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: {CLUSTER_NAME}}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: {CLUSTER_NAME}}}}}]
  tags: {{team: checkout}}
"""
NODE_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {team: checkout}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: node.kubernetes.io/instance-type, operator: In,
           values: [m5.large, c5.large, m5.xlarge, c5.xlarge]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 10m}
"""
# In the control plane's service CIDR (10.0.0.0/24), where EKS puts kube-dns (.10).
KUBE_DNS_IP = "10.0.0.10"
KUBE_DNS = f"""
apiVersion: v1
kind: Service
metadata: {{name: kube-dns, namespace: kube-system}}
spec:
  clusterIP: {KUBE_DNS_IP}
  ports: [{{name: dns, port: 53, protocol: UDP}}]
"""
CHECKOUT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: checkout, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: checkout}}
  template:
    metadata: {labels: {app: checkout}}
    spec:
      nodeSelector: {team: checkout}
      terminationGracePeriodSeconds: 5
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: 250m, memory: 256Mi}}
"""


def condition(obj: dict[str, Any], kind: str) -> str:
    for found in obj.get("status", {}).get("conditions", []):
        if found["type"] == kind:
            return str(found["status"])
    return ""


def node_class_ready(plane: ControlPlane) -> dict[str, Any]:
    node_class = plane.get("ec2nodeclasses.karpenter.k8s.aws", "default")
    assert condition(node_class, "Ready") == "True", node_class.get("status")
    return node_class


def live_claims(plane: ControlPlane) -> list[dict[str, Any]]:
    return [claim for claim in plane.items("nodeclaims.karpenter.sh")
            if not claim["metadata"].get("deletionTimestamp")]


def checkout_running(plane: ControlPlane, replicas: int) -> list[dict[str, Any]]:
    pods = [pod for pod in plane.items("pods", "-n", "default", "-l", "app=checkout")
            if not pod["metadata"].get("deletionTimestamp")]
    running = [pod for pod in pods if pod["status"].get("phase") == "Running"]
    assert len(running) == replicas == len(pods), (
        f"{len(running)}/{len(pods)} running: "
        + ", ".join(f"{p['metadata']['name']} {p['status'].get('phase')} on "
                    f"{p['spec'].get('nodeName')}" for p in pods))
    return running


def launched_claim(plane: ControlPlane) -> dict[str, Any]:
    """The one NodeClaim, Launched, Registered and Initialized."""
    claims = live_claims(plane)
    assert len(claims) == 1, f"{len(claims)} NodeClaims"
    for kind in ("Launched", "Registered", "Initialized"):
        assert condition(claims[0], kind) == "True", (kind, claims[0].get("status"))
    return claims[0]


def events(plane: ControlPlane) -> list[dict[str, Any]]:
    return plane.items("events.events.k8s.io", "-A")


def reasons_for(plane: ControlPlane, *uids: str) -> set[str]:
    """The reasons of the events about the objects with these uids."""
    return {str(event.get("reason")) for event in events(plane)
            if event.get("regarding", {}).get("uid") in uids}


def uids_of(plane: ControlPlane, name: str) -> set[str]:
    return {str(event["regarding"].get("uid")) for event in events(plane)
            if event.get("regarding", {}).get("name") == name}


def instance_id(claim: dict[str, Any]) -> str:
    return str(claim["status"]["providerID"]).rsplit("/", 1)[-1]


def test_a_deployment_launches_through_create_fleet_and_moves_on_a_spot_interruption(
        control_plane: ControlPlane, aws_world: AwsWorld, pricing_api: PricingApi,
        kubelets: Kubelets, start_aws: StartController) -> None:
    plane, world = control_plane, aws_world
    plane.apply(KUBE_DNS)
    plane.apply(NODE_CLASS)
    plane.apply(NODE_POOL)
    plane.apply(CHECKOUT)
    controller = start_aws()

    # The EC2NodeClass resolves against the account and the API server takes its status.
    node_class = eventually(lambda: node_class_ready(plane), timeout=30,
                            what="the EC2NodeClass Ready")
    status = node_class["status"]
    assert sorted(s["id"] for s in status["subnets"]) == sorted(world.subnets.values())
    assert [g["id"] for g in status["securityGroups"]] == [world.security_group]
    assert {ami["id"] for ami in status["amis"]} == {"ami-ekslinux"}
    assert status["instanceProfile"].startswith(f"{CLUSTER_NAME}_")
    for part in ("SubnetsReady", "SecurityGroupsReady", "AMIsReady", "InstanceProfileReady"):
        assert condition(node_class, part) == "True", part

    # Scaled up: one spot instance launched through CreateFleet, with Karpenter's tags.
    plane.kubectl("scale", "deployment", "checkout", "--replicas", "3")
    claim = eventually(lambda: launched_claim(plane), timeout=60,
                       what="a NodeClaim launched, registered and initialized")
    eventually(lambda: checkout_running(plane, 3), timeout=30, what="3 pods running")
    first = instance_id(claim)
    asked = [(f["Field"], f["Value"]) for request in pricing_api.requests
             for f in request.get("Filters", [])]
    assert ("regionCode", REGION) in asked, "on-demand prices come from the Price List API"
    assert not controller.logged("using offline prices")
    assert world.fleet_of(first)["Type"] == "instant"
    instance = world.instance(first)
    assert instance["InstanceLifecycle"] == "spot"
    karpenters = {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/nodeclaim": claim["metadata"]["name"],
        f"kubernetes.io/cluster/{CLUSTER_NAME}": "owned",
        "eks:eks-cluster-name": CLUSTER_NAME,
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "Name": f"default/{claim['metadata']['name']}",
        "team": "checkout",  # the EC2NodeClass's
    }
    assert karpenters.items() <= tags_of(instance).items(), tags_of(instance)
    # The kube-dns Service's address, read through the manifests' Role in kube-system, is
    # the node's cluster DNS (Karpenter's operator reads it the same way).
    assert controller.logged("discovered kube dns")
    booted = kubelets.booted[first].config
    assert booted is not None and booted.kubelet.get("clusterDNS") == [KUBE_DNS_IP], booted
    node = plane.get("node", claim["status"]["nodeName"])
    assert node["spec"]["providerID"] == claim["status"]["providerID"]
    assert not any(t["key"] == "karpenter.sh/unregistered" for t in node["spec"].get("taints", []))
    # Registered as Karpenter registers a node: owned by its NodeClaim, its finalizer on.
    labels = node["metadata"]["labels"]
    assert {"karpenter.sh/nodepool": "default", "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true", "team": "checkout"}.items() <= labels.items()
    assert [(o["kind"], o["name"]) for o in node["metadata"]["ownerReferences"]] == [
        ("NodeClaim", claim["metadata"]["name"])]
    assert "karpenter.sh/termination" in node["metadata"]["finalizers"]

    # A spot interruption warning: the node is cordoned and drained, its instance
    # terminated, and the pods run again on a replacement.
    evicted = {pod["metadata"]["name"] for pod in checkout_running(plane, 3)}
    world.send_spot_interruption_warning(first)
    eventually(lambda: world.state_of(first) in ("shutting-down", "terminated"), timeout=60,
               what=f"{first} terminated")
    replacement = eventually(lambda: launched_claim(plane), timeout=60,
                             what="a replacement NodeClaim")
    second = world.instance(instance_id(replacement))
    # The interrupted offering is unavailable for a while: another type or zone replaces it.
    assert (second["InstanceType"], second["Placement"]["AvailabilityZone"]) != (
        instance["InstanceType"], instance["Placement"]["AvailabilityZone"])
    eventually(lambda: checkout_running(plane, 3), timeout=30,
               what="3 pods running on the replacement")
    moved = checkout_running(plane, 3)
    assert {pod["spec"]["nodeName"] for pod in moved} == {replacement["status"]["nodeName"]}
    assert not evicted & {pod["metadata"]["name"] for pod in moved}
    assert controller.logged("tainted node")
    eventually(lambda: not any(n["metadata"]["name"] == node["metadata"]["name"]
                               for n in plane.items("nodes")), timeout=30,
               what="the interrupted node deleted")
    assert world.queue_depth() == 0, "the warning is deleted from the queue once handled"
    assert {"SpotInterrupted", "TerminatingOnInterruption"} <= reasons_for(
        plane, claim["metadata"]["uid"], node["metadata"]["uid"])
    for pod in sorted(evicted):
        assert "Evicted" in reasons_for(plane, *uids_of(plane, pod)), pod
    assert controller.running()


def test_a_restarted_controller_terminates_the_instance_no_nodeclaim_claims(
        control_plane: ControlPlane, aws_world: AwsWorld, kubelets: Kubelets,
        start_aws: StartController) -> None:
    plane, world = control_plane, aws_world
    plane.apply(NODE_CLASS)
    plane.apply(NODE_POOL)
    plane.apply(CHECKOUT)
    first = start_aws("replica-a")
    plane.kubectl("scale", "deployment", "checkout", "--replicas", "1")
    claimed = instance_id(eventually(lambda: launched_claim(plane), timeout=60,
                                     what="a NodeClaim launched"))
    first.stop()

    # While no controller runs: a NodeClaim's instance left behind long ago (its NodeClaim
    # deleted by hand), one of another cluster in the same account, and the claimed
    # instance grown old enough to be collected if its NodeClaim went unseen.
    orphan = world.launch_unclaimed_instance(datetime.timedelta(minutes=10))
    # One with Karpenter's tags and no NodeClaim tag (launched by Karpenter before a
    # migration): listed by karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass and
    # eks:eks-cluster-name, as Karpenter lists them, so it is collected too.
    migrated = world.launch_unclaimed_instance(datetime.timedelta(minutes=10), nodeclaim=None)
    foreign = world.launch_unclaimed_instance(datetime.timedelta(minutes=10),
                                              cluster="another")
    world.backdate(claimed, datetime.timedelta(minutes=10))
    second = start_aws("replica-b")

    eventually(lambda: world.state_of(orphan) in ("shutting-down", "terminated"),
               timeout=45, what=f"{orphan} terminated by the garbage collection")
    assert second.logged(f"garbage collecting instance aws:///{REGION}a/{orphan}")
    eventually(lambda: world.state_of(migrated) in ("shutting-down", "terminated"),
               timeout=45, what=f"{migrated} (no NodeClaim tag) terminated")
    assert world.state_of(foreign) == "running"
    assert world.state_of(claimed) == "running"
    eventually(lambda: checkout_running(plane, 1), timeout=10, what="the pod still running")
