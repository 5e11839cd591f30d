"""Karpenter test/suites/integration/aws_metadata_test.go (v1.14.1) on the moto account."""

from __future__ import annotations

from .moto_env import Env


def test_the_node_class_metadata_options_are_what_the_instance_launches_with(env: Env) -> None:
    """Karpenter test/suites/integration/aws_metadata_test.go It("should use specified
    metadata options")."""
    node = env.provision(metadataOptions={
        "httpEndpoint": "enabled", "httpProtocolIPv6": "enabled",
        "httpPutResponseHopLimit": 1, "httpTokens": "required"})

    options = env.template_of_node(node)["MetadataOptions"]
    assert options == {"HttpEndpoint": "enabled", "HttpProtocolIpv6": "enabled",
                       "HttpPutResponseHopLimit": 1, "HttpTokens": "required",
                       "InstanceMetadataTags": "disabled"}
