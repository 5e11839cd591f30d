"""Stories of pods with PersistentVolumeClaims (Karpenter's "Volume Topology
Requirements" cases, pkg/controllers/provisioning/suite_test.go): the zone of a pod's
volume, or of its StorageClass, decides where its node is launched; a pod whose claims
cannot be used yet is left alone, and the others are still planned."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.memory.actors import ActorSettings
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import World, node_pool

ZONE = "topology.kubernetes.io/zone"


def storage_class(name: str = "gp3", *, mode: str = "WaitForFirstConsumer",
                  zones: list[str] | None = None, provisioner: str = "ebs.csi.aws.com",
                  default: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode,
    }
    if default:
        body["metadata"]["annotations"] = {
            "storageclass.kubernetes.io/is-default-class": "true"}
    if zones:
        body["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": "topology.ebs.csi.aws.com/zone", "values": zones}]}]
    return body


def claim(name: str, *, storage: str | None = "gp3", volume: str | None = None
          ) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}}}
    if storage is not None:
        spec["storageClassName"] = storage
    if volume is not None:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def volume(name: str, *, zone: str | None = None, key: str = ZONE,
           local_host: str | None = None, storage: str = "gp3") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                            "storageClassName": storage}
    terms = []
    if zone is not None:
        terms.append({"matchExpressions": [{"key": key, "operator": "In", "values": [zone]}]})
    if local_host is not None:
        spec["local"] = {"path": "/mnt/disks/ssd1"}
        terms.append({"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [local_host]}]})
    else:
        spec["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{name}"}
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def pod(name: str, *claims: str, ephemeral: str | None = None,
        zone: str | None = None, cpu: str = "1") -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
        for i, c in enumerate(claims)]
    if ephemeral is not None:
        volumes.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "storageClassName": ephemeral, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}}})
    spec: dict[str, Any] = {
        "nodeSelector": {"type": "karpenter", **({ZONE: zone} if zone else {})},
        "containers": [{"name": "app", "image": "app",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        "volumes": volumes,
    }
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def node_of(world: World, name: str) -> dict[str, Any] | None:
    found = world.cluster.get("Pod", name, "default")
    node_name = found["spec"].get("nodeName")
    return world.cluster.get("Node", node_name) if node_name else None


def zone_of(world: World, name: str) -> str | None:
    node = node_of(world, name)
    return node["metadata"]["labels"][ZONE] if node is not None else None


def ignored(world: World, name: str) -> list[str]:
    return [e.get("note") or e.get("message") or ""
            for e in world.events("FailedScheduling")
            if (e.get("regarding") or e.get("involvedObject") or {}).get("name") == name
            and "Failed to schedule pod" in (e.get("note") or e.get("message") or "")]


def test_a_pod_goes_to_the_zone_of_its_bound_volume(world: World) -> None:
    world.apply(WORKSHOP, storage_class(), volume("pv-c", zone="us-east-1c"),
                claim("data", volume="pv-c"))
    world.apply(pod("db", "data"))
    assert world.settle()

    assert zone_of(world, "db") == "us-east-1c"
    expect_no_controller_errors(world)


def test_the_ebs_csi_zone_key_is_read_as_the_zone(world: World) -> None:
    world.apply(WORKSHOP, storage_class(),
                volume("pv-b", zone="us-east-1b", key="topology.ebs.csi.aws.com/zone"),
                claim("data", volume="pv-b"))
    world.apply(pod("db", "data"))
    assert world.settle()

    assert zone_of(world, "db") == "us-east-1b"


def test_an_unbound_claim_goes_to_its_storage_class_zones_and_gets_a_zonal_volume(
        world: World) -> None:
    world.apply(WORKSHOP, storage_class(zones=["us-east-1b"]), claim("data"))
    world.apply(pod("db", "data"))
    assert world.settle()

    assert zone_of(world, "db") == "us-east-1b"
    bound = world.cluster.get("PersistentVolumeClaim", "data", "default")
    assert bound["status"]["phase"] == "Bound"
    created = world.cluster.get("PersistentVolume", bound["spec"]["volumeName"])
    (term,) = created["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": ZONE, "operator": "In", "values": ["us-east-1b"]}]
    (attachment,) = world.cluster.list("VolumeAttachment")
    assert attachment["spec"]["nodeName"] == node_of(world, "db")["metadata"]["name"]  # type: ignore[index]
    assert attachment["spec"]["source"] == {"persistentVolumeName": created["metadata"]["name"]}


def test_an_ephemeral_volume_goes_to_its_storage_class_zones(world: World) -> None:
    world.apply(WORKSHOP, storage_class(zones=["us-east-1a"]))
    # The ephemeral volume controller would create the claim <pod>-<volume>.
    world.apply(claim("db-scratch"), pod("db", ephemeral="gp3"))
    assert world.settle()

    assert zone_of(world, "db") == "us-east-1a"


def test_a_volume_zone_the_pod_cannot_use_leaves_it_pending(world: World) -> None:
    world.apply(WORKSHOP, storage_class(), volume("pv-c", zone="us-east-1c"),
                claim("data", volume="pv-c"))
    world.apply(pod("db", "data", zone="us-east-1a"))
    assert world.settle()

    assert node_of(world, "db") is None
    assert world.nodeclaims() == []


def test_storage_class_zones_the_pod_cannot_use_leave_it_pending(world: World) -> None:
    world.apply(WORKSHOP, storage_class(zones=["us-east-1b"]), claim("data"))
    world.apply(pod("db", "data", zone="us-east-1a"))
    assert world.settle()

    assert node_of(world, "db") is None
    assert world.nodeclaims() == []


def test_a_local_volumes_hostname_is_not_followed(world: World) -> None:
    world.apply(WORKSHOP,
                storage_class("local", provisioner="kubernetes.io/no-provisioner"),
                volume("pv-local", local_host="ip-10-0-0-1.ec2.internal", storage="local"),
                claim("data", storage="local", volume="pv-local"))
    world.apply(pod("db", "data"))
    world.settle()

    # Karpenter launches for it (the hostname cannot follow the pod); kube-scheduler
    # still holds the pod to the volume's host, which no new node is.
    assert len(world.nodeclaims()) == 1
    assert ignored(world, "db") == []


def test_pods_whose_claims_cannot_be_used_are_ignored_and_the_others_planned(
        world: World) -> None:
    world.apply(WORKSHOP, storage_class(), storage_class("fast", mode="Immediate",
                                                         provisioner="kubernetes.io/no-provisioner"),
                claim("no-class", storage=""), claim("missing-class", storage="missing"),
                claim("immediate", storage="fast"),
                claim("missing-volume", volume="pv-gone"))
    world.apply(pod("no-claim", "nothing-here"), pod("no-class", "no-class"),
                pod("missing-class", "missing-class"), pod("immediate", "immediate"),
                pod("missing-volume", "missing-volume"), pod("fine"))
    assert world.settle()

    assert node_of(world, "fine") is not None
    assert ignored(world, "no-claim") == [
        'Failed to schedule pod, persistentvolumeclaim "nothing-here" not found']
    assert ignored(world, "no-class") == [
        'Failed to schedule pod, persistentvolumeclaim "no-class" is unbound and names no '
        "storage class"]
    assert ignored(world, "missing-class") == [
        'Failed to schedule pod, persistentvolumeclaim "missing-class": storageclass '
        '"missing" not found']
    assert ignored(world, "immediate") == [
        'Failed to schedule pod, persistentvolumeclaim "immediate" uses storageclass "fast" with '
        "Immediate binding and is not bound yet"]
    assert ignored(world, "missing-volume") == [
        'Failed to schedule pod, persistentvolumeclaim "missing-volume": persistentvolume '
        '"pv-gone" not found']
    for name in ("no-claim", "no-class", "missing-class", "immediate", "missing-volume"):
        assert node_of(world, name) is None


def test_a_bound_claim_without_a_storage_class_is_fine(world: World) -> None:
    world.apply(WORKSHOP, volume("pv-a", zone="us-east-1a", storage=""),
                claim("data", storage="", volume="pv-a"))
    world.apply(pod("db", "data"))
    assert world.settle()

    assert zone_of(world, "db") == "us-east-1a"


def test_a_statefulset_gets_a_claim_per_replica_and_keeps_each_in_its_zone(
        world: World) -> None:
    world.apply(WORKSHOP, storage_class(default=True), {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3, "serviceName": "db", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                "nodeSelector": {"type": "karpenter"},
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "db"}}}],
                "containers": [{"name": "db", "image": "db", "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"}}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}}}}],
        },
    })
    assert world.settle()
    first = {f"db-{i}": zone_of(world, f"db-{i}") for i in range(3)}
    assert sorted(first.values()) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    claims = {c["metadata"]["name"]: c for c in world.cluster.list("PersistentVolumeClaim")}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert {c["spec"]["storageClassName"] for c in claims.values()} == {"gp3"}
    assert len(world.cluster.list("VolumeAttachment")) == 3

    world.scale("db", 0, kind="StatefulSet")
    assert world.settle()
    assert world.nodes() == []
    assert world.cluster.list("VolumeAttachment") == []
    world.scale("db", 3, kind="StatefulSet")
    assert world.settle()

    assert {f"db-{i}": zone_of(world, f"db-{i}") for i in range(3)} == first
    expect_no_controller_errors(world)


# -- termination waits for VolumeAttachments (pkg/controllers/node/termination) ----------

GRACEFUL_POOL = node_pool(families=["m5"], capacity_types=(), labels={"type": "karpenter"},
                          terminationGracePeriod="5m")


def reason(obj: dict[str, Any], kind: str) -> tuple[str, str] | None:
    for item in obj.get("status", {}).get("conditions", []):
        if item["type"] == kind:
            return str(item["status"]), str(item.get("reason") or "")
    return None


def volume_story(world: World, *extra: Any) -> tuple[str, str]:
    world.apply(WORKSHOP, *extra, storage_class(), claim("data"))
    world.apply(pod("db", "data"))
    assert world.settle()
    (nodeclaim,) = world.nodeclaims()
    assert len(world.cluster.list("VolumeAttachment")) == 1
    return nodeclaim["metadata"]["name"], nodeclaim["status"]["providerID"]


def instance_alive(world: World, provider_id: str) -> bool:
    return any(provider_id.endswith(instance.instance_id) for instance in world.live_instances())


def test_the_instance_is_terminated_only_once_its_volumes_are_detached(
        make_world: Any) -> None:
    """Karpenter v1.14.1 pkg/controllers/node/termination/suite_test.go, It("should wait for
    volume attachments")."""
    world: World = make_world(actor_settings=ActorSettings(pod_start_delay=2.0,
                                                           volume_detach_delay=120.0))
    name, provider_id = volume_story(world)
    world.delete("Pod", "db", "default")
    world.delete("NodeClaim", name)

    def awaiting() -> bool:
        current = world.cluster.get("NodeClaim", name)
        return reason(current, "VolumesDetached") == ("Unknown", "AwaitingVolumeDetachment")

    assert world.run_until(awaiting, timeout=60)
    assert instance_alive(world, provider_id)
    (event,) = [e for e in world.events("AwaitingVolumeDetachment")]
    note = event.get("note") or ""
    assert note.startswith("Awaiting deletion of bound volumeattachments (csi-")
    world.advance(60)
    assert instance_alive(world, provider_id), "terminated with the volume still attached"

    assert world.run_until(lambda: name not in [c["metadata"]["name"]
                                                for c in world.nodeclaims()], timeout=600)
    assert world.cluster.list("VolumeAttachment") == []
    assert not instance_alive(world, provider_id)
    expect_no_controller_errors(world)


def test_the_termination_grace_period_ends_the_wait_for_detachment(make_world: Any) -> None:
    """Karpenter v1.14.1 pkg/controllers/node/termination/suite_test.go, It("should wait for
    volume attachments until the nodeclaim's termination grace period expires")."""
    world: World = make_world(actor_settings=ActorSettings(pod_start_delay=2.0,
                                                           volume_detach_delay=3600.0))
    name, provider_id = volume_story(world, GRACEFUL_POOL)
    world.delete("Pod", "db", "default")
    world.delete("NodeClaim", name)
    world.advance(200)
    assert instance_alive(world, provider_id)

    def elapsed() -> bool:
        current = world.cluster.get("NodeClaim", name)
        return reason(current, "VolumesDetached") == ("False", "TerminationGracePeriodElapsed")

    assert world.run_until(elapsed, timeout=300)
    assert world.run_until(lambda: not instance_alive(world, provider_id), timeout=300)
    assert len(world.cluster.list("VolumeAttachment")) == 1  # still there: never detached


def test_volumes_of_pods_that_are_not_drained_do_not_hold_termination(
        make_world: Any) -> None:
    """Karpenter v1.14.1 pkg/controllers/node/termination/suite_test.go, It("should only
    wait for volume attachments associated with drainable pods")."""
    world: World = make_world(actor_settings=ActorSettings(pod_start_delay=2.0,
                                                           volume_detach_delay=3600.0))
    tolerant = pod("db", "data")
    # Tolerating the disrupted taint: Karpenter does not drain it, so its volume stays.
    tolerant["spec"]["tolerations"] = [{"key": "karpenter.sh/disrupted", "operator": "Exists"}]
    world.apply(WORKSHOP, storage_class(), claim("data"), tolerant)
    assert world.settle()
    (nodeclaim,) = world.nodeclaims()
    name, provider_id = nodeclaim["metadata"]["name"], nodeclaim["status"]["providerID"]
    world.delete("NodeClaim", name)

    assert world.run_until(lambda: not instance_alive(world, provider_id), timeout=300)
    assert world.events("AwaitingVolumeDetachment") == []


def test_consolidation_does_not_move_a_pod_away_from_its_volumes_zone(
        world: World) -> None:
    # Two small pods, each tied to a volume in its own zone: one node would hold both,
    # but not in both zones, so consolidation keeps the two nodes.
    world.apply(WORKSHOP, storage_class(),
                volume("pv-a", zone="us-east-1a"), claim("data-a", volume="pv-a"),
                volume("pv-b", zone="us-east-1b"), claim("data-b", volume="pv-b"))
    world.apply(pod("db-a", "data-a", cpu="200m"), pod("db-b", "data-b", cpu="200m"))
    assert world.settle()
    assert {zone_of(world, "db-a"), zone_of(world, "db-b")} == {"us-east-1a", "us-east-1b"}

    world.advance(600)
    assert world.settle()
    assert len(world.nodes()) == 2
    assert zone_of(world, "db-a") == "us-east-1a" and zone_of(world, "db-b") == "us-east-1b"
    assert world.pending_pods() == []
