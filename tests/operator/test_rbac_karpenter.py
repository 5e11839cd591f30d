"""The RBAC `nodewright manifests` prints grants nothing Karpenter's chart does not.

Every (API group, resource, verb) of our ClusterRole and Roles must be one Karpenter's chart
grants, with resource names no wider than Karpenter's. The only extras are the `--cloud sim`
ones `access.py` marks `sim_only` (the controller plays kubelet for its simulated nodes),
and they must be exactly those.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.cli import main
from nodewright.cluster.kube.access import LEADER_ELECTION_LEASE, NODE_LEASE_NAMESPACE

# Karpenter's rules, from the AWS provider's chart v1.14.1 (aws/karpenter-provider-aws,
# charts/karpenter/templates/clusterrole-core.yaml, clusterrole.yaml and role.yaml; Chart.yaml
# version 1.14.1). Only the resources we could grant anything on are listed.
READ = ("get", "list", "watch")
KARPENTER_CLUSTER: dict[tuple[str, str], set[str]] = {
    ("karpenter.sh", "nodepools"): {*READ, "update", "patch"},
    ("karpenter.sh", "nodepools/status"): {*READ, "update", "patch"},
    ("karpenter.sh", "nodeclaims"): {*READ, "create", "delete", "update", "patch"},
    ("karpenter.sh", "nodeclaims/status"): {*READ, "create", "delete", "update", "patch"},
    ("karpenter.sh", "nodeoverlays"): {*READ},
    ("karpenter.sh", "nodeoverlays/status"): {*READ, "update", "patch"},
    ("autoscaling.x-k8s.io", "capacitybuffers"): {*READ},
    ("autoscaling.x-k8s.io", "capacitybuffers/status"): {*READ, "update", "patch"},
    ("", "podtemplates"): {*READ},
    ("apps", "deployments"): {*READ},
    ("apps", "replicasets"): {*READ},
    ("apps", "statefulsets"): {*READ},
    ("karpenter.k8s.aws", "ec2nodeclasses"): {*READ, "update", "patch"},
    ("karpenter.k8s.aws", "ec2nodeclasses/status"): {"update", "patch"},
    ("", "pods"): {*READ, "delete"},
    ("", "pods/eviction"): {"create"},
    ("", "nodes"): {*READ, "update", "patch", "delete"},
    ("", "namespaces"): {*READ},
    ("", "events"): {*READ, "create", "patch"},
    ("apps", "daemonsets"): {*READ},
    ("policy", "poddisruptionbudgets"): {*READ},
    ("", "persistentvolumes"): {*READ},
    ("", "persistentvolumeclaims"): {*READ},
    ("storage.k8s.io", "storageclasses"): {*READ},
    ("storage.k8s.io", "csinodes"): {*READ},
    ("storage.k8s.io", "volumeattachments"): {*READ},
}
# role.yaml, in the release namespace: leases read by any name, renewed only by the leader
# election's name ("Cannot specify resourceNames on create").
KARPENTER_LEADER_LEASE = "karpenter-leader-election"
KARPENTER_NAMESPACE: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("coordination.k8s.io", "leases"): {
        "get": (), "watch": (), "create": (),
        "patch": (KARPENTER_LEADER_LEASE,), "update": (KARPENTER_LEADER_LEASE,),
    },
}
# role.yaml, in kube-system: the kube-dns Service, by name.
KARPENTER_KUBE_SYSTEM: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("", "services"): {"get": ("kube-dns",)},
}
# Karpenter writes Events with client-go's core/v1 recorder; we write the same objects
# through events.k8s.io/v1 (one resource served by both groups), with the same verbs.
SAME_RESOURCE = {("events.k8s.io", "events"): ("", "events")}
# What only `--cloud sim` adds: registering simulated nodes, their status and heartbeat
# Leases, and the status of the pods on them.
SIM_ONLY = {
    ("cluster", "", "nodes", "create"),
    ("cluster", "", "nodes/status", "update"),
    ("cluster", "", "nodes/status", "patch"),
    ("cluster", "", "pods/status", "update"),
    ("cluster", "", "pods/status", "patch"),
    (NODE_LEASE_NAMESPACE, "coordination.k8s.io", "leases", "get"),
    (NODE_LEASE_NAMESPACE, "coordination.k8s.io", "leases", "create"),
    (NODE_LEASE_NAMESPACE, "coordination.k8s.io", "leases", "update"),
}

Grant = tuple[str, str, str, str, tuple[str, ...]]  # where, group, resource, verb, names


def grants(capsys: pytest.CaptureFixture[str], cloud: str) -> set[Grant]:
    argv = ["manifests", "--cluster-name", "x", "--cloud", cloud, "--skip-crds"]
    if cloud == "aws":
        argv += ["--region", "eu-west-1"]
    assert main(argv) == 0
    docs: list[dict[str, Any]] = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    found: set[Grant] = set()
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        if doc["metadata"]["name"] == "nodewright-admin":
            continue  # bound to nobody, aggregated into `admin` (test_admin_role_karpenter.py)
        namespace = doc["metadata"].get("namespace")
        where = "cluster" if doc["kind"] == "ClusterRole" else (
            namespace if namespace in (NODE_LEASE_NAMESPACE, "kube-system") else "own")
        for rule in doc["rules"]:
            names = tuple(rule.get("resourceNames", ()))
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        found.add((where, group, resource, verb, names))
    return found


def karpenter_grants(grant: Grant) -> bool:
    where, group, resource, verb, names = grant
    group, resource = SAME_RESOURCE.get((group, resource), (group, resource))
    if where == "cluster":
        return verb in KARPENTER_CLUSTER.get((group, resource), set())
    if where == "own":
        karpenter_names = KARPENTER_NAMESPACE.get((group, resource), {}).get(verb)
        if karpenter_names is None:
            return False
        # No names means any; Karpenter renews only its leader Lease, we only ours.
        return not karpenter_names or names == (LEADER_ELECTION_LEASE,)
    if where == "kube-system":
        return names == KARPENTER_KUBE_SYSTEM.get((group, resource), {}).get(verb)
    return False  # Karpenter has no Role in kube-node-lease


@pytest.mark.parametrize("cloud", ["aws", "sim"])
def test_every_grant_is_one_karpenters_chart_makes_but_the_sim_only_ones(
        capsys: pytest.CaptureFixture[str], cloud: str) -> None:
    ours = grants(capsys, cloud)
    beyond = {g for g in ours if not karpenter_grants(g)}
    extras = {(where, group, resource, verb) for where, group, resource, verb, _ in beyond}
    assert extras == (SIM_ONLY if cloud == "sim" else set()), sorted(extras)


def test_the_leader_lease_is_renewed_by_name_only(capsys: pytest.CaptureFixture[str]) -> None:
    leases = {g for g in grants(capsys, "aws") if g[2] == "leases"}
    assert leases == {
        ("own", "coordination.k8s.io", "leases", "get", (LEADER_ELECTION_LEASE,)),
        ("own", "coordination.k8s.io", "leases", "update", (LEADER_ELECTION_LEASE,)),
        ("own", "coordination.k8s.io", "leases", "create", ()),
    }


def test_the_comparison_refuses_what_karpenter_does_not_grant() -> None:
    assert not karpenter_grants(("cluster", "", "secrets", "get", ()))
    assert not karpenter_grants(("cluster", "", "nodes", "create", ()))
    assert not karpenter_grants(("cluster", "karpenter.k8s.aws", "ec2nodeclasses", "create",
                                 ()))
    assert not karpenter_grants(("own", "coordination.k8s.io", "leases", "update", ()))
    assert not karpenter_grants(("own", "coordination.k8s.io", "leases", "delete", ()))
    assert karpenter_grants(("cluster", "events.k8s.io", "events", "create", ()))


def test_the_kube_dns_service_is_read_by_name_with_aws_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    dns = ("kube-system", "", "services", "get", ("kube-dns",))
    assert dns in grants(capsys, "aws") and karpenter_grants(dns)
    assert not any(g[0] == "kube-system" for g in grants(capsys, "sim"))
    assert not karpenter_grants(("kube-system", "", "services", "get", ()))
