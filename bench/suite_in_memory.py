"""Karpenter's seven performance tests, every phase, against the operator IN MEMORY: NOT the real
control plane.

bench/burst_in_memory.py runs this with `--test`. The tests, phases and bounds are
bench/perf_shapes.py's (Karpenter v1.14.1 `test/suites/performance/`); the phases run and
are measured by bench/karpenter_performance.py's `Run` (its wait, its utilization, its
table), here over the in-memory cluster of tests/operator/world.py and the operator of
`burst_in_memory.operator_world`: scale-out until the phase's pods are Running,
consolidation until no node has been draining or deleting for `--quiet` seconds, the
interference test's second scale-out, drift of every node (an annotation on the NodePool's
template, after Karpenter's 30 s of settling), the wide test's 30 Deployments out and in.

What differs from the real control plane's measure: the API server, kube-scheduler, the
Deployment controller, the kubelets and the simulated EC2 run in this process, so the RSS
is the whole process's; the controller's CPU is the operator's own threads (its driver,
workers and the threads they start), read every 5 s (the RSS every second).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import burst_in_memory
from burst_in_memory import IDENTITY, operator_world, thread_cpu
from karpenter_performance import (
    DISCOVERY_LABEL,
    PhaseResult,
    Run,
    draining,
    originals,
    run_phases,
    timeout_argument,
)
from perf_shapes import DRIFT, SCALE_OUT, TESTS, PerfTest, Phase, scaled

from nodewright import metrics
from nodewright.operator.logs import json_handler
from tests.operator.world import RealTimeWorld

# The brief's short names for Karpenter's tests.
ALIASES = {"hostname": "hostname-spreading", "hostname-xl": "hostname-spreading-xl",
           "wide": "wide-deployments"}


def test_names(text: str) -> list[str]:
    """`basic,hostname,...` or `all` as perf_shapes' test names; a clear error otherwise."""
    if text == "all":
        return list(TESTS)
    names = [ALIASES.get(name.strip(), name.strip()) for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in TESTS]
    if unknown:
        raise ValueError(f"--test: unknown test(s) {', '.join(unknown)}; there are "
                         f"{', '.join(TESTS)} (or hostname, hostname-xl, wide, all)")
    return names


def rss_mb() -> float:
    found = re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text())
    return int(found[1]) / 1024 if found else 0.0


class InMemorySampler:
    """The process's RSS every `interval` seconds and the operator threads' CPU every
    `cpu_every` samples (reading a few hundred threads' /proc files each second cost a
    tenth of the process's CPU); with `trace`, the cluster's counts on stderr every
    `trace` seconds."""

    def __init__(self, world: RealTimeWorld, interval: float = 1.0,
                 trace: float = 0.0, cpu_every: int = 5) -> None:
        self.world, self.interval, self.trace = world, interval, trace
        self.cpu_every, self._samples = cpu_every, 0
        self.rss: list[float] = []
        self._first = thread_cpu(IDENTITY)
        self._last = dict(self._first)
        self._process_first = time.process_time()
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()

    def _sample(self, cpu: bool = False) -> None:
        self.rss.append(rss_mb())
        self._samples += 1
        if cpu or self._samples % self.cpu_every == 0:
            self._last.update(thread_cpu(IDENTITY))

    def _run(self) -> None:
        traced = 0.0
        while not self._stop.is_set():
            self._sample()
            now = time.monotonic() - self._started
            if self.trace and now - traced >= self.trace:
                traced = now
                tally = disruption_tally()
                print(f"  {now:6.1f}s {census(self.world)}; disruption commands started "
                      f"{sum(v for k, v in tally.items() if k[0] == STARTED):.0f}, candidates "
                      f"failing validation {tally.get((FAILED_VALIDATIONS,), 0.0):.0f}, "
                      f"NodeClaims provisioned {tally.get((CREATED, 'provisioned'), 0.0):.0f}",
                      file=sys.stderr, flush=True)
                for line in unschedulable(self.world):
                    print(f"          {line}", file=sys.stderr, flush=True)
            self._stop.wait(self.interval)

    def controller_cpu_seconds(self) -> float:
        """The operator's threads' CPU since the start (a thread that ended between two
        samples counts up to its last sample: a round's short-lived create threads may
        lose a little)."""
        return sum(cpu - self._first.get(key, 0.0) for key, cpu in self._last.items())

    def stop(self) -> tuple[float, float, float]:
        """(P95 RSS MB, peak RSS MB, average controller CPU cores) over the sampling."""
        self._stop.set()
        self._thread.join(5)
        self._sample(cpu=True)
        rss = sorted(self.rss) or [0.0]
        p95 = rss[min(len(rss) - 1, round(0.95 * (len(rss) - 1)))]
        wall = time.monotonic() - self._started
        self.process_cores = (time.process_time() - self._process_first) / wall if wall else 0.0
        return p95, rss[-1], self.controller_cpu_seconds() / wall if wall else 0.0


def census(world: RealTimeWorld) -> str:
    """One line of what the cluster holds now: the workload's pods by state, NodeClaims
    launched and registered, nodes and those draining, instances alive."""
    with world.lock:
        pods = [p for p in world.memory.peek_all("Pod", "default")
                if p["metadata"].get("labels", {}).get(DISCOVERY_LABEL)]
        claims = world.memory.peek_all("NodeClaim")
        nodes = world.memory.peek_all("Node")
        instances = [i for i in world.cloud.list()
                     if i.state not in ("shutting-down", "terminated")]
    running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
    bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    deleting = sum(1 for p in pods if p["metadata"].get("deletionTimestamp"))
    launched = sum(1 for c in claims if (c.get("status") or {}).get("providerID"))
    registered = sum(1 for c in claims if any(
        k.get("type") == "Registered" and k.get("status") == "True"
        for k in (c.get("status") or {}).get("conditions") or []))
    claim_deleting = sum(1 for c in claims if c["metadata"].get("deletionTimestamp"))
    return (f"pods {len(pods)} bound {bound} running {running} deleting {deleting}; "
            f"nodeclaims {len(claims)} launched {launched} registered {registered} "
            f"deleting {claim_deleting}; nodes {len(nodes)} draining "
            f"{sum(1 for n in nodes if draining(n))}; instances {len(instances)}")


def rejections(world: RealTimeWorld) -> list[str]:
    """The consolidations dropped at validation so far, by Karpenter's failure reason, each
    with its newest message (the ConsolidationRejected events)."""
    with world.lock:
        events = [e for e in world.memory.peek_all("Event")
                  if e.get("reason") == "ConsolidationRejected"]
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        found = re.search(r"\(reason: (\w+)\)", str(event.get("note", "")))
        by_reason.setdefault(found[1] if found else "?", []).append(event)
    notes = []
    for reason, found in sorted(by_reason.items()):
        newest = max(found, key=lambda e: str(e.get("eventTime") or ""))
        notes.append(f"rejected at validation ({reason}): {len(found)} event(s), the newest "
                     f"{str(newest.get('note', ''))[:300]}")
    return notes


def unschedulable(world: RealTimeWorld, most: int = 3) -> list[str]:
    """Up to `most` of the workload's pending pods: the newest nomination the provisioner
    published for each and the newest FailedScheduling message kube-scheduler gave it."""
    with world.lock:
        pending = [p for p in world.memory.peek_all("Pod", "default")
                   if p["metadata"].get("labels", {}).get(DISCOVERY_LABEL)
                   and not (p.get("spec") or {}).get("nodeName")
                   and not p["metadata"].get("deletionTimestamp")][:most]
        if not pending:
            return []
        events = [e for e in world.memory.peek_all("Event", "default")
                  if e.get("reason") in ("FailedScheduling", "Nominated")]
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        key = (str((event.get("regarding") or {}).get("name", "")), str(event["reason"]))
        seen = newest.get(key)
        if seen is None or str(event.get("eventTime") or "") >= str(seen.get("eventTime") or ""):
            newest[key] = event
    lines = []
    for pod in pending:
        name = pod["metadata"]["name"]
        nominated = (newest.get((name, "Nominated")) or {}).get("note", "not nominated")
        refused = (newest.get((name, "FailedScheduling")) or {}).get(
            "note", "no FailedScheduling event")
        lines.append(f"pending {name} ({nominated}): {refused}")
    return lines


class InMemoryRun(Run):
    """karpenter_performance's phases over the in-memory cluster (no kubectl, no process)."""

    def __init__(self, world: RealTimeWorld, poll: float, quiet: float, timeout: float | None,
                 settle_before_drift: float = 30.0, trace: float = 0.0) -> None:
        self.world = world
        self.poll, self.quiet, self.timeout = poll, quiet, timeout
        self.settle_before_drift = settle_before_drift
        self.memory_of = "process"
        self.done_healthy: int | None = None
        self.trace = trace
        self.last_sampler: InMemorySampler | None = None
        self.originals: set[str] = set()

    def sampler(self) -> InMemorySampler:
        self.last_sampler = InMemorySampler(self.world, trace=self.trace)
        return self.last_sampler

    def pods(self) -> list[dict[str, Any]]:
        with self.world.lock:
            return [p for p in self.world.memory.peek_all("Pod", "default")
                    if p["metadata"].get("labels", {}).get(DISCOVERY_LABEL)]

    def nodes(self) -> list[dict[str, Any]]:
        with self.world.lock:
            return list(self.world.memory.peek_all("Node"))

    def set_replicas(self, test: PerfTest, phase: Phase, created: set[str]) -> None:
        by_name = {w.name: w for w in test.workloads}
        for name, replicas in phase.replicas.items():
            if name in created:
                self.world.scale(name, replicas)
            else:
                self.world.apply(by_name[name].manifest(replicas))
                created.add(name)

    def drift(self) -> set[str]:
        before = originals(self.nodes())
        self.world.cluster.patch("NodePool", "default", {"spec": {"template": {"metadata": {
            "annotations": {"test-drift-trigger": f"drift-{int(time.time())}"}}}}})
        self.originals = before
        return before

    def phase(self, test: PerfTest, index: int, phase: Phase,
              created: set[str]) -> PhaseResult:
        before = disruption_tally()
        result = super().phase(test, index, phase, created)
        if phase.kind != SCALE_OUT:
            result.notes.append(disruption_work(before, disruption_tally()))
            result.notes.extend(rejections(self.world))
        if self.last_sampler is not None:
            result.notes.append(
                f"process CPU {self.last_sampler.process_cores:.2f} cores "
                "(API server and its actors included)")
        result.notes.extend(integrity(self.world))
        if result.seconds is None:
            result.notes.append(f"STALLED (not done within {self.phase_timeout(phase):g} s): "
                                f"{census(self.world)}")
            if phase.kind == DRIFT:
                result.notes.extend(left_behind(self.world, self.originals))
        return result


# The disruption controller's Karpenter metrics that say where a phase's time went.
STARTED = "karpenter_voluntary_disruption_decisions_by_nodepool_total"
FAILED_VALIDATIONS = "karpenter_voluntary_disruption_failed_validations_total"
# NodeClaims created, by reason: `provisioned` in a consolidation is pods the disruption
# moved that kube-scheduler could not place.
CREATED = "karpenter_nodeclaims_created_total"
PASSES = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"


def disruption_tally() -> dict[tuple[str, ...], float]:
    """The disruption counters so far in this process: commands started by decision and
    reason, candidates that failed validation, and each method's evaluations (count and
    seconds)."""
    tally: dict[tuple[str, ...], float] = {}
    wanted = [STARTED, FAILED_VALIDATIONS, CREATED, f"{PASSES}_count", f"{PASSES}_sum"]
    for family in metrics.REGISTRY.restricted_registry(wanted).collect():
        for sample in family.samples:
            if sample.name == STARTED:
                key: tuple[str, ...] = (STARTED, sample.labels["decision"],
                                        sample.labels["reason"])
            elif sample.name == FAILED_VALIDATIONS:
                key = (FAILED_VALIDATIONS,)
            elif sample.name == CREATED:
                key = (CREATED, sample.labels["reason"])
            elif sample.name in (f"{PASSES}_count", f"{PASSES}_sum"):
                key = (sample.name, sample.labels["reason"],
                       sample.labels["consolidation_type"])
            else:
                continue
            tally[key] = tally.get(key, 0.0) + sample.value
    return tally


def disruption_work(before: dict[tuple[str, ...], float],
                    after: dict[tuple[str, ...], float]) -> str:
    """What the disruption controller did between two tallies, in one line: the commands it
    started, the candidates that failed their 15 s validation, and its evaluations by
    method (how many and their seconds)."""
    def done(key: tuple[str, ...]) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    started = ", ".join(f"{key[1]} {key[2]} {done(key):.0f}" for key in sorted(after)
                        if key[0] == STARTED and done(key)) or "none"
    evaluations = ", ".join(
        f"{key[2] or key[1]} {done(key):.0f} in {done((f'{PASSES}_sum', *key[1:])):.1f} s"
        for key in sorted(after) if key[0] == f"{PASSES}_count" and done(key))
    created = ", ".join(f"{key[1]} {done(key):.0f}" for key in sorted(after)
                        if key[0] == CREATED and done(key)) or "none"
    return (f"disruption commands started: {started}; candidates failing validation "
            f"{done((FAILED_VALIDATIONS,)):.0f}; evaluations {evaluations or 'none'}; "
            f"NodeClaims created: {created}")


def left_behind(world: RealTimeWorld, before: set[str]) -> list[str]:
    """Each node there before the drift (`before`: UIDs) and still there: its NodeClaim's
    conditions, annotations and taints, and its pods."""
    with world.lock:
        nodes = [n for n in world.memory.peek_all("Node")
                 if n["metadata"].get("uid") in before]
        claims = {str((c.get("status") or {}).get("nodeName", "")): c
                  for c in world.memory.peek_all("NodeClaim")}
        pods = world.memory.peek_all("Pod", "default")
    notes = []
    for node in nodes:
        name = node["metadata"]["name"]
        claim = claims.get(name) or {}
        conditions = {c.get("type"): c.get("status")
                      for c in (claim.get("status") or {}).get("conditions") or []}
        notes.append(
            f"left: {name} nodeclaim {claim.get('metadata', {}).get('name')} "
            f"conditions {conditions} annotations "
            f"{(claim.get('metadata') or {}).get('annotations')} taints "
            f"{node['spec'].get('taints')} pods "
            f"{sum(1 for p in pods if p['spec'].get('nodeName') == name)}")
    return notes


def integrity(world: RealTimeWorld) -> list[str]:
    """What Karpenter would not leave: a NodeClaim with more than one instance, an instance
    no NodeClaim holds, a NodeClaim launched long ago without a Node."""
    with world.lock:
        claims = world.memory.peek_all("NodeClaim")
        instances = [i for i in world.cloud.list()
                     if i.state not in ("shutting-down", "terminated")]
        nodes = world.memory.peek_all("Node")
    held = {str((c.get("status") or {}).get("providerID", "")) for c in claims}
    strays = [i.instance_id for i in instances if i.provider_id not in held]
    node_ids = {str(n["spec"].get("providerID", "")) for n in nodes}
    unnoded = [c["metadata"]["name"] for c in claims
               if (c.get("status") or {}).get("providerID")
               and c["status"]["providerID"] not in node_ids
               and not c["metadata"].get("deletionTimestamp")]
    notes = [f"{len(claims)} NodeClaims, {len(instances)} instances"]
    if strays:
        notes.append(f"INSTANCES WITHOUT A NODECLAIM: {', '.join(sorted(strays)[:5])}"
                     f"{' ...' if len(strays) > 5 else ''} ({len(strays)})")
    if unnoded:
        notes.append(f"launched NodeClaims without a Node: {len(unnoded)}")
    return notes


def run_in_memory(test: PerfTest, *, quiet: float = 180.0, poll: float = 1.0,
                  timeout: float | None = None, settle_before_drift: float = 30.0,
                  trace: float = 0.0, as_json: bool = False,
                  **world: Any) -> list[PhaseResult]:
    """Every phase of `test` on a fresh in-memory cluster and operator (`world`:
    burst_in_memory.operator_world's settings)."""
    with operator_world(**world) as (memory, _cloud, _operator, _api):
        run = InMemoryRun(memory, poll, quiet, timeout, settle_before_drift, trace)
        return run_phases(test, run, as_json, who="process")


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", required=True,
                        help=f"comma-separated: {', '.join(TESTS)} "
                             "(hostname, hostname-xl, wide), or all")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--quiet", type=float, default=180.0,
                        help="seconds without a draining node that end a consolidation "
                             "(Karpenter's stability wait: 60 cut a consolidation short)")
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--timeout", type=timeout_argument, default=None,
                        help="seconds per phase, or `bound` (the default): each phase's "
                             "Karpenter time bound, plus --quiet for a consolidation or drift")
    parser.add_argument("--settle-before-drift", type=float, default=30.0)
    parser.add_argument("--create-fleet", type=float, default=1.0, metavar="SECONDS")
    parser.add_argument("--launch-delay", type=float, default=2.0)
    parser.add_argument("--registration-delay", type=float, default=3.0)
    parser.add_argument("--max-vcpus", type=int, default=None)
    parser.add_argument("--trace", type=float, default=0.0, metavar="SECONDS",
                        help="the cluster's counts on stderr this often")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--switch-interval", type=float,
                        default=burst_in_memory.SWITCH_INTERVAL_SECONDS)
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.trace:
        # The disruption commands as they start and end (JSON lines, as the controller's),
        # and every warning.
        logging.getLogger().addHandler(json_handler(sys.stderr))
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("nodewright.controllers.disruption.orchestration").setLevel(
            logging.INFO)
        # The NodeClaims the provisioner creates and for which pods (in a consolidation:
        # pods the disruption moved that kube-scheduler could not place).
        logging.getLogger("nodewright.controllers.provisioning.provisioner").setLevel(
            logging.INFO)
    try:
        names = test_names(args.test)
    except ValueError as error:
        parser.error(str(error))
    sys.setswitchinterval(args.switch_interval)
    print("IN MEMORY, NOT THE REAL CONTROL PLANE: the in-memory API server, kube-scheduler, "
          "kubelets and simulated EC2 run in this process; RSS is the whole process's, "
          f"controller CPU the operator's threads. Load {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs.", file=sys.stderr if args.json else sys.stdout, flush=True)
    if len(names) > 1:
        return each_in_its_own_process(names, list(argv) if argv is not None else sys.argv[1:],
                                       args.json)
    results: list[PhaseResult] = []
    for name in names:
        test = scaled(TESTS[name], args.scale) if args.scale != 1 else TESTS[name]
        results += run_in_memory(
            test, quiet=args.quiet, poll=args.poll, timeout=args.timeout,
            settle_before_drift=args.settle_before_drift, trace=args.trace,
            as_json=args.json, create_fleet=args.create_fleet,
            launch_delay=args.launch_delay, registration_delay=args.registration_delay,
            max_vcpus=args.max_vcpus)
    if args.json:
        print(json.dumps([{**asdict(r), "in_memory": True} for r in results], indent=2,
                         default=str))
    return 0 if all(r.seconds is not None for r in results) else 1


def each_in_its_own_process(names: list[str], argv: list[str], as_json: bool) -> int:
    """Each test in a fresh process (this one's arguments, `--test` one name), so its RSS is
    its own and not what the tests before it left; their JSON lists joined."""
    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--test":
            skip = True
        elif not arg.startswith("--test="):
            rest.append(arg)
    code, rows = 0, []
    for name in names:
        done = subprocess.run([sys.executable, __file__, "--test", name, *rest],
                              stdout=subprocess.PIPE if as_json else None, text=True,
                              check=False)
        code = code or done.returncode
        if as_json and done.stdout:
            rows += json.loads(done.stdout)
    if as_json:
        print(json.dumps(rows, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
