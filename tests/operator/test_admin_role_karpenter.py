"""The ClusterRole `nodewright manifests` prints for people, beside the controller's own:
Karpenter's chart (aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/
aggregate-clusterrole.yaml) aggregates NodePool, NodeClaim and EC2NodeClass access into the
built-in `admin` ClusterRole, so whoever holds `admin` cluster-wide (EKS's
AmazonEKSAdminPolicy access policy, for one) manages them without a binding of its own."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.cli import main
from nodewright.install import InstallSettings, render

AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
# Karpenter's rules, verbs as its chart lists them (no update: kubectl edit and apply patch).
KARPENTER_ADMIN_RULES = [
    {"apiGroups": ["karpenter.sh"],
     "resources": ["nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"],
     "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
    {"apiGroups": ["karpenter.k8s.aws"],
     "resources": ["ec2nodeclasses"],
     "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
]


def printed(capsys: pytest.CaptureFixture[str], cloud: str) -> list[dict[str, Any]]:
    assert main(["manifests", "--cluster-name", "demo", "--cloud", cloud, "--skip-crds"]) == 0
    return [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]


@pytest.mark.parametrize("cloud", ["aws", "sim"])
def test_the_manifests_aggregate_karpenters_rules_into_the_admin_role(
        capsys: pytest.CaptureFixture[str], cloud: str) -> None:
    objects = printed(capsys, cloud)
    aggregated = [o for o in objects if o["kind"] == "ClusterRole"
                  and o["metadata"].get("labels", {}).get(AGGREGATE_TO_ADMIN) == "true"]
    assert [role["metadata"]["name"] for role in aggregated] == ["nodewright-admin"]
    (admin,) = aggregated
    assert admin["rules"] == KARPENTER_ADMIN_RULES
    assert admin["metadata"]["labels"]["app.kubernetes.io/name"] == "nodewright"


def test_the_admin_role_is_bound_to_nobody(capsys: pytest.CaptureFixture[str]) -> None:
    """Aggregation is its only use: the controller's ServiceAccount does not get it."""
    objects = printed(capsys, "aws")
    bound = [o["roleRef"]["name"] for o in objects if o["kind"].endswith("Binding")]
    assert "nodewright-admin" not in bound
    assert "nodewright-controller" in bound


def test_the_controllers_own_objects_are_unchanged_by_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without it (`admin_role=False`), the manifests are the controller's objects alone;
    the role is one object more, not a change to the others."""
    objects = printed(capsys, "aws")
    without = render(InstallSettings(cluster_name="demo", admin_role=False), include_crds=False)
    assert [o for o in objects if o["metadata"]["name"] != "nodewright-admin"] == without
    assert "nodewright-admin" not in [o["metadata"]["name"] for o in without]
