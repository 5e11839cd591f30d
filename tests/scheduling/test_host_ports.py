"""Host ports (Karpenter's HostPortUsage, pkg/controllers/provisioning/suite_test.go):
a DaemonSet that will run on a node holds its host ports there, so a pod asking for the
same port needs another node, or none; pods asking for the same port go to different
nodes."""

from __future__ import annotations

from typing import Any

from nodewright.scheduling.pods import ExistingNode, daemonset_from_manifest
from tests.scheduling.test_solver import (
    GIB,
    HOSTNAME,
    ZONE,
    instance_type,
    nodepool,
    pod,
    run,
)

SIZE = "karpenter.k8s.aws/instance-size"


def ports(*numbers: int) -> list[dict[str, Any]]:
    return [{"name": "c", "resources": {"requests": {"cpu": "100m"}},
             "ports": [{"containerPort": n, "hostPort": n} for n in numbers]}]


def daemonset(name: str, *numbers: int, size: str | None = None) -> Any:
    spec: dict[str, Any] = {"containers": ports(*numbers)}
    if size is not None:
        spec["nodeSelector"] = {SIZE: size}
    return daemonset_from_manifest({
        "kind": "DaemonSet", "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": spec}}})


def test_a_daemonsets_host_port_keeps_a_pod_asking_for_it_off_every_new_node() -> None:
    # "should account for daemonset hostports"
    result = run([pod("web-0", containers=ports(8080))], daemonsets=[daemonset("proxy", 8080)])
    assert result.nodeclaims == ()
    ((_, reason),) = result.unschedulable
    assert "host port 8080/TCP is taken by a DaemonSet's pod" in reason


def test_a_daemonset_that_would_not_run_on_the_node_does_not_hold_its_port() -> None:
    # "should not account for daemonset hostports when daemonset would not schedule on
    # selected node"
    catalog = [instance_type("small.1", 4, 4, 0.1, labels={SIZE: "small"}),
               instance_type("large.1", 8, 16, 0.4, labels={SIZE: "large"})]
    daemons = [daemonset("big-proxy", 8080, size="large"),
               daemonset("small-proxy", 8081, size="small")]
    result = run([pod("web-0", containers=ports(8080), nodeSelector={SIZE: "small"})],
                 [nodepool(catalog=catalog)], daemonsets=daemons)
    assert result.unschedulable == ()
    assert [claim.instance_type for claim in result.nodeclaims] == ["small.1"]
    blocked = run([pod("web-0", containers=ports(8080), nodeSelector={SIZE: "large"})],
                  [nodepool(catalog=catalog)], daemonsets=daemons)
    assert blocked.nodeclaims == ()


def test_pods_asking_for_the_same_host_port_go_to_different_nodes() -> None:
    # "should schedule pods with the same host port to different nodes"
    result = run([pod(f"web-{i}", cpu="100m", containers=ports(80)) for i in range(3)])
    assert sorted(len(claim.pods) for claim in result.nodeclaims) == [1, 1, 1]


def test_an_existing_node_counts_the_port_of_a_daemonset_not_running_there_yet() -> None:
    node = ExistingNode("node-1", {ZONE: "zone-a", HOSTNAME: "node-1"}, (),
                        {"cpu": 8000, "memory": 8 * GIB, "pods": 110_000})
    result = run([pod("web-0", containers=ports(9100))], nodes=[node],
                 daemonsets=[daemonset("exporter", 9100)])
    assert result.existing == ()
