"""MIN_VALUES_POLICY and the StaticCapacity gate as the controller and the simulator read
them."""

from __future__ import annotations

import argparse

import pytest

from nodewright.operator.config import ConfigError, OperatorConfig, add_arguments, load
from nodewright.operator.main import controller_options


def config(argv: list[str], env: dict[str, str]) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args(argv), env)


def test_min_values_policy_defaults_to_strict() -> None:
    loaded = config(["--cluster-name", "dev"], {})
    assert loaded.min_values_policy == "Strict"
    assert controller_options(loaded).relax_min_values is False


def test_best_effort_from_the_environment_or_the_flag() -> None:
    from_env = config([], {"CLUSTER_NAME": "dev", "MIN_VALUES_POLICY": "BestEffort"})
    from_flag = config(["--cluster-name", "dev", "--min-values-policy", "BestEffort"], {})
    for loaded in (from_env, from_flag):
        assert loaded.min_values_policy == "BestEffort"
        assert controller_options(loaded).relax_min_values is True


def test_an_unknown_policy_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"MIN_VALUES_POLICY='Loose': must be Strict or "
                                          r"BestEffort"):
        config([], {"CLUSTER_NAME": "dev", "MIN_VALUES_POLICY": "Loose"})


def test_the_static_capacity_gate_turns_on_the_static_controllers() -> None:
    off = config(["--cluster-name", "dev"], {})
    on = config([], {"CLUSTER_NAME": "dev", "FEATURE_GATES": "StaticCapacity=true"})
    assert controller_options(off).static_capacity is False
    assert controller_options(on).static_capacity is True
