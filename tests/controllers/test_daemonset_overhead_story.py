"""DaemonSet overhead per instance type in the running controllers: what a new NodeClaim
launches and requests, and what consolidation replaces a node with, count a DaemonSet
only on the instance types its pod would schedule on (Karpenter's
buildDaemonOverheadGroups, pkg/controllers/provisioning/scheduling/scheduler.go)."""

from __future__ import annotations

from tests.controllers.expectations import expect_instance_types, expect_no_controller_errors
from tests.harness import NODE_CLASS, World, node_pool

ARM_AGENT = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: arm-agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: arm-agent}}
  template:
    metadata: {labels: {app: arm-agent}}
    spec:
      nodeSelector: {kubernetes.io/arch: arm64}
      tolerations: [{operator: Exists}]
      containers: [{name: a, image: agent, resources: {requests: {cpu: "3"}}}]
"""

EVERY_NODE_AGENT = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: agent, resources: {requests: {cpu: "1"}}}]
"""


def web(cpu: str, arch: str = "amd64") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      nodeSelector: {{kubernetes.io/arch: {arch}}}
      containers: [{{name: app, image: web, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def test_an_arm64_only_daemonset_does_not_size_an_amd64_node(world: World) -> None:
    # The example: the 3-cpu arm64 agent made a 1-cpu amd64 pod launch a
    # c5.2xlarge; it launches the c5.large it fits, and requests only its own cpu.
    world.apply(NODE_CLASS, node_pool(families=["c5", "c6g"]), ARM_AGENT, web("1"))
    assert world.settle()

    expect_instance_types(world, "c5.large")
    (claim,) = world.nodeclaims()
    assert claim["spec"]["resources"]["requests"]["cpu"] == "1"
    expect_no_controller_errors(world)


def test_an_arm64_node_makes_room_for_the_arm64_daemonset(world: World) -> None:
    # The same pod asking for arm64: 1 cpu of its own and 3 of the agent need 4 cpu on a
    # Graviton type, and the NodeClaim requests both.
    world.apply(NODE_CLASS, node_pool(families=["c5", "c6g"]), ARM_AGENT, web("1", "arm64"))
    assert world.settle()

    (claim,) = world.nodeclaims()
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c6g.2xlarge"
    assert claim["spec"]["resources"]["requests"]["cpu"] == "4"


def test_daemonsets_count_on_a_nodepool_with_startup_taints(world: World) -> None:
    # provisioning/suite_test.go "should account for daemonsets (with startup taint)": the
    # agent tolerates nothing, yet startup taints do not keep it off the node.
    pool = node_pool(families=["c5"], startupTaints=[
        {"key": "foo.com/taint", "effect": "NoSchedule"}])
    world.apply(NODE_CLASS, pool, EVERY_NODE_AGENT, web("1"))
    assert world.settle(quiet=5)

    (claim,) = world.nodeclaims()
    assert claim["spec"]["resources"]["requests"]["cpu"] == "2"
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c5.xlarge"


def test_consolidation_replaces_with_a_type_sized_without_the_arm64_daemonset(
    world: World,
) -> None:
    # Consolidation simulates with the same scheduler: a pod on a c5.xlarge (the only type
    # allowed when it launched) is moved to a c5.large once smaller types are allowed, the
    # arm64 agent not counted on it.
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    world.apply(NODE_CLASS, node_pool(types=["c5.xlarge"], disruption=disruption),
                ARM_AGENT, web("900m"))
    assert world.settle()
    expect_instance_types(world, "c5.xlarge")

    world.apply(node_pool(families=["c5", "c6g"], disruption=disruption))
    assert world.settle()

    expect_instance_types(world, "c5.large")
    expect_no_controller_errors(world)
