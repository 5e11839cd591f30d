"""Karpenter's launch template suite (pkg/providers/launchtemplate/suite_test.go, v1.14.1): the
Custom AMI selector, Custom block device, instance profile and Bottlerocket RAID0 tests,
ported: each test names its It. A NodeClaim is launched through the real provider on moto
and the launch templates sent are read from the FakeEC2 recorder. Karpenter's images are
moto's own (its x86_64 and arm64 images of tests.aws.world), tagged where the Go test selects
by tag.
"""

from __future__ import annotations

import base64
import tomllib
from typing import Any

import pytest
from moto.ec2.models import ec2_backends

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_instance_karpenter import claim
from tests.aws.world import (
    ACCOUNT,
    K8S_VERSION,
    X86_IMAGE,
    World,
    node_class,
    nodeclaim,
    seed_public_parameter,
)

KMS_KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
CUSTOM_TAG = {"ami-family": "custom"}


def tag_images(world: World, *image_ids: str) -> None:
    """moto's CreateTags refuses the ids of the images it ships; its backend takes them."""
    ec2_backends[ACCOUNT][world.region].create_tags(list(image_ids), dict(CUSTOM_TAG))


def custom(**spec: Any) -> Any:
    return node_class(amiFamily="Custom", amiSelectorTerms=[{"tags": CUSTOM_TAG}], **spec)


def image_ids(ec2: FakeEC2) -> set[str]:
    return {data["ImageId"] for data in ec2.template_data()}


def test_the_custom_selectors_image_is_launched(provider: AwsCloudProvider, world: World,
                                                ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should use ami selector specified in
    EC2NodeClass")"""
    tag_images(world, X86_IMAGE)
    provider.create(nodeclaim(), custom())
    assert image_ids(ec2) == {X86_IMAGE}


def test_custom_user_data_is_copied_untouched(provider: AwsCloudProvider, world: World,
                                              ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should copy over userData untouched when AMIFamily
    is Custom")"""
    tag_images(world, X86_IMAGE)
    provider.create(nodeclaim(), custom(userData="special user data"))
    assert {base64.b64decode(d["UserData"]).decode() for d in ec2.template_data()} == {
        "special user data"}


def test_image_ids_are_asked_by_image_id(provider: AwsCloudProvider, world: World,
                                         ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should correctly use ami selector with specific IDs
    in EC2NodeClass"): the ids are asked with an image-id filter and available images only
    (one query per id here; Karpenter puts both in one)."""
    spec = node_class(amiFamily="Custom", amiSelectorTerms=[{"id": X86_IMAGE},
                                                            {"id": world.arm_image}])
    provider.create(nodeclaim(), spec)
    asked = [f for call in ec2.calls("DescribeImages") for f in call.get("Filters", [])]
    assert sorted(v for f in asked if f["Name"] == "image-id" for v in f["Values"]) == sorted(
        [X86_IMAGE, world.arm_image])
    assert {"Name": "state", "Values": ["available"]} in asked
    assert image_ids(ec2) == {X86_IMAGE}  # the default NodeClaim: amd64 types


def test_images_of_other_architectures_get_their_own_templates(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("Custom AMI Selector") It("should create multiple launch templates when
    multiple amis are discovered with non-equivalent requirements")"""
    tag_images(world, X86_IMAGE, world.arm_image)
    provider.create(claim(["m5.large", "m6g.large"], ["on-demand"]), custom())
    assert image_ids(ec2) == {X86_IMAGE, world.arm_image}


def test_the_newest_compatible_image_is_launched(provider: AwsCloudProvider,
                                                 clients: AwsClients, world: World,
                                                 ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should create a launch template with the newest
    compatible AMI when multiple amis are discovered"): of two x86_64 images and an arm64
    one, an amd64 NodeClaim boots the newer x86_64 image (ties: the greater name)."""
    x86 = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])["Images"][:2]
    newest = max(x86, key=lambda i: (i.get("CreationDate", ""), i.get("Name", "")))["ImageId"]
    tag_images(world, *(i["ImageId"] for i in x86), world.arm_image)

    provider.create(claim(["m5.large", "c5.large"], ["on-demand"]), custom())

    assert image_ids(ec2) == {newest}


def test_no_image_matching_launches_nothing(provider: AwsCloudProvider, world: World,
                                            ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should fail if no amis match selector.")"""
    with pytest.raises(CloudProviderError):
        provider.create(nodeclaim(), custom())
    assert not ec2.calls("CreateLaunchTemplate")


def test_no_instance_type_for_the_images_launches_nothing(provider: AwsCloudProvider,
                                                          world: World, ec2: FakeEC2) -> None:
    """Context("Custom AMI Selector") It("should fail if no instanceType matches ami
    requirements."): the only image is arm64, the NodeClaim amd64 types."""
    tag_images(world, world.arm_image)
    with pytest.raises(CloudProviderError):
        provider.create(claim(["m5.large"], ["on-demand"]), custom())
    assert not ec2.calls("CreateLaunchTemplate")


def test_without_a_selector_the_alias_parameter_names_the_image(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("Custom AMI Selector") It("should choose amis from SSM if no selector specified
    in EC2NodeClass"): the alias's SSM parameter (AL2 here, as Karpenter's)."""
    provider.create(claim(["m5.large"], ["on-demand"]),
                    node_class(amiSelectorTerms=[{"alias": "al2@latest"}]))
    assert image_ids(ec2) == {X86_IMAGE}


def test_custom_families_get_no_default_block_devices(provider: AwsCloudProvider,
                                                      world: World, ec2: FakeEC2) -> None:
    """Context("Block Device Mappings") It("should not default block device mappings for
    custom AMIFamilies")"""
    tag_images(world, X86_IMAGE)
    provider.create(nodeclaim(), custom())
    templates = list(ec2.template_data())
    assert templates and all(not t.get("BlockDeviceMappings") for t in templates)


def test_custom_families_get_the_block_devices_given(provider: AwsCloudProvider, world: World,
                                                     ec2: FakeEC2) -> None:
    """Context("Block Device Mappings") It("should use custom block device mapping for custom
    AMIFamilies")"""
    tag_images(world, X86_IMAGE)
    provider.create(nodeclaim(), custom(blockDeviceMappings=[{
        "deviceName": "/dev/xvda",
        "ebs": {"deleteOnTermination": True, "encrypted": True, "volumeType": "io2",
                "volumeSize": "40Gi", "iops": 10_000, "kmsKeyID": KMS_KEY}}]))
    for data in ec2.template_data():
        [mapping] = data["BlockDeviceMappings"]
        ebs = mapping["Ebs"]
        assert (ebs["VolumeSize"], ebs["VolumeType"], ebs["Iops"], ebs["DeleteOnTermination"],
                ebs["Encrypted"], ebs["KmsKeyId"]) == (40, "io2", 10_000, True, True, KMS_KEY)


def test_an_instance_profile_that_is_not_there_launches_nothing(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """It("should fail to provision if the instance profile isn't ready")"""
    spec = node_class(role=None, instanceProfile="missing-profile")
    with pytest.raises(CloudProviderError):
        provider.create(nodeclaim(), spec)
    assert not ec2.calls("CreateFleet")


def test_the_node_classs_instance_profile_is_launched_with(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2
) -> None:
    """It("should use the instance profile on the EC2NodeClass when specified")"""
    clients.iam.create_instance_profile(InstanceProfileName="overridden-profile")
    provider.create(nodeclaim(), node_class(role=None, instanceProfile="overridden-profile"))
    templates = list(ec2.template_data())
    assert templates and {t["IamInstanceProfile"]["Name"] for t in templates} == {
        "overridden-profile"}


# --- User Data: RAID0 on Bottlerocket -------------------------------------------------------


def bootstrap_commands(ec2: FakeEC2) -> list[dict[str, Any]]:
    """settings.bootstrap-commands of every template's Bottlerocket TOML."""
    found = []
    for name in ec2.launch_templates():
        settings = tomllib.loads(ec2.user_data(name))["settings"]
        found.append(settings.get("bootstrap-commands", {}))
    assert found, "no launch template was created"
    return found


def mount(*bind_dirs: str) -> dict[str, Any]:
    return {"commands": [["apiclient", "ephemeral-storage", "init"],
                         ["apiclient", "ephemeral-storage", "bind", *bind_dirs]],
            "mode": "always", "essential": True}


EXPLICIT_DIRS = ("--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")


@pytest.mark.parametrize(("alias", "expected"), [
    pytest.param("bottlerocket@latest", mount(),
                 id="should specify RAID0 bootstrap-command when instance-store policy is set "
                    "on Bottlerocket"),
    pytest.param("bottlerocket@v1.45.0", mount(*EXPLICIT_DIRS),
                 id="should use explicit directories for Bottlerocket v1.45.0"),
    pytest.param("bottlerocket@v1.46.0", mount(),
                 id="should use default bind for Bottlerocket v1.46.0"),
])
def test_raid0_mounts_the_instance_store_on_bottlerocket(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2, alias: str,
    expected: dict[str, Any],
) -> None:
    """Context("User Data"), one It per test id: the bind names its directories before
    Bottlerocket 1.46.0."""
    release = alias.partition("@v")[2]
    if release:
        seed_public_parameter(clients.region, f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}"
                                              f"/x86_64/{release}/image_id", X86_IMAGE)
    provider.create(nodeclaim(), node_class(amiSelectorTerms=[{"alias": alias}],
                                            instanceStorePolicy="RAID0"))
    assert all(commands == {"000-mount-instance-storage": expected}
               for commands in bootstrap_commands(ec2))
    bind = ", ".join(f"'{word}'" for word in expected["commands"][1])
    table = ("\n[settings.bootstrap-commands.000-mount-instance-storage]\n"  # Karpenter's bytes
             f"commands = [['apiclient', 'ephemeral-storage', 'init'], [{bind}]]\n"
             "mode = 'always'\nessential = true\n")
    assert all(table in ec2.user_data(name) for name in ec2.launch_templates())


def test_raid0_merges_with_the_node_classs_bootstrap_commands(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("User Data") It("should merge bootstrap-commands when instance-store policy is
    set on Bottlerocket")"""
    hello = ("[settings.bootstrap-commands.111-say-hello]\ncommands = [['echo', 'hello']]\n"
             "mode = 'always'\nessential = true\n")
    provider.create(nodeclaim(), node_class(amiSelectorTerms=[{"alias": "bottlerocket@latest"}],
                                            instanceStorePolicy="RAID0", userData=hello))
    assert all(commands == {"000-mount-instance-storage": mount(),
                            "111-say-hello": {"commands": [["echo", "hello"]], "mode": "always",
                                              "essential": True}}
               for commands in bootstrap_commands(ec2))
    tables = ("\n[settings.bootstrap-commands]\n"  # the bytes Karpenter's It looks for
              "[settings.bootstrap-commands.000-mount-instance-storage]\n"
              "commands = [['apiclient', 'ephemeral-storage', 'init'], "
              "['apiclient', 'ephemeral-storage', 'bind']]\nmode = 'always'\nessential = true\n"
              f"\n{hello}")
    assert all(tables in ec2.user_data(name) for name in ec2.launch_templates())
