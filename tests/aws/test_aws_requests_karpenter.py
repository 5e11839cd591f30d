"""The AWS requests Nodewright sends, held to the ones Karpenter v1.14.1 sends in the same
situation (aws/karpenter-provider-aws pkg/providers/*, pkg/controllers/*), where they differed
in a way real AWS refuses or that changes what is launched, kept or deleted.

moto accepts requests EC2 refuses, so these tests read the requests themselves (the FakeEC2
recorder, the call recorder) and, where EC2 has a rule moto lacks, put that rule in front
of moto: a launch naming network interfaces from a template with instance-level security
groups is refused with InvalidParameterCombination, as EC2 refuses it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.launch_templates import LaunchConfig
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.conftest import CallRecorder
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim

COMBINATION = "InvalidParameterCombination"


def conditions(provider: AwsCloudProvider, clock: FakeClock, **spec: Any) -> dict[str, str]:
    clock.advance(61)  # past the resolution cache
    return {c.type: c.status for c in provider.resolve(node_class(**spec)).conditions()}


# --- CreateLaunchTemplate: the security groups go on the primary interface ----------------


def test_the_template_puts_its_security_groups_on_the_primary_interface(
    provider: AwsCloudProvider, ec2: FakeEC2, world: World,
) -> None:
    """Karpenter launchtemplate.go:355-368 (generateNetworkInterfaces' default interface)
    and types.go:119-120: with no interface settings the template still lists one interface,
    device 0, carrying the security groups, and no instance-level SecurityGroupIds."""
    provider.create(nodeclaim(), node_class())

    templates = list(ec2.template_data())
    assert templates
    for data in templates:
        assert "SecurityGroupIds" not in data
        assert data["NetworkInterfaces"] == [{"DeviceIndex": 0,
                                              "Groups": [world.security_group]}]


@pytest.fixture
def strict_run_instances(clients: AwsClients, ec2: FakeEC2) -> Iterator[list[str]]:
    """EC2's rule moto lacks: RunInstances naming network interfaces, from a template that
    lists instance-level security groups, is refused (InvalidParameterCombination). The
    codes EC2 answered, in order."""
    answered: list[str] = []

    def judge(params: dict[str, Any], **_: Any) -> None:
        name = params.get("LaunchTemplate", {}).get("LaunchTemplateName", "")
        data = ec2.launch_templates().get(name, {})
        refused = bool(params.get("NetworkInterfaces") and data.get("SecurityGroupIds"))
        answered.append(COMBINATION if refused else "DryRunOperation")

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if answered[-1] != COMBINATION:
            return None  # moto answers
        message = ("Network interfaces and an instance-level security groups may not be "
                   "specified on the same request")
        return (AWSResponse("https://ec2.amazonaws.com", 400, {}, None),
                {"Error": {"Code": COMBINATION, "Message": message},
                 "ResponseMetadata": {"HTTPStatusCode": 400}})

    events = clients.ec2.meta.events
    events.register("provide-client-params.ec2.RunInstances", judge)
    events.register("before-call.ec2.RunInstances", answer)
    yield answered
    events.unregister("provide-client-params.ec2.RunInstances", judge)
    events.unregister("before-call.ec2.RunInstances", answer)


def test_the_dry_run_launch_of_a_plain_node_class_is_not_refused(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
    strict_run_instances: list[str],
) -> None:
    """Karpenter validation.go:378-409 and 552-570: the dry-run RunInstances names the
    subnet on a device-0 interface. Against a template with instance-level security groups
    EC2 refuses that (InvalidParameterCombination), which left ValidationSucceeded Unknown
    and the node class unable to launch anything on real EC2; with the groups on the
    template's primary interface, as Karpenter's, the dry run passes."""
    checked = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                               dry_run=True)

    found = conditions(checked, clock)

    assert found["ValidationSucceeded"] == "True"
    assert found["Ready"] == "True"
    (run,) = ec2.calls("RunInstances")
    assert run["NetworkInterfaces"][0]["DeviceIndex"] == 0
    assert strict_run_instances == ["DryRunOperation"]


LAUNCH_TEMPLATE_NAME = re.compile(r"^[a-zA-Z0-9().\-/_]{3,128}$")  # EC2's rule


def test_template_names_stay_within_ec2s_limit_for_the_longest_cluster_names() -> None:
    """Karpenter launchtemplate.go:209-211 names a template `karpenter.k8s.aws/<uint64>`,
    at most 38 characters. `nodewright/<cluster>/<fingerprint>` reached 136 for a
    100-character EKS cluster name, and EC2 refuses a name over 128 characters; the
    cluster part is cut short, and two such clusters still get names of their own."""
    long_name = "a" * 92 + "-cluster"  # 100 characters, EKS's longest
    config = LaunchConfig(
        cluster=long_name, nodepool="default", node_class="default", image_id="ami-1",
        user_data="", instance_profile="profile", security_group_ids=("sg-1",),
        metadata_options={}, block_device_mappings=())
    twin = dataclasses.replace(config, cluster="a" * 92 + "-staging")

    assert LAUNCH_TEMPLATE_NAME.match(config.name), config.name
    assert len(config.name) == 128
    assert config.name != twin.name
    short = dataclasses.replace(config, cluster=CLUSTER)
    assert short.name == f"nodewright/{CLUSTER}/{short.fingerprint()}"


# --- DescribeLaunchTemplates: only the cluster's NodeClaim templates are collected --------


def foreign_template(clients: AwsClients, name: str, tags: dict[str, str]) -> None:
    clients.ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-ekslinux"},
        TagSpecifications=[{"ResourceType": "launch-template",
                            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}])


def template_names(clients: AwsClients) -> set[str]:
    return {t["LaunchTemplateName"]
            for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]}


def test_garbage_collection_leaves_other_tools_templates_alone(
    provider: AwsCloudProvider, clients: AwsClients, clock: FakeClock, ec2: FakeEC2,
) -> None:
    """Karpenter launchtemplate.go:444-472 (hydrateCache): the templates a launch may have
    left are asked for by `tag:eks:eks-cluster-name`, 200 a page. Asked by
    `kubernetes.io/cluster/<cluster>: owned` instead, a self-managed node group's template
    (eksctl and Terraform tag theirs so) was listed and, unused by any launch, deleted."""
    foreign_template(clients, "eksctl-demo-nodegroup-ng-1",
                     {f"kubernetes.io/cluster/{CLUSTER}": "owned"})
    foreign_template(clients, "platform-team-template",
                     {f"kubernetes.io/cluster/{CLUSTER}": "owned",
                      "eks:eks-cluster-name": CLUSTER})
    provider.create(nodeclaim(), node_class())
    launched = template_names(clients) - {"eksctl-demo-nodegroup-ng-1",
                                          "platform-team-template"}
    clock.advance(120)  # no launch used them for a minute
    asked_before = len(ec2.calls("DescribeLaunchTemplates"))

    report = provider.collect_cloud_garbage({"default"})
    (asked,) = ec2.calls("DescribeLaunchTemplates")[asked_before:]

    assert set(report.deleted_templates) == launched
    assert template_names(clients) == {"eksctl-demo-nodegroup-ng-1", "platform-team-template"}
    assert asked["Filters"] == [{"Name": "tag:eks:eks-cluster-name", "Values": [CLUSTER]}]
    assert asked["MaxResults"] == 200


def test_the_finalizer_asks_for_its_node_class_templates_by_tag(
    provider: AwsCloudProvider, clients: AwsClients, ec2: FakeEC2,
) -> None:
    """Karpenter launchtemplate.go:493-521 (DeleteAll): the node class's templates are asked
    for by the cluster's and the node class's tags."""
    provider.create(nodeclaim(), node_class())
    launched = template_names(clients)
    asked_before = len(ec2.calls("DescribeLaunchTemplates"))

    report = provider.delete_node_class_resources("default")
    (asked,) = ec2.calls("DescribeLaunchTemplates")[asked_before:]

    assert set(report.deleted_templates) == launched
    assert asked["Filters"] == [
        {"Name": "tag:eks:eks-cluster-name", "Values": [CLUSTER]},
        {"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": ["default"]}]


# --- IAM: a named instance profile in an isolated VPC ----------------------------------------


def test_an_isolated_vpc_launches_with_its_named_profile_without_asking_iam(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
    recorder: CallRecorder,
) -> None:
    """Karpenter controllers/nodeclass/instanceprofile.go:112-120: `spec.instanceProfile`
    goes into the status as written, without an IAM call, which is why a cluster in a VPC
    without IAM access (ISOLATED_VPC) names one. Reading it from IAM there made
    InstanceProfileReady False and the node class launched nothing."""
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://iam.amazonaws.com/")

    clients.iam.meta.events.register("before-call.iam.*", unreachable)
    before = len(recorder.actions)  # the world's own IAM calls (its node role) come first
    isolated = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                isolated_vpc=True)
    private = node_class(role=None, instanceProfile="private-nodes")
    assert conditions(isolated, clock, role=None,
                      instanceProfile="private-nodes")["InstanceProfileReady"] == "True"

    isolated.create(nodeclaim(), private)

    assert {t["IamInstanceProfile"]["Name"] for t in ec2.template_data()} == {"private-nodes"}
    assert not [a for a in recorder.actions[before:] if a.startswith("iam:")]


# --- SQS: ReceiveMessage -----------------------------------------------------------------


def test_the_interruption_queue_receives_as_karpenter_does(
    clients: AwsClients, recorder: CallRecorder,
) -> None:
    """Karpenter providers/sqs/sqs.go:57-75 (GetSQSMessages): 10 messages, a 20 s long
    poll and a 20 s visibility timeout (a message whose handler failed comes back after 20
    s, not after the queue's default 30 s), the sent timestamp and every message attribute
    along."""
    url = clients.sqs.create_queue(QueueName=CLUSTER)["QueueUrl"]
    clients.sqs.send_message(QueueUrl=url, MessageBody="{not json")
    queue = InterruptionQueue.by_name(clients.sqs, CLUSTER)

    result = queue.poll_once(lambda events: None)

    assert (result.received, result.malformed, result.deleted) == (1, 1, 1)
    (receive,) = recorder.calls_of("sqs:ReceiveMessage")
    assert receive == {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 20,
                       "WaitTimeSeconds": 20, "AttributeNames": ["SentTimestamp"],
                       "MessageAttributeNames": ["All"]}


def test_a_launch_whose_template_went_away_makes_it_again_and_launches(
    provider: AwsCloudProvider, clients: AwsClients, ec2: FakeEC2,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Karpenter instance.go:152-156: a CreateFleet refused because a launch template is not
    found (here garbage collection deleted it between the lookup and the fleet) is tried
    once more with the templates made again, not failed."""
    create_fleet = clients.ec2.create_fleet
    refused = []

    def template_gone_first(**request: Any) -> Any:
        if not refused:
            for template in clients.ec2.describe_launch_templates()["LaunchTemplates"]:
                clients.ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
            refused.append(request)
            raise ClientError({"Error": {
                "Code": "InvalidLaunchTemplateName.NotFoundException",
                "Message": "The specified launch template does not exist."}}, "CreateFleet")
        return create_fleet(**request)

    monkeypatch.setattr(clients.ec2, "create_fleet", template_gone_first)
    instance = provider.create(nodeclaim(), node_class())

    assert refused and instance.instance_id
    used = {c["LaunchTemplateSpecification"]["LaunchTemplateName"]
            for c in refused[0]["LaunchTemplateConfigs"]}
    assert used <= template_names(clients)
