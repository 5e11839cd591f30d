"""Karpenter test/suites/integration/block_device_mappings_test.go (v1.14.1) on the moto
account: the one mapping the node class gives is the one the instance launches with."""

from __future__ import annotations

from .moto_env import Env


def test_the_node_class_block_device_mapping_is_what_the_instance_launches_with(
        env: Env) -> None:
    """Karpenter test/suites/integration/block_device_mappings_test.go It("should use
    specified block device mappings")."""
    node = env.provision(blockDeviceMappings=[{
        "deviceName": "/dev/xvda",
        "ebs": {"volumeSize": "20Gi", "volumeType": "io2", "iops": 1000, "encrypted": True,
                "deleteOnTermination": True}}])

    (mapping,) = env.template_of_node(node)["BlockDeviceMappings"]
    assert mapping["DeviceName"] == "/dev/xvda"
    ebs = mapping["Ebs"]
    assert ebs["DeleteOnTermination"] is True
    assert (ebs["Encrypted"], ebs["VolumeSize"], ebs["Iops"], ebs["VolumeType"]) == (
        True, 20, 1000, "io2")
