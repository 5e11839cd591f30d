"""`nodewright snapshot` read from the in-memory cluster of a simulation (the same
ClusterAPI as the real API server's): what it writes, what it never reads or writes, and
that simulating the snapshot predicts what the controllers then do to that cluster."""

from __future__ import annotations

import argparse
import io
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from nodewright.cluster.api import NotFoundError
from nodewright.sim.loading import load_scenario
from nodewright.sim.runner import _Run, run_scenario
from nodewright.sim.settle import settle
from nodewright.sim.snapshot.rbac import READ_KINDS, allows, cluster_role
from nodewright.sim.snapshot.read import take_snapshot
from nodewright.sim.world import World, build_world
from tests.sim.conftest import WORKSHOP_MANIFESTS

SECRET_VALUE = "hunter2-password-value"
CONFIG_VALUE = "feature-flag-config-value"

APP = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"env": "DB_PASSWORD=SECRET"}'
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      nodeSelector: {type: karpenter}
      containers:
        - name: api
          image: registry.example.com/shop/api:1.2
          command: ["/api", "--password=SECRET"]
          env:
            - {name: DB_PASSWORD, value: "SECRET"}
            - name: API_KEY
              valueFrom: {secretKeyRef: {name: db-credentials, key: api-key}}
          envFrom:
            - configMapRef: {name: app-config}
          resources: {requests: {cpu: 500m, memory: 512Mi}}
          volumeMounts: [{name: creds, mountPath: /creds}]
      volumes:
        - {name: creds, secret: {secretName: db-credentials}}
        - {name: settings, configMap: {name: app-config}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: api, namespace: shop}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: api}}}
""".replace("SECRET", SECRET_VALUE)


class RecordingCluster:
    """A ClusterAPI that records every request, and holds a Secret and a ConfigMap that
    whoever lists them would see."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[tuple[str, str]] = []
        self.extra: dict[str, list[dict[str, Any]]] = {
            "Secret": [{"kind": "Secret", "metadata": {"name": "db-credentials",
                                                       "namespace": "shop"},
                        "data": {"api-key": SECRET_VALUE}}],
            "ConfigMap": [{"kind": "ConfigMap", "metadata": {"name": "app-config",
                                                             "namespace": "shop"},
                           "data": {"flags": CONFIG_VALUE}}],
        }

    def list(self, kind: str, namespace: str | None = None, *,
             labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        self.requests.append(("list", kind))
        if kind in self.extra:
            return self.extra[kind]
        return list(self.inner.list(kind, namespace, labels=labels))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.requests.append(("get", kind))
        return dict(self.inner.get(kind, name, namespace))

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the snapshot called {name}: it may only get and list")


def _world(tmp_path: Path, replicas: int, extra: str = "") -> World:
    text = textwrap.dedent(f"""
        name: live
        manifests: [{WORKSHOP_MANIFESTS}{extra}]
        steps:
          - scale: {{name: inflate, replicas: {replicas}}}
          - settle: {{timeout: 10m}}
    """)
    path = tmp_path / "live.yaml"
    path.write_text(text, encoding="utf-8")
    scenario, problems = load_scenario(path)
    assert scenario is not None, problems
    world = build_world(scenario)
    _Run(world, None).execute("live")
    return world


def _write(document: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_the_snapshot_holds_no_secret_configmap_or_environment_value(tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(APP, encoding="utf-8")
    world = _world(tmp_path, 3, f", {app}")
    recording = RecordingCluster(world.cluster)
    snapshot = take_snapshot(recording, world.clock.now())
    text = yaml.safe_dump(snapshot.document)
    for forbidden in (SECRET_VALUE, CONFIG_VALUE, "db-credentials", "app-config",
                      "DB_PASSWORD", "last-applied-configuration", "secretKeyRef"):
        assert forbidden not in text, forbidden
    asked = {kind for _, kind in recording.requests}
    assert "Secret" not in asked and "ConfigMap" not in asked
    # The pods are there all the same, with what scheduling needs.
    bound = {(b["kind"], b["namespace"], b["name"]) for b in snapshot.document["boundPods"]}
    assert ("Deployment", "shop", "api") in bound
    api = next(m for m in snapshot.document["manifests"] if m["kind"] == "Deployment"
               and m["metadata"]["name"] == "api")
    container = api["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}
    assert api["spec"]["template"]["spec"]["volumes"] == [
        {"name": "creds", "emptyDir": {}}, {"name": "settings", "emptyDir": {}}]


def test_every_request_the_snapshot_makes_is_a_get_or_list_its_role_allows(
        tmp_path: Path) -> None:
    world = _world(tmp_path, 5)
    recording = RecordingCluster(world.cluster)
    take_snapshot(recording, world.clock.now())
    role = cluster_role()
    assert recording.requests
    for verb, kind in recording.requests:
        assert allows(role, kind, verb), (verb, kind)
    assert {kind for _, kind in recording.requests} == set(READ_KINDS)
    assert all(set(rule["verbs"]) == {"get", "list"} for rule in role["rules"])
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert "secrets" not in resources and "configmaps" not in resources


def test_a_kind_the_cluster_does_not_serve_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    world = _world(tmp_path, 1)

    class NoOverlays(RecordingCluster):
        def list(self, kind: str, namespace: str | None = None, *,
                 labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
            if kind == "NodeOverlay":
                raise NotFoundError("the server could not find the requested resource")
            return super().list(kind, namespace, labels=labels)

    snapshot = take_snapshot(NoOverlays(world.cluster), world.clock.now())
    assert any("NodeOverlay" in warning for warning in snapshot.warnings)
    assert snapshot.counts["nodeClaims"] == 1


def _scale_with_the_controller_stopped(world: World, replicas: int) -> None:
    """What kube-controller-manager does while Nodewright is stopped: the Deployment and its
    ReplicaSet go down to `replicas` and the extra pods are deleted; no node is touched."""
    cluster = world.cluster
    cluster.patch("Deployment", "inflate", {"spec": {"replicas": replicas}}, "default")
    replica_set = next(rs for rs in cluster.list("ReplicaSet", "default")
                       if rs["metadata"]["name"].startswith("inflate-"))
    cluster.patch("ReplicaSet", replica_set["metadata"]["name"],
                  {"spec": {"replicas": replicas}}, "default")
    pods = sorted(cluster.list("Pod", "default", labels={"app": "inflate"}),
                  key=lambda p: p["metadata"]["name"])
    by_node: dict[str, int] = {}
    for pod in pods:
        by_node[pod["spec"]["nodeName"]] = by_node.get(pod["spec"]["nodeName"], 0) + 1
    # As the ReplicaSet controller: pods on the nodes holding more of them go first.
    victims = sorted(pods, key=lambda p: (-by_node[p["spec"]["nodeName"]],
                                          p["metadata"]["name"]))[:len(pods) - replicas]
    for pod in victims:
        cluster.delete("Pod", pod["metadata"]["name"], "default", grace_period_seconds=0)


def test_the_simulated_snapshot_predicts_what_the_controller_then_does(
        tmp_path: Path) -> None:
    """The issue's story: workshop at 12 replicas (two m5.large), scaled to 5 with the
    controller stopped, snapshotted; the simulation says one node goes and what it saves,
    and the controller started again does exactly that."""
    world = _world(tmp_path, 12)
    assert sum(1 for n in world.cluster.list("Node")
               if "karpenter.sh/nodepool" in n["metadata"].get("labels", {})) == 2
    _scale_with_the_controller_stopped(world, 5)
    snapshot = take_snapshot(world.cluster, world.clock.now())
    assert snapshot.counts == {"nodeClaims": 2, "unmanagedNodes": 0, "boundPods": 5,
                               "manifests": snapshot.counts["manifests"]}
    scenario, problems = load_scenario(_write(snapshot.document, tmp_path / "snap.yaml"))
    assert scenario is not None, problems
    predicted = run_scenario(scenario)
    assert not predicted.errors
    assert predicted.summary.launched == 0
    removed = [d for d in predicted.decisions if d.outcome == "disrupted"]
    assert len(removed) == 1 and predicted.summary.nodes == 1
    assert removed[0].decision == "delete" and removed[0].savings == 0.096

    # The controller, started again on the real (here: in-memory) cluster.
    world.driver.deliver()
    outcome = settle(world, 30 * 60)
    assert outcome.quiet
    left = sorted(n["metadata"]["name"] for n in world.cluster.list("Node")
                  if "karpenter.sh/nodepool" in n["metadata"].get("labels", {})
                  and not n["metadata"].get("deletionTimestamp"))
    assert left == sorted(f.name for f in predicted.fleet)
    actual = [d for d in world.recorder.decisions if d.outcome == "disrupted"]
    assert [(d.node, d.decision, d.savings) for d in actual] == [
        (d.node, d.decision, d.savings) for d in removed]


def test_the_snapshot_command_writes_a_scenario_that_loads(tmp_path: Path) -> None:
    from nodewright.cli.snapshot import write_snapshot

    world = _world(tmp_path, 5)
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(output=tmp_path / "s.yaml", redact=False, as_nodepools=None,
                              context=None)
    assert write_snapshot(world.cluster, args, world.clock.now(), out, err) == 0
    assert "1 NodeClaims" in err.getvalue()
    scenario, problems = load_scenario(tmp_path / "s.yaml")
    assert scenario is not None, problems
    assert [c.instance_type for c in scenario.node_claims] == ["m5.large"]


def _names(objects_: Iterable[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objects_}


def test_redacted_snapshots_hide_names_but_still_simulate_the_same(tmp_path: Path) -> None:
    from nodewright.cli.snapshot import write_snapshot

    app = tmp_path / "app.yaml"
    app.write_text(APP, encoding="utf-8")
    world = _world(tmp_path, 5, f", {app}")
    plain = take_snapshot(world.cluster, world.clock.now()).document
    args = argparse.Namespace(output=tmp_path / "r.yaml", redact=True, as_nodepools=None,
                              context=None)
    write_snapshot(world.cluster, args, world.clock.now(), io.StringIO(), io.StringIO())
    text = (tmp_path / "r.yaml").read_text(encoding="utf-8")
    for name in ("inflate", "shop", "registry.example.com", "KarpenterNodeRole-workshop",
                 *(c["nodeName"] for c in plain["nodeClaims"])):
        assert name not in text, name
    redacted, problems = load_scenario(tmp_path / "r.yaml")
    original, _ = load_scenario(_write(plain, tmp_path / "p.yaml"))
    assert redacted is not None and original is not None, problems
    a, b = run_scenario(original), run_scenario(redacted)
    assert a.summary.nodes_by_type == b.summary.nodes_by_type
    assert a.summary.disruptions == b.summary.disruptions


def test_the_documented_cluster_role_is_the_one_the_snapshot_needs() -> None:
    from nodewright.sim.snapshot.rbac import role_yaml

    docs = (Path(__file__).resolve().parents[2] / "docs" / "snapshot.md").read_text()
    assert f"```yaml\n{role_yaml()}```" in docs


def test_a_nodepool_changed_since_launch_makes_the_snapshot_drift(tmp_path: Path) -> None:
    world = _world(tmp_path, 5)
    unchanged = take_snapshot(world.cluster, world.clock.now()).document
    assert "nodePoolHash" not in unchanged["nodeClaims"][0]
    # The NodePool edited while nothing reconciled it yet: its NodeClaim was launched from
    # the old template.
    world.cluster.patch("NodePool", "default", {"spec": {"template": {"metadata": {
        "annotations": {"example.com/rollout": "2"}}}}})
    snapshot = take_snapshot(world.cluster, world.clock.now()).document
    assert "nodePoolHash" in snapshot["nodeClaims"][0]
    scenario, problems = load_scenario(_write(snapshot, tmp_path / "drift.yaml"))
    assert scenario is not None, problems
    assert run_scenario(scenario).summary.disruptions.get("Drifted") == 1


def test_claims_stamped_with_the_controllers_cluster_ca_do_not_drift_in_the_snapshot(
        tmp_path: Path) -> None:
    """A live controller's EC2NodeClass hash covers the cluster CA it runs with, which a
    snapshot does not carry: the snapshot compares each NodeClaim with the hashes that
    controller stamped on its NodePool and EC2NodeClass, as the controller does."""
    scenario, problems = load_scenario(_write({
        "name": "live", "manifests": [str(WORKSHOP_MANIFESTS)],
        "steps": [{"scale": {"name": "inflate", "replicas": 5}},
                  {"settle": {"timeout": "10m"}}]}, tmp_path / "live.yaml"))
    assert scenario is not None, problems
    world = build_world(scenario)
    world.controllers.state.ca_bundle = "Y2x1c3Rlci1jYQ=="  # as `nodewright controller` has
    _Run(world, None).execute("live")

    snapshot = take_snapshot(world.cluster, world.clock.now()).document

    assert snapshot["nodeClaims"] and all("nodeClassHash" not in claim
                                          for claim in snapshot["nodeClaims"])
    taken, problems = load_scenario(_write(snapshot, tmp_path / "snap.yaml"))
    assert taken is not None, problems
    assert "Drifted" not in run_scenario(taken).summary.disruptions
