"""NodeClaim admission, ported from kubernetes-sigs/karpenter v1.14.1
`pkg/apis/v1/nodeclaim_validation_cel_test.go` (Describe "Validation").

Each NodeClaim is created against the in-memory cluster, which enforces our generated
CRD's schema and CEL rules as Karpenter's test API server enforces its CRD. (Karpenter's
file has no It for `spec is immutable`; ours is in test_nodepool_karpenter_rules.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.karpenter_admission import changed, expect_decisions

# Karpenter's BeforeEach NodeClaim.
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "claim"},
    "spec": {
        "nodeClassRef": {"group": "karpenter.test.sh", "kind": "TestNodeClaim",
                         "name": "default"},
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "Exists"}],
    },
}
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
WELL_KNOWN = [ZONE, "topology.kubernetes.io/region", INSTANCE_TYPE, "kubernetes.io/arch",
              "kubernetes.io/os", "karpenter.sh/capacity-type",
              "node.kubernetes.io/windows-build"]


def at(path: str, value: Any) -> dict[str, Any]:
    return changed(BASE, {path: value})


def taints(*items: dict[str, Any]) -> dict[str, Any]:
    return at("spec.taints", list(items))


def reqs(*items: dict[str, Any]) -> dict[str, Any]:
    return at("spec.requirements", list(items))


def req(key: str, operator: str = "In", values: list[str] | None = None,
        **extra: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": values} if values else {}),
            **extra}


def ref(group: str) -> dict[str, Any]:
    return at("spec.nodeClassRef", {"kind": "TestNodeClass", "name": "nodeclass-test",
                                    "group": group})


def bad_numbers(*operators: str) -> list[dict[str, Any]]:
    return [reqs(req(ZONE, op, values)) for op in operators
            for values in ([], ["1", "2"], ["a"], ["-1"])]


# (Karpenter It / Entry, bodies, admitted by the API server)
CASES: list[tuple[str, list[dict[str, Any]], bool]] = [
    ("Taints: should succeed for valid taints", [taints(
        {"key": "a", "value": "b", "effect": "NoSchedule"},
        {"key": "c", "value": "d", "effect": "NoExecute"},
        {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "key-only", "effect": "NoExecute"})], True),
    # Go sends the unset effect as "" (v1.Taint's effect has no omitempty).
    ("Taints: should fail for invalid taint keys", [taints({"key": "???", "effect": ""})],
     False),
    ("Taints: should fail for missing taint key", [taints({"key": "", "effect": "NoSchedule"})],
     False),
    ("Taints: should fail for invalid taint value",
     [taints({"key": "invalid-value", "effect": "NoSchedule", "value": "???"})], False),
    ("Taints: should fail for invalid taint effect",
     [taints({"key": "invalid-effect", "effect": "???"})], False),
    ("Taints: should not fail for same key with different effects",
     [taints({"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"})], True),
    ("NodeClassRef: should succeed for valid group", [ref("karpenter.test.sh")], True),
    ("NodeClassRef: should fail for invalid group", [ref("karpenter.test.sh/v1")], False),
    ("Requirements: should allow supported ops", [reqs(
        req(ZONE, "In", ["test"]), req(ZONE, "Gt", ["1"]), req(ZONE, "Lt", ["1"]),
        req(ZONE, "NotIn"), req(ZONE, "Exists"))], True),
    ("Requirements: should fail for unsupported ops", [reqs(req(ZONE, "unknown", ["test"]))],
     False),
    ("Requirements: should fail for restricted domains",
     [reqs(req("karpenter.sh/test", values=["test"]))], False),
    ("Requirements: should fail for restricted labels",
     [reqs(req("kubernetes.io/hostname/test", values=["test"]))], False),
    ("Requirements: should allow kubernetes domains",
     [reqs(req(f"{domain}/test", values=["test"])) for domain in ["kubernetes.io", "k8s.io"]],
     True),
    ("Requirements: should allow kubernetes subdomains",
     [reqs(req(f"subdomain.{domain}/test", values=["test"]))
      for domain in ["kubernetes.io", "k8s.io"]], True),
    ("Requirements: should allow well known label exceptions",
     [reqs(req(label, values=["test"])) for label in WELL_KNOWN], True),
    ("Requirements: should allow non-empty set after removing overlapped value",
     [reqs(req(ZONE, "In", ["test", "foo"]), req(ZONE, "NotIn", ["test", "bar"]))], True),
    ("Requirements: should allow empty requirements", [reqs()], True),
    ("Requirements: should fail with invalid GT or LT values", bad_numbers("Gt", "Lt"), False),
    ("Requirements: should fail with invalid GTE or LTE values", bad_numbers("Gte", "Lte"),
     False),
    ("Requirements: should error when minValues is negative",
     [reqs(req(INSTANCE_TYPE, values=["insance-type-1"], minValues=-1))], False),
    ("Requirements: should error when minValues is zero",
     [reqs(req(INSTANCE_TYPE, values=["insance-type-1"], minValues=0))], False),
    ("Requirements: should error when minValues is more than 50",
     [reqs(req(INSTANCE_TYPE, "Exists", minValues=51))], False),
    ("Requirements: should allow more than 50 values if minValues is not specified.",
     [reqs(req(INSTANCE_TYPE, values=[f"instance{i}" for i in range(90)]))], True),
    ("Requirements: should error when minValues is greater than the number of unique values "
     "specified within In operator",
     [reqs(req(INSTANCE_TYPE, values=["insance-type-1"], minValues=2))], False),
    ("Requirements: should error when requirements is greater than 100",
     [reqs(*[req(f"key-{i}", values=[f"value-{i}"]) for i in range(101)])], False),
    *[(f"TerminationGracePeriod: should succeed on a valid terminationGracePeriod, Entry "
       f"{entry}", [at("spec.terminationGracePeriod", value)], True)
      for entry, value in [("single unit", "30s"), ("multiple units", "1h30m5s")]],
    *[(f"TerminationGracePeriod: should fail on an invalid terminationGracePeriod, Entry "
       f"{entry}", [at("spec.terminationGracePeriod", value)], False)
      for entry, value in [("negative", "-1s"), ("invalid unit", "1hr"), ("never", "Never"),
                           ("partial match", "FooNever")]],
    *[(f"ExpireAfter: should succeed on a valid expireAfter, Entry {entry}",
       [at("spec.expireAfter", value)], True)
      for entry, value in [("single unit", "30s"), ("multiple units", "1h30m5s"),
                           ("never", "Never")]],
    *[(f"ExpireAfter: should fail on an invalid expireAfter, Entry {entry}",
       [at("spec.expireAfter", value)], False)
      for entry, value in [("negative", "-1s"), ("invalid unit", "1hr"),
                           ("partial match", "FooNever")]],
]


@pytest.fixture(scope="module")
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


@pytest.mark.parametrize(("karpenter", "bodies", "admit"), CASES,
                         ids=[case[0] for case in CASES])
def test_the_api_server_decides_as_karpenter_does(
        cluster: InMemoryCluster, karpenter: str, bodies: list[dict[str, Any]],
        admit: bool) -> None:
    # Karpenter: nodeclaim_validation_cel_test.go, Describe "Validation", the It or Entry
    # named by `karpenter` (an It looping over values is one case with its bodies).
    expect_decisions(cluster, karpenter, bodies, admit)
