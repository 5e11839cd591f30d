"""The in-memory cluster refuses what the real API server refuses: the same good and bad
objects go to the real Kubernetes (1.26 or 1.33, with Nodewright's CRDs installed, written
as the cluster admin through the same ClusterAPI adapter the controller uses) and to an
in-memory cluster emulating that same version, and both accept or refuse each one, in the
same words where the server's words do not depend on the order it happened to check
things in. The versions differ in those words: on 1.33 a bad enum value in a CRD with CEL
rules also says that some rules were not checked."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from lightkube import ApiError as LightkubeApiError

from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError
from nodewright.cluster.kube.cluster import KubeCluster, connect
from nodewright.cluster.kube.errors import translate
from nodewright.cluster.kube.resources import resource_class, to_object
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.e2e.harness import ControlPlane, Installation

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
EVENT_TIME = "2026-01-05T00:00:00.000000Z"


def claim(name: str, *requirements: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": REF, "requirements": list(requirements), **spec}}


def nodeclass(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                     "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                     "securityGroupSelectorTerms": [{"tags": {"a": "b"}}], **spec}}


def event(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default", **metadata},
            "eventTime": EVENT_TIME, "reportingController": "karpenter",
            "reportingInstance": "karpenter-parity", "action": "Launched",
            "reason": "Launched", "type": "Normal", "note": "parity",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "inflate",
                          "namespace": "default"}}


@dataclass
class Case:
    what: str
    obj: dict[str, Any]
    accepted: bool
    same_words: bool = True  # one error: the server's message is deterministic
    stored: dict[str, Any] = field(default_factory=dict)  # top-level fields expected back


REQUIREMENT = {"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "In", "values": ["default"]}
CASES = [
    Case("a valid NodeClaim, as the controller writes it", claim("parity-valid", REQUIREMENT),
         accepted=True),
    Case("a NodeClaim requiring a restricted label",
         claim("parity-restricted", {"key": "karpenter.sh/team", "operator": "In",
                                     "values": ["a"]}), accepted=False),
    Case("unknown fields, pruned on the way in",
         {**claim("parity-unknown", REQUIREMENT, bogus=1), "extra": {"a": 1}}, accepted=True,
         stored={"spec": {"nodeClassRef": REF, "requirements": [REQUIREMENT],
                          "expireAfter": "720h"}}),
    Case("a bad enum value",
         {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
          "metadata": {"name": "parity-enum"},
          "spec": {"disruption": {"consolidationPolicy": "Sometimes"},
                   "template": {"spec": {"nodeClassRef": REF, "requirements": []}}}},
         accepted=False),
    Case("a CEL rule across fields (role and instanceProfile)",
         {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
          "metadata": {"name": "parity-cel"},
          "spec": {"role": "r", "instanceProfile": "p", "amiSelectorTerms": [
              {"alias": "al2023@latest"}], "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                   "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}},
         accepted=False),
    Case("kubelet fields outside Karpenter v1.14.1's typed struct, pruned on the way in",
         nodeclass("parity-kubelet", kubelet={
             "cpuManagerPolicy": "static", "shutdownGracePeriod": "45s",
             "evictionSoft": {"memory.available": "5%"},
             "evictionSoftGracePeriod": {"memory.available": "1m"}, "maxPods": 58}),
         accepted=True,
         stored={"spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                          "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                          "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
                          "kubelet": {"evictionSoft": {"memory.available": "5%"},
                                      "evictionSoftGracePeriod": {"memory.available": "1m"},
                                      "maxPods": 58},
                          "metadataOptions": {"httpEndpoint": "enabled",
                                              "httpProtocolIPv6": "disabled",
                                              "httpPutResponseHopLimit": 1,
                                              "httpTokens": "required"}}}),
    Case("a kubeReserved key outside the list (a CEL rule on a map)",
         nodeclass("parity-reserved", kubelet={"kubeReserved": {"pods": "2"}}),
         accepted=False),
    Case("a soft eviction threshold without its grace period",
         nodeclass("parity-soft", kubelet={"evictionSoft": {"memory.available": "5%"}}),
         accepted=False),
    Case("EFA-only interfaces beside the primary (Karpenter v1.14's networkInterfaces)",
         nodeclass("parity-interfaces", networkInterfaces=[
             {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
             {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}]),
         accepted=True),
    Case("network interfaces without a primary",
         nodeclass("parity-no-primary", networkInterfaces=[
             {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}]),
         accepted=False),
    Case("two EFA-only interfaces on one network card",
         nodeclass("parity-two-efa", networkInterfaces=[
             {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
             {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
             {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}]),
         accepted=False),
    Case("a placement group by name", nodeclass("parity-pg", placementGroupSelector={
        "name": "training"}), accepted=True),
    Case("a placement group by name and id",
         nodeclass("parity-pg-both", placementGroupSelector={"name": "t", "id": "pg-0123abc"}),
         accepted=False),
    Case("a CEL rule that cannot be evaluated",
         claim("parity-int", {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt",
                              "values": ["many"]}), accepted=False),
    Case("a missing required field blocks the CEL rules",
         {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
          "metadata": {"name": "parity-required"},
          "spec": {"requirements": [{"key": "karpenter.sh/team", "operator": "In",
                                     "values": ["a"]}]}}, accepted=False),
    Case("an Event as client-go names it", event("inflate.187b2a3c4d5e6f70"), accepted=True),
    Case("an Event with a generateName ending in a dot",
         {**event(""), "metadata": {"generateName": "inflate-abc.", "namespace": "default"}},
         accepted=False, same_words=False),  # the generated suffix differs
    Case("an Event without its events.k8s.io fields",
         {"apiVersion": "events.k8s.io/v1", "kind": "Event",
          "metadata": {"name": "parity-bare", "namespace": "default"}}, accepted=False),
    Case("a Node with one taint twice",
         {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "parity-taints"},
          "spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                              {"key": "a", "value": "x", "effect": "NoSchedule"}]}},
         accepted=False),
    Case("bad label and finalizer syntax",
         {"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": "parity-labels", "labels": {"team": "-x-"},
                       "finalizers": ["noslash"]}}, accepted=False, same_words=False),
    Case("a Lease that never expires",
         {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
          "metadata": {"name": "parity-lease", "namespace": "default"},
          "spec": {"holderIdentity": "x", "leaseDurationSeconds": 0}}, accepted=False),
]


@dataclass
class Outcome:
    accepted: bool
    message: str
    stored: dict[str, Any]


def send(cluster: ClusterAPI, obj: dict[str, Any]) -> Outcome:
    try:
        if isinstance(cluster, KubeCluster):
            created = create_as_sent(cluster, copy.deepcopy(obj))
        else:
            created = cluster.create(copy.deepcopy(obj))
    except ApiError as error:
        return Outcome(False, f"{error.status} {error.message}", {})
    return Outcome(True, "", created)


def create_as_sent(cluster: KubeCluster, obj: dict[str, Any]) -> dict[str, Any]:
    """A create with the object exactly as given (`KubeCluster.create` names a
    generateName itself, so the server would never see the prefix)."""
    kind = str(obj["kind"])
    try:
        created = cluster.client.create(resource_class(kind)(obj),
                                        namespace=obj["metadata"].get("namespace"))
    except LightkubeApiError as error:
        raise translate(error) from error
    return to_object(kind, created)


@pytest.fixture
def real(control_plane: ControlPlane, installation: Installation) -> Iterator[KubeCluster]:
    cluster = KubeCluster(connect(str(control_plane.kubeconfig)), cached_kinds=())
    forget_cases(cluster)  # what an interrupted run left (Events outlive the clean-up)
    yield cluster
    forget_cases(cluster)
    cluster.close()


def forget_cases(cluster: KubeCluster) -> None:
    for case in CASES:
        meta = case.obj["metadata"]
        if meta.get("name"):
            with contextlib.suppress(NotFoundError):
                cluster.delete(case.obj["kind"], meta["name"], meta.get("namespace"))


def test_the_in_memory_cluster_accepts_and_refuses_what_the_api_server_does(
        real: KubeCluster, control_plane: ControlPlane) -> None:
    version = control_plane.version
    memory = InMemoryCluster(VirtualClock(), kubernetes_version=version)
    assert memory.kubernetes_version.name == version
    mismatches = []
    for case in CASES:
        there, here = send(real, case.obj), send(memory, case.obj)
        assert there.accepted == case.accepted, (
            f"{case.what}: the API server {'refused' if case.accepted else 'accepted'} it: "
            f"{there.message}")
        if here.accepted != there.accepted:
            mismatches.append(f"{case.what}: the API server said {there.message or 'yes'}, "
                              f"in memory {here.message or 'yes'}")
            continue
        if not there.accepted:
            assert here.message.startswith("422 ") and there.message.startswith("422 "), (
                case.what, there.message, here.message)
            if case.same_words:
                assert here.message == there.message, case.what
        for key, expected in case.stored.items():
            assert there.stored.get(key) == expected, (case.what, "server", there.stored)
            assert here.stored.get(key) == expected, (case.what, "memory", here.stored)
        if there.accepted:
            # Pruned and defaulted alike (the server also writes nulls for unset fields).
            assert here.stored.get("spec") == there.stored.get("spec"), case.what
    assert not mismatches, "\n".join(mismatches)
