"""Karpenter test/suites/integration/connection_tracking_test.go (v1.14.1) on the moto
account: the connection tracking settings each interface of the launch template asks EC2
for (moto keeps no interface settings of a launch template)."""

from __future__ import annotations

from typing import Any

from tests.aws_e2e.moto_world import deployment, node_class, node_pool

from .moto_env import Env

TRACKING = {"tcpEstablishedTimeout": 300, "udpStreamTimeout": 120, "udpTimeout": 45}
EC2_TRACKING = {"TcpEstablishedTimeout": 300, "UdpStreamTimeout": 120, "UdpTimeout": 45}


def primary(env: Env, node: str) -> dict[str, Any]:
    interfaces = env.template_of_node(node)["NetworkInterfaces"]
    (found,) = [i for i in interfaces
                if i.get("DeviceIndex", 0) == 0 and i.get("NetworkCardIndex", 0) == 0]
    return dict(found)


def test_the_primary_interface_gets_the_connection_tracking_settings(env: Env) -> None:
    """Karpenter test/suites/integration/connection_tracking_test.go It("should apply
    connection tracking settings to network interfaces")."""
    node = env.provision(connectionTracking=TRACKING)

    assert primary(env, node)["ConnectionTrackingSpecification"] == EC2_TRACKING


def test_every_efa_interface_gets_the_connection_tracking_settings(env: Env) -> None:
    """Karpenter test/suites/integration/connection_tracking_test.go It("should apply
    connection tracking settings to all EFA network interfaces")."""
    pool: Any = node_pool(taints=[{"key": "aws.amazon.com/efa", "effect": "NoSchedule"}])
    pool["spec"]["template"]["metadata"] = {"labels": {"aws.amazon.com/efa": "true"}}
    efa = {"vpc.amazonaws.com/efa": "1"}
    app = deployment("conntrack-efa", 1, tolerations=[
        {"key": "aws.amazon.com/efa", "operator": "Exists"}])
    container = app["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": efa, "limits": efa}
    env.apply(node_class(connectionTracking=TRACKING), pool, app)

    labels = {"app": "conntrack-efa"}
    assert env.run_until(lambda: len(env.running_pods(labels)) == 1, timeout=900), env.errors
    assert len(env.nodes()) == 1
    (running,) = env.running_pods(labels)
    interfaces = env.template_of_node(running["spec"]["nodeName"])["NetworkInterfaces"]
    launched = [i for i in interfaces if i.get("DeviceIndex", 0) == 0
                or i.get("InterfaceType") == "efa"]
    assert any(i.get("InterfaceType") == "efa" for i in launched)
    for interface in launched:
        assert interface["ConnectionTrackingSpecification"] == EC2_TRACKING


def test_only_the_settings_given_are_sent(env: Env) -> None:
    """Karpenter test/suites/integration/connection_tracking_test.go It("should apply
    partial connection tracking settings")."""
    node = env.provision(connectionTracking={"tcpEstablishedTimeout": 86400})

    assert primary(env, node)["ConnectionTrackingSpecification"] == {
        "TcpEstablishedTimeout": 86400}


def test_no_connection_tracking_without_settings(env: Env) -> None:
    """Karpenter test/suites/integration/connection_tracking_test.go It("should not set
    connection tracking when not specified")."""
    node = env.provision()

    assert "ConnectionTrackingSpecification" not in primary(env, node)
