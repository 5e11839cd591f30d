"""The launches of `nodewright controller --cloud aws` made the way Karpenter v1.14.1 makes
them, on a real control plane and an AWS account served by moto (tests/e2e/aws_world.py):
a dedicated-tenancy NodePool gets dedicated hardware, and a NodePool that allows a metal
type alongside an ordinary one sends CreateFleet the ordinary one only.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.aws_world import NODE_ROLE, AwsWorld, Kubelets
from tests.e2e.conftest import StartController
from tests.e2e.harness import CLUSTER_NAME, ControlPlane, eventually
from tests.e2e.test_aws_wiring import instance_id, launched_claim

NODE_CLASS = f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  role: {NODE_ROLE}
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: {CLUSTER_NAME}}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: {CLUSTER_NAME}}}}}]
"""
DEDICATED_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: isolated}
spec:
  template:
    metadata: {labels: {team: ledger}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [dedicated]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.metal]}
"""
LEDGER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: ledger, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: ledger}}
  template:
    metadata: {labels: {app: ledger}}
    spec:
      nodeSelector: {team: ledger}
      terminationGracePeriodSeconds: 5
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: 250m, memory: 256Mi}}
"""


def template_data(world: AwsWorld, fleet: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for config in fleet["LaunchTemplateConfigs"]:
        spec = config["LaunchTemplateSpecification"]
        named = ({"LaunchTemplateId": spec["LaunchTemplateId"]} if spec.get("LaunchTemplateId")
                 else {"LaunchTemplateName": spec["LaunchTemplateName"]})
        versions = world.ec2.describe_launch_template_versions(**named)["LaunchTemplateVersions"]
        found.append(versions[0]["LaunchTemplateData"])
    return found


def test_a_dedicated_nodepool_gets_dedicated_hardware_and_no_metal_type(
        control_plane: ControlPlane, aws_world: AwsWorld, kubelets: Kubelets,
        start_aws: StartController) -> None:
    plane, world = control_plane, aws_world
    plane.apply(NODE_CLASS)
    plane.apply(DEDICATED_POOL)
    plane.apply(LEDGER)
    start_aws()

    plane.kubectl("scale", "deployment", "ledger", "--replicas", "1")
    claim = eventually(lambda: launched_claim(plane), timeout=60,
                       what="a NodeClaim launched, registered and initialized")

    fleet = world.fleet_of(instance_id(claim))
    offered = {override["InstanceType"] for config in fleet["LaunchTemplateConfigs"]
               for override in config.get("Overrides", [])}
    assert offered == {"m5.large"}, "the metal type is left out while m5.large fits"
    for data in template_data(world, fleet):
        assert data["Placement"]["Tenancy"] == "dedicated"
        assert data["MetadataOptions"]["InstanceMetadataTags"] == "disabled"
    assert claim["metadata"]["labels"]["karpenter.k8s.aws/instance-tenancy"] == "dedicated"
    node = plane.get("node", claim["status"]["nodeName"])
    assert node["metadata"]["labels"]["karpenter.k8s.aws/instance-tenancy"] == "dedicated"
