"""ARC zonal shifts away from the cluster's zones (Karpenter's arczonalshift provider, on with
ENABLE_ZONAL_SHIFT).

`update()` asks ARC (arc-zonal-shift:GetManagedResource on the EKS cluster's ARN) which zones
traffic is shifted away from; the zonal shift controller calls it every 30 seconds. A zone
(by zone id) counts as shifted while a shift away from it is applied and not expired. As
Karpenter: an answer without any shift forgets every shift; an answer with some updates
those and keeps the others until they expire; the first question about a zone asks ARC
once if no update has succeeded yet.

A shifted zone's offerings are unavailable, and the provider makes no EC2 call about an
instance in it (DescribeInstances, TerminateInstances) so as not to retry against an
impaired zone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import boto3

from nodewright.cloud.aws.clients import AwsClients, retry_config
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.sdk_metrics import instrument
from nodewright.cloud.provider import CloudProviderError

log = logging.getLogger(__name__)

APPLIED: Final = "APPLIED"
UPDATE_INTERVAL_SECONDS: Final = 30.0
GET_MANAGED_RESOURCE: Final = "arc-zonal-shift:GetManagedResource"


@dataclass(frozen=True)
class _Shift:
    expires: datetime
    applied: bool


class ZonalShifts:
    """`client`: a boto3 "arc-zonal-shift" client; `cluster_arn`: the EKS cluster's ARN."""

    def __init__(self, client: Any, cluster_arn: str,
                 wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.client = client
        self.cluster_arn = cluster_arn
        self.wall_clock = wall_clock
        self._lock = threading.Lock()
        self._shifts: dict[str, _Shift] = {}
        self._hydrated = False

    def update(self) -> None:
        """Ask ARC for the cluster's active zonal shifts (CloudProviderError when it fails)."""
        with aws_call(GET_MANAGED_RESOURCE, f"cluster {self.cluster_arn}"):
            answer: Mapping[str, Any] = self.client.get_managed_resource(
                resourceIdentifier=self.cluster_arn)
        found = {str(shift["awayFrom"]): _Shift(_utc(shift["expiryTime"]),
                                                shift.get("appliedStatus") == APPLIED)
                 for shift in answer.get("zonalShifts", []) or []}
        with self._lock:
            if found:
                self._shifts.update(found)
            else:
                self._shifts = {}
            self._hydrated = True
        log.debug("zonal shifts: %s", ", ".join(sorted(found)) or "none")

    def is_shifted(self, zone_id: str) -> bool:
        if not zone_id:
            return False
        self._hydrate()
        with self._lock:
            shift = self._shifts.get(zone_id)
        return shift is not None and shift.applied and shift.expires > self.wall_clock()

    def shifted_zones(self) -> frozenset[str]:
        """The zone ids shifted away from now."""
        now = self.wall_clock()
        with self._lock:
            return frozenset(zone for zone, shift in self._shifts.items()
                             if shift.applied and shift.expires > now)

    def _hydrate(self) -> None:
        with self._lock:
            if self._hydrated:
                return
        try:
            self.update()
        except CloudProviderError as error:  # a failed first look must not fail a launch
            log.error("reading zonal shifts: %s", error)


def enable(clients: AwsClients, cluster_name: str,
           session: boto3.session.Session | None = None) -> ZonalShifts:
    """ENABLE_ZONAL_SHIFT at start-up (Karpenter's ValidateZonalShiftEnablement): the
    cluster's ARN from eks:DescribeCluster, then one GetManagedResource, which fails when
    the cluster is not enabled for zonal shift or the controller may not ask."""
    with aws_call("eks:DescribeCluster", f"cluster {cluster_name}"):
        arn = str(clients.eks.describe_cluster(name=cluster_name)["cluster"]["arn"])
    client = instrument((session or boto3.session.Session()).client(
        "arc-zonal-shift", region_name=clients.region, config=retry_config()))
    shifts = ZonalShifts(client, arn)
    try:
        shifts.update()
    except CloudProviderError as error:
        raise CloudProviderError(
            f"ENABLE_ZONAL_SHIFT: cluster {arn} was not found in ARC zonal shift (is it "
            f"enabled for zonal shift, and may the controller call {GET_MANAGED_RESOURCE}?): "
            f"{error}", call=GET_MANAGED_RESOURCE, resource=arn) from error
    return shifts


def _utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value), UTC)
