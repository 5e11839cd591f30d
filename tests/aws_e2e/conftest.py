"""The moto fixtures of the AWS provider suite (`tests.aws.conftest`: moto for one test,
the clients, the account of `tests.aws.world`), for the ported end-to-end suites."""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.conftest import (  # noqa: F401  (fixtures, found by name)
    _fake_credentials,
    aws,
    clients,
    recorder,
    world,
)
from tests.aws.world import X86_IMAGE


@pytest.fixture
def other_image(clients: AwsClients) -> str:  # noqa: F811  (the clients fixture imported above)
    """Another x86_64 EKS-looking image moto ships."""
    images = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]},
                                    {"Name": "name", "Values": ["amzn2-ami-*"]}])["Images"]
    return sorted(i["ImageId"] for i in images if i["ImageId"] != X86_IMAGE)[0]
