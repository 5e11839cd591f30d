"""The SSM parameter cache (Karpenter's pkg/providers/ssm and its invalidation controller).

An AMI alias's public parameters are read once a day, an ssmParameter term's every five
minutes. A day-long cache is what keeps a newly published `latest` AMI from drifting the
whole fleet at once: each controller adopts it when its entry expires. An AMI that AWS
deprecates (a regression) is different: `invalidate_deprecated` drops the entries of the
mutable (`latest`) parameters whose image is now deprecated, every 30 minutes, so the next
resolution reads the parameter again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from nodewright.cloud.aws.clock import Seconds, system_clock
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ssm import SSMClient

ALIAS_PARAMETER_SECONDS: Final = 24 * 3600.0
CUSTOM_PARAMETER_SECONDS: Final = 5 * 60.0
INVALIDATION_INTERVAL_SECONDS: Final = 30 * 60.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    value: str
    # A `latest` parameter: its value changes with each AMI release.
    mutable: bool
    stored_at: float
    ttl_seconds: float


class ParameterCache:
    """GetParameter behind a cache. A parameter that does not exist reads as None and is
    not cached (as Karpenter caches only values)."""

    def __init__(self, ssm: SSMClient, clock: Seconds = system_clock) -> None:
        self.ssm = ssm
        self.clock = clock
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def get(self, name: str, *, custom: bool, mutable: bool = False,
            resource: str = "") -> str | None:
        """The parameter's value: an alias parameter (`custom=False`) is kept 24 h, a
        user's own (`custom=True`) 5 minutes."""
        now = self.clock()
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None and now - entry.stored_at < entry.ttl_seconds:
                return entry.value
        try:
            with aws_call("ssm:GetParameter", f"{resource} ({name})".strip()):
                value = self.ssm.get_parameter(Name=name)["Parameter"].get("Value")
        except CloudProviderError as error:
            if error.code == "ParameterNotFound":
                return None
            raise
        if value is None:
            return None
        ttl = CUSTOM_PARAMETER_SECONDS if custom else ALIAS_PARAMETER_SECONDS
        with self._lock:
            self._entries[name] = Entry(value, mutable, now, ttl)
        log.info("discovered ssm parameter", extra={"parameter": name, "value": value})
        return value

    def entries(self) -> dict[str, Entry]:
        """The live entries, by parameter name."""
        now = self.clock()
        with self._lock:
            return {name: entry for name, entry in self._entries.items()
                    if now - entry.stored_at < entry.ttl_seconds}

    def invalidate_deprecated(self, ec2: EC2Client, now: datetime | None = None) -> list[str]:
        """Drop the mutable entries whose image is deprecated; the names dropped."""
        mutable = {entry.value: name for name, entry in self.entries().items() if entry.mutable}
        if not mutable:
            return []
        moment = now or datetime.now(UTC)
        deprecated: list[str] = []
        with aws_call("ec2:DescribeImages", "deprecated alias images"):
            pages = ec2.get_paginator("describe_images").paginate(
                Filters=[{"Name": "image-id", "Values": sorted(mutable)}],
                IncludeDeprecated=True)
            for page in pages:
                for image in page.get("Images", []):
                    when = image.get("DeprecationTime")
                    if when and datetime.fromisoformat(
                            str(when).replace("Z", "+00:00")) <= moment:
                        deprecated.append(mutable[str(image["ImageId"])])
        with self._lock:
            for name in deprecated:
                self._entries.pop(name, None)
        for name in deprecated:
            log.info("the image of ssm parameter %s is deprecated: reading it again", name)
        return sorted(deprecated)
