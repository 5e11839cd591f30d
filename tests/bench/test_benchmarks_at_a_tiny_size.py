"""Every benchmark of bench/ without a test of its own, run at a tiny size so none can rot
unnoticed (bench/controller_latency.py once crashed at HEAD and nothing noticed). Each
test checks the benchmark ran to the end and its row makes sense; no timings are
asserted. bench/e2e_scale.py runs in tests/e2e/test_benchmarks.py (it needs the real
control plane). The others: test_controller_latency, test_costbound, test_drift_rollout_bench,
test_karpenter_performance (with perf_shapes) and test_snapshot_scale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import controllers  # bench/controllers.py
import disruption  # bench/disruption.py
import e2e_scale  # bench/e2e_scale.py
import scheduling  # bench/scheduling.py
import simulate  # bench/simulate.py

from nodewright.sim.loading import load_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_the_controller_benchmark_binds_every_pod() -> None:
    row = controllers.measure(20)
    assert row["allBound"] and row["pods"] == 20
    assert row["nodeClaims"] > 0 and row["solves"] > 0


def test_the_disruption_benchmark_judges_a_full_cluster_and_consolidates_the_others() -> None:
    full = disruption.one_pass(6, 30, "full")
    assert (full["shape"], full["nodes"], full["pods"]) == ("full", 6, 30)
    assert full["decision"] == "nothing to do" and full["verdicts"] == 6
    for shape in ("packed", "underutilized"):
        row = disruption.one_pass(6, 30, shape)
        assert "consolidation" in row["decision"], row


def test_the_scheduling_benchmark_solves_and_bounds_a_row() -> None:
    diverse = scheduling.measure("synthetic", scheduling.synthetic_catalog(), 20,
                                 "diverse", "default", 42, bound=False)
    assert diverse["pods"] == 20 and diverse["unschedulable"] == 0 and diverse["nodes"] > 0
    bounds: dict[str, dict[str, object]] = {}
    generic = scheduling.measure("synthetic", scheduling.synthetic_catalog(), 10,
                                 "generic", "default", 42, True, bounds)
    assert generic["boundSource"] == "computed" and len(bounds) == 1
    assert generic["lowerBound"] <= generic["hourlyCost"] + 1e-9
    print(scheduling._line(generic))


def test_the_preference_benchmarks_respect_and_ignore_the_preferences() -> None:
    """Karpenter's BenchmarkRespectPreferences and BenchmarkIgnorePreferences at 30 pods:
    respected, the weight-1 hostname anti-preference gives each pod its own node in the
    preferred zone; ignored, the pods share nodes."""
    catalog = scheduling.synthetic_catalog()
    respected = scheduling.measure("synthetic", catalog, 30, "preferences", "default", 42,
                                   bound=False)
    ignored = scheduling.measure("synthetic", catalog, 30, "preferences-ignored", "default",
                                 42, bound=False)
    assert respected["unschedulable"] == ignored["unschedulable"] == 0
    assert respected["nodes"] == 30
    assert ignored["nodes"] < 30


@pytest.mark.parametrize("name", ["workshop", "scale-1000", "day-10000"])
def test_the_simulator_benchmark_runs_each_scenario(name: str, tmp_path: Path) -> None:
    scenarios = {
        "workshop": lambda: ROOT / "examples" / "scenarios" / "workshop.yaml",
        "scale-1000": lambda: simulate.write_scale_1000(tmp_path, pods=10),
        # The day's 24 steps ten minutes apart: still longer than the NodePool's
        # consolidateAfter (1m), so each scale-in is consolidated before the next step.
        "day-10000": lambda: simulate.write_day_10000(tmp_path, peak=20, hour="10m"),
    }
    scenario = scenarios[name]()
    loaded, problems = load_scenario(scenario)
    assert loaded is not None, problems
    measurement = simulate.run(name, scenario, tmp_path)
    assert measurement is not None and measurement.passed, name
    assert measurement.launched > 0


def test_the_sampler_profiles_a_module_run_under_it(tmp_path: Path) -> None:
    out = tmp_path / "profile.txt"
    subprocess.run([sys.executable, str(ROOT / "bench" / "sampler.py"), str(out), "timeit",
                    "-n", "20000", "sum(range(100))"], check=True, capture_output=True)
    text = out.read_text()
    assert "== thread" in text and "-- inclusive" in text


def test_the_e2e_scale_benchmark_reads_the_controllers_request_counts() -> None:
    """The run needs a real control plane (tests/e2e/test_benchmarks.py runs it at a tiny
    size); what it reads from the controller's /metrics is checked here, and its imports."""
    metrics = "\n".join([
        "# TYPE rest_client_requests_total counter",
        'rest_client_requests_total{code="200",host="h",method="GET"} 7',
        'rest_client_requests_total{code="201",host="h",method="POST"} 2',
        'rest_client_requests_total{code="409",host="h",method="POST"} 1.0',
    ])
    assert e2e_scale.requests_by_method(metrics) == {"GET": 7, "POST": 3}
