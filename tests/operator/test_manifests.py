"""`nodewright manifests` prints what a cluster needs, from the code infra/ uses too."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.cli import main
from nodewright.cluster.kube.access import (
    WATCHED_KINDS,
    WRITES,
    permissions,
)
from nodewright.install import InstallSettings, render
from tests.support.rbac import Request, allows, request_for


def manifests(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["manifests", *argv]) == 0
    return [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind
             and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {len(found)}"
    return found[0]


def test_the_install_yaml_for_aws(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(
        capsys, "--cluster-name", "prod", "--queue", "prod-interruption",
        "--role-arn", "arn:aws:iam::123456789012:role/NodewrightController-prod",
        "--image", "registry.example/nodewright:1.2.3", "--region", "eu-west-1")
    kinds = [o["kind"] for o in objects]
    assert kinds[:5] == ["CustomResourceDefinition"] * 5  # kubectl applies CRDs first
    assert kinds[5:] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                         "ClusterRole",  # nodewright-admin, aggregated into admin
                         "Role", "RoleBinding", "Role", "RoleBinding", "Deployment",
                         "PodDisruptionBudget", "Service"]
    # The kube-dns Service, read by name in kube-system (Karpenter's chart has the same Role).
    dns = one(objects, "Role", "nodewright-dns")
    assert dns["metadata"]["namespace"] == "kube-system"
    assert dns["rules"] == [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"],
                             "resourceNames": ["kube-dns"]}]
    assert one(objects, "RoleBinding", "nodewright-dns")["metadata"]["namespace"] == "kube-system"
    account = one(objects, "ServiceAccount")
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/NodewrightController-prod"}
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "registry.example/nodewright:1.2.3"
    assert container["command"] == ["nodewright", "controller"]
    assert container["args"] == ["--cloud", "aws"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["CLUSTER_NAME"] == "prod"
    assert env["INTERRUPTION_QUEUE"] == "prod-interruption"
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["LEADER_ELECT"] == "true"
    assert (env["METRICS_PORT"], env["HEALTH_PROBE_PORT"]) == ("8080", "8081")
    assert {"POD_NAME", "POD_NAMESPACE"} <= env.keys()
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert one(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    service = one(objects, "Service")
    assert service["spec"]["ports"][0]["port"] == 8080
    for obj in objects[5:]:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding") and (
                obj["metadata"]["name"] != "nodewright-dns"):
            assert obj["metadata"]["namespace"] == "nodewright"


def test_sim_mode_runs_one_replica_with_the_kubelets_rights(
        capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(capsys, "--cluster-name", "demo", "--cloud", "sim", "--skip-crds")
    assert "CustomResourceDefinition" not in [o["kind"] for o in objects]
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"] == ["--cloud", "sim"]
    leases = one(objects, "Role", "nodewright-node-leases")
    assert leases["metadata"]["namespace"] == "kube-node-lease"
    assert leases["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                "verbs": ["get", "create", "update"]}]
    cluster_rules = one(objects, "ClusterRole", "nodewright-controller")["rules"]
    granted = {(group, resource, verb) for rule in cluster_rules for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert {("", "nodes", "create"), ("", "pods/status", "patch"),
            ("", "nodes/status", "patch")} <= granted
    aws_rules = render(InstallSettings(cluster_name="demo"), include_crds=False)
    aws_granted = {(g, r, v) for o in aws_rules if o["kind"] == "ClusterRole"
                   for rule in o["rules"] for g in rule["apiGroups"]
                   for r in rule["resources"] for v in rule["verbs"]}
    assert ("", "nodes", "create") not in aws_granted


@pytest.mark.parametrize(("argv", "named"), [
    (["--cluster-name", "bad name"], "--cluster-name"),
    (["--cluster-name", "x", "--role-arn", "role/x"], "--role-arn"),
    (["--cluster-name", "x", "--replicas", "0"], "--replicas"),
    (["--cluster-name", "x", "--namespace", "Bad_NS"], "--namespace"),
    (["--cluster-name", "x", "--cloud", "gcp"], "--cloud"),
    (["--cluster-name", "x", "--cluster-endpoint", "ftp://x"], "--cluster-endpoint"),
    (["--cluster-name", "x", "--image", ""], "--image"),
    (["--cluster-name", "x", "--image", "my image"], "--image"),
    (["--cluster-name", "x", "--region", ""], "--region"),
    (["--cluster-name", "x", "--region", "us west 2"], "--region"),
    ([], "--cluster-name"),
])
def test_a_bad_option_exits_2_naming_it(capsys: pytest.CaptureFixture[str], argv: list[str],
                                       named: str) -> None:
    with pytest.raises(SystemExit) as done:
        main(["manifests", *argv])
    assert done.value.code == 2
    assert named in capsys.readouterr().err


def test_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["manifests", "--help"])
    text = capsys.readouterr().out
    for option in ("--cluster-name", "--queue", "--role-arn", "--image", "--cloud",
                   "--namespace", "--region", "--cluster-endpoint", "--replicas",
                   "--log-level", "--skip-crds"):
        assert option in text


def test_rbac_is_rendered_from_the_adapters_access_table() -> None:
    for cloud in ("aws", "sim"):
        table = permissions(cloud)
        # Every watched kind can be listed and watched; nothing is granted twice.
        for kind in WATCHED_KINDS:
            assert allows(table, request_for("list", kind), "nodewright")
        assert len(set(table)) == len(table)
    rendered = render(InstallSettings(cluster_name="x"), include_crds=False)
    rules = [rule for o in rendered if o["kind"] in ("ClusterRole", "Role")
             for rule in o["rules"]]
    for rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
        assert "secrets" not in rule["resources"] and "configmaps" not in rule["resources"]
    # The leader Lease is the only one the controller may renew.
    assert not allows(permissions("aws"),
                      Request("update", "coordination.k8s.io", "leases", "nodewright", "other"),
                      "nodewright")
    assert not any(a.sim_only and a in permissions("aws") for a in WRITES)
    # The kube-dns Service, by name in kube-system, with `--cloud aws` only.
    kube_dns = request_for("get", "Service", name="kube-dns", namespace="kube-system")
    assert allows(permissions("aws"), kube_dns, "nodewright")
    assert not allows(permissions("sim"), kube_dns, "nodewright")
    for elsewhere in (request_for("get", "Service", name="other", namespace="kube-system"),
                      request_for("get", "Service", name="kube-dns", namespace="nodewright")):
        assert not allows(permissions("aws"), elsewhere, "nodewright")


def _plain(value: Any) -> Any:
    """Pulumi mocks report numbers as floats; the manifests have ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def test_infra_declares_the_objects_the_manifests_print() -> None:
    from tests.infra.infra_harness import run_program

    declared = {
        (r.inputs["kind"], r.inputs["metadata"]["name"]): _plain(r.inputs)
        for r in run_program("prod")
        if r.type.startswith("kubernetes:") and r.inputs.get("kind") not in (
            "CustomResourceDefinition", "NodePool", "EC2NodeClass")
    }
    printed = {(o["kind"], o["metadata"]["name"]): o
               for o in render(InstallSettings(cluster_name="nodewright-prod"),
                               include_crds=False)}
    assert declared.keys() == printed.keys()
    for kind in ("ClusterRole", "Role"):
        key = (kind, "nodewright-controller")
        assert declared[key]["rules"] == printed[key]["rules"]
    for kind in ("PodDisruptionBudget", "Service"):
        key = (kind, "nodewright-metrics" if kind == "Service" else "nodewright-controller")
        assert declared[key]["spec"] == printed[key]["spec"]
    infra_pod = declared[("Deployment", "nodewright-controller")]["spec"]["template"]["spec"]
    cli_pod = printed[("Deployment", "nodewright-controller")]["spec"]["template"]["spec"]
    (infra_container,) = infra_pod["containers"]
    (cli_container,) = cli_pod["containers"]
    for field in ("command", "args", "ports", "livenessProbe", "readinessProbe",
                  "securityContext"):
        assert infra_container[field] == cli_container[field], field
    # The stack also knows its endpoint, queue and region; the rest is the same contract.
    infra_env = {e["name"] for e in infra_container["env"]}
    assert infra_env == {e["name"] for e in cli_container["env"]} | {
        "CLUSTER_ENDPOINT", "INTERRUPTION_QUEUE", "AWS_REGION"}
    for field in ("affinity", "securityContext", "topologySpreadConstraints",
                  "terminationGracePeriodSeconds", "priorityClassName"):
        assert infra_pod[field] == cli_pod[field], field


def test_sim_yaml_says_why_it_runs_one_replica(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "--cluster-name", "demo", "--cloud", "sim", "--skip-crds"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# nodewright --cloud sim: 1 replica(s). The simulated EC2")
    assert "leader's memory" in text
    assert main(["manifests", "--cluster-name", "demo", "--skip-crds"]) == 0
    assert not capsys.readouterr().out.startswith("#")


def test_a_private_registry_image_and_a_region_reach_the_deployment(
        capsys: pytest.CaptureFixture[str]) -> None:
    image = "123456789012.dkr.ecr.us-gov-west-1.amazonaws.com/nodewright:v1.2"
    objects = manifests(capsys, "--cluster-name", "demo", "--skip-crds", "--image", image,
                        "--region", "us-gov-west-1")
    [container] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    assert {"name": "AWS_REGION", "value": "us-gov-west-1"} in container["env"]
