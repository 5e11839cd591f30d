"""DescribeInstanceStatus of the simulated region: the instances a test or scenario impaired
(`SimulatedEC2.impair`), answered in EC2's shape and read by the same code as real answers
(`nodewright.cloud.aws.instance_statuses.health_statuses`), so the 2-minute threshold and
the categories behave as they do against EC2. Running instances nobody impaired are healthy
and, as the three filtered calls would, not reported at all."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from nodewright.cloud.aws.instance_statuses import HealthStatus, health_statuses
from nodewright.runtime.clock import Clock


class Impairment(StrEnum):
    """What `SimulatedEC2.impair` can report about an instance."""

    INSTANCE = "instance"  # the instance status check (reachability) fails
    SYSTEM = "system"  # the system status check fails (the host)
    EVENT = "event"  # a scheduled event (instance-retirement)
    EBS = "ebs"  # an attached EBS volume's check fails (the checks ignore it)

    @classmethod
    def parse(cls, value: str) -> Impairment:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"impairment {value!r}: expected one of {', '.join(k.value for k in cls)}"
            ) from None


def _failed(since: datetime) -> dict[str, Any]:
    return {"Status": "impaired",
            "Details": [{"Name": "reachability", "Status": "failed", "ImpairedSince": since}]}


class SimInstanceStatuses:
    def __init__(self, clock: Clock, live: Callable[[str], bool]) -> None:
        self.clock = clock
        self._live = live
        self._entries: dict[str, dict[str, Any]] = {}

    def impair(self, instance_id: str, impairment: Impairment,
               since: datetime | None = None) -> None:
        """From now on the instance reports this failure (until `recover`); a check's
        `ImpairedSince` is `since` (default: now)."""
        entry = self._entries.setdefault(instance_id, {"InstanceId": instance_id})
        failed_since = since or self.clock.now()
        if impairment is Impairment.INSTANCE:
            entry["InstanceStatus"] = _failed(failed_since)
        elif impairment is Impairment.SYSTEM:
            entry["SystemStatus"] = _failed(failed_since)
        elif impairment is Impairment.EBS:
            entry["AttachedEbsStatus"] = _failed(failed_since)
        else:
            entry["Events"] = [{"Code": "instance-retirement",
                                "NotBefore": self.clock.now()}]

    def recover(self, instance_id: str) -> None:
        self._entries.pop(instance_id, None)

    def list(self) -> list[HealthStatus]:
        """The unhealthy instances, as `InstanceStatusProvider.list` reports real ones
        (terminated instances drop out, as EC2 stops reporting them)."""
        live = [entry for instance_id, entry in self._entries.items() if self._live(instance_id)]
        return health_statuses(live, self.clock.now())
