"""Reading the scenario's capacity, prices and settings, with errors that name the field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.cloud.sim import (
    CapacityRule,
    PriceOverride,
    SimSettings,
    parse_capacity,
    parse_prices,
)
from nodewright.cloud.sim.world import UNLIMITED, CapacityPool, price_for


def test_capacity_entries_read_from_a_scenario() -> None:
    rules = parse_capacity(
        [
            {"instanceType": "m5.large", "zone": "us-east-1a", "capacityType": "spot",
             "available": 0},
            {"instanceType": "c5.large", "available": 3},
        ]
    )

    assert rules == [
        CapacityRule("m5.large", 0, "us-east-1a", "spot"),
        CapacityRule("c5.large", 3),
    ]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"instanceType": "m5.large"}, r"capacity: expected a list"),
        ([{"instanceType": "m5.large", "available": -1}], r"capacity\[0\].available"),
        ([{"available": 1}], r"capacity\[0\].instanceType: expected a non-empty string"),
        ([{"instanceType": "m5.large", "available": 1, "capacityType": "reserved"}],
         r"capacity\[0\].capacityType: expected one of on-demand, spot"),
        ([{"instanceType": "m5.large", "available": 1, "count": 2}],
         r"capacity\[0\]: unknown key 'count'"),
        (["m5.large"], r"capacity\[0\]: expected a mapping"),
    ],
)
def test_bad_capacity_entries_are_named(entries: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_capacity(entries)


def test_price_entries_need_a_capacity_type_and_a_price() -> None:
    assert parse_prices([{"instanceType": "m5.large", "capacityType": "spot", "price": 0.02}]) == [
        PriceOverride("m5.large", "spot", 0.02)
    ]
    with pytest.raises(ValueError, match=r"prices\[0\].capacityType"):
        parse_prices([{"instanceType": "m5.large", "price": 0.02}])
    with pytest.raises(ValueError, match=r"prices\[0\].price: expected an hourly price"):
        parse_prices([{"instanceType": "m5.large", "capacityType": "spot", "price": "cheap"}])


def test_a_zone_price_beats_a_regional_one() -> None:
    overrides = [
        PriceOverride("m5.large", "spot", 0.03),
        PriceOverride("m5.large", "spot", 0.01, zone="us-east-1b"),
    ]

    assert price_for(overrides, "m5.large", "us-east-1a", "spot") == 0.03
    assert price_for(overrides, "m5.large", "us-east-1b", "spot") == 0.01
    assert price_for(overrides, "m5.large", "us-east-1b", "on-demand") is None


def test_a_rule_without_zone_is_one_budget_for_all_zones() -> None:
    pool = CapacityPool([CapacityRule("m5.large", 2)])

    taken = [pool.take("m5.large", zone, "on-demand") for zone in ("us-east-1a", "us-east-1b",
                                                                    "us-east-1c")]

    assert taken == [True, True, False]
    assert pool.remaining("c5.large", "us-east-1a", "spot") == UNLIMITED


@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=4),
    st.lists(st.sampled_from(["us-east-1a", "us-east-1b"]), max_size=20),
)
def test_every_rule_covering_an_offering_limits_it(limits: list[int], zones: list[str]) -> None:
    regional = CapacityRule("m5.large", limits[0])
    zonal = [CapacityRule("m5.large", n, zone="us-east-1a") for n in limits[1:]]
    pool = CapacityPool([regional, *zonal])

    launched = [zone for zone in zones if pool.take("m5.large", zone, "spot")]

    assert len(launched) <= limits[0]
    assert launched.count("us-east-1a") <= min(limits)
    assert pool.remaining("m5.large", "us-east-1b", "spot") == limits[0] - len(launched)


def test_settings_read_from_a_scenario() -> None:
    settings = SimSettings.from_scenario(
        {"launchDelay": "5s", "registrationDelay": "1m30s", "batchIdleDuration": "1s",
         "startupTaintDelay": None}
    )

    assert (settings.launch_delay, settings.registration_delay) == (5.0, 90.0)
    assert settings.termination_delay == 30.0
    assert settings.startup_taint_delay is None


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match=r"settings.launchDelay: .*'soon'"):
        SimSettings.from_scenario({"launchDelay": "soon"})
    with pytest.raises(ValueError, match=r"settings.terminationDelay: expected a duration"):
        SimSettings.from_scenario({"terminationDelay": 30})
    with pytest.raises(ValueError, match="launch_delay: must not be negative"):
        SimSettings(launch_delay=-1)
