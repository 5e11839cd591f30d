"""Probes, metrics and logs as a platform team sees them."""

from __future__ import annotations

import io
import json
import logging
import urllib.error
import urllib.request

from nodewright import metrics
from nodewright.operator.endpoints import MetricsEndpoint, ProbeEndpoint
from nodewright.operator.logs import JsonFormatter, configure


def fetch(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_probes_answer_from_their_checks() -> None:
    state: dict[str, str | None] = {"health": None, "ready": "the watch caches have not synced"}
    probes = ProbeEndpoint(0, address="127.0.0.1", healthy=lambda: state["health"],
                           ready=lambda: state["ready"])
    try:
        assert fetch(probes.port, "/healthz") == (200, "ok\n")
        assert fetch(probes.port, "/readyz") == (500, "the watch caches have not synced\n")
        state["ready"] = None
        assert fetch(probes.port, "/readyz") == (200, "ok\n")
        assert fetch(probes.port, "/other")[0] == 404
    finally:
        probes.close()


def test_metrics_are_served_with_karpenters_names() -> None:
    metrics.NODEPOOLS_LIMIT.labels(resource_type="cpu", nodepool="observability").set(1000)
    endpoint = MetricsEndpoint(0, address="127.0.0.1")
    try:
        status, text = fetch(endpoint.port, "/metrics")
    finally:
        endpoint.close()
    assert status == 200
    assert 'karpenter_nodepools_limit{nodepool="observability",resource_type="cpu"} 1000.0' \
        in text
    for name in ("karpenter_nodeclaims_created_total", "karpenter_nodeclaims_terminated_total",
                 "karpenter_pods_state", "karpenter_scheduler_scheduling_duration_seconds",
                 "karpenter_provisioner_scheduling_duration_seconds",
                 "karpenter_cloudprovider_duration_seconds", "karpenter_nodepools_usage",
                 "workqueue_depth", "controller_runtime_reconcile_total"):
        assert f"# HELP {name.removesuffix('_total')}" in text or f"# HELP {name}" in text


def test_logs_are_json_with_karpenters_fields() -> None:
    stream = io.StringIO()
    configure("info", stream)
    try:
        logging.getLogger("nodewright.controllers").info(
            "launched nodeclaim", extra={"controller": "nodeclaim.lifecycle",
                                         "NodeClaim": "default-x7k2p", "NodePool": "default",
                                         "provider-id": "aws:///us-west-2a/i-0123"})
        logging.getLogger("nodewright.controllers").debug("not at info")
    finally:
        logging.getLogger().handlers.clear()
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["level"] == "INFO" and entry["message"] == "launched nodeclaim"
    assert entry["logger"] == "controller"  # Karpenter's one logger's name
    assert entry["time"].endswith("Z")
    assert entry["NodeClaim"] == {"name": "default-x7k2p"}
    assert entry["NodePool"] == {"name": "default"}
    assert entry["provider-id"] == "aws:///us-west-2a/i-0123"
    assert entry["controller"] == "nodeclaim.lifecycle"


def test_an_exception_is_logged_on_one_line() -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line and "RuntimeError: boom" in json.loads(line)["error"]
