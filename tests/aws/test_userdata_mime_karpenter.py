"""Karpenter's MIME archive suite, ported: aws/karpenter-provider-aws v1.14.1
pkg/providers/amifamily/bootstrap/mime/suite_test.go (Describe "MIME Parser"). Each story
names its It.

Karpenter's mime.NewArchive and Archive.Serialize are our `mime.read_archive` and
`mime.render` (controller/nodewright/cloud/aws/userdata/mime.py): the user's spec.userData
read into parts, and the parts (the user's, then ours) written as the launch template's user
data. The archive, NodeConfig and script below are Karpenter's test_data files, byte for
byte; the launch stories send them through the AWS provider (moto) and read the
CreateLaunchTemplate request as sent."""

from __future__ import annotations

import pytest
import yaml

from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.provider import CloudProviderError
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import node_class, nodeclaim

# test_data/nodeconfig.txt
NODE_CONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: test-cluster
    apiServerEndpoint: https://example.com
    certificateAuthority: ca-bundle
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 42
      systemReserved:
        cpu: 100m
        memory: 100Mi
        ephemeral-storage: 1Gi
    flags:
      - --node-labels "foo=bar"
  containerd:
    config: |
      [plugins."io.containerd.grpc.v1.cri".containerd]
      discard_unpacked_layers = false
"""
# test_data/shell.txt
SHELL = """#!/bin/bash
echo "I'm a shell script!"
"""
# test_data/mime_valid.txt
VALID = f"""MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

{NODE_CONFIG}
--//
Content-Type: text/x-shellscript; charset="us-ascii"

{SHELL}
--//--
"""
# test_data/mime_bad_header.txt: its two headers written as assignments, not `Name: value`.
MALFORMED = VALID.replace('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"',
                          "MIME_VERSION = 1.0\nCONTENT_TYPE = MIME", 1)
# The same at launch, its first line the MIME-Version header Karpenter's parseUserData (and
# ours) needs to read a user data as MIME at all; its second line the file's malformed one.
BAD_HEADER = VALID.replace('Content-Type: multipart/mixed; boundary="//"',
                           "CONTENT_TYPE = MIME", 1)


def test_a_mime_archive_with_a_malformed_header_is_refused() -> None:
    """It("should fail to parse MIME archive with a malformed header"): Go's header reader
    refuses a header line without a colon."""
    with pytest.raises(ValueError, match="malformed MIME header: missing colon"):
        mime.read_archive(MALFORMED)


def test_user_data_with_a_malformed_mime_header_launches_nothing(
    provider: AwsCloudProvider, ec2: FakeEC2,
) -> None:
    """It("should fail to parse MIME archive with a malformed header"), at launch: the
    AL2023 node class's user data cannot be merged, so no launch template is made and no
    instance launched (Karpenter's Nodeadm.Script fails with "parsing custom UserData")."""
    with pytest.raises(CloudProviderError, match="userData"):
        provider.create(nodeclaim(), node_class(userData=BAD_HEADER))
    assert ec2.calls("CreateLaunchTemplate") == []
    assert ec2.calls("CreateFleet") == []


def test_a_valid_mime_archive_is_read_into_its_two_parts() -> None:
    """It("should successfully parse a valid MIME archive"): two entries, each with its
    Content-Type as written and its file's content."""
    parts = mime.read_archive(VALID)

    assert len(parts) == 2
    assert {part.content_type: part.body for part in parts} == {
        "application/node.eks.aws": NODE_CONFIG,
        'text/x-shellscript; charset="us-ascii"': SHELL,
    }


def test_a_mime_archive_is_written_as_karpenter_writes_it() -> None:
    """It("should successfully serialize a MIME archive"): the NodeConfig and the script
    written as parts are test_data/mime_valid.txt, byte for byte."""
    parts = [mime.Part(mime.NODE_CONFIG, NODE_CONFIG), mime.Part(mime.SHELL_SCRIPT, SHELL)]

    assert mime.render(parts) == VALID


def test_a_users_archive_reaches_the_launch_template_as_written(
    provider: AwsCloudProvider, ec2: FakeEC2,
) -> None:
    """It("should successfully parse a valid MIME archive") and It("should successfully
    serialize a MIME archive"), at launch: the user's archive is read and written again
    unchanged ahead of our NodeConfig, the last part, as Karpenter's Nodeadm.Script
    appends its own."""
    provider.create(nodeclaim(), node_class(userData=VALID))

    templates = ec2.launch_templates()
    assert templates
    for name in templates:
        sent = ec2.user_data(name)
        assert sent.startswith(VALID.removesuffix("--//--\n"))
        ours = mime.split_parts(sent)[-1]
        assert ours.content_type == mime.NODE_CONFIG
        assert yaml.safe_load(ours.body)["kind"] == "NodeConfig"
        assert sent.endswith("\n--//--\n")
