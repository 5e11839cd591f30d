"""The workshop, planned: the issue's "Done when" stories against examples/workshop."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.manifests import Document, load_documents, parse_documents
from nodewright.scheduling.planning import offline_catalogs, plan
from nodewright.scheduling.solver import SchedulingResult

WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"


def workshop(*extra_manifests: str) -> list[Document]:
    documents, problems = load_documents([WORKSHOP])
    assert problems == []
    for index, text in enumerate(extra_manifests):
        extra, extra_problems = parse_documents(text, f"<story-{index}>")
        assert extra_problems == []
        documents.extend(extra)
    return documents


def plan_workshop(documents: list[Document], replicas: int) -> SchedulingResult:
    result, problems = plan(documents, offline_catalogs("us-east-1", None), {"inflate": replicas})
    assert [p.format() for p in problems if p.severity == "error"] == []
    assert result is not None
    return result


def launched(result: SchedulingResult) -> list[str]:
    return [claim.instance_type for claim in result.nodeclaims]


def test_five_inflate_replicas_launch_one_m5_large() -> None:
    result = plan_workshop(workshop(), replicas=5)

    assert launched(result) == ["m5.large"]
    (claim,) = result.nodeclaims
    assert claim.nodepool == "default"
    assert claim.capacity_type == "on-demand"
    assert claim.price == 0.096
    assert sorted(claim.pods) == [f"default/inflate-{n}" for n in range(5)]
    assert result.unschedulable == ()
    assert result.hourly_cost == 0.096


def test_twelve_replicas_from_scratch_launch_two_m5_large() -> None:
    result = plan_workshop(workshop(), replicas=12)

    assert launched(result) == ["m5.large", "m5.large"]
    assert sorted(len(claim.pods) for claim in result.nodeclaims) == [6, 6]
    assert result.unschedulable == ()


def with_r5_allowed(documents: list[Document]) -> list[Document]:
    """The workshop NodePool with the r5 family (and category r) allowed too."""
    for document in documents:
        if document.kind == "NodePool":
            for requirement in document.body["spec"]["template"]["spec"]["requirements"]:
                if requirement["key"] == "karpenter.k8s.aws/instance-category":
                    requirement["values"] = ["c", "m", "r"]
                if requirement["key"] == "karpenter.k8s.aws/instance-family":
                    requirement["values"] = ["c5", "m5", "r5"]
    return documents


def test_twelve_replicas_with_r5_allowed_launch_one_r5_large() -> None:
    result = plan_workshop(with_r5_allowed(workshop()), replicas=12)

    assert launched(result) == ["r5.large"]
    assert result.nodeclaims[0].price == 0.126
    assert len(result.nodeclaims[0].pods) == 12


def test_one_replica_launches_one_c5_large() -> None:
    result = plan_workshop(workshop(), replicas=1)

    assert launched(result) == ["c5.large"]
    assert result.nodeclaims[0].price == 0.085


def test_candidates_are_ordered_cheapest_first() -> None:
    (claim,) = plan_workshop(workshop(), replicas=5).nodeclaims

    prices = [price for _, price in claim.instance_types]
    assert prices == sorted(prices)
    assert claim.instance_types[0] == ("m5.large", 0.096)
    assert "c5.large" not in [name for name, _ in claim.instance_types]


EXISTING_M5_LARGE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-1-17.ec2.internal
  labels:
    type: karpenter
    karpenter.sh/nodepool: default
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.large
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
"""


def bound_inflate_pod(index: int) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: inflate-running-{index}
  namespace: default
  labels: {{app: inflate}}
spec:
  nodeName: ip-10-0-1-17.ec2.internal
  nodeSelector: {{type: karpenter}}
  containers:
    - name: inflate
      image: pause
      resources: {{requests: {{memory: 1Gi}}}}
"""


def test_scaling_from_five_to_twelve_fills_the_existing_node_then_adds_one_m5_large() -> None:
    documents = workshop(EXISTING_M5_LARGE, *(bound_inflate_pod(n) for n in range(5)))

    result = plan_workshop(documents, replicas=7)

    assert [(node, len(pods)) for node, pods in result.existing] == [
        ("ip-10-0-1-17.ec2.internal", 1)
    ]
    assert launched(result) == ["m5.large"]
    assert len(result.nodeclaims[0].pods) == 6
    assert result.unschedulable == ()


ZONE_SPREAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      nodeSelector: {type: karpenter}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: spread}}
      containers:
        - name: pause
          image: pause
          resources: {requests: {memory: 1Gi}}
"""


def test_six_pods_spread_over_zones_give_claims_pinned_to_three_zones() -> None:
    result = plan_workshop(workshop(ZONE_SPREAD), replicas=0)

    zones = sorted(claim.zone or "unpinned" for claim in result.nodeclaims)
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert [len(claim.pods) for claim in result.nodeclaims] == [2, 2, 2]


OVERSIZED = """
apiVersion: v1
kind: Pod
metadata: {name: giant, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers:
    - name: giant
      image: pause
      resources: {requests: {cpu: "200"}}
"""

WRONG_SELECTOR = """
apiVersion: v1
kind: Pod
metadata: {name: wants-gpu, namespace: default}
spec:
  nodeSelector: {type: gpu}
  containers:
    - name: app
      image: pause
      resources: {requests: {cpu: 100m}}
"""


def test_a_pod_larger_than_any_type_is_unschedulable_naming_pool_and_resource() -> None:
    result = plan_workshop(workshop(OVERSIZED), replicas=0)

    assert result.nodeclaims == ()
    ((pod, reason),) = result.unschedulable
    assert pod == "default/giant"
    assert reason.startswith('NodePool "default": no instance type has 200 cpu allocatable')


def test_a_pod_whose_node_selector_matches_no_nodepool_says_so() -> None:
    result = plan_workshop(workshop(WRONG_SELECTOR), replicas=0)

    ((pod, reason),) = result.unschedulable
    assert pod == "default/wants-gpu"
    assert reason.startswith("no NodePool matches nodeSelector type=gpu")
    assert 'NodePool "default"' in reason


def test_the_same_input_gives_the_same_plan() -> None:
    documents = workshop(ZONE_SPREAD, OVERSIZED)

    first = plan_workshop(documents, replicas=9).to_dict()
    second = plan_workshop(documents, replicas=9).to_dict()

    assert first == second
