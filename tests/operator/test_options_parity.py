"""The operator's settings and log lines against Karpenter v1.14.1's, where an audit found
them apart.

- aws/karpenter-provider-aws pkg/operator/options/suite_test.go, whole (its flags Its pass
  `--isolated-vpc` and `--disable-dry-run` alone, as every BoolVarWithEnv flag of
  kubernetes-sigs/karpenter pkg/operator/options/options.go:101-110 may be given);
- CLUSTER_NAME as Karpenter takes it (options.go:54 of the AWS provider: any non-empty
  string), for a cluster whose control plane is kops's, named by a DNS name;
- the log line's shape: pkg/operator/logging/logging.go:42-91 (zap's JSON encoder, logger
  "controller", CapitalLevelEncoder, the caller at debug only) and controller-runtime
  v0.23.1's pkg/builder/controller.go:433-456 and pkg/internal/controller/controller.go:
  469-472 (each reconcile's controller, controllerGroup, controllerKind, object, namespace,
  name and reconcileID).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.operator import logs
from nodewright.operator.config import ConfigError, OperatorConfig, add_arguments, load

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def config(argv: list[str], env: dict[str, str] | None = None) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args(argv), env or {})


# --- aws pkg/operator/options/suite_test.go -----------------------------------------------


def test_karpenters_aws_flags_override_the_defaults_booleans_given_alone() -> None:
    """It("should correctly override default vars when CLI flags are set"), suite_test.go
    57-83, with Karpenter's very arguments but a CA bundle that is one ("env-bundle" is
    refused here): `--isolated-vpc` and `--disable-dry-run` carry no value, as Go's boolean
    flags are given."""
    loaded = config(
        [
            "--cluster-ca-bundle",
            CA,
            "--cluster-name",
            "env-cluster",
            "--cluster-endpoint",
            "https://env-cluster",
            "--isolated-vpc",
            "--vm-memory-overhead-percent",
            "0.1",
            "--interruption-queue",
            "env-cluster",
            "--reserved-enis",
            "10",
            "--disable-dry-run",
            "--ami-refresh-interval",
            "15m",
            "--subnet-refresh-interval",
            "15m",
        ]
    )
    assert (loaded.cluster_ca_bundle, loaded.cluster_name, loaded.cluster_endpoint) == (
        CA,
        "env-cluster",
        "https://env-cluster",
    )
    assert (loaded.isolated_vpc, loaded.vm_memory_overhead_percent) == (True, 0.1)
    assert (loaded.interruption_queue, loaded.reserved_enis) == ("env-cluster", 10)
    assert loaded.disable_dry_run is True
    assert (loaded.ami_refresh_interval, loaded.subnet_refresh_interval) == (900.0, 900.0)


@pytest.mark.parametrize(
    ("flag", "field", "default"),
    [
        ("--eks-control-plane", "eks_control_plane", False),
        ("--enable-zonal-shift", "enable_zonal_shift", False),
        ("--isolated-vpc", "isolated_vpc", False),
        ("--disable-dry-run", "disable_dry_run", False),
        ("--ignore-dra-requests", "ignore_dra_requests", True),
    ],
)
def test_every_boolean_flag_given_alone_means_true(flag: str, field: str, default: bool) -> None:
    """Karpenter's BoolVarWithEnv (options.go:101-110) is Go's BoolFunc: `--flag` alone is
    true, `--flag=false` false; the AWS provider's booleans are the same kind of flag
    (its options.go:56-62)."""
    assert getattr(config(["--cluster-name", "dev"]), field) is default
    assert getattr(config(["--cluster-name", "dev", flag]), field) is True
    # Followed by another flag, it still takes no value from it.
    alone = config([flag, "--cluster-name", "dev"])
    assert getattr(alone, field) is True and alone.cluster_name == "dev"
    if field != "ignore_dra_requests":  # false is refused (docs/karpenter-differences.md)
        assert getattr(config(["--cluster-name", "dev", f"{flag}=false"]), field) is False


def test_karpenters_aws_environment_is_read_without_flags() -> None:
    """It("should correctly fallback to env vars when CLI flags aren't set"), 84-113."""
    loaded = config(
        [],
        {
            "CLUSTER_CA_BUNDLE": CA,
            "CLUSTER_NAME": "env-cluster",
            "CLUSTER_ENDPOINT": "https://env-cluster",
            "ISOLATED_VPC": "true",
            "VM_MEMORY_OVERHEAD_PERCENT": "0.1",
            "INTERRUPTION_QUEUE": "env-cluster",
            "RESERVED_ENIS": "10",
            "DISABLE_DRY_RUN": "false",
            "AMI_REFRESH_INTERVAL": "30m",
            "SUBNET_REFRESH_INTERVAL": "15m",
        },
    )
    assert (loaded.cluster_ca_bundle, loaded.cluster_name, loaded.cluster_endpoint) == (
        CA,
        "env-cluster",
        "https://env-cluster",
    )
    assert (loaded.isolated_vpc, loaded.vm_memory_overhead_percent) == (True, 0.1)
    assert (loaded.interruption_queue, loaded.reserved_enis) == ("env-cluster", 10)
    assert loaded.disable_dry_run is False
    assert (loaded.ami_refresh_interval, loaded.subnet_refresh_interval) == (1800.0, 900.0)


def test_the_refresh_intervals_default_to_a_minute() -> None:
    """It("should correctly use default ami-refresh-interval when not specified") and
    It("should correctly use default subnet-refresh-interval when not specified"),
    115-127."""
    loaded = config(["--cluster-name", "test-cluster"])
    assert (loaded.ami_refresh_interval, loaded.subnet_refresh_interval) == (60.0, 60.0)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        # It("should fail when cluster name is not set")
        ([], "CLUSTER_NAME=''"),
        # It("should fail when clusterEndpoint is invalid (not absolute)")
        (
            ["--cluster-endpoint", "00000000000000000000000.gr7.us-west-2.eks.amazonaws.com"],
            "--cluster-endpoint='00000000000000000000000.gr7.us-west-2.eks.amazonaws.com'",
        ),
        # It("should fail when vmMemoryOverheadPercent is negative")
        (["--vm-memory-overhead-percent", "-0.01"], "--vm-memory-overhead-percent='-0.01'"),
        # It("should fail when reservedENIs is negative")
        (["--reserved-enis", "-1"], "--reserved-enis='-1'"),
        # It("should fail when ami-refresh-interval is less than 1m")
        (["--ami-refresh-interval", "30s"], "--ami-refresh-interval='30s'"),
        # It("should fail when subnet-refresh-interval is less than 1m")
        (["--subnet-refresh-interval", "30s"], "--subnet-refresh-interval='30s'"),
    ],
)
def test_karpenters_aws_validation_refuses_naming_the_setting(argv: list[str], named: str) -> None:
    """The Validation Context, suite_test.go 129-157 (options_validation.go)."""
    name = [] if not argv else ["--cluster-name", "test-cluster"]
    with pytest.raises(ConfigError) as refused:
        config(name + argv)
    assert str(refused.value).startswith(named)


def test_a_kops_cluster_named_by_a_dns_name_is_accepted() -> None:
    """Karpenter takes any CLUSTER_NAME (the AWS provider's options.go:54 and
    options_validation.go:78-83 only ask that it be set); kops names its clusters by DNS
    names and runs Karpenter with them, as the README's non-EKS control planes."""
    loaded = config([], {"CLUSTER_NAME": "prod.k8s.example.com"})
    assert loaded.cluster_name == "prod.k8s.example.com"
    with pytest.raises(ConfigError) as refused:
        config([], {"CLUSTER_NAME": "-starts-with-a-dash"})
    assert "CLUSTER_NAME='-starts-with-a-dash'" in str(refused.value)


# --- the log line --------------------------------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[tuple[io.StringIO, logging.Logger]]:
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield stream, logging.getLogger("nodewright.controllers.provisioning.provisioner")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_names_karpenters_logger_and_zaps_levels(
    log_lines: tuple[io.StringIO, logging.Logger],
) -> None:
    """logging.go:80: NewLogger(ctx, "controller") names every line's logger "controller";
    zap's CapitalLevelEncoder writes WARN where Python says WARNING; the caller is left out
    unless LOG_LEVEL is debug (DisableCaller: LogLevel != "debug")."""
    stream, log = log_lines
    logs.configure("info", stream)
    log.warning("memory is running out")
    log.info("found provisionable pod(s)")
    warned, found = lines(stream)
    assert list(warned)[:4] == ["level", "time", "logger", "message"]
    assert (warned["level"], warned["logger"]) == ("WARN", "controller")
    assert (found["level"], found["logger"]) == ("INFO", "controller")
    assert "caller" not in found


def test_at_debug_a_line_names_its_caller_as_zaps_short_caller(
    log_lines: tuple[io.StringIO, logging.Logger],
) -> None:
    """ShortCallerEncoder: the file's directory and name, and the line
    ("provisioning/provisioner.go:123"); zap writes it between logger and message."""
    stream, log = log_lines
    logs.configure("debug", stream)
    log.debug("discovered region")
    (line,) = lines(stream)
    assert list(line)[:5] == ["level", "time", "logger", "caller", "message"]
    assert line["level"] == "DEBUG"
    assert line["caller"].startswith("operator/test_options_parity.py:")


def test_a_reconcile_of_a_kind_carries_controller_runtimes_fields(
    log_lines: tuple[io.StringIO, logging.Logger],
) -> None:
    """builder/controller.go:433-456 with For(&NodeClaim{}): controller, controllerGroup,
    controllerKind, the object as KRef, namespace and name; controller.go:469-472 a
    reconcileID of each reconcile's own."""
    stream, log = log_lines
    logs.configure("info", stream)
    with logs.reconciling("nodeclaim.lifecycle", "default-x7k2p"):
        log.info("launched nodeclaim")
        log.info("registered nodeclaim")
    with logs.reconciling("nodeclaim.lifecycle", "default-x7k2p"):
        log.info("initialized nodeclaim")
    launched, registered, initialized = lines(stream)
    assert {
        key: launched[key]
        for key in (
            "controller",
            "controllerGroup",
            "controllerKind",
            "NodeClaim",
            "namespace",
            "name",
        )
    } == {
        "controller": "nodeclaim.lifecycle",
        "controllerGroup": "karpenter.sh",
        "controllerKind": "NodeClaim",
        "NodeClaim": {"name": "default-x7k2p"},
        "namespace": "",
        "name": "default-x7k2p",
    }
    assert launched["reconcileID"] == registered["reconcileID"]
    assert initialized["reconcileID"] != launched["reconcileID"]
    with logs.reconciling("node.termination", "ip-10-0-1-2.ec2.internal"):
        log.info("tainted node")
    (_, _, _, tainted) = lines(stream)
    assert (tainted["controllerGroup"], tainted["controllerKind"], tainted["Node"]) == (
        "",
        "Node",
        {"name": "ip-10-0-1-2.ec2.internal"},
    )


def test_a_singletons_and_a_pods_reconcile_carry_the_request(
    log_lines: tuple[io.StringIO, logging.Logger],
) -> None:
    """operatorpkg's singletons reconcile an empty request: Karpenter's "found provisionable
    pod(s)" line has namespace "" and name "" and no controllerKind; a namespaced request
    splits into both."""
    stream, log = log_lines
    logs.configure("info", stream)
    with logs.reconciling("provisioner", ""):
        log.info("found provisionable pod(s)")
    with logs.reconciling("metrics.pod", "default/inflate-5d9f7"):
        log.info("a pod")
    with logs.reconciling("disruption.hash", "NodePool/default"):
        log.info("a pool")
    found, pod, pool = lines(stream)
    assert (found["controller"], found["namespace"], found["name"]) == ("provisioner", "", "")
    assert "controllerKind" not in found and len(found["reconcileID"]) == 36
    assert (pod["namespace"], pod["name"]) == ("default", "inflate-5d9f7")
    assert (pool["namespace"], pool["name"]) == ("", "default")


# --- the region ----------------------------------------------------------------------------


def test_without_a_configured_region_the_instances_region_comes_from_imds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The AWS provider's pkg/operator/operator.go:114-121: with no region in the SDK's
    configuration, Karpenter asks IMDS ("retrieving region from IMDS"), and its chart sets
    no AWS_REGION; Nodewright refused to start."""
    from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
    from nodewright.cluster.memory import InMemoryCluster
    from nodewright.operator import main
    from nodewright.runtime import VirtualClock
    from nodewright.runtime.clock import SystemClock

    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    asked: list[str] = []

    def imds() -> str | None:
        asked.append("region")
        return "eu-west-1"

    monkeypatch.setattr(main, "_imds_region", imds, raising=False)
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"clusterIP": "172.20.0.10"},
        }
    )
    cloud, _ = main.build_cloud(
        OperatorConfig(cluster_name="prod", cluster_endpoint="https://api.example.com"),
        cluster,
        SystemClock(),
    )  # type: ignore[arg-type]
    assert isinstance(cloud, InterruptibleAwsCloud)
    assert asked == ["region"] and cloud.clients.region == "eu-west-1"

    monkeypatch.setattr(main, "_imds_region", lambda: None)
    with pytest.raises(main.StartupError, match="AWS_REGION is not set"):
        main.build_cloud(
            OperatorConfig(cluster_name="prod"),
            cluster,  # type: ignore[arg-type]
            SystemClock(),
        )


def test_a_batch_idle_duration_longer_than_the_max_is_karpenters_too() -> None:
    """kubernetes-sigs/karpenter pkg/controllers/provisioning/batcher.go (Wait): the idle
    and the max timers run side by side and the first to fire ends the batch, so an idle
    duration longer than the max is a valid setting (the max ends each batch); options.go
    129-130 validate neither. Nodewright refused to start with it."""
    loaded = config(["--cluster-name", "dev"], {"BATCH_IDLE_DURATION": "15s"})
    assert (loaded.batch_idle_duration, loaded.batch_max_duration) == (15.0, 10.0)


class FailsOnce:
    """Logs a line, then fails, on its first reconcile; succeeds on a retry."""

    watches: tuple[Any, ...] = ()
    name = "nodeclaim.lifecycle"

    def __init__(self) -> None:
        import threading

        self.failed = False
        self.done = threading.Event()

    def reconcile(self, key: str) -> Any:
        from nodewright.runtime.reconciler import Result

        if not self.failed:
            self.failed = True
            logging.getLogger("nodewright.controllers.nodeclaim").info("launching nodeclaim")
            raise RuntimeError("creating fleet: InsufficientInstanceCapacity")
        self.done.set()
        return Result()


def test_a_failed_reconcile_logs_controller_runtimes_reconciler_error(
    log_lines: tuple[io.StringIO, logging.Logger],
) -> None:
    """controller-runtime v0.23.1 pkg/internal/controller/controller.go:495:
    log.Error(err, "Reconciler error") on the reconcile's logger, so the line carries the
    error under `error` and the reconcile's controller, object, name and reconcileID (the
    one its own lines carried); Karpenter's users alert on that message."""
    from nodewright.cluster.memory import InMemoryCluster
    from nodewright.operator.driver import OperatorDriver
    from nodewright.runtime.clock import SystemClock
    from tests.kube.waiting import eventually

    stream, _ = log_lines
    logs.configure("info", stream)
    reconciler = FailsOnce()
    clock = SystemClock()
    driver = OperatorDriver(InMemoryCluster(clock), clock=clock, kinds=["NodePool"])
    driver.add(reconciler)  # type: ignore[arg-type]
    driver.start()
    try:
        driver.enqueue(reconciler, "default-x7k2p")  # type: ignore[arg-type]
        eventually(
            lambda: (
                "Reconciler error" in stream.getvalue() or "reconcile failed" in stream.getvalue()
            ),
            "the reconcile to fail",
        )
    finally:
        driver.stop(timeout=5)
    launching, failed = (
        line
        for line in lines(stream)
        if line["message"] in ("launching nodeclaim", "Reconciler error")
    )
    assert (failed["level"], failed["message"]) == ("ERROR", "Reconciler error")
    assert failed["error"] == "creating fleet: InsufficientInstanceCapacity"
    assert (failed["controller"], failed["NodeClaim"], failed["name"]) == (
        "nodeclaim.lifecycle",
        {"name": "default-x7k2p"},
        "default-x7k2p",
    )
    assert failed["reconcileID"] == launching["reconcileID"]
