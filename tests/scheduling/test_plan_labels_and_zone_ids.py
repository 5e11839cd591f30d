"""Pods that select nodes the ways Karpenter understands: deprecated label keys read as
their current names, and topology on `topology.k8s.aws/zone-id` with domains from the
instance types' offerings, as for `topology.kubernetes.io/zone`."""

from __future__ import annotations

import pytest

from nodewright.scheduling.planning import offline_catalogs, plan
from nodewright.scheduling.solver import SchedulingResult
from tests.scheduling.test_plan_workshop import workshop

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: picky, labels: {{app: picky}}}}
spec:
  nodeSelector: {{{selector}}}
  containers: [{{name: c, resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}}}]
"""


def planned(*manifests: str) -> SchedulingResult:
    result, problems = plan(workshop(*manifests), offline_catalogs("us-east-1", None), {})
    assert [p.format() for p in problems if p.severity == "error"] == []
    assert result is not None
    return result


@pytest.mark.parametrize(
    ("selector", "label", "value"),
    [
        ("beta.kubernetes.io/arch: amd64", "kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os: linux", "kubernetes.io/os", "linux"),
        ("failure-domain.beta.kubernetes.io/zone: us-east-1b",
         "topology.kubernetes.io/zone", "us-east-1b"),
        ("failure-domain.beta.kubernetes.io/region: us-east-1",
         "topology.kubernetes.io/region", "us-east-1"),
        ("beta.kubernetes.io/instance-type: c5.large",
         "node.kubernetes.io/instance-type", "c5.large"),
    ],
)
def test_a_deprecated_label_selects_like_its_current_name(
    selector: str, label: str, value: str
) -> None:
    result = planned(POD.format(selector=selector))

    assert result.unschedulable == ()
    (claim,) = result.nodeclaims
    assert claim.pods == ("default/picky",)
    if label == "topology.kubernetes.io/zone":
        assert claim.zone == value
    if label == "node.kubernetes.io/instance-type":
        assert claim.instance_type == value


def test_a_deprecated_label_still_refuses_what_its_current_name_refuses() -> None:
    result = planned(POD.format(selector="beta.kubernetes.io/arch: arm64"))

    assert result.nodeclaims == ()
    assert [key for key, _ in result.unschedulable] == ["default/picky"]


SPREAD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.k8s.aws/zone-id
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: spread}}
      containers: [{name: c, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""


def test_spread_over_zone_ids_places_one_pod_per_zone_id() -> None:
    result = planned(SPREAD)

    assert result.unschedulable == ()
    zones = sorted(claim.zone for claim in result.nodeclaims)
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


AFFINITY = """\
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: topology.k8s.aws/zone-id, operator: In, values: [ZONE_ID]}
  containers: [{name: c, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""


def test_node_affinity_on_a_zone_id_picks_that_zone() -> None:
    from nodewright.scheduling.offline_data import zone_ids

    zone_id = zone_ids("us-east-1")["us-east-1b"]
    result = planned(AFFINITY.replace("ZONE_ID", zone_id))

    assert result.unschedulable == ()
    (claim,) = result.nodeclaims
    assert claim.zone == "us-east-1b"


def test_pod_anti_affinity_over_zone_ids_keeps_replicas_apart() -> None:
    apart = SPREAD.replace("name: spread", "name: apart").replace("app: spread", "app: apart")
    apart = apart.replace(
        """      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.k8s.aws/zone-id
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: apart}}
""",
        """      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: topology.k8s.aws/zone-id
              labelSelector: {matchLabels: {app: apart}}
""",
    )
    assert "podAntiAffinity" in apart

    result = planned(apart)

    # Karpenter's late committal: the first replica may land in any zone id until its
    # node launches, so the other two wait for a later batch (each then goes elsewhere).
    (claim,) = result.nodeclaims
    assert claim.requirements["topology.k8s.aws/zone-id"].values == {
        "use1-az1", "use1-az2", "use1-az6"}
    assert [reason for _, reason in result.unschedulable] == [
        'NodePool "default": pod anti-affinity on topology.k8s.aws/zone-id allows no domain '
        "here"] * 2
