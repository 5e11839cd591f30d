"""An AWS account on loopback for `nodewright controller --cloud aws`: a moto server, the
VPC, subnets, security group, node role, EKS cluster, AMI parameters and interruption queue
a Karpenter installation finds in a real account, and kubelets for the instances it
launches.

- `MotoServer`: moto's threaded server on 127.0.0.1 (in this process, so the world can be
  seeded where the API has no call for it: the public SSM parameters under /aws/, an
  instance's launch time).
- `PricingApi`: the Price List API's GetProducts, which moto does not serve.
- `AwsWorld`: the account's resources, boto3 clients on the server, and what the stories
  do to it (an instance no NodeClaim claims, a spot interruption warning on the queue).
- `Kubelets`: a thread playing the kubelet of every instance that boots with user data for
  this cluster, as a node joining a Karpenter cluster does: it reads the NodeConfig from the
  instance's user data, registers the Node (providerID, `--node-labels`,
  `registerWithTaints` with `karpenter.sh/unregistered`), reports it Ready with the instance
  type's capacity, renews its Lease, runs the pods bound to it and confirms their deletion.
  Its instance terminated, the kubelet is gone: nothing is renewed any more.

The controller reaches the server through AWS_ENDPOINT_URL with fake credentials
(`AwsWorld.controller_env`), as it would reach any AWS-compatible endpoint.
"""

from __future__ import annotations

import base64
import datetime
import email
import http.server
import json
import logging
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import yaml
from lightkube import ApiError, Client, KubeConfig
from lightkube.types import PatchType

from nodewright.cluster.kube.resources import resource_class

log = logging.getLogger("tests.e2e.kubelet")

REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's default account
K8S_VERSION = "1.26"  # the control plane's
NODE_ROLE = "KarpenterNodeRole-e2e"
QUEUE = "e2e-interruptions"
X86_IMAGE = "ami-ekslinux"  # an x86_64 image moto ships
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}

# The adapter's own classes: lightkube allows one class per kind in a process.
Node = resource_class("Node")
Pod = resource_class("Pod")
Lease = resource_class("Lease")


# --- the server -----------------------------------------------------------------------------


class MotoServer:
    """moto's server on 127.0.0.1 and a free port, in a thread of this process."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def reset(self) -> None:
        """Forget every resource (the next story starts from an empty account)."""
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def stop(self) -> None:
        self._server.stop()


# USD per hour, as the Price List API answers for us-west-2 (moto has no Pricing API).
ON_DEMAND_PRICES = {"m5.large": 0.096, "c5.large": 0.085, "m5.xlarge": 0.192,
                    "c5.xlarge": 0.17}


class PricingApi:
    """AWS Price List's GetProducts on 127.0.0.1 (JSON 1.1, as botocore speaks it),
    answering the on-demand prices of `ON_DEMAND_PRICES` whatever the filters; each
    request's filters are kept in `requests`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append(body)
                if self.headers.get("X-Amz-Target") != "AWSPriceListService.GetProducts":
                    self._answer(400, {"__type": "InvalidParameterException",
                                       "message": "only GetProducts is served here"})
                    return
                self._answer(200, {"FormatVersion": "aws_v1", "PriceList": [
                    json.dumps(_product(name, price))
                    for name, price in ON_DEMAND_PRICES.items()]})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(10)


def _product(instance_type: str, usd: float) -> dict[str, Any]:
    sku = f"SKU{instance_type.replace('.', '').upper()}"
    return {
        "product": {"productFamily": "Compute Instance", "sku": sku, "attributes": {
            "instanceType": instance_type, "regionCode": REGION, "operatingSystem": "Linux",
            "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}},
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {"priceDimensions": {
            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {"unit": "Hrs",
                                            "pricePerUnit": {"USD": f"{usd:.7f}"}}}}}},
    }


def seed_public_parameter(name: str, value: str) -> None:
    """moto refuses PutParameter under /aws/, as AWS does: write into its backend."""
    from moto.ssm.models import Parameter, ssm_backends

    backend = ssm_backends[ACCOUNT][REGION]
    backend._parameters[name].append(Parameter(  # moto's model, built as moto builds it
        account_id=ACCOUNT, name=name, value=value, parameter_type="String", description=None,
        allowed_pattern=None, keyid=None, last_modified_date=datetime.datetime.now(),
        version=1, data_type="text"))


# --- the account --------------------------------------------------------------------------------


@dataclass
class AwsWorld:
    endpoint: str
    cluster: str
    api_url: str
    pricing_endpoint: str = ""
    vpc_id: str = ""
    subnets: dict[str, str] = field(default_factory=dict)  # zone -> subnet id
    security_group: str = ""
    queue_url: str = ""
    clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto3.session.Session(
                aws_access_key_id="testing", aws_secret_access_key="testing",
                region_name=REGION).client(service, endpoint_url=self.endpoint)
        return self.clients[service]

    @property
    def ec2(self) -> Any:
        return self.client("ec2")

    @classmethod
    def build(cls, endpoint: str, cluster: str, api_url: str,
              pricing_endpoint: str = "") -> AwsWorld:
        """What the Karpenter getting-started guide sets up: subnets and a security group
        tagged `karpenter.sh/discovery`, the node role, the EKS cluster, the interruption
        queue; and what AWS publishes: the EKS-optimized AMI parameters."""
        world = cls(endpoint, cluster, api_url, pricing_endpoint)
        ec2 = world.ec2
        discovery = [{"Key": "karpenter.sh/discovery", "Value": cluster}]
        # The account's default VPC, its subnet in each zone and its default security group.
        # (moto's CreateFleet gives instances the "default" group whatever the launch
        # template says, where EC2 applies the template's groups: with the default group as
        # the nodes' group, the instances have the groups the EC2NodeClass resolves.)
        world.vpc_id = ec2.describe_vpcs(
            Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
        for subnet in ec2.describe_subnets(
                Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["Subnets"]:
            if subnet["AvailabilityZone"] in (f"{REGION}a", f"{REGION}b", f"{REGION}c"):
                world.subnets[subnet["AvailabilityZone"]] = subnet["SubnetId"]
        world.security_group = ec2.describe_security_groups(Filters=[
            {"Name": "vpc-id", "Values": [world.vpc_id]},
            {"Name": "group-name", "Values": ["default"]}])["SecurityGroups"][0]["GroupId"]
        ec2.create_tags(Resources=[*world.subnets.values(), world.security_group],
                        Tags=discovery)
        seed_public_parameter(f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/"
                              "x86_64/standard/recommended/image_id", X86_IMAGE)
        world.client("iam").create_role(RoleName=NODE_ROLE, AssumeRolePolicyDocument="{}")
        world.client("eks").create_cluster(
            name=cluster, version=K8S_VERSION, roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks",
            resourcesVpcConfig={"subnetIds": list(world.subnets.values())})
        world.queue_url = world.client("sqs").create_queue(QueueName=QUEUE)["QueueUrl"]
        return world

    def controller_env(self) -> dict[str, str]:
        """What a pod with IRSA has, pointed at the server."""
        env = {**FAKE_CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": REGION,
               "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_CONFIG_FILE": "/dev/null",
               "AWS_EC2_METADATA_DISABLED": "true"}
        if self.pricing_endpoint:
            env["AWS_ENDPOINT_URL_PRICING"] = self.pricing_endpoint
        return env

    # --- instances --------------------------------------------------------------------

    def instances(self, *states: str) -> list[dict[str, Any]]:
        filters = [{"Name": "instance-state-name", "Values": list(states)}] if states else []
        found: list[dict[str, Any]] = []
        for page in self.ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                found.extend(reservation["Instances"])
        return found

    def instance(self, instance_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.ec2.describe_instances(
            InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return found

    def fleet_of(self, instance_id: str) -> dict[str, Any]:
        """The EC2 Fleet that launched the instance."""
        for fleet in self.ec2.describe_fleets()["Fleets"]:
            if any(instance_id in launched.get("InstanceIds", [])
                   for launched in fleet.get("Instances", [])):
                found: dict[str, Any] = fleet
                return found
        raise AssertionError(f"no fleet launched {instance_id}")

    def state_of(self, instance_id: str) -> str:
        return str(self.instance(instance_id)["State"]["Name"])

    def launch_unclaimed_instance(self, age: datetime.timedelta, *,
                                  cluster: str | None = None,
                                  nodeclaim: str | None = "default-gone1") -> str:
        """An instance tagged as one of `cluster`'s (a NodeClaim deleted while the
        controller was down leaves one), launched `age` ago. Without `nodeclaim`: one whose
        NodeClaim tag was never written, or that Karpenter launched before a migration."""
        owner = cluster or self.cluster
        tags = [{"Key": f"kubernetes.io/cluster/{owner}", "Value": "owned"},
                {"Key": "eks:eks-cluster-name", "Value": owner},
                {"Key": "karpenter.sh/nodepool", "Value": "default"},
                {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"}]
        if nodeclaim is not None:
            tags.append({"Key": "karpenter.sh/nodeclaim", "Value": nodeclaim})
        instance_id: str = self.ec2.run_instances(
            ImageId=X86_IMAGE, InstanceType="m5.large", MinCount=1, MaxCount=1,
            SubnetId=self.subnets[f"{REGION}a"],
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"][0]["InstanceId"]
        self.backdate(instance_id, age)
        return instance_id

    @staticmethod
    def backdate(instance_id: str, age: datetime.timedelta) -> None:
        """EC2 has no call to change a launch time: moto's backend (this process) does."""
        from moto.ec2.models import ec2_backends

        instance = ec2_backends[ACCOUNT][REGION].get_instance(instance_id)
        instance.launch_time = (datetime.datetime.now(datetime.UTC) - age).strftime(
            "%Y-%m-%dT%H:%M:%S.000Z")

    # --- interruption -----------------------------------------------------------------

    def send_spot_interruption_warning(self, instance_id: str) -> None:
        """The event EventBridge's rule delivers to the queue two minutes before EC2
        reclaims a spot instance."""
        zone = self.instance(instance_id)["Placement"]["AvailabilityZone"]
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "source": "aws.ec2",
            "account": ACCOUNT,
            "time": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": REGION,
            "resources": [f"arn:aws:ec2:{zone}:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, "instance-action": "terminate"},
        }
        self.client("sqs").send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(event))

    def queue_depth(self) -> int:
        attributes = self.client("sqs").get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages",
                            "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return sum(int(value) for value in attributes.values())


def tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    return {str(tag["Key"]): str(tag["Value"]) for tag in instance.get("Tags", [])}


# --- the kubelets ---------------------------------------------------------------------------------

NODE_LEASE_SECONDS = 40
RENEW_SECONDS = 10.0
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_UNITS = {None: 1, "m": 0.001, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(text: str) -> float:
    match = _QUANTITY.match(str(text))
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match[1]) * _UNITS[match[2]]


@dataclass(frozen=True)
class NodeConfig:
    """What nodeadm reads from the user data: the cluster it joins and the kubelet's
    configuration and flags."""

    cluster: str
    api_server: str
    kubelet: Mapping[str, Any]
    labels: Mapping[str, str]

    @classmethod
    def from_user_data(cls, user_data: str) -> NodeConfig | None:
        message = email.message_from_string(user_data)
        parts = message.walk() if message.is_multipart() else iter([message])
        configs = [yaml.safe_load(part.get_payload()) for part in parts
                   if part.get_content_type() == "application/node.eks.aws"]
        configs = [c for c in configs if isinstance(c, dict) and c.get("kind") == "NodeConfig"]
        if not configs:
            return None
        spec = configs[-1]["spec"]  # the last part wins, as nodeadm merges
        labels: dict[str, str] = {}
        for flag in spec.get("kubelet", {}).get("flags", []):
            if flag.startswith("--node-labels="):
                for pair in filter(None, flag.removeprefix("--node-labels=").split(",")):
                    key, _, value = pair.partition("=")
                    labels[key] = value
        return cls(cluster=spec["cluster"]["name"],
                   api_server=spec["cluster"]["apiServerEndpoint"],
                   kubelet=spec.get("kubelet", {}).get("config", {}), labels=labels)


@dataclass
class Booted:
    """One instance's kubelet."""

    instance_id: str
    node_name: str
    provider_id: str
    config: NodeConfig | None = None  # None: not a node of this cluster
    registered: bool = False
    renewed: float = 0.0


class Kubelets:
    """The kubelets of the instances the controller launches (see the module's text)."""

    def __init__(self, world: AwsWorld, kubeconfig: Path, *, registration_delay: float = 1.0,
                 interval: float = 0.5) -> None:
        self.world = world
        self.client = Client(KubeConfig.from_file(str(kubeconfig)), field_manager="kubelet")
        self.registration_delay = registration_delay
        self.interval = interval
        self.booted: dict[str, Booted] = {}
        self.errors: list[str] = []
        self._first_seen: dict[str, float] = {}
        self._types: dict[str, Mapping[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelets", daemon=True)

    def start(self) -> Kubelets:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.step()
            except Exception as error:  # a conflict, the server busy: next round
                self.errors.append(f"{type(error).__name__}: {error}")
                log.info("kubelets: %s", error)

    def step(self) -> None:
        now = time.monotonic()
        running = {i["InstanceId"]: i for i in self.world.instances("pending", "running")}
        for instance_id, instance in running.items():
            if instance_id in self.booted:
                continue
            first = self._first_seen.setdefault(instance_id, now)
            if instance["State"]["Name"] == "running" and now - first >= self.registration_delay:
                self._boot(instance)
        for booted in list(self.booted.values()):
            if booted.instance_id not in running:
                continue  # terminated: no kubelet any more
            if not booted.registered:
                self._register(booted, running[booted.instance_id])
            elif now - booted.renewed >= RENEW_SECONDS:
                self._renew(booted)
        self._run_pods({b.node_name for b in self.booted.values()
                        if b.registered and b.instance_id in running})

    # --- boot and register --------------------------------------------------------------

    def _boot(self, instance: Mapping[str, Any]) -> None:
        instance_id = instance["InstanceId"]
        raw = self.world.ec2.describe_instance_attribute(
            InstanceId=instance_id, Attribute="userData").get("UserData", {}).get("Value")
        config = NodeConfig.from_user_data(base64.b64decode(raw).decode()) if raw else None
        if config is not None and (config.cluster, config.api_server) != (
                self.world.cluster, self.world.api_url):
            # It boots, and its kubelet joins another cluster (or no API server at all).
            self.errors.append(f"{instance_id} joins {config.cluster} at {config.api_server}")
            config = None
        zone = instance["Placement"]["AvailabilityZone"]
        self.booted[instance_id] = Booted(instance_id, instance["PrivateDnsName"],
                                          f"aws:///{zone}/{instance_id}", config)

    def _register(self, booted: Booted, instance: Mapping[str, Any]) -> None:
        if booted.config is None:
            return
        node = self._node_object(booted, instance, booted.config)
        try:
            self.client.create(Node(node))
        except ApiError as error:
            if error.status.code != 409:
                raise
        self.client.patch(Node.Status, booted.node_name, {"status": node["status"]},
                          patch_type=PatchType.MERGE)
        self._renew(booted)
        booted.registered = True
        log.info("kubelet: node %s registered for %s", booted.node_name, booted.instance_id)

    def _node_object(self, booted: Booted, instance: Mapping[str, Any],
                     config: NodeConfig) -> dict[str, Any]:
        instance_type = instance["InstanceType"]
        zone = instance["Placement"]["AvailabilityZone"]
        facts = self._instance_type(instance_type)
        arch = "arm64" if "arm64" in facts["ProcessorInfo"]["SupportedArchitectures"] else "amd64"
        capacity = {
            "cpu": facts["VCpuInfo"]["DefaultVCpus"],
            "memory": facts["MemoryInfo"]["SizeInMiB"] * 2**20,
            "ephemeral-storage": 20 * 2**30,
            "pods": int(config.kubelet.get("maxPods", 110)),
        }
        allocatable = dict(capacity)
        for reserved in (config.kubelet.get("kubeReserved") or {},
                         config.kubelet.get("systemReserved") or {}):
            for resource, amount in reserved.items():
                if resource in allocatable:
                    allocatable[resource] -= quantity(amount)
        hard = (config.kubelet.get("evictionHard") or {}).get("memory.available", "100Mi")
        allocatable["memory"] -= (capacity["memory"] * float(hard[:-1]) / 100
                                  if hard.endswith("%") else quantity(hard))
        labels = {
            **config.labels,
            "kubernetes.io/hostname": booted.node_name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch,
            # The cloud node controller's labels.
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": REGION,
        }
        stamp = _now()
        ip = instance.get("PrivateIpAddress", "")
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": booted.node_name, "labels": labels},
            "spec": {"providerID": booted.provider_id,
                     "taints": [dict(t) for t in config.kubelet.get("registerWithTaints", [])]},
            "status": {
                "capacity": _quantities(capacity),
                "allocatable": _quantities(allocatable),
                "conditions": [_condition("Ready", "True", "KubeletReady", stamp),
                               *(_condition(kind, "False", reason, stamp) for kind, reason in (
                                   ("MemoryPressure", "KubeletHasSufficientMemory"),
                                   ("DiskPressure", "KubeletHasNoDiskPressure"),
                                   ("PIDPressure", "KubeletHasSufficientPID")))],
                "addresses": [{"type": "InternalIP", "address": ip},
                              {"type": "Hostname", "address": booted.node_name}],
                "nodeInfo": {
                    "architecture": arch, "operatingSystem": "linux",
                    "osImage": "Amazon Linux 2023", "kernelVersion": "6.1.0",
                    "kubeletVersion": f"v{K8S_VERSION}.1-eks",
                    "kubeProxyVersion": f"v{K8S_VERSION}.1-eks",
                    "containerRuntimeVersion": "containerd://1.7.27",
                    "machineID": booted.instance_id, "systemUUID": booted.instance_id,
                    "bootID": booted.instance_id,
                },
            },
        }

    def _instance_type(self, name: str) -> Mapping[str, Any]:
        if name not in self._types:
            self._types[name] = self.world.ec2.describe_instance_types(
                InstanceTypes=[name])["InstanceTypes"][0]
        return self._types[name]

    # --- stay alive ---------------------------------------------------------------------

    def _renew(self, booted: Booted) -> None:
        """The node Lease (what the node lifecycle controller watches) and the Ready
        heartbeat."""
        lease = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": booted.node_name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": booted.node_name,
                     "leaseDurationSeconds": NODE_LEASE_SECONDS, "renewTime": _micro_now()},
        }
        try:
            self.client.patch(Lease, booted.node_name, {"spec": lease["spec"]},
                              namespace="kube-node-lease", patch_type=PatchType.MERGE)
        except ApiError as error:
            if error.status.code != 404:
                raise
            self.client.create(Lease(lease))
        if booted.registered:
            try:
                node = self.client.get(Node, booted.node_name)
            except ApiError as error:
                if error.status.code == 404:
                    return  # deleted (the controller's doing): nothing to report on
                raise
            stamp = _now()
            conditions = [{**c, "lastHeartbeatTime": stamp}
                          for c in node.get("status", {}).get("conditions", [])]
            self.client.patch(Node.Status, booted.node_name, {"status": {"conditions": conditions}},
                              patch_type=PatchType.MERGE)
        booted.renewed = time.monotonic()

    def _run_pods(self, nodes: set[str]) -> None:
        if not nodes:
            return
        for pod in self.client.list(Pod, namespace="*"):
            spec, meta = pod.get("spec", {}), pod["metadata"]
            if spec.get("nodeName") not in nodes:
                continue
            if meta.get("deletionTimestamp"):
                # The containers stopped: the kubelet confirms the deletion.
                try:
                    self.client.delete(Pod, meta["name"], namespace=meta["namespace"],
                                       grace_period=0)
                except ApiError as error:
                    if error.status.code != 404:
                        raise
            elif pod.get("status", {}).get("phase") not in ("Running", "Succeeded", "Failed"):
                self._start(pod)

    def _start(self, pod: Mapping[str, Any]) -> None:
        stamp = _now()
        status = {
            "phase": "Running",
            "startTime": stamp,
            "conditions": [{"type": kind, "status": "True", "lastTransitionTime": stamp}
                           for kind in ("PodScheduled", "Initialized", "ContainersReady",
                                        "Ready")],
            "containerStatuses": [
                {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
                 "started": True, "restartCount": 0, "state": {"running": {"startedAt": stamp}}}
                for c in pod["spec"].get("containers", [])],
        }
        self.client.patch(Pod.Status, pod["metadata"]["name"], {"status": status},
                          namespace=pod["metadata"]["namespace"],
                          patch_type=PatchType.MERGE)

    def node_of(self, instance_id: str) -> str:
        booted = self.booted.get(instance_id)
        return booted.node_name if booted and booted.registered else ""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _condition(kind: str, status: str, reason: str, stamp: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": reason,
            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}


def _quantities(resources: Mapping[str, float]) -> dict[str, str]:
    shown: dict[str, str] = {}
    for name, amount in resources.items():
        if name == "cpu":
            shown[name] = f"{round(amount * 1000)}m"
        elif name in ("memory", "ephemeral-storage"):
            shown[name] = f"{int(amount) // 2**10}Ki"
        else:
            shown[name] = str(int(amount))
    return shown


def kubelets_for(world: AwsWorld, kubeconfig: Path) -> Iterator[Kubelets]:
    kubelets = Kubelets(world, kubeconfig).start()
    try:
        yield kubelets
    finally:
        kubelets.stop()
        for error in kubelets.errors[-5:]:
            print(f"kubelets: {error}")
