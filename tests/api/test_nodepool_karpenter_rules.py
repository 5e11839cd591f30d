"""NodePool and NodeClaim rules Karpenter v1.14.1 has: RuntimeValidate's duplicate taint
key/effect across taints and startupTaints and its well-known capacity-type values (a
NodePool failing them is ValidationSucceeded=False and launches nothing), and the CRDs'
transition rules (NodeClaim spec immutable, a NodePool's nodeClassRef group and kind
immutable), refused by the in-memory API server as by a real one.

Ported from kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/nodepool_validation_cel_test.go
(Context "Taints", Context "NodeClassRef") and pkg/controllers/nodepool/validation/
suite_test.go (Describe "Counter"); each test names its It.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document
from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.controllers.conftest import WORKSHOP
from tests.harness import World

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def _pool(**template_spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((WORKSHOP / "nodepool.yaml").read_text())
    body["spec"]["template"]["spec"].update(template_spec)
    return body


def _problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    _, problems = parse_document(Document("pool.yaml", 1, body))
    return [(problem.path, problem.message) for problem in problems]


def test_valid_taints_pass() -> None:
    """nodepool_validation_cel_test.go, Taints: "should succeed for valid taints"."""
    taints = [{"key": "a", "value": "b", "effect": "NoSchedule"},
              {"key": "c", "value": "d", "effect": "NoExecute"},
              {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
              {"key": "Test", "value": "f", "effect": "PreferNoSchedule"},
              {"key": "test.com/Test", "value": "f", "effect": "PreferNoSchedule"},
              {"key": "test.com.com/test", "value": "f", "effect": "PreferNoSchedule"},
              {"key": "key-only", "effect": "NoExecute"}]
    assert _problems(_pool(taints=taints)) == []


def test_the_same_key_with_different_effects_passes() -> None:
    """nodepool_validation_cel_test.go, Taints: "should not fail for same key with
    different effects"."""
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]
    assert _problems(_pool(taints=taints)) == []


def test_a_taint_key_and_effect_twice_across_taints_and_startup_taints_fails() -> None:
    """nodepool_validation.go validateTaints: the key/effect pairs of taints and
    startupTaints are one set."""
    problems = _problems(_pool(taints=[{"key": "gpu", "value": "a", "effect": "NoSchedule"}],
                               startupTaints=[{"key": "gpu", "effect": "NoSchedule"}]))
    assert problems == [("spec.template.spec.startupTaints[0]",
                         "duplicate taint Key/Effect pair gpu=NoSchedule")]
    twice = _problems(_pool(taints=[{"key": "gpu", "effect": "NoSchedule"},
                                    {"key": "gpu", "value": "b", "effect": "NoSchedule"}]))
    assert [path for path, _ in twice] == ["spec.template.spec.taints[1]"]


def _capacity_types(*values: str, min_values: int | None = None) -> dict[str, Any]:
    body = _pool()
    for requirement in body["spec"]["template"]["spec"]["requirements"]:
        if requirement["key"] == "karpenter.sh/capacity-type":
            requirement["values"] = list(values)
            if min_values is not None:
                requirement["minValues"] = min_values
    return body


def test_only_invalid_capacity_types_fail() -> None:
    """validation suite_test.go: "should fail validation with only invalid capacity
    types" (and the issue's `capacity-type In [ondemand]`)."""
    for value in ("xspot", "ondemand"):
        ((path, message),) = _problems(_capacity_types(value))
        assert path == "spec.template.spec.requirements[0].values"
        assert message == (f"invalid value: no valid values found in [{value}] for "
                           "karpenter.sh/capacity-type, expected one of: [on-demand reserved "
                           f"spot], got: [{value}] in requirements, restricted")


def test_valid_capacity_types_pass() -> None:
    """validation suite_test.go: "should pass validation with valid capacity types"."""
    assert _problems(_capacity_types("on-demand")) == []


def test_valid_and_invalid_capacity_types_fail_open() -> None:
    """validation suite_test.go: "should fail open if invalid and valid capacity types are
    present"."""
    assert _problems(_capacity_types("on-demand", "xspot")) == []


def test_too_few_valid_capacity_types_for_min_values_fail() -> None:
    """nodeclaim_validation.go validateWellKnownValues: valid values fewer than
    minValues."""
    ((_, message),) = _problems(_capacity_types("on-demand", "xspot", min_values=2))
    assert "not enough valid values found in [on-demand xspot]" in message


@pytest.fixture
def world() -> World:
    return World()


def _conditions(world: World) -> dict[str, str]:
    status = world.cluster.get("NodePool", "default").get("status") or {}
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def test_an_invalid_capacity_type_marks_the_nodepool_not_validated_and_launches_nothing(
    world: World,
) -> None:
    """validation suite_test.go: "should fail validation with only invalid capacity types"
    on the cluster: ValidationSucceeded and Ready are False, pending pods get no node."""
    world.apply(WORKSHOP)
    world.cluster.update({**world.cluster.get("NodePool", "default"),
                          "spec": _capacity_types("ondemand")["spec"]})
    world.scale("inflate", 2)
    world.advance(60)
    conditions = _conditions(world)
    assert (conditions["ValidationSucceeded"], conditions["Ready"]) == ("False", "False")
    assert world.nodeclaims() == []


def test_duplicate_taints_mark_the_nodepool_not_validated(world: World) -> None:
    """validation suite_test.go: "should set the NodePoolValidationSucceeded status
    condition to false if nodePool validation failed", with the duplicate pair."""
    world.apply(WORKSHOP)
    world.cluster.update({**world.cluster.get("NodePool", "default"), "spec": _pool(
        taints=[{"key": "gpu", "effect": "NoSchedule"}],
        startupTaints=[{"key": "gpu", "effect": "NoSchedule"}])["spec"]})
    world.advance(30)
    assert _conditions(world)["ValidationSucceeded"] == "False"


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def test_a_nodepools_nodeclassref_group_cannot_change(cluster: InMemoryCluster) -> None:
    """nodepool_validation_cel_test.go, NodeClassRef: "should fail to mutate group"."""
    cluster.create(_pool(nodeClassRef=dict(REF)))
    stored = copy.deepcopy(cluster.get("NodePool", "default"))
    stored["spec"]["template"]["spec"]["nodeClassRef"]["group"] = "karpenter.test.mutated.sh"
    with pytest.raises(InvalidError, match=r"nodeClassRef\.group is immutable"):
        cluster.update(stored)


def test_a_nodepools_nodeclassref_kind_cannot_change_but_its_name_can(
    cluster: InMemoryCluster,
) -> None:
    """nodepool_validation_cel_test.go, NodeClassRef: "should fail to mutate kind"; the
    name stays mutable (pointing a pool at another EC2NodeClass)."""
    cluster.create(_pool(nodeClassRef=dict(REF)))
    stored = copy.deepcopy(cluster.get("NodePool", "default"))
    stored["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "TestNodeClass2"
    with pytest.raises(InvalidError, match=r"nodeClassRef\.kind is immutable"):
        cluster.update(stored)
    stored["spec"]["template"]["spec"]["nodeClassRef"] = {**REF, "name": "other"}
    cluster.update(stored)
    assert cluster.get("NodePool", "default")["spec"]["template"]["spec"]["nodeClassRef"][
        "name"] == "other"


def test_a_nodeclaims_spec_cannot_change_but_its_status_can(cluster: InMemoryCluster) -> None:
    """Karpenter's NodeClaim CRD rule `self == oldSelf` on spec ("spec is immutable")."""
    cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": "c"},
                    "spec": {"nodeClassRef": REF, "requirements": []}})
    stored = copy.deepcopy(cluster.get("NodeClaim", "c"))
    stored["spec"]["taints"] = [{"key": "a", "effect": "NoSchedule"}]
    with pytest.raises(InvalidError, match="spec is immutable"):
        cluster.update(stored)
    with pytest.raises(InvalidError, match="spec is immutable"):
        cluster.patch("NodeClaim", "c", {"spec": {"expireAfter": "1h"}})
    cluster.patch("NodeClaim", "c", {"status": {"providerID": "aws:///a/i-1"}},
                  subresource="status")
    cluster.patch("NodeClaim", "c", {"metadata": {"labels": {"team": "a"}}})
    assert cluster.get("NodeClaim", "c")["status"] == {"providerID": "aws:///a/i-1"}
