"""Karpenter test/suites/integration/kubelet_config_test.go (v1.14.1) on the moto account:
the kubelet configuration of the node class goes into the user data each AMI family boots
with, and its pod limits shape how many nodes a deployment gets. No daemonset runs on
these nodes (Karpenter's `GetDaemonSetCount` is 0 here)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from moto.eks.models import eks_backends

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import ACCOUNT, CLUSTER, K8S_VERSION, X86_IMAGE, World, seed_public_parameter
from tests.aws_e2e.moto_world import deployment, node_class, node_pool, pod

from .moto_env import Env, replace_requirements

EVERYTHING: dict[str, Any] = {
    "maxPods": 110,
    "podsPerCore": 10,
    "systemReserved": {"cpu": "200m", "memory": "200Mi", "ephemeral-storage": "1Gi"},
    "kubeReserved": {"cpu": "200m", "memory": "200Mi", "ephemeral-storage": "1Gi"},
    "evictionHard": {"memory.available": "5%", "nodefs.available": "5%",
                     "nodefs.inodesFree": "5%", "imagefs.available": "5%",
                     "imagefs.inodesFree": "5%", "pid.available": "3%"},
    "evictionSoft": {"memory.available": "10%", "nodefs.available": "10%",
                     "nodefs.inodesFree": "10%", "imagefs.available": "10%",
                     "imagefs.inodesFree": "10%", "pid.available": "6%"},
    "evictionSoftGracePeriod": {signal: "2m" for signal in (
        "memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
        "imagefs.inodesFree", "pid.available")},
    "evictionMaxPodGracePeriod": 120,
    "imageGCHighThresholdPercent": 50,
    "imageGCLowThresholdPercent": 10,
    "cpuCFSQuota": False,
}
LINUX_AMD64 = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
TWO_CPUS = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["2"]}


def user_data(env: Env, node: str) -> str:
    return base64.b64decode(env.template_of_node(node)["UserData"]).decode()


@pytest.mark.parametrize("alias", [
    pytest.param("al2@latest", id="when the AMIFamily is AL2"),
    pytest.param("al2023@latest", id="when the AMIFamily is AL2023"),
    pytest.param("bottlerocket@latest", id="when the AMIFamily is Bottlerocket"),
])
def test_a_linux_family_boots_with_every_kubelet_setting(env: Env, alias: str) -> None:
    """Karpenter test/suites/integration/kubelet_config_test.go Context("All kubelet
    configuration set") DescribeTable("Linux AMIFamilies"): the Entry named by the case
    id."""
    env.apply(node_class(amiSelectorTerms=[{"alias": alias}], kubelet=EVERYTHING),
              node_pool(), pod("p", nodeSelector=LINUX_AMD64))
    assert env.run_until(lambda: env.healthy("p")), env.errors
    assert len(env.nodes()) == 1

    booted = user_data(env, env.node_of("p"))
    assert re.search(r"max[-_]?pods\W+110", booted, re.IGNORECASE)
    assert re.search(r"image[-_]?gc[-_]?high[-_]?threshold[-_a-z]*\W+50", booted,
                     re.IGNORECASE)
    assert re.search(r"cpu[-_]?cfs[-_]?quota[-_a-z]*\W+false", booted, re.IGNORECASE)


def run_deployment(env: Env, replicas: int, pool: dict[str, Any], **class_spec: Any
                   ) -> set[str]:
    env.apply(node_class(**class_spec), pool, deployment("large-app", replicas))
    labels = {"app": "large-app"}
    assert env.run_until(lambda: len(env.running_pods(labels)) == replicas), env.errors
    return {p["spec"]["nodeName"] for p in env.running_pods(labels)}


def test_max_pods_spreads_a_deployment_one_pod_a_node(env: Env) -> None:
    """Karpenter test/suites/integration/kubelet_config_test.go It("should schedule pods onto
    separate nodes when maxPods is set")."""
    nodes = run_deployment(env, 3, node_pool(), kubelet={"maxPods": 1})

    assert len(nodes) == 3
    assert len(env.nodes()) == 3


def test_pods_per_core_spreads_a_deployment_over_two_nodes(env: Env) -> None:
    """Karpenter test/suites/integration/kubelet_config_test.go It("should schedule pods onto
    separate nodes when podsPerCore is set") — two-CPU types, podsPerCore
    ceil((2 + 0 daemonset pods) / 2) = 1: two pods a node."""
    pool = replace_requirements(node_pool(), TWO_CPUS)

    nodes = run_deployment(env, 4, pool, kubelet={"podsPerCore": 1})

    assert len(nodes) == 2
    assert len(env.nodes()) == 2


def test_bottlerocket_ignores_pods_per_core(env: Env) -> None:
    """Karpenter test/suites/integration/kubelet_config_test.go It("should ignore podsPerCore
    value when Bottlerocket is used")."""
    pool = replace_requirements(node_pool(), TWO_CPUS)

    nodes = run_deployment(env, 6, pool, kubelet={"podsPerCore": 1},
                           amiSelectorTerms=[{"alias": "bottlerocket@latest"}])

    assert len(nodes) == 1
    assert len(env.nodes()) == 1


WINDOWS_PARAMETERS = {
    "windows2019@latest": "Windows_Server-2019-English-Core-EKS_Optimized-{version}",
    "windows2022@latest": "Windows_Server-2022-English-Core-EKS_Optimized-{version}",
    "windows2025@latest": "Windows_Server-2025-English-Core-EKS_Optimized-{version}",
}


@pytest.mark.parametrize("alias", [
    pytest.param("windows2019@latest", id="when the AMIFamily is Windows2019"),
    pytest.param("windows2022@latest", id="when the AMIFamily is Windows2022"),
    pytest.param("windows2025@latest", id="when the AMIFamily is Windows2025"),
])
def test_a_windows_family_boots_with_every_kubelet_setting(
        clients: AwsClients, world: World, alias: str) -> None:
    """Karpenter test/suites/integration/kubelet_config_test.go Context("All kubelet
    configuration set") DescribeTable("Windows AMIFamilies"): the Entry named by the case id
    (Windows Server 2025 on a 1.35 cluster, as Karpenter runs it; the image is moto's x86_64
    one, published under the family's SSM parameter)."""
    version = K8S_VERSION
    if alias == "windows2025@latest":
        version = "1.35"
        # moto has no UpdateClusterVersion: the cluster as EKS would describe it upgraded.
        eks_backends[ACCOUNT][clients.region].clusters[CLUSTER].version = version
    parameter = WINDOWS_PARAMETERS[alias].format(version=version)
    seed_public_parameter(clients.region, f"/aws/service/ami-windows-latest/{parameter}/image_id",
                          X86_IMAGE)
    env = Env(clients)
    pool = replace_requirements(node_pool(), {"key": "kubernetes.io/os", "operator": "In",
                                              "values": ["windows"]})
    windows_pod = pod("p", nodeSelector={"kubernetes.io/os": "windows",
                                         "kubernetes.io/arch": "amd64"})
    env.apply(node_class(amiSelectorTerms=[{"alias": alias}], kubelet=EVERYTHING), pool,
              windows_pod)

    assert env.run_until(lambda: env.healthy("p")), env.errors
    assert len(env.nodes()) == 1
    node = env.get("Node", env.node_of("p"))
    assert node["metadata"]["labels"]["kubernetes.io/os"] == "windows"
    booted = user_data(env, env.node_of("p"))
    assert re.search(r"max[-_]?pods\W+110", booted, re.IGNORECASE)
    assert env.errors == []
