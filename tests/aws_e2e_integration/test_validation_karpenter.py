"""Karpenter test/suites/integration/validation_test.go (v1.14.1): the API server refusing
an EC2NodeClass. Here the in-memory API server, which enforces Nodewright's generated
EC2NodeClass CRD (schema and CEL rules) as an API server with the CRD installed does; the
node class is the e2e default one (`env.DefaultEC2NodeClass()`) with the It's changes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.aws.world import CLUSTER
from tests.aws_e2e.moto_world import node_class

DELETE = object()


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def changed(**spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(node_class(amiFamily="AL2023"))
    for key, value in spec.items():
        if value is DELETE:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def refused(cluster: InMemoryCluster, body: dict[str, Any]) -> bool:
    try:
        cluster.create(body)
    except InvalidError:
        return True
    cluster.delete("EC2NodeClass", body["metadata"]["name"])
    return False


@pytest.mark.parametrize("spec", [
    pytest.param({"amiSelectorTerms": []},
                 id="should error when amiSelectorTerms are not defined"),
    pytest.param({"amiSelectorTerms": [{"id": "must-start-with-ami"}]},
                 id="should fail for poorly formatted AMI ids"),
    pytest.param({"securityGroupSelectorTerms": [
        {"tags": {"karpenter.sh/discovery": CLUSTER}, "id": "sg-12345"}]},
        id="should fail when securityGroupSelectorTerms has id and other filters"),
    pytest.param({"subnetSelectorTerms": [
        {"tags": {"karpenter.sh/discovery": CLUSTER}, "id": "subnet-12345"}]},
        id="should fail when subnetSelectorTerms has id and other filters"),
    pytest.param({"amiSelectorTerms": [
        {"tags": {"karpenter.sh/discovery": CLUSTER}, "id": "ami-12345"}]},
        id="should fail when amiSelectorTerms has id and other filters"),
    pytest.param({"role": "test-role", "instanceProfile": "test-instance-profile"},
                 id="should fail when specifying role and instanceProfile at the same time"),
    pytest.param({"role": DELETE, "instanceProfile": DELETE},
                 id="should fail when specifying none of role and instanceProfile"),
    pytest.param({"kubelet": {"imageGCHighThresholdPercent": 10,
                              "imageGCLowThresholdPercent": 60}},
                 id="should error if imageGCHighThresholdPercent is less than "
                    "imageGCLowThresholdPercent"),
])
def test_an_invalid_node_class_is_refused(cluster: InMemoryCluster, spec: dict[str, Any]
                                          ) -> None:
    """Karpenter test/suites/integration/validation_test.go Context("EC2NodeClass"): the It
    named by the case id."""
    assert refused(cluster, changed(**spec))
    assert not refused(cluster, changed())  # the default node class itself is accepted


def test_tags_without_restricted_keys_are_accepted(cluster: InMemoryCluster) -> None:
    """Karpenter test/suites/integration/validation_test.go It("should succeed when tags
    don't contain restricted keys")."""
    assert not refused(cluster, changed(tags={"karpenter.sh/custom-key": "custom-value",
                                              "kubernetes.io/role/key": "custom-value"}))


@pytest.mark.parametrize("key", [
    "karpenter.sh/nodepool", "eks:eks-cluster-name", f"kubernetes.io/cluster/{CLUSTER}",
    "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"])
def test_each_restricted_tag_key_is_refused(cluster: InMemoryCluster, key: str) -> None:
    """Karpenter test/suites/integration/validation_test.go It("should error when tags
    contains a restricted key") — its five keys, one case each."""
    value = CLUSTER if key == "eks:eks-cluster-name" else "owned"
    assert refused(cluster, changed(tags={key: value}))


def test_negative_image_gc_thresholds_are_refused(cluster: InMemoryCluster) -> None:
    """Karpenter test/suites/integration/validation_test.go It("should error if
    imageGCHighThresholdPercent or imageGCLowThresholdPercent is negative")."""
    assert refused(cluster, changed(kubelet={"imageGCHighThresholdPercent": -10}))
    assert refused(cluster, changed(kubelet={"imageGCLowThresholdPercent": -10}))
