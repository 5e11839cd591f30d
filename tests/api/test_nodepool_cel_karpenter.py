"""NodePool admission, ported from kubernetes-sigs/karpenter v1.14.1
`pkg/apis/v1/nodepool_validation_cel_test.go` (Describe "CEL/Validation") and
`pkg/apis/v1/nodepool_default_test.go` (Describe "CEL/Default").

Karpenter creates each NodePool against a test API server running its CRD; we create it
against the in-memory cluster, which enforces our generated CRD's schema and CEL rules the
same way. Where Karpenter also calls `RuntimeValidate`, we ask our model
(`parse_document`, which runs the same checks). Bodies are what Go's client sends:
`metav1.Duration` as "20m0s", quantities in canonical form ("1k").

Karpenter's "should fail to mutate group/kind" Its are in test_nodepool_karpenter_rules.py
(as real updates).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.karpenter_admission import (
    DELETE,
    changed,
    expect_decisions,
    runtime_valid,
)

# Karpenter's BeforeEach NodePool.
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "pool"},
    "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.test.sh", "kind": "TestNodeClass",
                         "name": "default"},
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "Exists"}],
    }}},
}
TEMPLATE = "spec.template.spec"
TAINTS = f"{TEMPLATE}.taints"
REQUIREMENTS = f"{TEMPLATE}.requirements"
LABELS = "spec.template.metadata.labels"
BUDGETS = "spec.disruption.budgets"
LONG = "a1b2c3d4e5" * 25  # 250 lowercase alphanumerics, as randomdata.Alphanumeric(250)
WELL_KNOWN = ["topology.kubernetes.io/zone", "topology.kubernetes.io/region",
              "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
              "node.kubernetes.io/windows-build"]


def pool(**changes: Any) -> dict[str, Any]:
    return changed(BASE, {key.replace("__", "."): value for key, value in changes.items()})


def at(path: str, value: Any) -> dict[str, Any]:
    return changed(BASE, {path: value})


def budget(nodes: str = "10", schedule: str | None = "* * * * *",
           duration: str | None = "20m0s", **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"nodes": nodes, **extra}
    if schedule is not None:
        found["schedule"] = schedule
    if duration is not None:
        found["duration"] = duration
    return found


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> dict[str, Any]:
    return {"key": key, "effect": effect, **({"value": value} if value is not None else {})}


def req(key: str, operator: str = "In", values: list[str] | None = None,
        **extra: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator,
            **({"values": values} if values else {}), **extra}


def one_req(*requirements: dict[str, Any]) -> dict[str, Any]:
    return at(REQUIREMENTS, list(requirements))


def bad_numbers(*operators: str) -> list[dict[str, Any]]:
    return [one_req(req("topology.kubernetes.io/zone", op, values))
            for op in operators for values in ([], ["1", "2"], ["a"], ["-1"])]


def bad_keys(make: Any) -> list[dict[str, Any]]:
    return [make(key) for key in ["test.com.com}", "Test.com/test", "test/test/test", "test/",
                                  "/test"]]


def too_long(make: Any) -> list[dict[str, Any]]:
    return [make(f"test.com.test.{LONG}/test"), make(f"test.com.test/test-{LONG}")]


def static(**changes: Any) -> dict[str, Any]:
    return changed(BASE, {"spec.replicas": 10, **changes})


# (Karpenter It / Entry, bodies, admitted by the API server, passes RuntimeValidate or None
# where Karpenter's It does not call it)
Case = tuple[str, list[dict[str, Any]], bool, bool | None]
CASES: list[Case] = [
    # Context "Disruption"
    ("should succeed on a disabled expireAfter", [at(f"{TEMPLATE}.expireAfter", "Never")], True,
     None),
    *[(f"should succeed on a valid expireAfter, Entry {entry}",
       [at(f"{TEMPLATE}.expireAfter", value)], True, None)
      for entry, value in [("single unit", "30s"), ("multiple units", "1h30m5s"),
                           ("never", "Never")]],
    *[(f"should fail on an invalid expireAfter, Entry {entry}",
       [at(f"{TEMPLATE}.expireAfter", value)], False, None)
      for entry, value in [("negative", "-1s"), ("invalid unit", "1hr"),
                           ("partial match", "FooNever")]],
    ("should succeed on a disabled consolidateAfter",
     [at("spec.disruption.consolidateAfter", "Never")], True, None),
    *[(f"should succeed on a valid consolidateAfter, Entry {entry}",
       [at("spec.disruption.consolidateAfter", value)], True, None)
      for entry, value in [("single unit", "30s"), ("multiple units", "1h30m5s"),
                           ("never", "Never")]],
    *[(f"should fail on an invalid consolidateAfter, Entry {entry}",
       [at("spec.disruption.consolidateAfter", value)], False, None)
      for entry, value in [("negative", "-1s"), ("invalid unit", "1hr"),
                           ("partial match", "FooNever")]],
    *[(f"should succeed when setting consolidateAfter{after} with "
       f"consolidationPolicy={name}",
       [pool(spec__disruption={"consolidateAfter": value, "consolidationPolicy": policy})],
       True, None)
      for after, value in [("", "30s"), (" to 'Never'", "Never")]
      for name, policy in [("WhenEmpty", "WhenEmpty"),
                           ("WhenUnderutilized", "WhenEmptyOrUnderutilized")]],
    *[(f"should succeed on a valid consolidationPolicy, Entry {policy}",
       [at("spec.disruption.consolidationPolicy", policy)], True, None)
      for policy in ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]],
    *[(f"should fail on an invalid consolidationPolicy, Entry {entry}",
       [at("spec.disruption.consolidationPolicy", value)], False, None)
      for entry, value in [("quoted 1", "1"), ("quoted 2", "2"), ("quoted 3", "3"),
                           ("level 0", "0"), ("level 4", "4"), ("level 10", "10"),
                           ("lowercase balanced", "balanced"),
                           ("lowercase whenempty", "whenempty"), ("empty string", ""),
                           ("WhenUnderutilized", "WhenUnderutilized"),
                           ("arbitrary string", "foo")]],
    *[(f"should pass RuntimeValidate for valid consolidationPolicy, Entry {policy}",
       [at("spec.disruption.consolidationPolicy", policy)], True, True)
      for policy in ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]],
    ("should fail when creating a budget with an invalid cron", [at(BUDGETS, [budget(
        schedule="*")])], False, None),
    ("should fail when creating a schedule with less than 5 entries",
     [at(BUDGETS, [budget(schedule="* * * * ")])], False, None),
    ("should fail when creating a budget with a negative duration",
     [at(BUDGETS, [budget(duration="-20m0s")])], False, None),
    ("should fail when creating a budget with a seconds duration",
     [at(BUDGETS, [budget(duration="30s")])], False, None),
    ("should fail when creating a budget with a negative value int",
     [at(BUDGETS, [budget("-10", None, None)])], False, None),
    ("should fail when creating a budget with a negative value percent",
     [at(BUDGETS, [budget("-10%", None, None)])], False, None),
    ("should fail when creating a budget with a value percent with more than 3 digits",
     [at(BUDGETS, [budget("1000%", None, None)])], False, None),
    ("should fail when creating a budget with a cron but no duration",
     [at(BUDGETS, [budget(duration=None)])], False, None),
    ("should fail when creating a budget with a duration but no cron",
     [at(BUDGETS, [budget(schedule=None)])], False, None),
    ("should succeed when creating a budget with both duration and cron",
     [at(BUDGETS, [budget()])], True, None),
    ("should succeed when creating a budget with hours and minutes in duration",
     [at(BUDGETS, [budget(duration="2h20m0s")])], True, None),
    ("should succeed when creating a budget with neither duration nor cron",
     [at(BUDGETS, [budget("10", None, None)])], True, None),
    ("should succeed when creating a budget with special cased crons",
     [at(BUDGETS, [budget(schedule="@annually")])], True, None),
    ("should fail when creating two budgets where one has an invalid crontab",
     [at(BUDGETS, [budget(schedule="@annually"), budget(schedule="*")])], False, None),
    ("should fail when creating multiple budgets where one doesn't have both schedule and "
     "duration", [at(BUDGETS, [budget(schedule=None), budget(), budget("10", None, None)])],
     False, None),
    *[(f"should succeed when creating a budget with valid reasons, Entry should allow "
       f"disruption reason {reason}", [at(BUDGETS, [budget(reasons=[reason])])], True, None)
      for reason in ["Drifted", "Underutilized", "Empty"]],
    *[(f"should fail when creating a budget with invalid reasons, Entry {entry}",
       [at(BUDGETS, [budget(reasons=[reason])])], False, None)
      for entry, reason in [("should not allow invalid reason", "invalid"),
                            ("should not allow expired disruption reason", "expired"),
                            ("should not allow empty reason", "")]],
    ("should allow setting multiple reasons",
     [at(BUDGETS, [budget(reasons=["Drifted", "Empty"])])], True, None),
    # Context "Taints"
    ("Taints: should succeed for valid taints", [at(TAINTS, [
        taint("a", value="b"), taint("c", "NoExecute", "d"), taint("e", "PreferNoSchedule", "f"),
        taint("Test", "PreferNoSchedule", "f"), taint("test.com/Test", "PreferNoSchedule", "f"),
        taint("test.com.com/test", "PreferNoSchedule", "f"), taint("key-only", "NoExecute")])],
     True, True),
    ("Taints: should fail for invalid taint keys",
     bad_keys(lambda key: at(TAINTS, [taint(key)])), False, False),
    ("Taints: should fail at runtime for taint keys that are too long",
     too_long(lambda key: at(TAINTS, [taint(key)])), True, False),
    ("Taints: should fail for missing taint key", [at(TAINTS, [taint("")])], False, False),
    ("Taints: should fail for invalid taint value",
     [at(TAINTS, [taint("invalid-value", value="???")])], False, False),
    ("Taints: should fail for invalid taint effect",
     [at(TAINTS, [taint("invalid-effect", "???")])], False, False),
    ("Taints: should not fail for same key with different effects",
     [at(TAINTS, [taint("a"), taint("a", "NoExecute")])], True, True),
    # Context "Requirements"
    ("Requirements: should succeed for valid requirement keys", [one_req(
        *[req(key, "Exists") for key in ["Test", "test.com/Test", "test.com.com/test",
                                         "key-only"]])], True, True),
    ("Requirements: should fail for invalid requirement keys",
     bad_keys(lambda key: one_req(req(key, "Exists"))), False, False),
    ("Requirements: should fail at runtime for requirement keys that are too long",
     too_long(lambda key: one_req(req(key, "Exists"))), True, False),
    ("Requirements: should fail for the karpenter.sh/nodepool label",
     [one_req(req("karpenter.sh/nodepool", values=["silly"]))], False, False),
    ("Requirements: should allow supported ops", [one_req(
        req("topology.kubernetes.io/zone", "In", ["test"]),
        req("topology.kubernetes.io/zone", "Gt", ["1"]),
        req("topology.kubernetes.io/zone", "Lt", ["1"]),
        req("topology.kubernetes.io/zone", "NotIn"),
        req("topology.kubernetes.io/zone", "Exists"))], True, True),
    ("Requirements: should fail for unsupported ops",
     [one_req(req("topology.kubernetes.io/zone", "unknown", ["test"]))], False, False),
    ("Requirements: should fail for restricted domains",
     [one_req(req("karpenter.sh/test", values=["test"]))], False, False),
    ("Requirements: should fail for restricted labels",
     [one_req(req("kubernetes.io/hostname/test", values=["test"]))], False, False),
    ("Requirements: should allow kubernetes domains",
     [one_req(req(f"{domain}/test", values=["test"])) for domain in ["kubernetes.io", "k8s.io"]],
     True, True),
    ("Requirements: should allow kubernetes subdomains exceptions",
     [one_req(req(f"subdomain.{domain}/test", values=["test"]))
      for domain in ["kubernetes.io", "k8s.io"]], True, True),
    ("Requirements: should allow well known label exceptions",
     [one_req(req(label, values=["test"])) for label in WELL_KNOWN], True, True),
    ("Requirements: should allow non-empty set after removing overlapped value", [one_req(
        req("topology.kubernetes.io/zone", "In", ["test", "foo"]),
        req("topology.kubernetes.io/zone", "NotIn", ["test", "bar"]))], True, True),
    ("Requirements: should allow empty requirements", [at(REQUIREMENTS, [])], True, True),
    ("Requirements: should fail with invalid GT or LT values", bad_numbers("Gt", "Lt"), False,
     False),
    ("Requirements: should fail with invalid GTE or LTE values", bad_numbers("Gte", "Lte"),
     False, False),
    ("Requirements: should error when minValues is negative",
     [one_req(req("node.kubernetes.io/instance-type", values=["insance-type-1"], minValues=-1))],
     False, None),
    ("Requirements: should error when minValues is zero",
     [one_req(req("node.kubernetes.io/instance-type", values=["insance-type-1"], minValues=0))],
     False, None),
    ("Requirements: should error when minValues is more than 50",
     [one_req(req("node.kubernetes.io/instance-type", "Exists", minValues=51))], False, None),
    ("Requirements: should allow more than 50 values if minValues is not specified.",
     [one_req(req("node.kubernetes.io/instance-type", values=[f"instance{i}"
                                                              for i in range(90)]))],
     True, None),
    ("Requirements: should error when minValues is greater than the number of unique values "
     "specified within In operator",
     [one_req(req("node.kubernetes.io/instance-type", values=["insance-type-1"], minValues=2))],
     False, None),
    # Context "Labels"
    ("Labels: should allow unrecognized labels", [at(LABELS, {"foo": "silly"})], True, True),
    ("Labels: should fail for the karpenter.sh/nodepool label",
     [at(LABELS, {"karpenter.sh/nodepool": "silly"})], False, False),
    ("Labels: should fail for invalid label keys",
     [at(LABELS, {"spaces are not allowed": "silly"})], True, False),
    ("Labels: should fail at runtime for label keys that are too long",
     too_long(lambda key: at(LABELS, {key: "silly"})), True, False),
    ("Labels: should fail for invalid label values",
     [at(LABELS, {"silly": "/ is not allowed"})], False, False),
    ("Labels: should fail for restricted label domains",
     [at(LABELS, {"karpenter.sh/unknown": "silly"})], False, False),
    ("Labels: should allow labels kOps require",
     [at(LABELS, {"kops.k8s.io/instancegroup": "karpenter-nodes", "kops.k8s.io/gpu": "1"})],
     True, True),
    ("Labels: should allow labels in kubernetes domains",
     [at(LABELS, {domain: "test-value"}) for domain in ["kubernetes.io", "k8s.io"]], True, True),
    ("Labels: should allow labels prefixed with the kubernetes domain",
     [at(LABELS, {f"{domain}/key": "test-value"}) for domain in ["kubernetes.io", "k8s.io"]],
     True, True),
    ("Labels: should allow subdomain labels in restricted domains exceptions list",
     [at(LABELS, {f"subdomain.{domain}": "test-value"}) for domain in ["kubernetes.io",
                                                                      "k8s.io"]], True, True),
    ("Labels: should allow subdomain labels prefixed with the kubernetes domain",
     [at(LABELS, {f"subdomain.{domain}/key": "test-value"})
      for domain in ["kubernetes.io", "k8s.io"]], True, True),
    # Context "TerminationGracePeriod"
    *[(f"should succeed on a valid terminationGracePeriod, Entry {entry}",
       [at(f"{TEMPLATE}.terminationGracePeriod", value)], True, None)
      for entry, value in [("single unit", "30s"), ("multiple units", "1h30m5s")]],
    *[(f"should fail on an invalid terminationGracePeriod, Entry {entry}",
       [at(f"{TEMPLATE}.terminationGracePeriod", value)], False, None)
      for entry, value in [("negative", "-1s"), ("invalid unit", "1hr"), ("never", "Never"),
                           ("partial match", "FooNever")]],
    # Context "NodeClassRef"
    *[(f"NodeClassRef: should fail if {field} is unset",
       [at(f"{TEMPLATE}.nodeClassRef.{field}", "")], False, None)
      for field in ["group", "kind", "name"]],
    # Context "Replicas"
    *[(f"Replicas: should succeed when replicas is set to {entry}", [at("spec.replicas", value)],
       True, True) for entry, value in [("a positive value", 5), ("zero", 0),
                                        ("a large value", 1000)]],
    ("Replicas: should fail when replicas is set to a negative value",
     [at("spec.replicas", -100)], False, None),
    *[(f"Replicas: should fail for incompatible fields, Entry {entry}",
       [static(**{path: value})], False, None)
      for entry, path, value in [
          ("limits.cpu", "spec.limits", {"cpu": "1k"}),
          ("limits.memory", "spec.limits", {"memory": "2000Gi"}),
          ("limits.pods", "spec.limits", {"pods": "10"}),
          ("limits.ephemeral-storage", "spec.limits", {"ephemeral-storage": "10Gi"}),
          ("weight", "spec.weight", 25)]],
    *[(f"Replicas: should succeed for compatible fields, Entry {entry}",
       [static(**{path: value})], True, True)
      for entry, path, value in [
          ("limits.nodes", "spec.limits", {"nodes": "100"}),
          ("disruption with multiple budgets", "spec.disruption", {
              "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m0s",
              "budgets": [budget("20%", "0 9 * * mon-fri", "8h0m0s",
                                 reasons=["Drifted", "Empty"]),
                          budget("30%", "0 22 * * sat,sun", "4h0m0s", reasons=["Underutilized"]),
                          budget("5", None, None)]}),
          ("template labels", LABELS, {"environment": "production"}),
          ("template annotations", "spec.template.metadata.annotations",
           {"example.com/last-updated": "2024-01-01"}),
          ("taints", TAINTS, [taint("gpu-workload", value="enabled")]),
          ("startup taints", f"{TEMPLATE}.startupTaints",
           [taint("example.com/initializing", value="true")]),
          ("requirements", REQUIREMENTS, [
              req("node.kubernetes.io/instance-type", values=[
                  "m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "r5.large",
                  "r5.xlarge"], minValues=3),
              req("topology.kubernetes.io/zone", values=["us-west-2a", "us-west-2b",
                                                          "us-west-2c"]),
              req("karpenter.sh/capacity-type", values=["on-demand", "spot"]),
              req("kubernetes.io/arch", values=["amd64"]),
              req("karpenter.k8s.aws/instance-memory", "Gt", ["8192"]),
              req("karpenter.k8s.aws/instance-cpu", "Lt", ["64"])]),
          ("expireAfter", f"{TEMPLATE}.expireAfter", "72h0m0s"),
          ("terminationGracePeriod", f"{TEMPLATE}.terminationGracePeriod", "5m0s")]],
]


@pytest.fixture(scope="module")
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


@pytest.mark.parametrize(("karpenter", "bodies", "admit", "runtime"), CASES,
                         ids=[case[0] for case in CASES])
def test_the_api_server_and_runtime_validation_decide_as_karpenter_does(
        cluster: InMemoryCluster, karpenter: str, bodies: list[dict[str, Any]], admit: bool,
        runtime: bool | None) -> None:
    # Karpenter: nodepool_validation_cel_test.go, Describe "CEL/Validation", the It or
    # Entry named by `karpenter` (an It looping over values is one case with its bodies).
    expect_decisions(cluster, karpenter, bodies, admit, runtime)


@pytest.mark.parametrize(("karpenter", "bodies", "admit"),
                         [case[:3] for case in CASES if case[3] is None],
                         ids=[case[0] for case in CASES if case[3] is None])
def test_nodewright_validate_decides_as_the_api_server_where_karpenter_has_no_runtime_check(
        karpenter: str, bodies: list[dict[str, Any]], admit: bool) -> None:
    # Karpenter: nodepool_validation_cel_test.go, the It or Entry named by `karpenter`. Where
    # Karpenter's test does not call RuntimeValidate, `nodewright validate` neither refuses
    # what the API server admits nor takes what it refuses.
    for body in bodies:
        assert runtime_valid(body) is admit, f"{karpenter}: {body['spec']}"


def _stored(cluster: InMemoryCluster, name: str, **changes: Any) -> dict[str, Any]:
    body = pool(**changes)
    body["metadata"]["name"] = name
    return cluster.create(body)


def test_replicas_may_grow(cluster: InMemoryCluster) -> None:
    """nodepool_validation_cel_test.go, Replicas, Update Scenarios: "should succeed when
    increasing replicas in a NodePool"."""
    stored = _stored(cluster, "grow", spec__replicas=3)
    stored["spec"]["replicas"] = 5
    assert cluster.update(stored)["spec"]["replicas"] == 5
    assert runtime_valid(stored)


@pytest.mark.parametrize(("karpenter", "first", "then"), [
    ("should fail when changing the NodePool from static to dynamic", 3, DELETE),
    ("should fail when changing the NodePool from dynamic to static", DELETE, 3),
], ids=["static to dynamic", "dynamic to static"])
def test_a_nodepool_cannot_switch_between_static_and_dynamic(
        cluster: InMemoryCluster, karpenter: str, first: Any, then: Any) -> None:
    # Karpenter: nodepool_validation_cel_test.go, Replicas, Update Scenarios, It `karpenter`.
    stored = _stored(cluster, f"switch-{str(first is DELETE).lower()}", spec__replicas=first)
    updated = changed(stored, {"spec.replicas": then})
    with pytest.raises(InvalidError, match="Cannot transition NodePool between static"):
        cluster.update(updated)


def test_a_static_nodepools_nodes_limit_may_change(cluster: InMemoryCluster) -> None:
    """nodepool_validation_cel_test.go, Replicas, Update Scenarios: "should succeed when
    changing the static NodePool nodes limit"."""
    stored = _stored(cluster, "limit", spec__replicas=3, spec__limits={"nodes": "10"})
    stored["spec"]["limits"] = {"nodes": "100"}
    assert cluster.update(stored)["spec"]["limits"] == {"nodes": "100"}


def test_the_disruption_stanza_is_defaulted_when_undefined(cluster: InMemoryCluster) -> None:
    """nodepool_default_test.go, Defaults/TopLevel: "should default the disruption stanza
    when undefined"."""
    stored = _stored(cluster, "defaults")
    assert stored["spec"]["disruption"] == {
        "consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}]}


def test_a_budget_naming_a_reason_twice_is_refused(cluster: InMemoryCluster) -> None:
    """Karpenter's CRD makes a budget's reasons a set (x-kubernetes-list-type: set): the API
    server refuses a reason named twice, and so does our model."""
    body = at(BUDGETS, [budget(reasons=["Drifted", "Empty", "Drifted"])])
    body["metadata"]["name"] = "twice"
    with pytest.raises(InvalidError, match=r'reasons\[2\]: Duplicate value: "Drifted"'):
        cluster.create(body)
    assert not runtime_valid(body)
