"""The simulated EC2's timing knobs, named as scenario files name them (scenarios.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from nodewright.api.formats import parse_duration

DEFAULT_KUBERNETES_VERSION: Final = "1.32"


@dataclass(frozen=True)
class SimSettings:
    """Seconds of virtual time between the steps of an instance's life.

    launch_delay: CreateFleet to instance running. registration_delay: running to the Node
    registered and Ready. termination_delay: TerminateInstances (or StopInstances) to the
    instance gone (or stopped). startup_taint_delay: registration to the node's startup
    taints being removed by the agents that own them (a CNI, a device plugin); None leaves
    them on. spot_notice: a spot interruption warning to the reclaim. node_monitor_grace:
    a stopped kubelet to its Node's Ready condition turning Unknown.
    """

    launch_delay: float = 20.0
    registration_delay: float = 30.0
    termination_delay: float = 30.0
    startup_taint_delay: float | None = 5.0
    spot_notice: float = 120.0
    node_monitor_grace: float = 40.0
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, float | int) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"{item.name}: must not be negative, got {value}")

    @classmethod
    def from_scenario(cls, settings: Mapping[str, Any], where: str = "settings") -> SimSettings:
        """Read the keys of a scenario's `settings` block that concern the cloud (durations in
        Go syntax: 20s, 2m); other keys are left to their owners. ValueError names the key."""
        values: dict[str, Any] = {}
        for key, attribute in SCENARIO_KEYS.items():
            if key not in settings:
                continue
            raw = settings[key]
            if attribute == "startup_taint_delay" and raw is None:
                values[attribute] = None
                continue
            values[attribute] = _seconds(raw, f"{where}.{key}")
        if "kubernetesVersion" in settings:
            version = settings["kubernetesVersion"]
            if not isinstance(version, str) or not version:
                raise ValueError(f"{where}.kubernetesVersion: expected a version such as '1.32'")
            values["kubernetes_version"] = version
        return cls(**values)


# scenario key -> attribute
SCENARIO_KEYS: Final[Mapping[str, str]] = {
    "launchDelay": "launch_delay",
    "registrationDelay": "registration_delay",
    "terminationDelay": "termination_delay",
    "startupTaintDelay": "startup_taint_delay",
    "spotInterruptionNotice": "spot_notice",
    "nodeMonitorGracePeriod": "node_monitor_grace",
}


def _seconds(raw: object, where: str) -> float:
    if not isinstance(raw, str):
        raise ValueError(f"{where}: expected a duration such as 20s or 2m, got {raw!r}")
    try:
        seconds = parse_duration(raw)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return seconds
