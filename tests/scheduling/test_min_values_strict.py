"""minValues under the Strict policy (Karpenter's default): a NodeClaim is never
launched with fewer distinct values than a requirement asks for, the first pod of a
claim included ("should not schedule when minValues requirement is not met")."""

from __future__ import annotations

from nodewright.api.manifests import parse_documents
from nodewright.scheduling.planning import offline_catalogs, plan
from tests.scheduling.test_plan_workshop import workshop

POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    metadata: {{labels: {{type: karpenter}}}}
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: karpenter.k8s.aws/instance-family, operator: In, values: [c5]}}
        - {{key: node.kubernetes.io/instance-type, operator: Exists, minValues: {count}}}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""


def planned(count: int) -> tuple[int, list[str]]:
    documents = [d for d in workshop(POD) if d.kind != "NodePool"]
    pool, problems = parse_documents(POOL.format(count=count), "<pool>")
    assert problems == []
    result, found = plan(documents + pool, offline_catalogs("us-east-1", None), {})
    assert [p.format() for p in found if p.severity == "error"] == []
    assert result is not None
    return len(result.nodeclaims), [reason for _, reason in result.unschedulable]


def test_fewer_types_than_min_values_launch_nothing() -> None:
    claims, reasons = planned(30)
    assert claims == 0
    assert reasons == ['NodePool "default": minValues 30 for node.kubernetes.io/instance-type '
                       "not met: 9 value(s) remain"]


def test_enough_types_launch_with_at_least_that_many() -> None:
    result, _ = plan([d for d in workshop(POD) if d.kind != "NodePool"]
                     + parse_documents(POOL.format(count=5), "<pool>")[0],
                     offline_catalogs("us-east-1", None), {})
    assert result is not None
    (claim,) = result.nodeclaims
    assert len(claim.instance_types) >= 5
