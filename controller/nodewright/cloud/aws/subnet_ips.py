"""In-flight IP accounting per subnet (Karpenter's subnet provider inflightIPs): EC2's
AvailableIpAddressCount is only as fresh as the last DescribeSubnets, so each launch takes
the IPs its pods will use off the subnet it landed in until EC2's count changes. The next
launch then picks, in each zone, the subnet with the most IPs really left, instead of
piling every node of a burst into the subnet that looked emptiest a minute ago.

Karpenter takes the IPs off every subnet offered to a fleet before the launch and gives back
those of the subnets the fleet did not use; launches here are one at a time (the
launch lock), so taking them off the subnet used, after the launch, comes to the same.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.cloud.aws.discovery import Subnet


@dataclass
class _Taken:
    seen: int  # EC2's count when the IPs were taken; a different count is a fresh look-up
    ips: int


class SubnetIPs:
    def __init__(self) -> None:
        self._taken: dict[str, _Taken] = {}
        self._lock = threading.Lock()

    def free(self, subnet: Subnet) -> int:
        """IPs left in the subnet: EC2's count less what launches took since it was read."""
        with self._lock:
            return self._free(subnet)

    def _free(self, subnet: Subnet) -> int:
        taken = self._taken.get(subnet.id)
        if taken is None:
            return subnet.free_ips
        if taken.seen != subnet.free_ips:
            del self._taken[subnet.id]  # EC2 counted again: its count includes our launches
            return subnet.free_ips
        return max(subnet.free_ips - taken.ips, 0)

    def per_zone(self, subnets: Sequence[Subnet]) -> dict[str, Subnet]:
        """The subnet with the most IPs left in each zone (ties broken by id)."""
        with self._lock:
            best: dict[str, tuple[int, Subnet]] = {}
            for subnet in subnets:
                free = self._free(subnet)
                current = best.get(subnet.zone)
                if current is None or (free, current[1].id) > (current[0], subnet.id):
                    best[subnet.zone] = (free, subnet)
            return {zone: subnet for zone, (_, subnet) in best.items()}

    def launched(self, subnet: Subnet, ips: int) -> None:
        """A node that will use `ips` addresses (its pods') was launched into `subnet`."""
        with self._lock:
            taken = self._taken.get(subnet.id)
            if taken is None or taken.seen != subnet.free_ips:
                taken = self._taken[subnet.id] = _Taken(subnet.free_ips, 0)
            taken.ips += ips

    def exhausted(self, subnet: Subnet) -> None:
        """EC2 found no address left in `subnet`: none is, until EC2 counts it again."""
        with self._lock:
            self._taken[subnet.id] = _Taken(subnet.free_ips, subnet.free_ips)
