"""Karpenter's operator options (pkg/operator/options/suite_test.go, v1.14.1) read by
`nodewright controller`: every Karpenter setting is accepted under its name, flag and
default; flags win over variables; bad values are named."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from nodewright.operator.config import (
    FEATURE_GATES,
    ConfigError,
    OperatorConfig,
    add_arguments,
    load,
    parse_feature_gates,
)

ALL_GATES_FLIPPED = ("ReservedCapacity=false,SpotToSpotConsolidation=true,NodeRepair=true,"
                     "NodeOverlay=true,StaticCapacity=true,CapacityBuffer=true")


def config(argv: list[str], env: dict[str, str] | None = None) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args(argv), {"CLUSTER_NAME": "demo", **(env or {})})


def settings(loaded: OperatorConfig) -> dict[str, Any]:
    """The fields Karpenter's expectOptionsMatch compares, by Karpenter's names."""
    return {
        "ServiceName": loaded.karpenter_service,
        "MetricsPort": loaded.metrics_port,
        "HealthProbePort": loaded.health_probe_port,
        "KubeClientQPS": loaded.kube_client_qps,
        "KubeClientBurst": loaded.kube_client_burst,
        "EnableProfiling": loaded.enable_profiling,
        "DisableControllerWarmup": loaded.disable_controller_warmup,
        "DisableLeaderElection": not loaded.leader_elect,
        "DisableClusterStateObservability": not loaded.cluster_state_observability,
        "LeaderElectionName": loaded.leader_election_name,
        "LeaderElectionNamespace": loaded.leader_election_namespace,
        "MemoryLimit": loaded.memory_limit,
        "LogLevel": loaded.log_level,
        "LogOutputPaths": ",".join(loaded.log_output_paths),
        "LogErrorOutputPaths": ",".join(loaded.log_error_output_paths),
        "BatchMaxDuration": loaded.batch_max_duration,
        "BatchIdleDuration": loaded.batch_idle_duration,
        "PreferencePolicy": loaded.preference_policy,
        "MinValuesPolicy": loaded.min_values_policy,
        "FeatureGates": dict(loaded.feature_gates),
        "IgnoreDRARequests": loaded.ignore_dra_requests,
    }


OVERRIDDEN = {
    "MetricsPort": 0, "HealthProbePort": 0, "EnableProfiling": True,
    "DisableControllerWarmup": False, "DisableLeaderElection": True,
    "DisableClusterStateObservability": True, "MemoryLimit": 0, "LogLevel": "debug",
    "LogOutputPaths": "/etc/k8s/test", "LogErrorOutputPaths": "/etc/k8s/testerror",
    "BatchMaxDuration": 5.0, "BatchIdleDuration": 5.0,
    "FeatureGates": {"ReservedCapacity": False, "SpotToSpotConsolidation": True,
                     "NodeRepair": True, "NodeOverlay": True, "StaticCapacity": True,
                     "CapacityBuffer": True},
    "IgnoreDRARequests": True,
}


# --- FeatureGates ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "spot_to_spot"), [
    ("SpotToSpotConsolidation=true", True),
    ("SpotToSpotConsolidation=false", False),
    ("SpotToSpotConsolidation\t= false", False),
])
def test_well_formed_feature_gate_strings_parse(text: str, spot_to_spot: bool) -> None:
    """suite_test.go: "should successfully parse well formed feature gate strings" (entries
    basic true, basic false, with whitespace; "multiple values" names unknown gates, which
    nodewright refuses: see test_an_unknown_feature_gate_is_named)."""
    assert parse_feature_gates(text)["SpotToSpotConsolidation"] is spot_to_spot


def test_an_unknown_feature_gate_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown feature gate 'Hello'"):
        config([], {"FEATURE_GATES": "Hello=true,SpotToSpotConsolidation=false"})


@pytest.mark.parametrize("gate", list(FEATURE_GATES))
def test_a_subset_of_feature_gates_keeps_the_other_defaults(gate: str) -> None:
    """suite_test.go: "should correctly set defaults when a subset of FeatureGates are
    specified" (one entry per gate)."""
    flipped = not FEATURE_GATES[gate]
    loaded = config(["--feature-gates", f"{gate}={str(flipped).lower()}"])
    assert loaded.feature_gates == {**FEATURE_GATES, gate: flipped}


# --- Parse ----------------------------------------------------------------------------------


def test_defaults_are_karpenters() -> None:
    """suite_test.go: "should use the correct default values". The Lease's name is
    nodewright's (docs/karpenter-differences.md); LEADER_ELECTION_NAMESPACE's default is
    the pod's namespace, which Karpenter also falls back to when it is empty."""
    assert settings(config([])) == {
        "ServiceName": "", "MetricsPort": 8080, "HealthProbePort": 8081,
        "KubeClientQPS": 200, "KubeClientBurst": 300, "EnableProfiling": False,
        "DisableControllerWarmup": True, "DisableLeaderElection": False,
        "DisableClusterStateObservability": False,
        "LeaderElectionName": "nodewright-leader-election",
        "LeaderElectionNamespace": settings(config([]))["LeaderElectionNamespace"],
        "MemoryLimit": -1, "LogLevel": "info", "LogOutputPaths": "stdout",
        "LogErrorOutputPaths": "stderr", "BatchMaxDuration": 10.0, "BatchIdleDuration": 1.0,
        "PreferencePolicy": "Respect", "MinValuesPolicy": "Strict",
        "FeatureGates": dict(FEATURE_GATES), "IgnoreDRARequests": True,
    }
    assert config([]).cpu_requests == 1000


def test_cli_flags_are_not_overwritten_by_environment_variables() -> None:
    """suite_test.go: "shouldn't overwrite CLI flags with environment variables". QPS and
    burst are 1 here: nodewright refuses 0 (no requests at all) where client-go would
    quietly use its own default."""
    loaded = config([
        "--karpenter-service", "cli", "--metrics-port", "0", "--health-probe-port", "0",
        "--kube-client-qps", "1", "--kube-client-burst", "1", "--enable-profiling",
        "--disable-controller-warmup=false", "--disable-leader-election=true",
        "--disable-cluster-state-observability=true",
        "--leader-election-name=karpenter-controller", "--leader-election-namespace=karpenter",
        "--memory-limit", "0", "--log-level", "debug", "--log-output-paths", "/etc/k8s/test",
        "--log-error-output-paths", "/etc/k8s/testerror", "--batch-max-duration", "5s",
        "--batch-idle-duration", "5s", "--preference-policy", "Ignore",
        "--min-values-policy", "BestEffort", "--feature-gates", ALL_GATES_FLIPPED,
    ], {"LOG_OUTPUT_PATHS": "stdout", "LOG_ERROR_OUTPUT_PATHS": "stderr"})
    assert settings(loaded) == {
        **OVERRIDDEN, "ServiceName": "cli", "KubeClientQPS": 1, "KubeClientBurst": 1,
        "LeaderElectionName": "karpenter-controller", "LeaderElectionNamespace": "karpenter",
        "PreferencePolicy": "Ignore", "MinValuesPolicy": "BestEffort",
    }


def test_environment_variables_are_used_when_cli_flags_are_not_set() -> None:
    """suite_test.go: "should use environment variables when CLI flags aren't set"."""
    loaded = config([], {
        "KARPENTER_SERVICE": "env", "METRICS_PORT": "0", "HEALTH_PROBE_PORT": "0",
        "KUBE_CLIENT_QPS": "1", "KUBE_CLIENT_BURST": "1", "ENABLE_PROFILING": "true",
        "DISABLE_CONTROLLER_WARMUP": "false", "DISABLE_LEADER_ELECTION": "true",
        "DISABLE_CLUSTER_STATE_OBSERVABILITY": "true",
        "LEADER_ELECTION_NAME": "karpenter-controller",
        "LEADER_ELECTION_NAMESPACE": "karpenter", "MEMORY_LIMIT": "0", "LOG_LEVEL": "debug",
        "LOG_OUTPUT_PATHS": "/etc/k8s/test", "LOG_ERROR_OUTPUT_PATHS": "/etc/k8s/testerror",
        "BATCH_MAX_DURATION": "5s", "BATCH_IDLE_DURATION": "5s", "PREFERENCE_POLICY": "Ignore",
        "MIN_VALUES_POLICY": "BestEffort", "FEATURE_GATES": ALL_GATES_FLIPPED,
    })
    assert settings(loaded) == {
        **OVERRIDDEN, "ServiceName": "env", "KubeClientQPS": 1, "KubeClientBurst": 1,
        "LeaderElectionName": "karpenter-controller", "LeaderElectionNamespace": "karpenter",
        "PreferencePolicy": "Ignore", "MinValuesPolicy": "BestEffort",
    }


def test_cli_flags_and_environment_variables_merge() -> None:
    """suite_test.go: "should correctly merge CLI flags and environment variables"."""
    loaded = config([
        "--karpenter-service", "cli", "--log-output-paths", "/etc/k8s/test",
        "--log-error-output-paths", "/etc/k8s/testerror", "--preference-policy", "Respect",
        "--min-values-policy", "Strict",
    ], {
        "METRICS_PORT": "0", "HEALTH_PROBE_PORT": "0", "KUBE_CLIENT_QPS": "1",
        "KUBE_CLIENT_BURST": "1", "ENABLE_PROFILING": "true",
        "DISABLE_CONTROLLER_WARMUP": "false", "DISABLE_LEADER_ELECTION": "true",
        "DISABLE_CLUSTER_STATE_OBSERVABILITY": "true", "MEMORY_LIMIT": "0",
        "LOG_LEVEL": "debug", "BATCH_MAX_DURATION": "5s", "BATCH_IDLE_DURATION": "5s",
        "PREFERENCE_POLICY": "Ignore", "MIN_VALUES_POLICY": "BestEffort",
        "FEATURE_GATES": ALL_GATES_FLIPPED, "POD_NAMESPACE": "kube-system",
    })
    assert settings(loaded) == {
        **OVERRIDDEN, "ServiceName": "cli", "KubeClientQPS": 1, "KubeClientBurst": 1,
        "LeaderElectionName": "nodewright-leader-election",
        "LeaderElectionNamespace": "kube-system",
        "PreferencePolicy": "Respect", "MinValuesPolicy": "Strict",
    }


def test_booleans_default_to_false_when_not_given() -> None:
    """suite_test.go: "should correctly parse boolean values" (entry implicit false)."""
    loaded = config([])
    assert (loaded.enable_profiling, loaded.leader_elect) == (False, True)
    assert loaded.cluster_state_observability is True


@pytest.mark.parametrize("spelling", ["true", "True", "TRUE", "t", "1"])
def test_booleans_take_gos_spellings(spelling: str) -> None:
    assert config([], {"ENABLE_PROFILING": spelling}).enable_profiling is True


# --- Validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "expected"), [
    ("", "info"), ("debug", "debug"), ("info", "info"), ("error", "error")])
def test_valid_log_levels_parse(level: str, expected: str) -> None:
    """suite_test.go: "should parse valid log levels successfully" (empty string, debug,
    info, error)."""
    assert config(["--log-level", level]).log_level == expected


def test_an_invalid_log_level_is_an_error() -> None:
    """suite_test.go: "should error with an invalid log level"."""
    with pytest.raises(ConfigError, match="--log-level='hello'"):
        config(["--log-level", "hello"])


@pytest.mark.parametrize("value", ["0", "-50"])
def test_a_non_positive_cpu_request_falls_back_to_the_default(value: str) -> None:
    """suite_test.go: "should fallback to the default if a non-positive value is provided
    for CPU_REQUESTS" (zero, negative)."""
    assert config(["--cpu-requests", value]).cpu_requests == 1000
    assert config([], {"CPU_REQUESTS": value}).cpu_requests == 1000


# --- nodewright's own rules -----------------------------------------------------------------


@pytest.mark.parametrize(("env", "leader_elect"), [
    ({}, True),
    ({"DISABLE_LEADER_ELECTION": "true"}, False),
    ({"DISABLE_LEADER_ELECTION": "false"}, True),
    ({"LEADER_ELECT": "false"}, False),
    ({"LEADER_ELECT": "true", "DISABLE_LEADER_ELECTION": "false"}, True),
    ({"LEADER_ELECT": "false", "DISABLE_LEADER_ELECTION": "true"}, False),
])
def test_disable_leader_election_with_leader_elect_as_its_alias(
        env: dict[str, str], leader_elect: bool) -> None:
    assert config([], env).leader_elect is leader_elect


def test_contradicting_leader_election_settings_name_both() -> None:
    with pytest.raises(ConfigError) as raised:
        config([], {"LEADER_ELECT": "true", "DISABLE_LEADER_ELECTION": "true"})
    assert str(raised.value) == ("DISABLE_LEADER_ELECTION='true': contradicts "
                                 "LEADER_ELECT='true'; set one of them")
    with pytest.raises(ConfigError, match="--disable-leader-election='true': contradicts "
                                          "LEADER_ELECT='true'"):
        config(["--disable-leader-election"], {"LEADER_ELECT": "true"})


def test_a_bare_boolean_flag_means_true() -> None:
    loaded = config(["--enable-profiling", "--disable-cluster-state-observability",
                     "--disable-leader-election"])
    assert loaded.enable_profiling and not loaded.cluster_state_observability
    assert loaded.leader_elect is False


@pytest.mark.parametrize(("env", "message"), [
    ({"ENABLE_PROFILING": "maybe"}, "ENABLE_PROFILING='maybe': must be true or false"),
    ({"MEMORY_LIMIT": "1Gi"}, "MEMORY_LIMIT='1Gi': not a whole number"),
    ({"MEMORY_LIMIT": str(2**63)}, "MEMORY_LIMIT='9223372036854775808': out of range"),
    ({"CPU_REQUESTS": "1.5"}, "CPU_REQUESTS='1.5': not a whole number"),
    ({"LOG_OUTPUT_PATHS": "stdout,,/var/log/x"}, "LOG_OUTPUT_PATHS='stdout,,/var/log/x': "
                                                 "a comma-separated list"),
    ({"DISABLE_CONTROLLER_WARMUP": "nope"}, "DISABLE_CONTROLLER_WARMUP='nope'"),
])
def test_bad_karpenter_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config([], env)
    assert str(raised.value).startswith(message)


def test_log_output_paths_are_split_on_commas() -> None:
    loaded = config([], {"LOG_OUTPUT_PATHS": "stdout, /var/log/nw.log",
                         "LOG_ERROR_OUTPUT_PATHS": "file:///var/log/nw-errors.log"})
    assert loaded.log_output_paths == ("stdout", "/var/log/nw.log")
    assert loaded.log_error_output_paths == ("/var/log/nw-errors.log",)


def test_memory_limit_and_cpu_requests_keep_their_values() -> None:
    loaded = config([], {"MEMORY_LIMIT": "1073741824", "CPU_REQUESTS": "2500"})
    assert (loaded.memory_limit, loaded.cpu_requests) == (1073741824, 2500)


def test_the_manifests_give_the_controller_its_cpu_request_and_memory_limit() -> None:
    """As Karpenter's chart: CPU_REQUESTS and MEMORY_LIMIT from the container's resources."""
    from nodewright.install.objects import CONTAINER_NAME, environment
    from nodewright.install.settings import InstallSettings

    env = {item["name"]: item for item in environment(InstallSettings(cluster_name="prod"))}
    assert env["CPU_REQUESTS"]["valueFrom"]["resourceFieldRef"] == {
        "containerName": CONTAINER_NAME, "divisor": "1m", "resource": "requests.cpu"}
    assert env["MEMORY_LIMIT"]["valueFrom"]["resourceFieldRef"] == {
        "containerName": CONTAINER_NAME, "divisor": "1", "resource": "limits.memory"}
    unlimited = environment(InstallSettings(cluster_name="prod", limits={}))
    assert "MEMORY_LIMIT" not in {item["name"] for item in unlimited}
