"""Reading stack config: defaults, and errors that name the key and field."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ExistingVpc, NewVpc, StackConfigError, parse_settings


def settings_from(values: dict[str, Any]) -> Any:
    base: dict[str, Any] = {"clusterName": "demo", "controller": {"image": "example/nw:1"}}
    base.update(values)
    return parse_settings(base.get, stack="test", region="us-east-1")


def test_defaults_make_a_three_zone_vpc_with_pod_identity_and_interruption() -> None:
    settings = settings_from({})
    assert settings.vpc == NewVpc(cidr="10.0.0.0/16", az_count=3, nat_gateways="per-az")
    assert settings.identity == "pod-identity"
    assert settings.interruption is True
    assert settings.controller.replicas == 2
    assert settings.kubernetes_version == "1.33"


def test_an_existing_vpc_needs_two_private_subnets() -> None:
    settings = settings_from({"vpc": {"vpcId": "vpc-1", "privateSubnetIds": ["a", "b"]}})
    assert settings.vpc == ExistingVpc("vpc-1", ("a", "b"), ())
    with pytest.raises(StackConfigError, match=r"^nodewright:vpc.privateSubnetIds: needs at"):
        settings_from({"vpc": {"vpcId": "vpc-1", "privateSubnetIds": ["a"]}})


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"vpc": {"azCount": "three"}}, "nodewright:vpc.azCount: must be an integer from 2 to 6"),
        ({"vpc": {"cidr": "10.0.0.0/8"}}, "nodewright:vpc.cidr: must be a /16 to /20 block"),
        ({"vpc": {"cidrBlock": "10.0.0.0/16"}}, "nodewright:vpc.cidrBlock: unknown key"),
        ({"identity": "kiam"}, "nodewright:identity: must be one of irsa, pod-identity"),
        ({"controller": {}}, "nodewright:controller.image: is required"),
        ({"controller": {"image": "x", "replicas": 0}},
         "nodewright:controller.replicas: must be an integer from 1 to 5"),
        ({"endpointAccess": {"public": False, "private": False}},
         "nodewright:endpointAccess: public and private cannot both be false"),
        ({"endpointAccess": {"publicCidrs": ["nowhere"]}},
         "nodewright:endpointAccess.publicCidrs[0]: is not an IPv4 CIDR block"),
        ({"teams": {"Data Team": {}}}, "nodewright:teams.Data Team: the name must be a DNS label"),
        ({"teams": {"data": {"capacityTypes": ["cheap"]}}},
         "nodewright:teams.data.capacityTypes[0]: must be one of spot, on-demand, reserved"),
        ({"teams": {"data": {"nodeClass": "gpu"}}},
         "nodewright:teams.data.nodeClass: names no EC2NodeClass"),
        ({"clusterName": "x" * 41}, "nodewright:clusterName: must be 1-40"),
        ({"kubernetesVersion": "latest"}, "nodewright:kubernetesVersion: must look like"),
        ({"systemNodeGroup": {"minSize": 4, "maxSize": 3}}, "nodewright:systemNodeGroup: needs"),
    ],
)
def test_invalid_values_name_the_key_and_field(values: dict[str, Any], expected: str) -> None:
    with pytest.raises(StackConfigError) as caught:
        settings_from(values)
    assert str(caught.value).startswith(expected)
