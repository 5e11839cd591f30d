"""Launching: the CreateFleet request we send, idempotency, capacity errors and retries."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from nodewright.cloud.aws.actions import AWS_ACTIONS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from tests.aws.world import FakeClock

from .conftest import CallRecorder
from .fleet_injector import FleetInjector, fake_response
from .world import CLUSTER, X86_IMAGE, World, custom_node_class, node_class, nodeclaim


def fleet_overrides(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (override["InstanceType"], override["AvailabilityZone"])
        for config in request["LaunchTemplateConfigs"]
        for override in config["Overrides"]
    ]


def test_create_sends_an_instant_fleet_cheapest_first_and_tags_everything(
    provider: AwsCloudProvider, recorder: CallRecorder, world: World, clients: AwsClients
) -> None:
    instance = provider.create(nodeclaim(), node_class())

    request = recorder.calls_of("ec2:CreateFleet")[0]
    assert request["Type"] == "instant"
    assert request["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 1,
        "DefaultTargetCapacityType": "on-demand",
    }
    assert request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert request["ClientToken"].startswith("6f1c1b7e-1111-4a4a-9c9c-000000000001-")
    overrides = fleet_overrides(request)
    types_in_order = list(dict.fromkeys(name for name, _ in overrides))
    assert types_in_order == ["t3.medium", "c5.large", "m5.large", "m5.xlarge"]
    assert {zone for _, zone in overrides} == set(world.subnets)
    subnets = {o["SubnetId"] for c in request["LaunchTemplateConfigs"] for o in c["Overrides"]}
    assert subnets == set(world.subnets.values())
    assert {spec["ResourceType"] for spec in request["TagSpecifications"]} == {
        "fleet",
        "instance",
        "volume",
    }

    assert instance.provider_id == f"aws:///{instance.zone}/{instance.instance_id}"
    assert instance.image_id == X86_IMAGE
    raw = clients.ec2.describe_instances(InstanceIds=[instance.instance_id])
    tags = {t["Key"]: t["Value"] for t in raw["Reservations"][0]["Instances"][0]["Tags"]}
    assert tags == {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/nodeclaim": "default-abcde",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "team": "payments",
    }  # no Name before the Node registers (controllers/nodeclaim/tagging.py)


def test_spot_uses_price_capacity_optimized(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    provider.create(
        nodeclaim(
            requirements=[
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.large"],
                },
                {
                    "key": "karpenter.sh/capacity-type",
                    "operator": "In",
                    "values": ["spot", "on-demand"],
                },
            ]
        ),
        node_class(),
    )
    request = recorder.calls_of("ec2:CreateFleet")[0]
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"


def test_at_most_sixty_instance_types_are_offered(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    provider.create(
        nodeclaim(
            requirements=[
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        ),
        node_class(),
    )
    names = {name for name, _ in fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])}
    assert len(names) == 60


def test_creating_twice_for_one_nodeclaim_yields_one_instance(
    provider: AwsCloudProvider, recorder: CallRecorder, clients: AwsClients
) -> None:
    first = provider.create(nodeclaim(), node_class())
    second = provider.create(nodeclaim(), node_class())

    assert second.instance_id == first.instance_id
    assert len(recorder.calls_of("ec2:CreateFleet")) == 1
    assert [i.instance_id for i in provider.list()] == [first.instance_id]


def test_a_fleet_whose_answer_was_lost_is_found_again_not_launched_twice(
    provider: AwsCloudProvider, recorder: CallRecorder, clients: AwsClients
) -> None:
    """Issue 28: CreateFleet launched the instance and its answer was lost (the connection
    timed out reading it). The launch fails, and is retried by the lifecycle; the retry
    finds the instance by its NodeClaim tag and launches nothing: one NodeClaim, one
    instance."""
    from botocore.exceptions import ReadTimeoutError

    lost = [True]

    def lose_the_answer(**_: Any) -> None:
        if lost.pop() if lost else False:
            raise ReadTimeoutError(endpoint_url="https://ec2.us-west-2.amazonaws.com")

    clients.ec2.meta.events.register("after-call.ec2.CreateFleet", lose_the_answer)
    try:
        with pytest.raises(CloudProviderError):
            provider.create(nodeclaim(), node_class())
        (launched,) = provider.list()
        again = provider.create(nodeclaim(), node_class())
    finally:
        clients.ec2.meta.events.unregister("after-call.ec2.CreateFleet", lose_the_answer)

    assert again.instance_id == launched.instance_id
    assert len(recorder.calls_of("ec2:CreateFleet")) == 1
    assert [i.instance_id for i in provider.list()] == [launched.instance_id]


def test_a_capacity_error_on_the_cheapest_offering_moves_the_next_attempt(
    provider: AwsCloudProvider,
    recorder: CallRecorder,
    injector: FleetInjector,
    clock: FakeClock,
) -> None:
    def cheapest_has_no_capacity(params: dict[str, Any]) -> Any:
        config = params["LaunchTemplateConfigs"][0]
        override = config["Overrides"][0]
        return fake_response(
            200,
            {
                "Instances": [],
                "Errors": [
                    {
                        "LaunchTemplateAndOverrides": {
                            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
                            "Overrides": override,
                        },
                        "Lifecycle": "on-demand",
                        "ErrorCode": "InsufficientInstanceCapacity",
                        "ErrorMessage": "We currently do not have sufficient capacity.",
                    }
                ],
            },
        )

    injector.pending.append(cheapest_has_no_capacity)
    with pytest.raises(InsufficientCapacityError, match="InsufficientInstanceCapacity"):
        provider.create(nodeclaim(), node_class())
    first_choice = fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])[0]
    assert provider.unavailable.is_unavailable(*first_choice, "on-demand")

    provider.create(nodeclaim(), node_class())
    retry = recorder.calls_of("ec2:CreateFleet")[1]
    assert first_choice not in fleet_overrides(retry)
    assert retry["ClientToken"] != recorder.calls_of("ec2:CreateFleet")[0]["ClientToken"]

    catalog = {it.name: it for it in provider.get_instance_types(node_class())}
    offering = next(
        o
        for o in catalog[first_choice[0]].offerings
        if (o.zone, o.capacity_type) == (first_choice[1], "on-demand")
    )
    assert not offering.available

    clock.advance(181)
    assert not provider.unavailable.is_unavailable(*first_choice, "on-demand")


def test_other_fleet_errors_are_terminal_and_quote_aws(
    provider: AwsCloudProvider, injector: FleetInjector
) -> None:
    injector.pending.append(
        fake_response(
            200,
            {
                "Instances": [],
                "Errors": [
                    {"ErrorCode": "InvalidParameterValue", "ErrorMessage": "bad launch template"}
                ],
            },
        )
    )
    with pytest.raises(CloudProviderError) as raised:
        provider.create(nodeclaim(), node_class())
    assert not isinstance(raised.value, InsufficientCapacityError)
    assert str(raised.value) == (
        "ec2:CreateFleet nodeclaim default-abcde: InvalidParameterValue: bad launch template"
    )


class RawBody:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


THROTTLED = (
    b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    b"<Message>Request limit exceeded.</Message></Error></Errors>"
    b"<RequestID>r-1</RequestID></Response>"
)


def test_throttling_is_retried_by_botocore_standard_mode(
    provider: AwsCloudProvider,
    clients: AwsClients,
    recorder: CallRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    sent: list[str] = []

    def throttle_first_send(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(request.url)
        if len(sent) == 1:
            return AWSResponse(request.url, 503, {}, RawBody(THROTTLED))  # type: ignore[arg-type]
        return None

    hook: Any = throttle_first_send
    clients.ec2.meta.events.register_first("before-send.ec2.CreateFleet", hook)

    instance = provider.create(nodeclaim(), node_class())

    assert instance.instance_id.startswith("i-")
    assert len(sent) == 2
    assert len(recorder.calls_of("ec2:CreateFleet")) == 1  # one API call, retried inside


def test_get_list_delete_round_trip(provider: AwsCloudProvider) -> None:
    instance = provider.create(nodeclaim(), node_class())
    assert provider.get(instance.provider_id).instance_id == instance.instance_id

    provider.delete(instance.provider_id)
    provider.delete(instance.provider_id)  # already gone: still fine

    with pytest.raises(NodeClaimNotFoundError):
        provider.get(instance.provider_id)
    assert provider.list() == []
    with pytest.raises(NodeClaimNotFoundError):
        provider.get(f"aws:///{instance.zone}/i-0123456789abcdef0")


def test_a_node_class_that_resolves_nothing_refuses_to_launch(
    provider: AwsCloudProvider,
) -> None:
    broken = node_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nowhere"}}])
    with pytest.raises(NodeClassNotReadyError, match="subnetSelectorTerms\\[0\\]"):
        provider.create(nodeclaim(), broken)


def test_every_call_the_provider_makes_is_in_the_action_list(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    recorder.actions.clear()
    instance = provider.create(nodeclaim(), node_class())
    provider.get(instance.provider_id)
    provider.list()
    provider.delete(instance.provider_id)
    provider.collect_cloud_garbage(set())
    called = set(recorder.actions)
    assert called <= {use.action for use in AWS_ACTIONS}
    assert {
        "ec2:CreateFleet",
        "ec2:CreateLaunchTemplate",
        "ssm:GetParameter",
        "eks:DescribeCluster",
        "ec2:TerminateInstances",
    } <= called


def launch_template_user_data(clients: AwsClients) -> list[str]:
    import base64

    texts = []
    for template in clients.ec2.describe_launch_templates()["LaunchTemplates"]:
        versions = clients.ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"]
        )["LaunchTemplateVersions"]
        texts += [base64.b64decode(v["LaunchTemplateData"]["UserData"]).decode() for v in versions]
    return texts


@pytest.mark.parametrize("max_pods", [None, 50])
def test_al2_launch_always_passes_the_max_pods_the_catalog_planned(
    provider: AwsCloudProvider, clients: AwsClients, max_pods: int | None
) -> None:
    """Karpenter v1.14.1 (amifamily resolver + eksbootstrap.go): kubelet.maxPods, else the
    instance type's pod capacity, always replaces bootstrap.sh's ENI table."""
    kubelet = {"maxPods": max_pods} if max_pods is not None else {}
    al2 = node_class(amiSelectorTerms=[{"alias": "al2@latest"}], kubelet=kubelet)
    provider.create(nodeclaim(), al2)

    texts = launch_template_user_data(clients)
    assert texts and all("/etc/eks/bootstrap.sh" in text for text in texts)
    assert all("--use-max-pods false" in text for text in texts)
    passed = {int(text.split("--max-pods=")[1].split("'")[0]) for text in texts}
    # t3.medium 17, c5.large and m5.large 29, m5.xlarge 58 (ENI-limited)
    assert passed == ({17, 29, 58} if max_pods is None else {max_pods})


def test_al2023_user_data_that_is_not_readable_mime_refuses_to_launch(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """A MIME document whose last part never ends (no closing boundary) cannot be merged,
    as Karpenter's reader fails on it: nothing is launched."""
    broken = node_class(userData='MIME-Version: 1.0\nContent-Type: multipart/mixed; '
                                  'boundary="B"\n\n--B\nContent-Type: text/x-shellscript\n\n'
                                  "#!/bin/bash\necho never ends\n")
    with pytest.raises(CloudProviderError, match=r"spec\.userData: multipart"):
        provider.create(nodeclaim(), broken)
    assert recorder.calls_of("ec2:CreateFleet") == []


def test_al2023_user_data_that_is_not_yaml_launches_as_a_script(
    provider: AwsCloudProvider, recorder: CallRecorder
) -> None:
    """As Karpenter's nodeadm merge: text that is neither MIME nor a YAML mapping is the
    user's shell script, a part before our NodeConfig."""
    provider.create(nodeclaim(), node_class(userData="echo hi\n"))
    assert recorder.calls_of("ec2:CreateFleet")
    for data in launch_template_data_sent(recorder):
        text = base64.b64decode(data["UserData"]).decode()
        assert '--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\necho hi\n\n--//' \
            in text


def launch_template_data_sent(recorder: CallRecorder) -> list[dict[str, Any]]:
    return [call["LaunchTemplateData"]
            for call in recorder.calls_of("ec2:CreateLaunchTemplate")]


def launch_template_data(clients: AwsClients) -> list[dict[str, Any]]:
    names = [t["LaunchTemplateName"]
             for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]]
    return [
        clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)[
            "LaunchTemplateVersions"][0]["LaunchTemplateData"]
        for name in names
    ]


def test_the_custom_family_leaves_block_devices_to_the_ami(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    custom = custom_node_class()
    provider.create(nodeclaim(), custom)

    (data,) = launch_template_data(clients)
    assert "BlockDeviceMappings" not in data


def test_the_custom_family_uses_the_block_devices_the_node_class_lists(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    custom = custom_node_class(
        blockDeviceMappings=[{"deviceName": "/dev/sda1", "rootVolume": True,
                              "ebs": {"volumeSize": "50Gi", "volumeType": "gp3"}}],
    )
    provider.create(nodeclaim(), custom)

    (data,) = launch_template_data(clients)
    assert [(m["DeviceName"], m["Ebs"]["VolumeSize"]) for m in data["BlockDeviceMappings"]] == [
        ("/dev/sda1", 50)
    ]


def test_other_families_still_get_a_20gib_root_volume(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    provider.create(nodeclaim(), node_class())

    for data in launch_template_data(clients):
        assert [(m["DeviceName"], m["Ebs"]["VolumeSize"])
                for m in data["BlockDeviceMappings"]] == [("/dev/xvda", 20)]


def test_a_node_class_with_an_invalid_kubelet_configuration_refuses_to_launch(
    provider: AwsCloudProvider,
) -> None:
    # The CRD stores grace periods as plain strings; no kubelet would start with this one.
    bad = node_class(kubelet={"evictionSoft": {"memory.available": "5%"},
                              "evictionSoftGracePeriod": {"memory.available": "soon"}})
    with pytest.raises(NodeClassNotReadyError,
                       match=r"spec\.kubelet\.evictionSoftGracePeriod\[memory\.available\]"):
        provider.create(nodeclaim(), bad)
    assert provider.list() == []


def test_the_kubelet_settings_reach_the_al2023_launch_templates_user_data(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    tuned = node_class(kubelet={"evictionSoft": {"memory.available": "5%"},
                                "evictionSoftGracePeriod": {"memory.available": "45s"},
                                "cpuCFSQuota": False})
    provider.create(nodeclaim(), tuned)

    assert any("evictionSoftGracePeriod:\n" in text and "memory.available: 45s" in text
               and "cpuCFSQuota: false" in text
               for text in launch_template_user_data(clients))


def test_context_and_volume_initialization_rate_reach_the_fleet_and_template(
    provider: AwsCloudProvider, recorder: CallRecorder, world: World, clients: AwsClients,
) -> None:
    snapshot = clients.ec2.create_snapshot(VolumeId=clients.ec2.create_volume(
        AvailabilityZone=f"{clients.region}a", Size=20)["VolumeId"])["SnapshotId"]
    tuned = node_class(context="c-0123456789abcdef0", blockDeviceMappings=[
        {"deviceName": "/dev/xvda", "rootVolume": True,
         "ebs": {"snapshotID": snapshot, "volumeInitializationRate": 200}}])

    provider.create(nodeclaim(), tuned)

    request = recorder.calls_of("ec2:CreateFleet")[0]
    assert request["Context"] == "c-0123456789abcdef0"
    (template,) = recorder.calls_of("ec2:CreateLaunchTemplate")[:1]
    ebs = template["LaunchTemplateData"]["BlockDeviceMappings"][0]["Ebs"]
    assert (ebs["SnapshotId"], ebs["VolumeInitializationRate"]) == (snapshot, 200)


def test_prefixes_tracking_and_nested_virtualization_reach_the_launch_template(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    tuned = node_class(ipPrefixCount=2, cpuOptions={"nestedVirtualization": "enabled"},
                       connectionTracking={"tcpEstablishedTimeout": 600, "udpTimeout": 45})
    provider.create(efa_claim(["c7i.large"], efa=False), tuned)

    for data in launch_template_data(clients):
        assert "SecurityGroupIds" not in data
        (interface,) = data["NetworkInterfaces"]
        assert interface["DeviceIndex"] == 0 and interface["Ipv4PrefixCount"] == 2
        assert interface["Groups"] == [world.security_group]
        assert interface["ConnectionTrackingSpecification"] == {
            "TcpEstablishedTimeout": 600, "UdpTimeout": 45}
        assert "AssociatePublicIpAddress" not in interface
        assert data["CpuOptions"] == {"NestedVirtualization": "enabled"}


def test_without_interface_settings_the_template_lists_security_groups(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    # On the primary interface, as Karpenter's default interface (never instance-level
    # SecurityGroupIds: EC2 refuses those beside the dry run's interfaces).
    provider.create(nodeclaim(), node_class())

    for data in launch_template_data(clients):
        assert "SecurityGroupIds" not in data
        assert data["NetworkInterfaces"] == [{"DeviceIndex": 0,
                                              "Groups": [world.security_group]}]
        assert "CpuOptions" not in data


def efa_claim(types: list[str], efa: bool) -> Any:
    from nodewright.api.nodeclaim import NodeClaim

    body = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]).model_dump(by_alias=True, exclude_none=True, mode="json")
    body["spec"]["resources"] = {"requests": {"cpu": "1", **(
        {"vpc.amazonaws.com/efa": "1"} if efa else {})}}
    return NodeClaim.model_validate(body)


def test_pods_asking_for_efa_launch_with_an_efa_interface_per_device(
    provider: AwsCloudProvider, clients: AwsClients, recorder: CallRecorder, world: World,
) -> None:
    provider.create(efa_claim(["c5n.18xlarge", "c6in.32xlarge"], efa=True), node_class())

    by_count = {}
    for call in recorder.calls_of("ec2:CreateLaunchTemplate"):
        interfaces = call["LaunchTemplateData"]["NetworkInterfaces"]
        by_count[len(interfaces)] = interfaces
        assert "SecurityGroupIds" not in call["LaunchTemplateData"]
    assert sorted(by_count) == [1, 2]  # c5n.18xlarge has one EFA device, c6in.32xlarge two
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"], i["Groups"])
            for i in by_count[2]] == [(0, 0, "efa", [world.security_group]),
                                      (1, 1, "efa", [world.security_group])]


def test_efa_capable_types_launch_plain_without_an_efa_request(
    provider: AwsCloudProvider, recorder: CallRecorder,
) -> None:
    provider.create(efa_claim(["c5n.18xlarge"], efa=False), node_class())

    (call,) = recorder.calls_of("ec2:CreateLaunchTemplate")
    (primary,) = call["LaunchTemplateData"]["NetworkInterfaces"]
    assert "InterfaceType" not in primary and primary["DeviceIndex"] == 0


def test_nested_virtualization_keeps_only_the_types_that_support_it(
    provider: AwsCloudProvider, recorder: CallRecorder,
) -> None:
    nested = node_class(cpuOptions={"nestedVirtualization": "enabled"})
    types = {t.name for t in provider.get_instance_types(nested)}
    assert "c7i.large" in types and "m5.large" not in types
    disabled = node_class(cpuOptions={"nestedVirtualization": "disabled"})
    assert "m5.large" in {t.name for t in provider.get_instance_types(disabled)}

    provider.create(efa_claim(["m5.large", "c7i.large"], efa=False), nested)
    assert fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])
    assert {t for t, _ in fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])} == {
        "c7i.large"}


PRIMARY = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}


def efa_only(card: int, device: int = 0) -> dict[str, Any]:
    return {"networkCardIndex": card, "deviceIndex": device, "interfaceType": "efa-only"}


def test_listed_network_interfaces_are_the_launch_templates_whatever_the_pods_ask(
    provider: AwsCloudProvider, recorder: CallRecorder, world: World,
) -> None:
    listed = node_class(networkInterfaces=[PRIMARY, efa_only(1)], associatePublicIPAddress=False,
                        ipPrefixCount=1, connectionTracking={"udpTimeout": 45})
    provider.create(efa_claim(["c6in.32xlarge", "c5n.18xlarge"], efa=True), listed)

    (call,) = recorder.calls_of("ec2:CreateLaunchTemplate")  # one template: the listed ones
    data = call["LaunchTemplateData"]
    assert "SecurityGroupIds" not in data
    primary, efa = data["NetworkInterfaces"]
    assert primary == {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface",
                       "Groups": [world.security_group], "AssociatePublicIpAddress": False,
                       "Ipv4PrefixCount": 1,
                       "ConnectionTrackingSpecification": {"UdpTimeout": 45}}
    # No address, prefix or tracking on an EFA-only interface (EC2 refuses the launch).
    assert efa == {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only",
                   "Groups": [world.security_group]}
    # c5n.18xlarge has one network card: it cannot take an interface on card 1.
    assert {t for t, _ in fleet_overrides(recorder.calls_of("ec2:CreateFleet")[0])} == {
        "c6in.32xlarge"}


def test_listed_interfaces_keep_the_catalog_to_types_that_can_take_them(
    provider: AwsCloudProvider,
) -> None:
    plain = {t.name: t for t in provider.get_instance_types(node_class())}
    primary_only = {t.name: t for t in provider.get_instance_types(
        node_class(networkInterfaces=[PRIMARY]))}
    with_efa = {t.name: t for t in provider.get_instance_types(
        node_class(networkInterfaces=[PRIMARY, efa_only(0, 1), efa_only(1)]))}

    assert "t2.micro" in plain and "t2.micro" not in primary_only  # no ENA
    assert "m5.large" in primary_only and "m5.large" not in with_efa  # one card, no EFA
    assert "c5n.18xlarge" not in with_efa  # one network card
    c6in = with_efa["c6in.32xlarge"]
    # The EFA devices are the EFA-only interfaces listed; one of them takes an ENI of the
    # default card, which then carries no pod addresses (49 fewer pods).
    assert plain["c6in.32xlarge"].capacity["vpc.amazonaws.com/efa"] == 2000
    assert "vpc.amazonaws.com/efa" not in primary_only["c6in.32xlarge"].capacity
    assert c6in.capacity["vpc.amazonaws.com/efa"] == 2000
    assert c6in.capacity["pods"] == plain["c6in.32xlarge"].capacity["pods"] - 49_000


def test_raid0_counts_the_instance_store_as_ephemeral_storage_where_a_type_has_one(
    provider: AwsCloudProvider,
) -> None:
    ephemeral = "ephemeral-storage"
    plain = {t.name: t for t in provider.get_instance_types(node_class())}
    raid = {t.name: t for t in provider.get_instance_types(
        node_class(instanceStorePolicy="RAID0"))}

    # m5d.large has one 75 GB NVMe disk (decimal gigabytes, as EC2 gives the size).
    assert raid["m5d.large"].capacity[ephemeral] == 75 * 10**9 * 1000
    assert plain["m5d.large"].capacity[ephemeral] == 20 * 2**30 * 1000
    # The nodefs.available threshold (10 %) follows the disk it watches.
    assert raid["m5d.large"].overhead.eviction_threshold[ephemeral] == 7.5 * 10**9 * 1000
    # No instance store: the root volume still holds the node's ephemeral storage.
    assert raid["m5.large"].capacity[ephemeral] == plain["m5.large"].capacity[ephemeral]
