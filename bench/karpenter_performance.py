#!/usr/bin/env python3
"""Karpenter's performance suite (v1.14.1, `test/suites/performance/`) run against Nodewright on
the real control plane of ../shared/k8s.

Each test (bench/perf_shapes.py) starts from a clean cluster: Nodewright installed from
`nodewright manifests` and run as `nodewright controller --cloud sim` under the manifests'
ServiceAccount, the workshop's EC2NodeClass and Karpenter's performance NodePool. Simulated
instances run 2 s after CreateFleet and register 3 s later (kwok-like: kwok's nodes
register in a few seconds; `--launch-delay`, `--registration-delay` change it). Each phase
sets the Deployments' replicas (or drifts the NodePool with a template annotation, as
Karpenter's drift test does) and measures what Karpenter's Report* functions measure:

- time: until the phase's pod count is healthy (Running); for consolidation and drift,
  until no node has been draining or deleting for `--quiet` seconds (reported is the time
  the last one stopped; Karpenter's own measure adds its 3-minute stability wait);
- CPU and memory utilization: Karpenter's Monitor.AvgUtilization, per node of a NodePool
  the requests of its pods over its allocatable, averaged;
- the controller's P95 RSS and average CPU cores, sampled from /proc every second.

Each number is printed beside Karpenter's bound and the ratio. A benchmark, never a test:
run it alone on a quiet machine (it prints the load average).

    python bench/karpenter_performance.py [--test basic,drift|all] [--scale 1] [--json]
        [--large]   # the 5,000-pod shape (basic x5) and the memory per 1,000 pods / 100 nodes

Without the Kubernetes binaries (../shared/k8s/README.md) it says so and exits 3;
bench/burst_in_memory.py runs the basic test's burst against the operator in memory (not
the real control plane) instead.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "controller"))
sys.path.insert(0, str(ROOT / "bench"))
# The controller process runs this checkout's package, whatever the interpreter has installed.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT / "controller"), os.environ.get("PYTHONPATH")]))

import yaml  # noqa: E402
from perf_shapes import (  # noqa: E402
    CONSOLIDATION,
    DISCOVERY_LABEL,
    DRIFT,
    LARGE_SHAPE,
    SCALE_OUT,
    TESTS,
    Bounds,
    PerfTest,
    Phase,
    scaled,
)

from tests.conftest import EXAMPLES, SHARED  # noqa: E402
from tests.e2e import k8s_versions  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    Controller,
    ControlPlane,
    Installation,
    clean_cluster,
    eventually,
    start_control_plane,
    start_controller,
)
from tests.perf_shape import perf_nodepool  # noqa: E402

NODEPOOL_LABEL = "karpenter.sh/nodepool"
DISRUPTED_TAINT = "karpenter.sh/disrupted"


# --- measuring -------------------------------------------------------------------------------


class ProcessSampler:
    """The controller's RSS and CPU, read from /proc every `interval` seconds."""

    def __init__(self, pid: int, interval: float = 1.0) -> None:
        self.pid, self.interval = pid, interval
        self.rss_mb: list[float] = []
        self.cpu_seconds: list[tuple[float, float]] = []  # (monotonic, cpu seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        while not self._stop.is_set():
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
                stat = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                return
            found = re.search(r"VmRSS:\s+(\d+)", status)
            if found:
                self.rss_mb.append(int(found[1]) / 1024)
            self.cpu_seconds.append((time.monotonic(), (int(stat[11]) + int(stat[12])) / ticks))
            self._stop.wait(self.interval)

    def stop(self) -> tuple[float, float, float]:
        """(P95 RSS MB, peak RSS MB, average CPU cores) over the sampling."""
        self._stop.set()
        self._thread.join(5)
        rss = sorted(self.rss_mb) or [0.0]
        p95 = rss[min(len(rss) - 1, round(0.95 * (len(rss) - 1)))]
        if len(self.cpu_seconds) >= 2:
            (t0, c0), (t1, c1) = self.cpu_seconds[0], self.cpu_seconds[-1]
            cores = (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0
        else:
            cores = 0.0
        return p95, rss[-1], cores


def quantity(text: str | int | float) -> float:
    """A Kubernetes quantity as a number (cores for cpu, bytes for memory)."""
    value = str(text)
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 1e-3, "k": 1e3,
                "M": 1e6, "G": 1e9, "T": 1e12}
    for suffix, factor in suffixes.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def container_requests(pod: dict[str, Any]) -> dict[str, float]:
    total: dict[str, float] = {}
    for container in pod.get("spec", {}).get("containers", []):
        for name, amount in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0.0) + quantity(amount)
    return total


def average_utilization(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                        resource: str) -> float:
    """Karpenter's Monitor.AvgUtilization: for each node a NodePool launched, the requests of
    the pods bound to it over its allocatable; the mean over those nodes."""
    requested: dict[str, float] = {}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if node and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            requested[node] = requested.get(node, 0.0) + container_requests(pod).get(resource, 0)
    shares = []
    for node in nodes:
        if not node["metadata"].get("labels", {}).get(NODEPOOL_LABEL):
            continue
        allocatable = quantity(node.get("status", {}).get("allocatable", {}).get(resource, 0))
        if allocatable:
            shares.append(requested.get(node["metadata"]["name"], 0.0) / allocatable)
    return statistics.fmean(shares) if shares else 0.0


def originals(nodes: list[dict[str, Any]]) -> set[str]:
    """The UIDs of the nodes a NodePool launched."""
    return {n["metadata"].get("uid", "") for n in nodes
            if n["metadata"].get("labels", {}).get(NODEPOOL_LABEL)}


def draining(node: dict[str, Any]) -> bool:
    return bool(node["metadata"].get("deletionTimestamp")) or any(
        taint.get("key") == DISRUPTED_TAINT for taint in node.get("spec", {}).get("taints", []))


# --- running ---------------------------------------------------------------------------------


@dataclass
class PhaseResult:
    test: str
    phase: int
    kind: str
    pods: int
    seconds: float | None
    nodes: int
    cpu_utilization: float
    memory_utilization: float
    p95_memory_mb: float
    peak_memory_mb: float
    avg_cpu_cores: float
    bounds: Bounds
    notes: list[str] = field(default_factory=list)
    # Whose RSS: the controller's process here; in memory, the whole process.
    memory_of: str = "controller"

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(measure, ours, Karpenter's bound, ratio) for the printout."""
        def ratio(ours: float | None, bound: float | None) -> str:
            if ours is None or bound is None or bound == 0:
                return ""
            return f"{ours / bound:.2f}"

        took = "not within the timeout" if self.seconds is None else f"{self.seconds:.1f} s"
        b = self.bounds
        return [
            ("time", took, f"< {b.seconds:g} s" if b.seconds else "-",
             ratio(self.seconds, b.seconds)),
            ("CPU utilization", f"{self.cpu_utilization:.3f}",
             f"> {b.cpu_utilization}" if b.cpu_utilization else "-",
             ratio(self.cpu_utilization, b.cpu_utilization)),
            ("memory utilization", f"{self.memory_utilization:.3f}",
             f"> {b.memory_utilization}" if b.memory_utilization else "-",
             ratio(self.memory_utilization, b.memory_utilization)),
            (f"{self.memory_of} P95 RSS", f"{self.p95_memory_mb:.0f} MB",
             f"< {b.p95_memory_mb:g} MB" if b.p95_memory_mb else "-",
             ratio(self.p95_memory_mb, b.p95_memory_mb)),
            ("controller avg CPU", f"{self.avg_cpu_cores:.2f} cores",
             f"< {b.avg_cpu_cores:g}" if b.avg_cpu_cores else "-",
             ratio(self.avg_cpu_cores, b.avg_cpu_cores)),
        ]


# A phase Karpenter sets no time bound for (the 5,000-pod shape) with `--timeout bound`.
UNBOUNDED_PHASE_TIMEOUT = 3600.0


def timeout_argument(text: str) -> float | None:
    """`--timeout`: seconds per phase, or `bound` for each phase's Karpenter time bound
    (None)."""
    if text == "bound":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--timeout: {text!r} is neither seconds nor 'bound'") from None


class Run:
    def __init__(self, plane: ControlPlane, installation: Installation, controller: Controller,
                 poll: float, quiet: float, timeout: float | None) -> None:
        self.plane, self.installation, self.controller = plane, installation, controller
        self.poll, self.quiet, self.timeout = poll, quiet, timeout
        # Karpenter's drift test lets the cluster settle 30 s before it drifts the NodePool.
        self.settle_before_drift = 30.0
        self.memory_of = "controller"
        self.done_healthy: int | None = None

    def sampler(self) -> ProcessSampler:
        """What measures the controller during a phase: stop() gives (P95 RSS MB, peak RSS
        MB, average CPU cores)."""
        return ProcessSampler(self.controller.process.pid)

    def pods(self) -> list[dict[str, Any]]:
        return self.plane.items("pods", "-n", "default", "-l", DISCOVERY_LABEL)

    def nodes(self) -> list[dict[str, Any]]:
        return self.plane.items("nodes")

    def healthy(self, pods: list[dict[str, Any]]) -> int:
        return sum(1 for pod in pods if pod.get("status", {}).get("phase") == "Running"
                   and not pod["metadata"].get("deletionTimestamp"))

    def set_replicas(self, test: PerfTest, phase: Phase, created: set[str]) -> None:
        by_name = {w.name: w for w in test.workloads}
        for name, replicas in phase.replicas.items():
            if name in created:
                self.plane.kubectl("-n", "default", "scale", "deployment", name,
                                   "--replicas", str(replicas))
            else:
                self.plane.apply(yaml.safe_dump(by_name[name].manifest(replicas)))
                created.add(name)

    def drift(self) -> set[str]:
        """Karpenter's drift trigger: an annotation on the NodePool's template; the nodes
        there were before it (by UID: a replacement may reuse a terminated instance's
        private IP, hence its node name)."""
        before = originals(self.nodes())
        patch = {"spec": {"template": {"metadata": {"annotations": {
            "test-drift-trigger": f"drift-{int(time.time())}"}}}}}
        self.plane.kubectl("patch", "nodepool", "default", "--type", "merge", "-p",
                           json.dumps(patch))
        return before

    def phase_timeout(self, phase: Phase) -> float:
        """How long the phase may take before it is reported as not done: `timeout` when
        given in seconds; with `timeout` None, Karpenter's time bound for the phase (plus the
        quiet window a consolidation or drift ends with), so a stalled phase ends at the
        bound it would fail."""
        if self.timeout is not None:
            return self.timeout
        if phase.bounds.seconds is None:
            return UNBOUNDED_PHASE_TIMEOUT
        return phase.bounds.seconds + (0.0 if phase.kind == SCALE_OUT else self.quiet)

    def wait(self, phase: Phase, started: float, originals: set[str]) -> float | None:
        """Seconds until the phase is done (None: not within the timeout). `done_healthy`
        is then the healthy pods counted when it was judged done: by the time the result is
        written, consolidation may already be moving some."""
        self.done_healthy = None
        last_activity = started
        healthy_at: float | None = None
        healthy_count = 0
        limit = self.phase_timeout(phase)
        while time.monotonic() - started < limit:
            pods, nodes = self.pods(), self.nodes()
            now = time.monotonic()
            count = self.healthy(pods)
            enough = count >= phase.healthy if phase.at_least else count == phase.healthy
            if enough and len(pods) == count and healthy_at is None:
                healthy_at, healthy_count = now, count
            if phase.kind == SCALE_OUT:
                if healthy_at is not None:
                    self.done_healthy = healthy_count
                    return healthy_at - started
            else:
                busy = any(draining(n) for n in nodes)
                left = originals & {n["metadata"].get("uid", "") for n in nodes}
                if busy or left or not enough:
                    last_activity = now
                    healthy_at = None
                elif now - last_activity >= self.quiet:
                    self.done_healthy = count
                    return last_activity - started
            time.sleep(self.poll)
        return None

    def phase(self, test: PerfTest, index: int, phase: Phase, created: set[str]) -> PhaseResult:
        if phase.kind == DRIFT and self.settle_before_drift:
            time.sleep(self.settle_before_drift)
        sampler = self.sampler()
        started = time.monotonic()
        originals: set[str] = set()
        if phase.kind == DRIFT:
            originals = self.drift()
        else:
            self.set_replicas(test, phase, created)
        seconds = self.wait(phase, started, originals)
        p95, peak, cores = sampler.stop()
        pods, nodes = self.pods(), self.nodes()
        managed = [n for n in nodes if n["metadata"].get("labels", {}).get(NODEPOOL_LABEL)]
        healthy = self.done_healthy if self.done_healthy is not None else self.healthy(pods)
        return PhaseResult(
            test.name, index + 1, phase.kind, healthy, seconds, len(managed),
            average_utilization(nodes, pods, "cpu"), average_utilization(nodes, pods, "memory"),
            p95, peak, cores, phase.bounds, memory_of=self.memory_of)


def protected_nodes_kept(run: Run, before: set[str]) -> str:
    """do-not-disrupt: of the nodes that ran a protected pod before consolidation, how many
    are still there (Karpenter expects more than none)."""
    now = {n["metadata"]["name"] for n in run.nodes()}
    return f"{len(before & now)} of {len(before)} nodes with do-not-disrupt pods kept"


def run_test(test: PerfTest, args: argparse.Namespace, plane: ControlPlane,
             workdir: Path) -> list[PhaseResult]:
    clean_cluster(plane, ("default",))
    installation = Installation.install(plane, workdir)
    plane.apply(EXAMPLES / "workshop" / "ec2nodeclass.yaml")
    plane.apply(yaml.safe_dump(perf_nodepool()))
    timing = (f"launchDelay={args.launch_delay:g}s,registrationDelay="
              f"{args.registration_delay:g}s,terminationDelay=1s,startupTaintDelay=1s")
    controller = start_controller(f"perf-{test.name.replace(' ', '-')}",
                                  installation.kubeconfig, workdir,
                                  env={"NODEWRIGHT_SIM_TIMING": timing})
    try:
        eventually(lambda: controller.readyz()[0] == 200, timeout=120, what="controller ready")
        run = Run(plane, installation, controller, args.poll, args.quiet, args.timeout)
        run.settle_before_drift = args.settle_before_drift
        return run_phases(test, run, args.json)
    finally:
        controller.stop()
        clean_cluster(plane, ("default",))


def run_phases(test: PerfTest, run: Run, as_json: bool, who: str = "controller"
               ) -> list[PhaseResult]:
    """The test's phases one after another on `run`, each printed as it ends."""
    results = []
    created: set[str] = set()
    protected_before: set[str] = set()
    for index, phase in enumerate(test.phases):
        if phase.kind == CONSOLIDATION and test.name.startswith("do-not-disrupt"):
            protected_before = {p["spec"].get("nodeName", "") for p in run.pods()
                                if p["metadata"]["labels"].get("app") == "do-not-disrupt-app"}
        result = run.phase(test, index, phase, created)
        if protected_before:
            result.notes.append(protected_nodes_kept(run, protected_before))
        if result.pods and result.nodes:
            result.notes.append(
                f"{who} {result.p95_memory_mb / (result.pods / 1000):.0f} MB per "
                f"1,000 pods, {result.p95_memory_mb / (result.nodes / 100):.0f} MB per "
                "100 nodes (P95 RSS)")
        results.append(result)
        print_result(result, as_json)
    return results


def print_result(result: PhaseResult, as_json: bool) -> None:
    if as_json:
        return
    print(f"\n{result.test}, phase {result.phase} ({result.kind}): {result.pods} pods on "
          f"{result.nodes} nodes" + "".join(f"; {note}" for note in result.notes), flush=True)
    print(f"  {'measure':22} {'Nodewright':>16} {'Karpenter bound':>16} {'ratio':>7}")
    for measure, ours, bound, ratio in result.rows():
        print(f"  {measure:22} {ours:>16} {bound:>16} {ratio:>7}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", default="all", help=f"comma-separated: {', '.join(TESTS)}")
    parser.add_argument("--large", action="store_true",
                        help="the 5,000-pod shape (basic x5) instead")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="replicas times this (0.01 for a smoke run)")
    parser.add_argument("--launch-delay", type=float, default=2.0)
    parser.add_argument("--registration-delay", type=float, default=3.0)
    parser.add_argument("--quiet", type=float, default=60.0,
                        help="seconds without a draining node that end a consolidation")
    parser.add_argument("--poll", type=float, default=2.0)
    parser.add_argument("--settle-before-drift", type=float, default=30.0,
                        help="seconds between the scale-out and the drift (Karpenter's 30)")
    parser.add_argument("--timeout", type=timeout_argument, default=3600.0,
                        help="seconds per phase, or `bound`: each phase's Karpenter time "
                             "bound (plus --quiet for a consolidation or drift)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    names = list(TESTS) if args.test == "all" else [n.strip() for n in args.test.split(",")]
    unknown = [name for name in names if name not in TESTS]
    if unknown:
        parser.error(f"unknown test(s) {', '.join(unknown)}; there are {', '.join(TESTS)}")
    tests = [LARGE_SHAPE] if args.large else [TESTS[name] for name in names]
    tests = [scaled(test, args.scale) if args.scale != 1 else test for test in tests]

    script = SHARED / "k8s" / "control-plane"
    if not script.exists():
        print(f"the control plane's script is not at {script}", file=sys.stderr)
        return 3
    os.environ.setdefault("NW_K8S_VERSION", k8s_versions.chosen(script.parent))
    home = Path(os.environ.get("NW_K8S_HOME") or "/tmp/nw-k8s-bench")
    plane, why_not, was_running = start_control_plane(script, home)
    if plane is None:
        print(f"{why_not}\n(the benchmark needs the Kubernetes binaries: see "
              f"{script.parent / 'README.md'}; bench/burst_in_memory.py runs the basic "
              f"burst in memory, not on the real control plane)", file=sys.stderr)
        return 3
    print(f"Kubernetes {plane.version}, load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs", flush=True)
    results: list[PhaseResult] = []
    try:
        with tempfile.TemporaryDirectory(prefix="nodewright-perf-") as folder:
            for test in tests:
                results += run_test(test, args, plane, Path(folder))
    finally:
        if not was_running:
            subprocess.run([str(script), "stop"], capture_output=True, check=False,
                           env={**os.environ, "NW_K8S_HOME": str(home)})
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
