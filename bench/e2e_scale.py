#!/usr/bin/env python3
"""Scale on a real API server: a Deployment of 1,000 small pods, from zero to all bound.

The control plane of ../shared/k8s (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager v1.26; started unless one runs at NW_K8S_HOME), Nodewright installed
from its manifests and run as their ServiceAccount (`nodewright controller --cloud sim`, a
process, simulated instances that launch in 1 s and register 2 s later), the workshop's
NodePool and EC2NodeClass, and a Deployment `scale` of pause pods requesting 50m cpu and
64Mi each. After `kubectl scale --replicas N` it reports:

- seconds until every pod is bound (spec.nodeName set by kube-scheduler) and until every
  pod is Running (reported by the controller, which plays kubelet for its simulated nodes);
- NodeClaims and nodes made, and their instance types;
- the API requests the controller made, from its own /metrics (client-go's
  `rest_client_requests_total{code,host,method}`), by method, from start to all Running,
  and per pod;
- the controller's peak RSS (VmHWM of /proc/PID/status) and CPU seconds.

Goal (issue): all pods bound within 60 s, RSS under 250 MB. A benchmark, never a test: it
is CPU-heavy (run it alone on a shared machine).

    NW_K8S_HOME=/tmp/nw-k8s-bench NW_K8S_PORT_BASE=31000 python bench/e2e_scale.py \\
        [--pods 1000] [--timeout 600] [--json] [--profile FILE]

`--profile FILE` runs the controller under bench/sampler.py (every thread's stack, every
5 ms) and writes where its time went to FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "controller"))
# The controller process runs this checkout's package, whatever the interpreter has installed.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT / "controller"), os.environ.get("PYTHONPATH")]))

from tests.conftest import EXAMPLES, SHARED  # noqa: E402
from tests.e2e import harness  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    ControlPlane,
    Installation,
    clean_cluster,
    eventually,
    start_control_plane,
    start_controller,
)

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: scale, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: scale}}
  template:
    metadata: {labels: {app: scale}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.9
          resources: {requests: {cpu: 50m, memory: 64Mi}}
"""
SAMPLE = re.compile(r'^rest_client_requests_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$', re.M)


def pod_states(plane: ControlPlane) -> tuple[int, int, int]:
    """(pods, bound, running) of the Deployment."""
    listed = plane.kubectl("get", "pods", "-n", "default", "-l", "app=scale", "--no-headers",
                           "-o", "custom-columns=NODE:.spec.nodeName,PHASE:.status.phase",
                           timeout=120).stdout.splitlines()
    bound = sum(1 for line in listed if line.split()[0] != "<none>")
    running = sum(1 for line in listed if line.split()[-1] == "Running")
    return len(listed), bound, running


def requests_by_method(metrics: str) -> Counter[str]:
    counted: Counter[str] = Counter()
    for sample in SAMPLE.finditer(metrics):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', sample["labels"]))
        counted[labels["method"]] += int(float(sample["value"]))
    return counted


def timeline(plane: ControlPlane, claims: list[dict[str, Any]], start: float,
             ) -> dict[str, float]:
    """Seconds from the scale command to when objects were created (the API server's
    creationTimestamps, whole seconds)."""
    def created(obj: dict[str, Any]) -> float:
        stamp = datetime.strptime(obj["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
        return round(stamp.replace(tzinfo=UTC).timestamp() - start, 1)

    pods = plane.items("pods", "-n", "default", "-l", "app=scale")
    nodes = [n for n in plane.items("nodes")
             if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool")]
    marks: dict[str, float] = {}
    for name, found in (("pods", pods), ("nodeclaims", claims), ("nodes", nodes)):
        if found:
            times = sorted(created(obj) for obj in found)
            marks[f"first {name} created"] = times[0]
            marks[f"last {name} created"] = times[-1]
    return marks


def _stamp(text: str) -> float:
    text = text.rstrip("Z")
    pattern = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, pattern).replace(tzinfo=UTC).timestamp()


def stages(plane: ControlPlane) -> dict[str, list[float]]:
    """Where each pod's wait went: created -> first refused by kube-scheduler
    (FailedScheduling) -> nominated by Nodewright (Nominated) -> bound (PodScheduled True),
    as p50, p90 and max over the pods."""
    first: dict[str, dict[str, float]] = {}
    for event in plane.items("events", "-n", "default"):
        reason = event.get("reason")
        if reason not in ("FailedScheduling", "Nominated"):
            continue
        name = event.get("involvedObject", {}).get("name", "")
        when = event.get("eventTime") or event.get("firstTimestamp")
        if when:
            seen = first.setdefault(name, {})
            seen[reason] = min(seen.get(reason, float("inf")), _stamp(when))
    spans: dict[str, list[float]] = {"created to refused": [], "refused to nominated": [],
                                     "nominated to bound": [], "created to bound": []}
    for pod in plane.items("pods", "-n", "default", "-l", "app=scale"):
        name = pod["metadata"]["name"]
        created = _stamp(pod["metadata"]["creationTimestamp"])
        bound = next((_stamp(c["lastTransitionTime"]) for c in pod["status"].get(
            "conditions", []) if c["type"] == "PodScheduled" and c["status"] == "True"), None)
        seen = first.get(name, {})
        refused, nominated = seen.get("FailedScheduling"), seen.get("Nominated")
        if refused is not None:
            spans["created to refused"].append(refused - created)
        if refused is not None and nominated is not None:
            spans["refused to nominated"].append(nominated - refused)
        if nominated is not None and bound is not None:
            spans["nominated to bound"].append(bound - nominated)
        if bound is not None:
            spans["created to bound"].append(bound - created)
    return {name: _quantiles(values) for name, values in spans.items() if values}


def _quantiles(values: list[float]) -> list[float]:
    ordered = sorted(values)
    pick = [ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, len(ordered) * 9 // 10)],
            ordered[-1]]
    return [round(value, 1) for value in pick]


def process_stats(pid: int) -> tuple[float, float]:
    """(peak RSS in MB, CPU seconds) of a live process."""
    status = Path(f"/proc/{pid}/status").read_text()
    peak_kb = int(re.search(r"VmHWM:\s+(\d+)", status)[1])  # type: ignore[index]
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    return peak_kb / 1024, cpu


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} CPUs, {model}"


def run(pods: int, timeout: float, profile: str | None, keep: bool = False,
        ) -> dict[str, Any]:
    home = Path(os.environ.get("NW_K8S_HOME") or "/tmp/nw-k8s-bench")
    plane, why_not, was_running = start_control_plane(SHARED / "k8s" / "control-plane", home)
    if plane is None:
        raise SystemExit(why_not)
    workdir = Path(tempfile.mkdtemp(prefix="nodewright-e2e-scale-"))
    clean_cluster(plane, ("default",))
    installation = Installation.install(plane, workdir)
    plane.apply([EXAMPLES / "workshop" / "nodepool.yaml",
                 EXAMPLES / "workshop" / "ec2nodeclass.yaml"])
    plane.apply(DEPLOYMENT)
    if profile:
        sampler, out = str(ROOT / "bench" / "sampler.py"), str(Path(profile).resolve())
        harness.nodewright_command = lambda *args: [sys.executable, sampler, out, "nodewright",
                                                    *args]
    controller = start_controller("bench", installation.kubeconfig, workdir)
    try:
        eventually(lambda: controller.readyz()[0] == 200, timeout=60, what="controller ready")
        before = requests_by_method(controller.metrics())
        started, wall_start = time.monotonic(), time.time()
        plane.kubectl("scale", "deployment", "scale", "--replicas", str(pods))
        bound_at = running_at = None
        total = bound = running = 0
        while running_at is None and time.monotonic() - started < timeout:
            total, bound, running = pod_states(plane)
            now = time.monotonic() - started
            if bound_at is None and total == pods and bound == pods:
                bound_at = now
            if total == pods and running == pods:
                running_at = now
            time.sleep(0.5)
        rss, cpu = process_stats(controller.process.pid)
        after = requests_by_method(controller.metrics())
        claims = plane.items("nodeclaims.karpenter.sh")
        milestones = timeline(plane, claims, wall_start)
        waits = stages(plane)
        types = Counter(c["metadata"]["labels"].get("node.kubernetes.io/instance-type", "?")
                        for c in claims)
    finally:
        controller.stop()
        if not keep:
            clean_cluster(plane, ("default",))
        if not was_running and not keep:
            subprocess.run([str(plane.script), "stop"], capture_output=True, check=False,
                           env={**os.environ, "NW_K8S_HOME": str(home)})
    made = after - before
    return {
        "pods": pods,
        "machine": machine(),
        "seconds_to_all_bound": round(bound_at, 1) if bound_at is not None else
        f"not within {timeout:.0f} s ({bound} bound)",
        "seconds_to_all_running": round(running_at, 1) if running_at is not None else
        f"not within {timeout:.0f} s ({running} running of {total})",
        "nodeclaims": len(claims),
        "instance_types": dict(types),
        "api_requests": sum(made.values()),
        "api_requests_by_method": dict(made),
        "api_requests_per_pod": round(sum(made.values()) / pods, 2),
        "controller_peak_rss_mb": round(rss, 1),
        "controller_cpu_seconds": round(cpu, 1),
        "timeline_seconds": milestones,
        "pod_stages_seconds_p50_p90_max": waits,
        "log": str(controller.log_path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="give up waiting after this many seconds (default 600)")
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster as it ends, to look at it")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", metavar="FILE",
                        help="sample the controller's stacks into FILE")
    args = parser.parse_args()
    result = run(args.pods, args.timeout, args.profile, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
