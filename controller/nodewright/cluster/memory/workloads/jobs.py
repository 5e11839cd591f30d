"""The Job controller: up to `parallelism` pods at a time until `completions` pods have
succeeded (without `completions`, until one has succeeded and none is left running);
then the Job is Complete. `suspend` removes the running pods. How long a pod runs is the
kubelet's business (the `nodewright.io/run-duration` annotation). Failed pods are only
counted: there is no backoffLimit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.pod_status import FAILED, SUCCEEDED, phase, set_pod_condition
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    controlled,
    create,
    delete,
    is_active,
    owner_keys,
    pod_from_template,
    ready_count,
    replicas,
)
from nodewright.cluster.memory.workloads.victims import deletion_order
from nodewright.runtime.clock import format_time
from nodewright.runtime.reconciler import Result, Watch

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"


class JobController:
    name = "job-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (Watch("Job"), Watch("Pod", owner_keys("Job")))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        job = self.cluster.peek("Job", name, namespace)
        if job is None or objects.is_deleting(job):
            return Result()
        spec = job.get("spec") or {}
        pods = controlled(self.cluster, job)
        active = [pod for pod in pods if is_active(pod)]
        succeeded = sum(1 for pod in pods if phase(pod) == SUCCEEDED)
        completions = spec.get("completions")
        complete = objects.condition_is_true(job, "Complete") or (
            succeeded >= completions if isinstance(completions, int)
            else succeeded >= 1 and not active
        )
        if complete or spec.get("suspend"):
            wanted = 0
        elif isinstance(completions, int):
            wanted = min(replicas(job, "parallelism"), completions - succeeded)
        else:
            wanted = replicas(job, "parallelism") if succeeded == 0 else len(active)
        if wanted > len(active):
            for _ in range(wanted - len(active)):
                create(self.cluster, self._pod(job))
        elif wanted < len(active):
            for victim in deletion_order(active)[: len(active) - wanted]:
                delete(self.cluster, victim)
        self._report(job, complete)
        return Result()

    def _pod(self, job: Mapping[str, Any]) -> dict[str, Any]:
        name, uid = objects.name(job), objects.uid(job)
        template = (job.get("spec") or {}).get("template") or {}
        return pod_from_template(job, template, extra_labels={
            JOB_NAME_LABEL: name, "job-name": name,
            CONTROLLER_UID_LABEL: uid, "controller-uid": uid,
        })

    def _report(self, job: Mapping[str, Any], complete: bool) -> None:
        pods = controlled(self.cluster, job)
        active = [pod for pod in pods if is_active(pod)]
        now = self.cluster.clock.now()
        previous = job.get("status") or {}
        status: dict[str, Any] = {
            "active": len(active),
            "ready": ready_count(active),
            "succeeded": sum(1 for pod in pods if phase(pod) == SUCCEEDED),
            "failed": sum(1 for pod in pods if phase(pod) == FAILED),
            "startTime": previous.get("startTime") or format_time(now),
        }
        conditions = [dict(c) for c in previous.get("conditions") or []]
        if complete:
            holder: dict[str, Any] = {"status": {"conditions": conditions}}
            if not objects.condition_is_true(job, "Complete"):
                set_pod_condition(holder, "Complete", "True", now)
            status["completionTime"] = previous.get("completionTime") or format_time(now)
        if conditions:
            status["conditions"] = conditions
        write_status(self.cluster, job, status)
