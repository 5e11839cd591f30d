"""What the fault stories wire up, checked without a Kubernetes control plane: kubeconfigs
pointed through a proxy, and moto's EC2 behind the proxy as the controller's boto3 client
(botocore's standard retries, the controller's retry budget) sees it: throttling and
errors parsed with their codes, retried, and a CreateFleet whose answer is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError

from nodewright.cloud.aws.clients import MAX_ATTEMPTS, retry_config
from tests.faults.proxy import FaultProxy
from tests.faults.servers import LocalHttpServer
from tests.faults.wiring import (
    CREATE_FLEET,
    apiserver_proxy,
    ec2_fault,
    ec2_lost_answer,
    kubeconfig_through,
)

REGION = "us-west-2"


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "source.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": server, "certificate-authority": "/somewhere/ca.crt"}}],
        "users": [{"name": "sa", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "sa"}}],
        "current-context": "e2e"}))
    return path


def test_a_kubeconfig_through_a_tcp_proxy_keeps_the_servers_ca_and_the_token(
        tmp_path: Path) -> None:
    source = kubeconfig(tmp_path, "https://127.0.0.1:26443")
    with apiserver_proxy("https://127.0.0.1:26443", tmp_path / "ca.crt", mode="tcp") as proxy:
        written = yaml.safe_load(kubeconfig_through(proxy, source, tmp_path / "k").read_text())
    cluster = written["clusters"][0]["cluster"]
    assert cluster == {"server": f"https://127.0.0.1:{proxy.port}",
                       "certificate-authority": "/somewhere/ca.crt"}
    assert written["users"][0]["user"]["token"] == "secret-token"


def test_a_kubeconfig_through_a_tls_terminating_proxy_trusts_the_proxys_ca(
        tmp_path: Path) -> None:
    source = kubeconfig(tmp_path, "https://127.0.0.1:26443")
    server = LocalHttpServer(tls=True)
    assert server.ca_file is not None
    try:
        with apiserver_proxy(f"https://{server.address}", server.ca_file) as proxy:
            path = kubeconfig_through(proxy, source, tmp_path / "k")
            cluster = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
            assert cluster == {"server": proxy.url, "certificate-authority": str(proxy.ca_file)}
            assert proxy.url.startswith("https://127.0.0.1:")
            assert path.stat().st_mode & 0o077 == 0  # a token inside: the owner's only
    finally:
        server.stop()


def test_a_kubeconfig_without_clusters_is_refused_with_its_path(tmp_path: Path) -> None:
    source = tmp_path / "empty.kubeconfig"
    source.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with FaultProxy("127.0.0.1:1") as proxy, pytest.raises(ValueError, match=r"empty\.kubeconfig"):
        kubeconfig_through(proxy, source, tmp_path / "k")


# --- moto behind the proxy ------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def ec2_proxy(moto_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(moto_endpoint, mode="http", name="ec2") as proxy:
        yield proxy


def ec2_through(proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> Any:
    """EC2 as the controller's clients reach it (its retry configuration)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null"),
                        ("AWS_CONFIG_FILE", "/dev/null")):
        monkeypatch.setenv(name, value)
    return boto3.session.Session().client("ec2", region_name=REGION, endpoint_url=proxy.url,
                                          config=retry_config())


def test_throttling_for_a_while_is_retried_and_the_call_succeeds(
        ec2_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = ec2_through(ec2_proxy, monkeypatch)
    window = ec2_proxy.inject(ec2_fault("RequestLimitExceeded", 503, limit=2))
    assert ec2.describe_availability_zones()["AvailabilityZones"]
    assert window.hits == 2
    assert [r.status for r in ec2_proxy.records] == [503, 503, 200]


def test_an_error_window_longer_than_the_retries_reaches_the_caller_with_its_code(
        ec2_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = ec2_through(ec2_proxy, monkeypatch)
    with ec2_proxy.injected(ec2_fault("InternalError", 500)) as window, \
            pytest.raises(ClientError) as raised:
        ec2.describe_availability_zones()
    assert raised.value.response["Error"]["Code"] == "InternalError"
    # MAX_ATTEMPTS tries in all, the first one included.
    assert window.hits == MAX_ATTEMPTS
    assert ec2.describe_availability_zones()["AvailabilityZones"]  # the window is over


def test_a_create_fleet_whose_answer_is_lost_launches_on_moto_and_the_retry_launches_again(
        ec2_proxy: FaultProxy, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto does not keep CreateFleet's ClientToken (EC2 does): behind a lost answer the
    retry launches a second instance, which only instance garbage collection removes.
    That is why the e2e story with EC2 faults waits for garbage collection before it
    counts instances."""
    ec2 = ec2_through(ec2_proxy, monkeypatch)
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    template = ec2.create_launch_template(
        LaunchTemplateName="faults", LaunchTemplateData={"ImageId": "ami-ekslinux"},
    )["LaunchTemplate"]["LaunchTemplateId"]
    lost = ec2_proxy.inject(ec2_lost_answer(body=CREATE_FLEET, limit=1))
    before = instance_ids(ec2)
    fleet = ec2.create_fleet(
        Type="instant", ClientToken="one-token",
        TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                     "DefaultTargetCapacityType": "on-demand"},
        LaunchTemplateConfigs=[{
            "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "$Latest"},
            "Overrides": [{"InstanceType": "m5.large", "SubnetId": subnet}]}])
    launched = instance_ids(ec2) - before
    assert lost.hits == 1
    assert {i for f in fleet["Instances"] for i in f["InstanceIds"]} < launched
    assert len(launched) == 2, "moto launched again for the retried request"


def instance_ids(ec2: Any) -> set[str]:
    return {instance["InstanceId"] for reservation in ec2.describe_instances()["Reservations"]
            for instance in reservation["Instances"]}
