#!/usr/bin/env python3
"""Simulator benchmark: `nodewright simulate` end to end, wall time and peak memory.

Three runs, each in a process of its own (the command as a user runs it, imports included;
CPU time and peak RSS from the child's rusage, which another process's load does not
inflate the way it inflates wall time):

- workshop: examples/scenarios/workshop.yaml with --report (goal: under 5 s wall);
- scale-1000: 1,000 pods of 1 vCPU / 2 GiB on the workshop NodePool (c5 and m5, on-demand),
  settled, then scaled in to 100 and settled again while consolidation shrinks the fleet
  (goal: under 30 s);
- day-10000: 10,000 pods at the daily peak, rescaled every hour for 24 hours following a
  day's load curve, 250m / 512 MiB each, on a NodePool of c/m/r families (goal: under
  5 minutes).

    python bench/simulate.py [--only workshop,scale-1000,day-10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSHOP = ROOT / "examples" / "workshop"
NODEWRIGHT = [sys.executable, "-m", "nodewright"]
GOALS = {"workshop": 5.0, "scale-1000": 30.0, "day-10000": 300.0}
# Share of the daily peak for each hour, 00:00 to 23:00 (a business day's curve).
DAY_CURVE = (0.10, 0.08, 0.07, 0.07, 0.08, 0.12, 0.25, 0.45, 0.70, 0.90, 1.00, 0.95,
             0.85, 0.90, 1.00, 0.95, 0.85, 0.70, 0.50, 0.35, 0.25, 0.18, 0.14, 0.12)


@dataclass
class Measurement:
    name: str
    seconds: float
    cpu_seconds: float
    goal: float
    peak_rss_mib: float
    virtual_time: str
    events: int
    launched: int
    peak_nodes: int
    disruptions: dict[str, int]
    passed: bool


def workload(name: str, cpu: str, memory: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}, namespace: default}}
        spec:
          replicas: 0
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              nodeSelector: {{type: karpenter}}
              containers:
                - name: {name}
                  image: registry.k8s.io/pause:3.9
                  resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}
        """)


def nodepool(families: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata: {{name: default}}
        spec:
          template:
            metadata: {{labels: {{type: karpenter}}}}
            spec:
              nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
              requirements:
                - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
                - {{key: karpenter.k8s.aws/instance-family, operator: In, values: [{families}]}}
          disruption:
            consolidationPolicy: WhenEmptyOrUnderutilized
            consolidateAfter: 1m
        """)


def write_scale_1000(folder: Path, pods: int = 1000) -> Path:
    """The scale-1000 scenario (`pods` replicas, then a tenth of them)."""
    (folder / "app.yaml").write_text(workload("app", "1", "2Gi"))
    (folder / "nodepool.yaml").write_text(nodepool("c5, m5"))
    scenario = folder / "scale-1000.yaml"
    scenario.write_text(textwrap.dedent(f"""\
        name: scale-1000
        manifests: [{WORKSHOP / 'ec2nodeclass.yaml'}, {WORKSHOP / 'daemonsets.yaml'},
                    nodepool.yaml, app.yaml]
        steps:
          - scale: {{name: app, replicas: {pods}}}
          - settle: {{timeout: 1h}}
          - expect: {{pendingPods: 0}}
          - scale: {{name: app, replicas: {pods // 10}}}
          - settle: {{timeout: 2h}}
          - expect: {{pendingPods: 0, violations: 0}}
        """))
    return scenario


def write_day_10000(folder: Path, peak: int = 10_000, hour: str = "1h") -> Path:
    """The day-10000 scenario (`peak` replicas at the daily peak; each of the curve's hours
    lasts `hour`, a shorter one for a smoke run)."""
    (folder / "app.yaml").write_text(workload("app", "250m", "512Mi"))
    (folder / "nodepool.yaml").write_text(nodepool("c6i, m6i, r6i, c5, m5, r5"))
    steps = []
    for share in DAY_CURVE:
        steps.append(f"  - scale: {{name: app, replicas: {round(peak * share)}}}")
        steps.append(f"  - wait: {hour}")
    scenario = folder / "day-10000.yaml"
    scenario.write_text(textwrap.dedent(f"""\
        name: day-10000
        manifests: [{WORKSHOP / 'ec2nodeclass.yaml'}, {WORKSHOP / 'daemonsets.yaml'},
                    nodepool.yaml, app.yaml]
        steps:
        """) + "\n".join(steps) + "\n  - expect: {pendingPods: 0, violations: 0}\n")
    return scenario


def run(name: str, scenario: Path, folder: Path) -> Measurement | None:
    timeline = folder / f"{name}.json"
    command = [*NODEWRIGHT, "simulate", str(scenario), "--quiet", "--json", str(timeline)]
    if name == "workshop":
        command += ["--report", str(folder / "workshop.html")]
    began = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "controller")})
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu_seconds = usage.ru_utime + usage.ru_stime
    if not timeline.exists():  # stopped (a signal) or refused the scenario: no JSON
        print(f"{name}: no result (exit status {child.returncode}) after {seconds:.1f} s "
              f"wall, {cpu_seconds:.1f} s CPU, peak RSS {usage.ru_maxrss / 1024:.0f} MiB",
              file=sys.stderr, flush=True)
        return None
    result = json.loads(timeline.read_text())
    summary = result["summary"]
    return Measurement(
        name=name, seconds=round(seconds, 2),
        cpu_seconds=round(cpu_seconds, 2), goal=GOALS[name],
        peak_rss_mib=round(usage.ru_maxrss / 1024, 1),
        virtual_time=result["timeline"][-1]["time"] if result["timeline"] else "00:00:00",
        events=len(result["timeline"]), launched=summary["launched"],
        peak_nodes=summary["peakNodes"], disruptions=summary["disruptions"],
        passed=child.returncode == 0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(GOALS), help="comma-separated benchmarks")
    parser.add_argument("--json", action="store_true", help="print JSON rows")
    args = parser.parse_args()
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        scenarios = {
            "workshop": lambda: ROOT / "examples" / "scenarios" / "workshop.yaml",
            "scale-1000": lambda: write_scale_1000(folder),
            "day-10000": lambda: write_day_10000(folder),
        }
        for name in wanted:
            measurement = run(name, scenarios[name](), folder)
            if measurement is None:
                continue
            rows.append(measurement)
            if not args.json:
                verdict = "met" if measurement.seconds <= measurement.goal else "NOT met"
                print(f"{name}: {measurement.seconds:.1f} s wall (goal {measurement.goal:g} s: "
                      f"{verdict}), {measurement.cpu_seconds:.1f} s CPU, peak RSS "
                      f"{measurement.peak_rss_mib:.0f} MiB, virtual "
                      f"{measurement.virtual_time}, {measurement.events} timeline events, "
                      f"{measurement.launched} launched, peak {measurement.peak_nodes} nodes, "
                      f"disruptions {measurement.disruptions}, expectations "
                      f"{'held' if measurement.passed else 'FAILED'}", flush=True)
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))


if __name__ == "__main__":
    main()
