"""NodeOverlay admission, ported from kubernetes-sigs/karpenter v1.14.1
`pkg/apis/v1alpha1/nodeoverlay_validation_test.go` (Describe "CEL/Validation").

Each NodeOverlay is created against the in-memory cluster (our generated CRD's schema and
CEL rules); where Karpenter also calls `RuntimeValidate`, we ask our model. Karpenter's
priceAdjustment "Invalid Input" table sets `price` (not `priceAdjustment`); the port does
the same, so those entries exercise the price pattern as Karpenter's do.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.karpenter_admission import changed, expect_decisions

# Karpenter's BeforeEach NodeOverlay.
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "overlay"},
    "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "Exists"}]},
}
ZONE = "topology.kubernetes.io/zone"
LONG = "a1b2c3d4e5" * 25  # 250 lowercase alphanumerics, as randomdata.Alphanumeric(250)
WELL_KNOWN = [ZONE, "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
              "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/windows-build"]


def at(path: str, value: Any) -> dict[str, Any]:
    return changed(BASE, {path: value})


def reqs(*items: dict[str, Any]) -> dict[str, Any]:
    return at("spec.requirements", list(items))


def req(key: str, operator: str = "In", values: list[str] | None = None) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": values} if values else {})}


def bad_numbers(*operators: str) -> list[dict[str, Any]]:
    return [reqs(req(ZONE, op, values)) for op in operators
            for values in ([], ["1", "2"], ["a"], ["-1"])]


INVALID_PRICES = [
    ("No explicit plus sign allowed", "+42"), ("Must have leading digit", ".5"),
    ("Must have trailing digits after decimal", "42."), ("No percentage sign allowed", "42%"),
    ("No commas allowed", "3,14"), ("No scientific notation", "1e10"),
    ("No hex notation", "0x42"), ("No text", "forty-two"), ("No letters", "42a"),
    ("No spaces", "42 "), ("No spaces", " 42"), ("Multiple decimal points", "42.0.0"),
    ("Just a sign", "-"), ("Just a decimal point", "."),
]

# (Karpenter It / Entry, bodies, admitted by the API server, passes RuntimeValidate or None
# where Karpenter's It does not call it)
CASES: list[tuple[str, list[dict[str, Any]], bool, bool | None]] = [
    ("Requirements: should fail for no values for In operator", [reqs(req("Test", "In"))],
     False, False),
    ("Requirements: should fail for no values for NotIn operator", [reqs(req("Test", "NotIn"))],
     False, False),
    ("Requirements: should succeed for valid requirement keys (one key)",
     [reqs(req("Test", "Exists"))], True, True),
    ("Requirements: should succeed for valid requirement keys", [reqs(
        *[req(key, "Exists") for key in ["Test", "test.com/Test", "test.com.com/test",
                                         "key-only"]])], True, True),
    ("Requirements: should fail for invalid requirement keys",
     [reqs(req(key, "Exists")) for key in ["test.com.com}", "Test.com/test", "test/test/test",
                                           "test/", "/test"]], False, False),
    ("Requirements: should allow for the karpenter.sh/nodepool label",
     [reqs(req("karpenter.sh/nodepool", values=["silly"]))], True, True),
    ("Requirements: should fail at runtime for requirement keys that are too long",
     [reqs(req(key, "Exists")) for key in [f"test.com.test.{LONG}/test",
                                           f"test.com.test/test-{LONG}"]], True, False),
    ("Requirements: should allow supported ops", [reqs(
        req(ZONE, "In", ["test"]), req(ZONE, "Gt", ["1"]), req(ZONE, "Lt", ["1"]),
        req(ZONE, "Gte", ["1"]), req(ZONE, "Lte", ["1"]), req(ZONE, "NotIn", ["1"]),
        req(ZONE, "Exists"))], True, True),
    ("Requirements: should fail for unsupported ops", [reqs(req(ZONE, "unknown", ["test"]))],
     False, False),
    ("Requirements: should fail for restricted domains",
     [reqs(req("karpenter.sh/test", values=["test"]))], False, False),
    ("Requirements: should allow kubernetes domains exceptions",
     [reqs(req(f"{domain}/test", values=["test"])) for domain in ["kubernetes.io", "k8s.io"]],
     True, True),
    ("Requirements: should allow kubernetes subdomains exceptions",
     [reqs(req(f"subdomain.{domain}/test", values=["test"]))
      for domain in ["kubernetes.io", "k8s.io"]], True, True),
    ("Requirements: should allow well known label exceptions",
     [reqs(req(label, values=["test"])) for label in WELL_KNOWN], True, True),
    ("Requirements: should allow non-empty set after removing overlapped value",
     [reqs(req(ZONE, "In", ["test", "foo"]), req(ZONE, "NotIn", ["test", "bar"]))], True, True),
    ("Requirements: should allow empty requirements", [reqs(req("test", "Exists"))], True, True),
    ("Requirements: should fail with invalid GT or LT values", bad_numbers("Gt", "Lt"), False,
     False),
    ("Requirements: should fail with invalid GTE or LTE values", bad_numbers("Gte", "Lte"),
     False, False),
    ("shout not be able to set both price and priceAdjustment",
     [changed(BASE, {"spec.price": "0.432", "spec.priceAdjustment": "+10%"})], False, None),
    *[(f"priceAdjustment: Invalid Input, Entry {entry} ({value!r})", [at("spec.price", value)],
       False, None)
      for entry, value in [*INVALID_PRICES, ("No leading digit after sign", "-100.0%"),
                           ("less -100% float ", "-101.1%"), ("less -100% integer ", "-129")]],
    *[(f"priceAdjustment: {it}", [at("spec.priceAdjustment", value)], admit, None)
      for it, value, admit in [
          ("should not allow an unsigned priceAdjustment percentage", "1%", False),
          ("should not allow an unsigned priceAdjustment integer", "1", False),
          ("should not allow an unsigned priceAdjustment float", "1.3", False),
          ("should allow positive percentage value for priceAdjustment field", "+1%", True),
          ("should allow negative percentage less then 0%", "-1%", True),
          ("should allow negative percentage -100%", "-100%", True),
          ("should allow positive percentage greater then 100%", "+100.102%", True),
          ("should allow positive percentage greater then 100% with an integer", "+298%", True),
          ("should allow positive integer value", "+43", True),
          ("should allow negative integer value", "-43", True),
          ("should allow positive float value", "+34.43", True),
          ("should allow negative float value", "-34.43", True)]],
    *[(f"price: Invalid Input, Entry {entry} ({value!r})", [at("spec.price", value)], False,
       None) for entry, value in [*INVALID_PRICES, ("No leading digit after sign", "-.42")]],
    ("price: should allow integer value", [at("spec.price", "43")], True, None),
    ("price: should allow float value", [at("spec.price", "34.43")], True, None),
    ("Capacity: should allow custom resources",
     [at("spec.capacity", {"smarter-devices/fuse": "1"})], True, True),
    *[(f"Capacity: should not allow {what} resources override", [at("spec.capacity", value)],
       False, False)
      for what, value in [("cpu", {"cpu": "1"}), ("memory", {"memory": "34Gi"}),
                          ("pod", {"pods": "324"})]],
]


@pytest.fixture(scope="module")
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


@pytest.mark.parametrize(("karpenter", "bodies", "admit", "runtime"), CASES,
                         ids=[case[0] for case in CASES])
def test_the_api_server_and_runtime_validation_decide_as_karpenter_does(
        cluster: InMemoryCluster, karpenter: str, bodies: list[dict[str, Any]], admit: bool,
        runtime: bool | None) -> None:
    # Karpenter: nodeoverlay_validation_test.go, Describe "CEL/Validation", the It or Entry
    # named by `karpenter` (an It looping over values is one case with its bodies).
    expect_decisions(cluster, karpenter, bodies, admit, runtime)
