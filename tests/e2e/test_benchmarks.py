"""The benchmarks that need the real control plane run here at a tiny size, so none can rot:
Karpenter's performance suite (bench/karpenter_performance.py) with its basic test at a
two-hundred-and-fiftieth of its pods, and the scale benchmark (bench/e2e_scale.py) with
five pods, on this worker's control plane."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.e2e.harness import REPO_ROOT, ControlPlane


def test_karpenters_basic_performance_test_runs_at_a_tiny_size(
        control_plane: ControlPlane) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "karpenter_performance.py"), "--test",
         "basic", "--scale", "0.004", "--quiet", "5", "--poll", "1", "--timeout", "300",
         "--json"], capture_output=True, text=True, check=False, timeout=900, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    phases = json.loads(done.stdout[done.stdout.index("["):])
    assert [(p["kind"], p["pods"]) for p in phases] == [("scale-out", 4), ("consolidation", 2)]
    assert all(p["seconds"] is not None for p in phases), phases
    assert phases[0]["nodes"] >= 1 and 0 < phases[0]["cpu_utilization"] <= 1
    assert phases[0]["p95_memory_mb"] > 0


def test_the_scale_benchmark_runs_at_a_tiny_size(control_plane: ControlPlane) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "e2e_scale.py"), "--pods", "5",
         "--timeout", "300", "--json"],
        capture_output=True, text=True, check=False, timeout=900, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    row = json.loads(done.stdout[done.stdout.index("{"):])
    assert row["pods"] == 5 and row["nodeclaims"] >= 1
    assert isinstance(row["seconds_to_all_running"], float), row
    assert row["api_requests"] > 0 and row["controller_peak_rss_mb"] > 0
