"""Which of the account's instances EC2 reports unhealthy (DescribeInstanceStatus), read as
Karpenter's instance status provider reads it.

DescribeInstanceStatus ANDs filters of different names, so the three conditions worth
acting on are asked for one call each (an impaired instance check, an impaired system
check, a scheduled event) and the answers merged by instance ID. Of what comes back, only
failed checks count: an instance or system check after it has failed for
`UNHEALTHY_THRESHOLD_SECONDS` (a check without `ImpairedSince` counts at once, as Karpenter
reads a missing time as the zero time), a scheduled event at once (its date is often in
the future; a host with maintenance scheduled is vacated now, as the EventBridge scheduled
change is). Failed EBS checks are reported too, and the controllers ignore them: they
cannot tell a root volume from a pod's.

`health_statuses` is the pure reading of the EC2 answer, so the simulated EC2 can report
its impaired instances through it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from nodewright.cloud.aws.errors import aws_call

log = logging.getLogger(__name__)

UNHEALTHY_THRESHOLD_SECONDS: Final = 120.0
# EC2's error code when the caller's policy does not allow the action.
UNAUTHORIZED_CODE: Final = "UnauthorizedOperation"
IMPAIRED: Final = "impaired"
FAILED: Final = "failed"
# Scheduled events that mean the instance's host is going away or rebooting.
EVENT_CODES: Final[tuple[str, ...]] = (
    "instance-reboot",
    "system-reboot",
    "system-maintenance",
    "instance-retirement",
    "instance-stop",
)
# One DescribeInstanceStatus call per filter set (EC2 ANDs filters of different names).
STATUS_FILTERS: Final[tuple[tuple[Mapping[str, Any], ...], ...]] = (
    ({"Name": "instance-status.status", "Values": [IMPAIRED]},),
    ({"Name": "system-status.status", "Values": [IMPAIRED]},),
    ({"Name": "event.code", "Values": list(EVENT_CODES)},),
)


class Category(StrEnum):
    INSTANCE_STATUS = "InstanceStatus"
    SYSTEM_STATUS = "SystemStatus"
    EVENT_STATUS = "EventStatus"
    EBS_STATUS = "EBSStatus"


@dataclass(frozen=True)
class Details:
    """One check or event of an instance: its category, name (`reachability`, an event
    code), status (`failed` for every event) and since when it is impaired (None: EC2 did
    not say)."""

    category: Category
    name: str
    status: str
    impaired_since: datetime | None


@dataclass(frozen=True)
class HealthStatus:
    """An instance with at least one failure worth acting on, and those failures."""

    instance_id: str
    details: tuple[Details, ...]
    overall: str = IMPAIRED

    @property
    def impaired_since(self) -> datetime | None:
        """The earliest known impairment of its failures."""
        known = [d.impaired_since for d in self.details if d.impaired_since is not None]
        return min(known) if known else None

    @property
    def categories(self) -> tuple[Category, ...]:
        """Its failures' categories, each once, in `Category` order."""
        present = {d.category for d in self.details}
        return tuple(category for category in Category if category in present)


def _details(summary: Any, category: Category) -> list[Details]:
    if not isinstance(summary, Mapping):
        return []
    return [
        Details(category, str(item.get("Name", "")), str(item.get("Status", "")),
                _aware(item.get("ImpairedSince")))
        for item in summary.get("Details") or () if isinstance(item, Mapping)
    ]


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _unhealthy(details: Details, now: datetime) -> bool:
    if details.status != FAILED:
        return False
    if details.category is Category.EVENT_STATUS:
        return True
    if details.impaired_since is None:
        return True
    return (now - details.impaired_since).total_seconds() >= UNHEALTHY_THRESHOLD_SECONDS


def health_status(raw: Mapping[str, Any], now: datetime) -> HealthStatus | None:
    """One DescribeInstanceStatus entry as the failures worth acting on (None: none)."""
    found = [
        *_details(raw.get("InstanceStatus"), Category.INSTANCE_STATUS),
        *_details(raw.get("SystemStatus"), Category.SYSTEM_STATUS),
        *_details(raw.get("AttachedEbsStatus"), Category.EBS_STATUS),
        # Every scheduled event counts as a failure, impaired from the moment it is seen.
        *(Details(Category.EVENT_STATUS, str(event.get("Code", "")), FAILED, now)
          for event in raw.get("Events") or () if isinstance(event, Mapping)),
    ]
    unhealthy = tuple(d for d in found if _unhealthy(d, now))
    if not unhealthy:
        return None
    return HealthStatus(str(raw.get("InstanceId", "")), unhealthy)


def health_statuses(raw: Iterable[Mapping[str, Any]], now: datetime) -> list[HealthStatus]:
    """The unhealthy instances among DescribeInstanceStatus entries, each instance once
    (its first entry), in the order given."""
    seen: set[str] = set()
    found: list[HealthStatus] = []
    for entry in raw:
        instance_id = str(entry.get("InstanceId", ""))
        if not instance_id or instance_id in seen:
            continue
        seen.add(instance_id)
        status = health_status(entry, now)
        if status is not None:
            found.append(status)
    return found


class InstanceStatusProvider:
    """DescribeInstanceStatus, three filtered and paginated calls per `list()`.

    `wall_clock` is the time failures are measured against (EC2 reports `ImpairedSince` in
    wall time)."""

    def __init__(self, ec2: Any,
                 wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.ec2 = ec2
        self.wall_clock = wall_clock

    def list(self) -> list[HealthStatus]:
        """The unhealthy instances. A failed call raises a CloudProviderError naming
        ec2:DescribeInstanceStatus (code `UnauthorizedOperation` when the policy lacks it)."""
        entries: list[Mapping[str, Any]] = []
        for filters in STATUS_FILTERS:
            entries.extend(self._describe(filters))
        return health_statuses(entries, self.wall_clock())

    def _describe(self, filters: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
        found: list[Mapping[str, Any]] = []
        with aws_call("ec2:DescribeInstanceStatus"):
            pages = self.ec2.get_paginator("describe_instance_status").paginate(
                Filters=[dict(f) for f in filters])
            for page in pages:
                found.extend(page.get("InstanceStatuses") or ())
        return found
