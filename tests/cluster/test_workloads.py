"""Workload controllers in the in-memory cluster: replicas come and go as Kubernetes'
controllers make them."""

from __future__ import annotations

from collections import Counter

from nodewright.cluster import objects
from tests.cluster.world import World, node, pod, workload


def names(world: World, *, live: bool = True) -> list[str]:
    return [objects.name(p) for p in world.pods()
            if not (live and objects.is_deleting(p))]


def test_a_deployment_makes_a_replicaset_that_makes_owned_pods() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 3))
    (replica_set,) = world.cluster.list("ReplicaSet")
    rs_name = objects.name(replica_set)
    template_hash = objects.labels(replica_set)["pod-template-hash"]
    assert rs_name == f"web-{template_hash}"
    pods = world.pods()
    assert len(pods) == 3
    for each in pods:
        assert objects.name(each).startswith(f"{rs_name}-")
        assert len(objects.name(each)) == len(rs_name) + 6
        assert objects.controller_owner(each)["uid"] == objects.uid(replica_set)  # type: ignore[index]
        assert objects.labels(each) == {"app": "web", "pod-template-hash": template_hash}
    world.run(2)
    deployment = world.cluster.get("Deployment", "web", "default")
    assert deployment["status"]["readyReplicas"] == 3
    assert deployment["status"]["replicas"] == 3


def test_scaling_down_deletes_pending_pods_before_running_ones() -> None:
    world = World()
    world.apply(node("n1", cpu="2"))
    world.apply(workload("Deployment", "web", 3, cpu="900m"))
    world.run(5)
    running = {objects.name(p) for p in world.pods() if p["status"]["phase"] == "Running"}
    assert len(running) == 2
    world.cluster.patch("Deployment", "web", {"spec": {"replicas": 2}}, "default")
    world.run()
    assert set(names(world)) == running


def test_scaling_down_prefers_not_ready_and_newer_pods() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 2))
    world.run(5)
    veterans = set(names(world))
    world.cluster.patch("Deployment", "web", {"spec": {"replicas": 3}}, "default")
    world.run(1)  # the newcomer is bound but not yet ready
    world.cluster.patch("Deployment", "web", {"spec": {"replicas": 2}}, "default")
    world.run()
    assert set(names(world)) == veterans


def test_a_deleted_replica_is_replaced() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 2))
    world.run(5)
    victim = names(world)[0]
    world.cluster.delete("Pod", victim, "default")
    world.run()
    assert len(names(world)) == 2 and victim not in names(world)
    world.run(30)
    assert victim not in names(world, live=False)


def test_a_pod_patched_free_of_its_replicaset_is_replaced_at_once() -> None:
    # As `kubectl patch` does to take a pod out of service for debugging: its owner
    # reference removed, and its labels no longer the ReplicaSet's (so that Kubernetes
    # would not adopt it back either). The pod's event names no ReplicaSet any more; the
    # controller remembers which one controlled it and wakes that one, one pod short.
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 3))
    world.run(5)
    before = set(names(world))
    orphan = sorted(before)[0]
    world.cluster.patch("Pod", orphan, {"metadata": {
        "ownerReferences": None, "labels": {"app": "debug"}}}, "default")
    world.run()  # the event alone, no time passes and nothing else is written
    owned = {objects.name(p) for p in world.pods()
             if objects.controller_owner(p) and not objects.is_deleting(p)}
    assert len(owned) == 3 and orphan not in owned
    (replacement,) = owned - before
    world.run(5)
    assert world.pod(orphan)["status"]["phase"] == "Running"
    assert world.pod(replacement)["status"]["phase"] == "Running"
    (replica_set,) = world.cluster.list("ReplicaSet")
    assert replica_set["status"]["readyReplicas"] == 3


def test_a_new_template_gets_a_new_replicaset() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 2))
    world.cluster.patch("Deployment", "web", {"spec": {"template": {"metadata": {
        "labels": {"app": "web", "version": "2"}}}}}, "default")
    world.run(60)
    replica_sets = {objects.name(rs): rs["spec"]["replicas"]
                    for rs in world.cluster.list("ReplicaSet")}
    assert sorted(replica_sets.values()) == [0, 2]
    assert {objects.labels(p).get("version") for p in world.pods()} == {"2"}


def test_deleting_a_deployment_takes_everything_with_it() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 2))
    world.run(5)
    world.cluster.delete("Deployment", "web", "default")
    world.run(31)
    assert world.cluster.list("ReplicaSet") == [] and world.pods() == []


def test_a_statefulset_starts_its_pods_in_order() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("StatefulSet", "db", 3))
    assert names(world) == ["db-0"]
    world.run(2)
    assert names(world) == ["db-0", "db-1"]
    world.run(4)
    assert names(world) == ["db-0", "db-1", "db-2"]
    assert objects.labels(world.pod("db-2"))["statefulset.kubernetes.io/pod-name"] == "db-2"
    world.cluster.patch("StatefulSet", "db", {"spec": {"replicas": 1}}, "default")
    world.run()
    assert [objects.name(p) for p in world.pods() if objects.is_deleting(p)] == ["db-2"]
    world.run(30)  # db-2 is gone, and only now does db-1 begin to terminate
    assert names(world, live=False) == ["db-0", "db-1"]
    assert names(world) == ["db-0"]
    world.run(30)
    assert names(world, live=False) == ["db-0"]


def test_a_statefulset_pod_comes_back_under_its_name() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("StatefulSet", "db", 2, spec_extra={"podManagementPolicy": "Parallel"}))
    assert names(world) == ["db-0", "db-1"]
    world.run(5)
    old_uid = objects.uid(world.pod("db-0"))
    world.cluster.delete("Pod", "db-0", "default")
    world.run(30)
    assert names(world) == ["db-0", "db-1"]
    assert objects.uid(world.pod("db-0")) != old_uid


def test_a_daemonset_runs_one_pod_on_each_node_it_tolerates() -> None:
    world = World()
    dedicated = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    world.apply(
        node("n1"), node("n2"), node("gpu", taints=dedicated),
        node("joining", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]),
        node("cordoned", unschedulable=True),
        node("booting", ready=False),
    )
    world.apply(workload("DaemonSet", "agent", 0))
    placements = sorted(str(where) for where in world.placements().values())
    # Daemon pods tolerate cordons; not-ready nodes carry not-ready:NoSchedule.
    assert placements == ["cordoned", "n1", "n2"]
    first = world.pods()[0]
    assert first["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In",
                          "values": [first["spec"]["nodeName"]]}]}]
    world.apply(node("n3"))
    assert Counter(world.placements().values())["n3"] == 1
    world.run(2)
    status = world.cluster.get("DaemonSet", "agent", "default")["status"]
    assert (status["desiredNumberScheduled"], status["numberReady"]) == (4, 4)


def test_daemon_pods_leave_nodes_that_go_away_and_skip_the_scheduler() -> None:
    world = World()
    world.apply(node("n1", cpu="1"), node("n2", cpu="1"))
    world.apply(workload("DaemonSet", "agent", 0, cpu="2"))  # bigger than the nodes
    assert sorted(str(n) for n in world.placements().values()) == ["n1", "n2"]
    world.cluster.delete("Node", "n2")
    world.run(40)
    assert list(world.placements().values()) == ["n1"]


def test_a_job_runs_its_completions_with_bounded_parallelism() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    job = workload("Job", "report", 0, restartPolicy="Never",
                   spec_extra={"completions": 3, "parallelism": 2})
    job["spec"]["template"]["metadata"]["annotations"] = {"nodewright.io/run-duration": "10s"}
    world.apply(job)
    assert len(names(world)) == 2
    world.run(12)  # started at 2 s, done at 12 s
    phases = Counter(p["status"]["phase"] for p in world.pods())
    assert phases == {"Succeeded": 2, "Pending": 1}
    world.run(12)
    status = world.cluster.get("Job", "report", "default")["status"]
    assert (status["succeeded"], status["active"]) == (3, 0)
    assert objects.condition_is_true(world.cluster.get("Job", "report", "default"), "Complete")


def test_a_job_without_run_duration_runs_until_deleted() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Job", "forever", 0, restartPolicy="Never"))
    world.run(3600)
    assert [p["status"]["phase"] for p in world.pods()] == ["Running"]
    world.apply(pod("solo", restartPolicy="Never", annotations={
        "nodewright.io/run-duration": "1m30s"}))
    world.run(92)
    assert world.pod("solo")["status"]["phase"] == "Succeeded"
