"""`nodewright controller` reads Karpenter's environment variables and the matching flags
(flags win), documents each in --help, and exits 2 naming a bad variable or flag."""

from __future__ import annotations

import argparse

import pytest

from nodewright.cli import main
from nodewright.operator.config import (
    OPTIONS,
    ConfigError,
    OperatorConfig,
    add_arguments,
    load,
)


def config(argv: list[str], env: dict[str, str]) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args(argv), env)


def test_the_chart_environment_configures_the_controller() -> None:
    loaded = config([], {
        "CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
        "INTERRUPTION_QUEUE": "prod-interruption", "AWS_REGION": "eu-west-1",
        "BATCH_IDLE_DURATION": "500ms", "BATCH_MAX_DURATION": "1m30s",
        "FEATURE_GATES": "SpotToSpotConsolidation=true", "LOG_LEVEL": "debug",
        "LEADER_ELECT": "false", "METRICS_PORT": "9090", "HEALTH_PROBE_PORT": "9091",
        "KUBECONFIG": "/etc/kube/config", "POD_NAMESPACE": "karpenter", "POD_NAME": "nw-0",
    })
    assert loaded.cluster_name == "prod"
    assert loaded.cluster_endpoint == "https://ABC.gr7.eu-west-1.eks.amazonaws.com"
    assert loaded.interruption_queue == "prod-interruption"
    assert loaded.region == "eu-west-1"
    assert (loaded.batch_idle_duration, loaded.batch_max_duration) == (0.5, 90.0)
    assert loaded.feature_gates["SpotToSpotConsolidation"] is True
    assert loaded.feature_gates["ReservedCapacity"] is True  # Karpenter's default stays
    assert loaded.log_level == "debug"
    assert loaded.leader_elect is False
    assert (loaded.metrics_port, loaded.health_probe_port) == (9090, 9091)
    assert loaded.kubeconfig == "/etc/kube/config"
    assert loaded.leader_election_namespace == "karpenter"
    assert loaded.identity.startswith("nw-0_")


def test_defaults_are_karpenters() -> None:
    loaded = config(["--cluster-name", "dev"], {})
    assert (loaded.batch_idle_duration, loaded.batch_max_duration) == (1.0, 10.0)
    assert (loaded.metrics_port, loaded.health_probe_port) == (8080, 8081)
    assert loaded.leader_elect is True and loaded.cloud == "aws"
    assert loaded.leader_election_name == "nodewright-leader-election"
    assert loaded.feature_gates == {"NodeRepair": False, "ReservedCapacity": True,
                                    "SpotToSpotConsolidation": False, "NodeOverlay": False,
                                    "StaticCapacity": False, "CapacityBuffer": False}


def test_a_flag_wins_over_its_variable() -> None:
    loaded = config(["--cluster-name", "flagged", "--log-level", "error", "--cloud", "sim"],
                    {"CLUSTER_NAME": "from-env", "LOG_LEVEL": "debug"})
    assert (loaded.cluster_name, loaded.log_level, loaded.cloud) == ("flagged", "error", "sim")


@pytest.mark.parametrize(("env", "named"), [
    ({"BATCH_IDLE_DURATION": "soon"}, "BATCH_IDLE_DURATION='soon'"),
    ({"BATCH_MAX_DURATION": "0s"}, "BATCH_MAX_DURATION='0s'"),
    ({"METRICS_PORT": "9000", "HEALTH_PROBE_PORT": "9000"}, "HEALTH_PROBE_PORT='9000'"),
    ({"LEADER_ELECT": "maybe"}, "LEADER_ELECT='maybe'"),
    ({"METRICS_PORT": "http"}, "METRICS_PORT='http'"),
    ({"HEALTH_PROBE_PORT": "70000"}, "HEALTH_PROBE_PORT='70000'"),
    ({"LOG_LEVEL": "loud"}, "LOG_LEVEL='loud'"),
    ({"FEATURE_GATES": "NodeRepair=yes please"}, "FEATURE_GATES="),
    ({"CLUSTER_ENDPOINT": "http://plain"}, "CLUSTER_ENDPOINT='http://plain'"),
    ({"NODEWRIGHT_CLOUD": "gcp"}, "NODEWRIGHT_CLOUD='gcp'"),
])
def test_a_bad_value_is_named(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as error:
        config(["--cluster-name", "dev"], env)
    assert named in str(error.value)


def test_the_command_exits_2_naming_the_variable(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTER_NAME", "dev")
    monkeypatch.setenv("METRICS_PORT", "eighty")
    assert main(["controller"]) == 2
    assert "METRICS_PORT='eighty': not a port number" in capsys.readouterr().err


def test_a_missing_cluster_name_exits_2(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTER_NAME", raising=False)
    assert main(["controller", "--cloud", "sim"]) == 2
    assert "CLUSTER_NAME" in capsys.readouterr().err


def test_help_documents_every_option_and_its_variable(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["controller", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in OPTIONS:
        assert option.flag in text
        assert option.env in text
    for variable in ("CLUSTER_NAME", "CLUSTER_ENDPOINT", "INTERRUPTION_QUEUE", "AWS_REGION",
                     "BATCH_IDLE_DURATION", "BATCH_MAX_DURATION", "FEATURE_GATES", "LOG_LEVEL",
                     "LEADER_ELECT", "METRICS_PORT", "HEALTH_PROBE_PORT", "KUBECONFIG"):
        assert variable in text


def test_the_spot_to_spot_and_capacity_buffer_gates_reach_their_controllers(
        caplog: pytest.LogCaptureFixture) -> None:
    from nodewright.operator.main import controller_options

    options = controller_options(config(
        ["--cluster-name", "dev", "--feature-gates",
         "SpotToSpotConsolidation=true,CapacityBuffer=true"], {}))
    assert options.disruption.methods.spot_to_spot is True
    # Every gate Karpenter v1.14 has now has an effect here.
    assert options.capacity_buffer is True
    assert "has no effect" not in caplog.text
    assert controller_options(config(["--cluster-name", "dev"], {})
                              ).disruption.methods.spot_to_spot is False


def test_a_conflict_between_flags_names_the_flag() -> None:
    with pytest.raises(ConfigError) as error:
        config(["--cluster-name", "dev", "--health-probe-port", "8080"], {})
    assert "--health-probe-port='8080': must differ from the metrics port" in str(error.value)


def test_two_free_ports_may_both_be_picked_by_the_system() -> None:
    loaded = config(["--cluster-name", "dev", "--metrics-port", "0",
                     "--health-probe-port", "0"], {})
    assert (loaded.metrics_port, loaded.health_probe_port) == (0, 0)


def test_client_limits_and_the_watch_read_timeout() -> None:
    defaults = config(["--cluster-name", "dev"], {})
    assert (defaults.kube_client_qps, defaults.kube_client_burst) == (200, 300)  # Karpenter's
    assert defaults.watch_read_timeout == 90.0
    loaded = config(["--cluster-name", "dev", "--kube-client-burst", "50"],
                    {"KUBE_CLIENT_QPS": "20", "KUBE_CLIENT_BURST": "40",
                     "NODEWRIGHT_WATCH_READ_TIMEOUT": "2m"})
    assert (loaded.kube_client_qps, loaded.kube_client_burst) == (20, 50)
    assert loaded.watch_read_timeout == 120.0
    with pytest.raises(ConfigError) as bad:
        config(["--cluster-name", "dev"], {"KUBE_CLIENT_QPS": "0"})
    assert str(bad.value) == "KUBE_CLIENT_QPS='0': must be at least 1"
    with pytest.raises(ConfigError) as bad:
        config(["--cluster-name", "dev"], {"NODEWRIGHT_WATCH_READ_TIMEOUT": "soon"})
    assert "NODEWRIGHT_WATCH_READ_TIMEOUT='soon'" in str(bad.value)


def test_the_solve_deadline_is_off_unless_set_and_reaches_the_provisioner() -> None:
    from nodewright.operator.main import controller_options

    assert config(["--cluster-name", "dev"], {}).solve_deadline is None
    assert config(["--cluster-name", "dev"], {"SOLVE_DEADLINE": "0"}).solve_deadline is None
    loaded = config(["--cluster-name", "dev"], {"SOLVE_DEADLINE": "250ms"})
    assert loaded.solve_deadline == 0.25
    assert controller_options(loaded).solve_deadline == 0.25
    assert config(["--cluster-name", "dev", "--solve-deadline", "2s"],
                  {"SOLVE_DEADLINE": "250ms"}).solve_deadline == 2.0
    with pytest.raises(ConfigError) as bad:
        config(["--cluster-name", "dev"], {"SOLVE_DEADLINE": "fast"})
    assert str(bad.value).startswith("SOLVE_DEADLINE='fast': 'fast' is not a duration")


def test_karpenters_aws_and_preference_settings() -> None:
    defaults = config(["--cluster-name", "dev"], {})
    assert (defaults.vm_memory_overhead_percent, defaults.reserved_enis) == (0.075, 0)
    assert (defaults.isolated_vpc, defaults.preference_policy) == (False, "Respect")
    loaded = config(["--cluster-name", "dev", "--reserved-enis", "2"], {
        "VM_MEMORY_OVERHEAD_PERCENT": "0", "RESERVED_ENIS": "1", "ISOLATED_VPC": "true",
        "PREFERENCE_POLICY": "Ignore"})
    assert (loaded.vm_memory_overhead_percent, loaded.reserved_enis) == (0.0, 2)
    assert (loaded.isolated_vpc, loaded.preference_policy) == (True, "Ignore")


@pytest.mark.parametrize(("env", "message"), [
    ({"VM_MEMORY_OVERHEAD_PERCENT": "-0.1"}, "VM_MEMORY_OVERHEAD_PERCENT='-0.1': must be at"),
    ({"VM_MEMORY_OVERHEAD_PERCENT": "7.5%"}, "VM_MEMORY_OVERHEAD_PERCENT='7.5%': not a number"),
    ({"VM_MEMORY_OVERHEAD_PERCENT": "1"}, "VM_MEMORY_OVERHEAD_PERCENT='1': must be at"),
    ({"RESERVED_ENIS": "-1"}, "RESERVED_ENIS='-1': must be 0 or more"),
    ({"RESERVED_ENIS": "one"}, "RESERVED_ENIS='one': not a whole number"),
    ({"ISOLATED_VPC": "perhaps"}, "ISOLATED_VPC='perhaps': must be true or false"),
    ({"PREFERENCE_POLICY": "respect"}, "PREFERENCE_POLICY='respect': must be Respect or Ignore"),
])
def test_bad_aws_and_preference_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as bad:
        config(["--cluster-name", "dev"], env)
    assert str(bad.value).startswith(message)


def test_ignore_dra_requests_takes_karpenters_default_and_refuses_dra_scheduling() -> None:
    """Karpenter's IGNORE_DRA_REQUESTS (default true) is accepted as flag and variable;
    false asks for DRA scheduling, which nodewright does not have: refused with the
    reason."""
    assert config(["--cluster-name", "dev"], {}).ignore_dra_requests is True
    assert config(["--cluster-name", "dev"], {"IGNORE_DRA_REQUESTS": "true"}).ignore_dra_requests
    assert config(["--cluster-name", "dev", "--ignore-dra-requests", "true"],
                  {}).ignore_dra_requests
    with pytest.raises(ConfigError) as bad:
        config(["--cluster-name", "dev"], {"IGNORE_DRA_REQUESTS": "false"})
    assert str(bad.value).startswith("IGNORE_DRA_REQUESTS='false': false asks for Dynamic "
                                     "Resource Allocation scheduling")
