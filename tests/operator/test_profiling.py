"""ENABLE_PROFILING: /debug/pprof/ on the metrics port, Python's counterpart of Go's pprof:
an index, every thread's stack, a sampled CPU profile in folded stacks, and a count of live
objects by type. Off by default."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

from nodewright.operator import profiling
from nodewright.operator.endpoints import MetricsEndpoint


def fetch(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def spin_until(stop: threading.Event) -> None:
    """A busy controller: its frame is what the stack dump and the profile must show."""
    while not stop.is_set():
        sum(range(1000))


def test_profiling_is_off_by_default() -> None:
    endpoint = MetricsEndpoint(0, address="127.0.0.1")
    try:
        _, answer = fetch(endpoint.port, "/debug/pprof/threads")
        metrics_status, _ = fetch(endpoint.port, "/metrics")
    finally:
        endpoint.close()
    assert metrics_status == 200
    # prometheus_client answers every path with the metrics: no stack is ever shown.
    assert "thread '" not in answer and "# HELP" in answer


def test_with_profiling_the_metrics_port_serves_metrics_and_the_profiles() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=spin_until, args=(stop,), name="busy-controller",
                            daemon=True)
    busy.start()
    endpoint = MetricsEndpoint(0, address="127.0.0.1", profiling=True)
    try:
        metrics_status, metrics_text = fetch(endpoint.port, "/metrics")
        index_status, index = fetch(endpoint.port, "/debug/pprof/")
        threads_status, threads = fetch(endpoint.port, "/debug/pprof/threads")
        goroutine_status, goroutines = fetch(endpoint.port, "/debug/pprof/goroutine")
        profile_status, profile = fetch(endpoint.port, "/debug/pprof/profile?seconds=0.3")
        heap_status, heap = fetch(endpoint.port, "/debug/pprof/heap")
        bad_status, bad = fetch(endpoint.port, "/debug/pprof/profile?seconds=forever")
        unknown_status, _ = fetch(endpoint.port, "/debug/pprof/block")
    finally:
        endpoint.close()
        stop.set()
        busy.join()
    assert metrics_status == 200 and "# HELP" in metrics_text
    assert index_status == 200 and "/debug/pprof/profile?seconds=30" in index
    assert threads_status == goroutine_status == 200
    assert "thread 'busy-controller'" in threads and "in spin_until" in threads
    assert "thread 'busy-controller'" in goroutines
    assert profile_status == 200 and profile.startswith("# ")
    busy_stacks = [line for line in profile.splitlines() if line.startswith("busy-controller;")]
    assert busy_stacks and all("spin_until (" in line for line in busy_stacks)
    assert all(line.rsplit(" ", 1)[1].isdigit() for line in busy_stacks)
    assert heap_status == 200 and " dict\n" in heap
    assert bad_status == 400 and "'forever' is not a number" in bad
    assert unknown_status == 404


def test_a_profile_samples_until_its_time_is_up() -> None:
    ticks = iter(range(100))
    waits: list[float] = []
    text = profiling.cpu_profile(3.0, interval=1.0, sleep=waits.append,
                                 now=lambda: float(next(ticks)))
    assert text.startswith("# 3 samples over 3s, every 1000ms\n")
    assert waits == [1.0, 1.0]


def test_profile_lengths_are_bounded() -> None:
    assert profiling.answer("/debug/pprof/profile", "seconds=301")[0] == 400
    assert profiling.answer("/debug/pprof/profile", "seconds=0")[0] == 400


def test_the_heap_summary_counts_objects_by_type() -> None:
    text = profiling.heap_summary([1, 2, "a", 3.0, 4])
    assert text.splitlines() == ["# 5 objects tracked, 3 types", "3 int", "1 str", "1 float"]
