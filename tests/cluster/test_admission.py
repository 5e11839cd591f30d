"""The in-memory cluster refuses what the API server refuses, in the server's words: the
CRDs' schemas and CEL rules, ObjectMeta, and the built-in kinds controllers write."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.api.labels import restricted_label_problem
from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.admission.structural import MISSING, Admission, compile_schema
from nodewright.runtime.clock import VirtualClock

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
EVENT_TIME = "2026-01-05T00:00:00.000000Z"


def claim(name: str = "c", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"nodeClassRef": REF, "requirements": [], **spec}}


def requirement(key: str, operator: str = "In", *values: str, **extra: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values or ["x"]), **extra}


def pool(name: str = "p", **template_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"nodeClassRef": REF, "requirements": [],
                                           **template_spec}}}}


def event(name: str = "web.1", **fields: Any) -> dict[str, Any]:
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"}, "eventTime": EVENT_TIME,
            "reportingController": "karpenter", "reportingInstance": "karpenter-1",
            "action": "Launched", "reason": "Launched", "type": "Normal", "note": "hello",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web",
                          "namespace": "default"}}
    body.update(fields)
    return body


def node(name: str = "n1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def refused(cluster: InMemoryCluster, obj: dict[str, Any]) -> str:
    before = cluster.resource_version
    with pytest.raises(InvalidError) as caught:
        cluster.create(obj)
    assert caught.value.status == 422
    assert cluster.resource_version == before, "a refused write stores nothing"
    return caught.value.message


# -- custom resources: the CRD's schema ------------------------------------------------------


def test_a_restricted_requirement_label_is_refused_by_the_crd_rule(
        cluster: InMemoryCluster) -> None:
    message = refused(cluster, claim(requirements=[requirement("karpenter.sh/team")]))
    assert message == ('NodeClaim.karpenter.sh "c" is invalid: spec.requirements[0]: Invalid '
                       'value: "object": label domain "karpenter.sh" is restricted')


def test_the_well_known_aws_labels_the_controller_writes_are_accepted(
        cluster: InMemoryCluster) -> None:
    created = cluster.create(claim(requirements=[
        requirement("karpenter.k8s.aws/ec2nodeclass", "In", "default"),
        requirement("karpenter.sh/nodepool", "In", "default"),
        requirement("karpenter.k8s.aws/instance-cpu", "Gt", "3")]))
    assert len(created["spec"]["requirements"]) == 3


UNSUPPORTED_OPERATOR = (
    'spec.requirements[0].operator: Unsupported value: "Bogus": supported values: '
    '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"')


def test_an_unsupported_enum_value_names_the_supported_ones_and_blocks_cel_rules_on_1_33(
        cluster: InMemoryCluster) -> None:
    assert cluster.kubernetes_version.name == "v1.33.3"  # the newest, unless named
    message = refused(cluster, claim(requirements=[requirement("a", "Bogus")]))
    assert message == (
        f'NodeClaim.karpenter.sh "c" is invalid: [{UNSUPPORTED_OPERATOR}, <nil>: Invalid '
        'value: "null": some validation rules were not checked because the object was '
        "invalid; correct the existing errors to complete validation]")


def test_on_1_26_an_enum_violation_does_not_keep_the_cel_rules_from_being_evaluated() -> None:
    cluster = InMemoryCluster(VirtualClock(), kubernetes_version="v1.26.1")
    message = refused(cluster, claim(requirements=[requirement("a", "Bogus")]))
    assert UNSUPPORTED_OPERATOR in message
    assert ('spec.requirements[0]: Invalid value: "object": operator must be one of In, '
            "NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte") in message
    assert "not checked" not in message


def test_a_bad_enum_value_alone_reads_as_each_version_answers_it() -> None:
    """The case the real API servers were seen to differ on (tests/e2e/test_api_parity)."""
    bad = pool("e")
    bad["spec"]["disruption"] = {"consolidationPolicy": "Sometimes"}
    unsupported = ('spec.disruption.consolidationPolicy: Unsupported value: "Sometimes": '
                   'supported values: "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"')
    old = refused(InMemoryCluster(VirtualClock(), kubernetes_version="1.26"), copy.deepcopy(bad))
    new = refused(InMemoryCluster(VirtualClock(), kubernetes_version="v1.33"), bad)
    assert old == f'NodePool.karpenter.sh "e" is invalid: {unsupported}'
    assert new == (f'NodePool.karpenter.sh "e" is invalid: [{unsupported}, <nil>: Invalid '
                   'value: "null": some validation rules were not checked because the object '
                   "was invalid; correct the existing errors to complete validation]")


def test_a_version_it_does_not_emulate_is_named_in_the_refusal() -> None:
    with pytest.raises(ValueError,
                       match=r"emulates Kubernetes v1\.26\.1, v1\.33\.3, not .1\.20."):
        InMemoryCluster(VirtualClock(), kubernetes_version="1.20")


def test_required_fields_and_wrong_types_block_the_cel_rules(cluster: InMemoryCluster) -> None:
    bad = claim(requirements=[requirement("karpenter.sh/team")])
    del bad["spec"]["nodeClassRef"]
    message = refused(cluster, bad)
    assert message == (
        'NodeClaim.karpenter.sh "c" is invalid: [spec.nodeClassRef: Required value, <nil>: '
        'Invalid value: "null": some validation rules were not checked because the object '
        "was invalid; correct the existing errors to complete validation]")
    message = refused(cluster, {**pool(), "spec": {**pool()["spec"], "weight": "heavy"}})
    assert ('spec.weight: Invalid value: "string": spec.weight in body must be of type '
            'integer: "string"') in message


def test_patterns_bounds_and_lengths_are_checked(cluster: InMemoryCluster) -> None:
    message = refused(cluster, claim(requirements=[
        requirement("Bad Key!"), requirement("a", "In", "x" * 64, minValues=0)]))
    assert ("spec.requirements[0].key: Invalid value: \"Bad Key!\": spec.requirements[0].key "
            "in body should match '^([a-z0-9]") in message
    assert "spec.requirements[1].values[0]: Too long: may not be longer than 63" in message
    assert ("spec.requirements[1].minValues: Invalid value: 0: spec.requirements[1].minValues "
            "in body should be greater than or equal to 1") in message
    message = refused(cluster, {**pool(), "spec": {**pool()["spec"], "weight": 200}})
    assert ("spec.weight: Invalid value: 200: spec.weight in body should be less than or equal "
            "to 100") in message
    message = refused(cluster, claim(nodeClassRef={**REF, "group": ""}))
    assert ('spec.nodeClassRef.group: Invalid value: "": spec.nodeClassRef.group in body '
            "should be at least 1 chars long") in message


def test_a_rule_that_cannot_be_evaluated_says_why(cluster: InMemoryCluster) -> None:
    message = refused(cluster, claim(requirements=[
        requirement("karpenter.k8s.aws/instance-cpu", "Gt", "abc")]))
    assert message == (
        'NodeClaim.karpenter.sh "c" is invalid: spec.requirements[0]: Invalid value: "object": '
        "type conversion error from 'string' to 'int' evaluating rule: requirements operator "
        "'Gt', 'Lt', 'Gte' or 'Lte' must have a single non-negative integer value")


def test_rules_across_fields_of_a_node_class(cluster: InMemoryCluster) -> None:
    nodeclass = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                 "metadata": {"name": "x"},
                 "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"},
                                                            {"id": "ami-1"}],
                          "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                          "securityGroupSelectorTerms": [{"tags": {"a": ""}}],
                          "kubelet": {"evictionSoft": {"memory.available": "5%"}}}}
    message = refused(cluster, nodeclass)
    assert ("spec: Invalid value: \"object\": 'alias' is mutually exclusive, cannot be set with "
            "a combination of other amiSelectorTerms") in message
    assert ('spec.securityGroupSelectorTerms[0]: Invalid value: "object": empty tag keys or '
            "values aren't supported") in message
    assert ('spec.kubelet: Invalid value: "object": no such key: evictionSoftGracePeriod '
            "evaluating rule: evictionSoft OwnerKey does not have a matching "
            "evictionSoftGracePeriod") in message


def test_unknown_fields_are_pruned_and_defaults_filled_in(cluster: InMemoryCluster) -> None:
    created = cluster.create({**claim(bogus=1), "extra": {"a": 1}})
    assert "bogus" not in created["spec"] and "extra" not in created
    assert created["spec"]["expireAfter"] == "720h"
    stored = cluster.create(pool())
    assert stored["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert stored["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]
    patched = cluster.patch("NodeClaim", "c", {"status": {"providerID": "aws:///a/i-1",
                                                          "bogus": True}}, subresource="status")
    assert patched["status"] == {"providerID": "aws:///a/i-1"}


def test_a_custom_resource_is_created_without_status(cluster: InMemoryCluster) -> None:
    created = cluster.create({**claim(), "status": {"providerID": "aws:///a/i-1"}})
    assert "status" not in created


def test_an_update_is_checked_too_and_leaves_the_stored_object_alone(
        cluster: InMemoryCluster) -> None:
    cluster.create(claim())
    stored = cluster.get("NodeClaim", "c")
    stored["spec"]["requirements"] = [requirement("kubernetes.io/hostname")]
    with pytest.raises(InvalidError, match=r'label "kubernetes\.io/hostname" is restricted'):
        cluster.update(stored)
    assert cluster.get("NodeClaim", "c")["spec"]["requirements"] == []
    cluster.create(pool())
    with pytest.raises(InvalidError, match=r"spec\.weight in body should be less than"):
        cluster.patch("NodePool", "p", {"spec": {"weight": 101}})


def test_transition_rules_see_the_old_value() -> None:
    schema = compile_schema({"type": "object", "properties": {"size": {
        "type": "integer", "x-kubernetes-validations": [
            {"rule": "self >= oldSelf", "message": "size may only grow"}]}}})
    first = Admission()
    first.visit(schema, {"size": 3}, MISSING, "spec")
    assert first.finish() == [], "no transition rule on create"
    shrink = Admission()
    shrink.visit(schema, {"size": 2}, {"size": 3}, "spec")
    assert [str(e) for e in shrink.finish()] == [
        'spec.size: Invalid value: "integer": size may only grow']
    same = Admission()
    same.visit(schema, {"size": 3}, {"size": 3}, "spec")
    assert same.finish() == []


def test_preserved_unknown_fields_are_kept() -> None:
    schema = compile_schema({"type": "object", "properties": {
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "closed": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    admission = Admission()
    value = {"open": {"x": {"y": 1}}, "closed": {"a": "1", "b": 2}}
    assert admission.visit(schema, value, MISSING, "spec") == {
        "open": {"x": {"y": 1}}, "closed": {"a": "1"}}
    assert value["closed"] == {"a": "1", "b": 2}, "the caller's value is not modified"


KEY_NAMES = st.sampled_from(["team", "nodepool", "capacity-type", "instance-cpu", "ec2nodeclass",
                             "zone", "arch", "hostname", "instance-type", "x"])
KEY_DOMAINS = st.sampled_from(["", "karpenter.sh", "karpenter.k8s.aws", "kubernetes.io",
                               "node.kubernetes.io", "topology.kubernetes.io", "k8s.io",
                               "kops.k8s.io", "example.com", "team.karpenter.sh",
                               "node-restriction.kubernetes.io", "beta.kubernetes.io"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(domain=KEY_DOMAINS, name=KEY_NAMES)
def test_the_crd_rules_agree_with_the_python_label_rules(domain: str, name: str) -> None:
    key = f"{domain}/{name}" if domain else name
    cluster = InMemoryCluster(VirtualClock())
    problem = restricted_label_problem(key, allow_nodepool=True)
    obj = claim(requirements=[requirement(key)])
    if problem is None:
        cluster.create(obj)
    else:
        assert problem in refused(cluster, obj)


# -- ObjectMeta, every kind ------------------------------------------------------------------


def test_a_generate_name_ending_in_a_dot_is_refused(cluster: InMemoryCluster) -> None:
    bad = event(name="")
    bad["metadata"] = {"generateName": "inflate-abc.", "namespace": "default"}
    message = refused(cluster, bad)
    assert message.startswith('Event "inflate-abc.')
    assert ('is invalid: metadata.generateName: Invalid value: "inflate-abc.": a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
            "([-a-z0-9]*[a-z0-9])?)*')") in message


def test_a_generate_name_ending_in_a_dash_is_a_prefix(cluster: InMemoryCluster) -> None:
    created = cluster.create({**claim(), "metadata": {"generateName": "default-"}})
    assert created["metadata"]["name"].startswith("default-")
    message = refused(cluster, {**claim(), "metadata": {"generateName": "-bad-"}})
    assert "metadata.generateName: Invalid value: \"-bad-\"" in message
    assert "metadata.name: Invalid value: \"-bad-" in message


@given(prefix=st.text(alphabet="ab.-_A1", min_size=1, max_size=12))
@settings(max_examples=80, deadline=None)
def test_a_prefix_is_accepted_when_it_is_a_subdomain_once_a_trailing_dash_is_masked(
        prefix: str) -> None:
    import re

    masked = prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    subdomain = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    generated_ok = re.fullmatch(subdomain, prefix + "bcdfg") is not None
    cluster = InMemoryCluster(VirtualClock())
    obj = {**claim(), "metadata": {"generateName": prefix}}
    if re.fullmatch(subdomain, masked) and generated_ok:
        cluster.create(obj)
    else:
        refused(cluster, obj)


def test_label_annotation_and_finalizer_syntax(cluster: InMemoryCluster) -> None:
    bad = node("Bad_Name")
    bad["metadata"].update(labels={"a/b/c": "x", "ok": "bad value!"},
                           annotations={"Bad Key": "v"}, finalizers=["noslash"])
    message = refused(cluster, bad)
    assert message.startswith('Node "Bad_Name" is invalid: [metadata.name: Invalid value: '
                              '"Bad_Name": a lowercase RFC 1123 subdomain')
    assert ("metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of "
            "alphanumeric characters") in message
    assert ("metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty "
            "string") in message
    assert "metadata.annotations: Invalid value: \"Bad Key\": name part must consist" in message
    assert ('metadata.finalizers[0]: Invalid value: "noslash": name is neither a standard '
            "finalizer name nor is it fully qualified") in message
    # Custom resources only need qualified names.
    cluster.create({**claim(), "metadata": {"name": "c", "finalizers": ["noslash"]}})


def test_metadata_is_checked_on_updates(cluster: InMemoryCluster) -> None:
    cluster.create(node())
    with pytest.raises(InvalidError, match=r'metadata.labels: Invalid value: "-x-"'):
        cluster.patch("Node", "n1", {"metadata": {"labels": {"team": "-x-"}}})


# -- built-in kinds --------------------------------------------------------------------------


def test_an_event_needs_what_events_k8s_io_requires(cluster: InMemoryCluster) -> None:
    cluster.create(event())
    bare = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"}}
    assert refused(cluster, bare) == (
        'Event "e1" is invalid: [eventTime: Required value, type: Invalid value: "": has '
        "invalid value: ]")
    message = refused(cluster, event(name="e2", type="Info", note="x" * 1025,
                                      series={"count": 1}))
    assert message == (
        'Event "e2" is invalid: [message: Invalid value: "": can have at most 1024 characters, '
        'series.count: Invalid value: "": should be at least 2, series.lastObservedTime: '
        'Required value, type: Invalid value: "": has invalid value: Info]')
    message = refused(cluster, event(name="e3", reportingController="", action=""))
    assert "reportingController: Required value" in message
    assert "action: Required value" in message


def test_an_event_may_only_grow_its_series(cluster: InMemoryCluster) -> None:
    cluster.create(event())
    cluster.patch("Event", "web.1", {"series": {"count": 2, "lastObservedTime": EVENT_TIME}},
                  "default")
    with pytest.raises(InvalidError, match=r'reason: Invalid value: "Other": field is immutable'):
        cluster.patch("Event", "web.1", {"reason": "Other"}, "default")


def test_a_lease_needs_a_positive_duration(cluster: InMemoryCluster) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l1", "namespace": "default"},
             "spec": {"holderIdentity": "x", "leaseDurationSeconds": 0, "leaseTransitions": -1}}
    assert refused(cluster, lease) == (
        'Lease.coordination.k8s.io "l1" is invalid: [spec.leaseDurationSeconds: Invalid value: '
        "0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater "
        "than or equal to 0]")


def test_node_taints_and_provider_id(cluster: InMemoryCluster) -> None:
    message = refused(cluster, node(taints=[
        {"key": "a", "effect": "Bogus"}, {"key": "b", "effect": "NoSchedule"},
        {"key": "b", "value": "x", "effect": "NoSchedule"}]))
    assert message == (
        'Node "n1" is invalid: [metadata.taints[0].effect: Unsupported value: "Bogus": '
        'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute", metadata.taints[2]: '
        'Duplicate value: core.Taint{Key:"b", Value:"x", Effect:"NoSchedule", '
        "TimeAdded:<nil>}: taints must be unique by key and effect pair]")
    cluster.create(node())
    cluster.patch("Node", "n1", {"spec": {"providerID": "aws:///a/i-1"}})
    with pytest.raises(InvalidError, match=(
            r'spec.providerID: Forbidden: node updates may not change providerID except from '
            r'"" to valid')):
        cluster.patch("Node", "n1", {"spec": {"providerID": "aws:///a/i-2"}})


def test_pod_status_writes_are_checked(cluster: InMemoryCluster) -> None:
    cluster.create({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "default"},
                    "spec": {"containers": [{"name": "c", "image": "c"}]}})
    with pytest.raises(InvalidError, match=r'status.nominatedNodeName: Invalid value: "Not_A_N'):
        cluster.patch("Pod", "p", {"status": {"nominatedNodeName": "Not_A_Node"}}, "default",
                      subresource="status")
    with pytest.raises(InvalidError, match=r"conditions\[0\].Type: Invalid value: \"bad type\""):
        cluster.patch("Pod", "p", {"status": {"conditions": [
            {"type": "bad type", "status": "True"}]}}, "default", subresource="status")


def test_the_in_memory_event_writers_write_valid_events(cluster: InMemoryCluster) -> None:
    from nodewright.cluster.memory.events import EventRecorder

    recorder = EventRecorder(cluster, "default-scheduler")
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"containers": [{"name": "c", "image": "c"}]}})
    recorder.record(pod, "FailedScheduling", "no nodes")
    other = EventRecorder(cluster, "kubelet")
    other.record(pod, "Started", "started")  # the same instant: another name
    recorder.record(pod, "FailedScheduling", "no nodes")  # a series
    events = cluster.list("Event", "default")
    assert len(events) == 2
    assert all(e["metadata"]["name"].startswith("web.") for e in events)
    assert {e["reason"]: e.get("series", {}).get("count") for e in events} == {
        "FailedScheduling": 2, "Started": None}


def test_a_copy_of_a_refused_object_is_not_modified(cluster: InMemoryCluster) -> None:
    obj = claim(requirements=[requirement("karpenter.sh/team")], bogus=1)
    before = copy.deepcopy(obj)
    refused(cluster, obj)
    assert obj == before


# -- the CEL verdicts' memory ----------------------------------------------------------------


def test_a_rule_is_remembered_by_the_fields_of_self_it_reads() -> None:
    from nodewright.cluster.memory.admission.cel import fields_read

    assert fields_read("self.key != 'x'") == ("key",)
    assert fields_read("has(self.id) ? !(has(self.tags) || has(self.name)) : true") == (
        "id", "name", "tags")
    assert fields_read("self.tags.all(k, self.tags[k] != '')") == ("tags",)
    assert fields_read("self.all(x, x != 'a')") is None, "a method of self reads all of it"
    assert fields_read("self >= oldSelf") is None


def test_verdicts_kept_on_disk_are_used_by_the_next_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nodewright.cluster.memory.admission import cel

    monkeypatch.setenv("NODEWRIGHT_CACHE_DIR", str(tmp_path))
    first = cel._VerdictCache()
    memo = first.memo("self.size() > 1", "too short")
    first.remember(memo, cel.freeze("a"), "too short")
    first.save()
    second = cel._VerdictCache()
    assert second.memo("self.size() > 1", "too short") == {cel.freeze("a"): "too short"}
    assert second.memo("another rule", "") == {}
    # The same rule text with another message is another rule (its failure says otherwise).
    assert second.memo("self.size() > 1", "needs two") == {}


def test_a_long_generate_name_is_cut_as_the_server_cuts_it(cluster: InMemoryCluster) -> None:
    prefix = "a" * 70 + "-"
    created = cluster.create({**claim(), "metadata": {"generateName": prefix}})
    assert created["metadata"]["name"].startswith("a" * 58)
    assert len(created["metadata"]["name"]) == 63


def test_a_transition_rule_is_evaluated_once_per_new_and_old_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A NodeClaim's status updates send its immutable spec again and again: the verdict of
    `self == oldSelf` depends on both values only, so it is worked out once per pair, and a
    different old value is a different question."""
    from nodewright.cluster.memory.admission import celpy_runtime

    evaluated: list[tuple[Any, Any]] = []
    real = celpy_runtime.evaluate

    def counting(text: str, message: str, value: Any, old: Any = None, *,
                 has_old: bool = False) -> str | None:
        evaluated.append((value, old))
        return real(text, message, value, old, has_old=has_old)

    monkeypatch.setattr(celpy_runtime, "evaluate", counting)
    schema = compile_schema({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                      "message": "spec is immutable"}]}}})

    def update(new: int, old: int) -> list[str]:
        admission = Admission()
        admission.visit(schema, {"spec": {"size": new}}, {"spec": {"size": old}}, "")
        return [str(e) for e in admission.finish()]

    for _ in range(3):
        assert update(4, 4) == []
    assert len(evaluated) == 1, "the same spec against the same stored spec: one evaluation"
    assert update(4, 5) == ['spec: Invalid value: "object": spec is immutable']
    assert update(5, 5) == []
    assert len(evaluated) == 3


def test_a_part_left_as_stored_is_answered_as_a_fresh_check_answers_it() -> None:
    """A status patch keeps the stored spec object itself: its verdicts are remembered by
    that object, and they are the ones a check of an equal copy works out afresh."""
    from nodewright.cluster.memory.admission.cel import RuleSet

    rules = [{"rule": "self.size >= oldSelf.size", "message": "size may only grow"},
             {"rule": "self.size < 10", "message": "size must stay below 10"}]
    for size in (3, 12):
        stored = {"size": size}
        remembered = RuleSet(rules)
        for _ in range(2):
            kept = remembered.check(stored, stored, has_old=True)
            assert kept == RuleSet(rules).check(copy.deepcopy(stored), copy.deepcopy(stored),
                                                has_old=True)
        assert [v.detail for v in kept] == ([] if size < 10 else ["size must stay below 10"])
