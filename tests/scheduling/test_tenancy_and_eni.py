"""AWS labels and resources Karpenter's AWS provider offers on every type:
`karpenter.k8s.aws/instance-tenancy` (default or dedicated, chosen at launch) may be
required by NodePools and pods; `vpc.amazonaws.com/pod-eni` is allocatable on the types
that support ENI trunking."""

from __future__ import annotations

import pytest

from nodewright.scheduling.planning import offline_catalogs, plan
from tests.scheduling.test_plan_workshop import workshop

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: app}}
spec:
  nodeSelector: {{type: karpenter{selector}}}
  containers: [{{name: c, resources: {{requests: {{cpu: 100m{extra}}}}}}}]
"""


def planned(pod: str) -> tuple[int, list[str]]:
    result, problems = plan(workshop(pod), offline_catalogs("us-east-1", None), {})
    assert [p.format() for p in problems if p.severity == "error"] == []
    assert result is not None
    return len(result.nodeclaims), [reason for _, reason in result.unschedulable]


@pytest.mark.parametrize("value", ["default", "dedicated"])
def test_a_pod_may_require_a_tenancy_every_type_offers(value: str) -> None:
    selector = f", karpenter.k8s.aws/instance-tenancy: {value}"
    assert planned(POD.format(selector=selector, extra="")) == (1, [])


def test_a_tenancy_no_type_offers_is_refused() -> None:
    """The AWS provider's WellKnownValuesForRequirements names the tenancies (aws v1.14.1
    pkg/apis/v1/labels.go line 65), so Karpenter's provisioner ignores a pod selecting
    another one (ValidateRequirement, core pkg/apis/v1/nodeclaim_validation.go)."""
    selector = ", karpenter.k8s.aws/instance-tenancy: host"
    result, problems = plan(workshop(POD.format(selector=selector, extra="")),
                            offline_catalogs("us-east-1", None), {})
    assert result is not None and result.nodeclaims == ()
    assert [p.format() for p in problems] == [
        "<manifests>:0: Pod/app: spec: warning: ignoring pod, no valid values found in "
        "[host] for karpenter.k8s.aws/instance-tenancy, expected one of: "
        "[dedicated default], got: [host]; Karpenter launches nothing for it"]


def test_pod_eni_is_allocatable_on_trunking_types_only() -> None:
    from nodewright.scheduling.catalog import offline_catalog

    types = {it.name: it for it in offline_catalog("us-east-1")}
    assert types["m5.large"].allocatable["vpc.amazonaws.com/pod-eni"] == 9 * 1000
    assert types["c5.xlarge"].allocatable["vpc.amazonaws.com/pod-eni"] == 18 * 1000
    assert "vpc.amazonaws.com/pod-eni" not in types["t3.large"].allocatable


def test_a_pod_asking_for_pod_enis_gets_a_trunking_type() -> None:
    eni = "vpc.amazonaws.com/pod-eni: 1"
    claims, reasons = planned(POD.format(selector="", extra=f", {eni}}}, limits: {{{eni}"))
    assert (claims, reasons) == (1, [])
    too_many = "vpc.amazonaws.com/pod-eni: 500"
    assert planned(POD.format(selector="", extra=f", {too_many}}}, limits: {{{too_many}"))[0] == 0
