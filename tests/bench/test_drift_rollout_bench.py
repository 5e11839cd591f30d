"""bench/drift_rollout.py runs, at a tiny size, so it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drift_rollout.py"


def test_the_drift_roll_out_benchmark_runs_and_reports_against_karpenter() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--nodes", "4", "--budget", "50",
                           "--json"], capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    row = json.loads(done.stdout)
    assert row["nodes"] == 4 and row["most_commands_in_flight"] == 2
    assert row["karpenter_seconds"] > 0 and row["cluster_seconds"] > 0
