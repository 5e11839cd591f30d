"""Names EC2 would hand out: instance ids, private addresses and the hostnames built from
them, drawn from a seeded generator so that a seed fixes them all."""

from __future__ import annotations

import hashlib
import ipaddress
import random
from collections.abc import Sequence
from typing import Final

# Each zone gets a /20 of 10.0.0.0/16, as a VPC with one private subnet per zone would.
VPC_CIDR: Final = ipaddress.IPv4Network("10.0.0.0/16")
SUBNET_PREFIX: Final = 20


class Identities:
    def __init__(self, seed: int, region: str, zones: Sequence[str]) -> None:
        self._rng = random.Random(f"{seed}/identities")
        self.region = region
        self._subnets: dict[str, ipaddress.IPv4Network] = dict(
            zip(zones, VPC_CIDR.subnets(new_prefix=SUBNET_PREFIX), strict=False)
        )
        self._instance_ids: set[str] = set()
        self._addresses: dict[str, set[str]] = {zone: set() for zone in self._subnets}

    def instance_id(self) -> str:
        """`i-` and 17 hex digits, unique in this simulation."""
        while True:
            candidate = f"i-0{self._rng.getrandbits(64):016x}"
            if candidate not in self._instance_ids:
                self._instance_ids.add(candidate)
                return candidate

    def private_ip(self, zone: str) -> str:
        """A free address of the zone's subnet (network, broadcast and the first three
        addresses are reserved, as in a VPC)."""
        subnet = self._subnets.get(zone)
        if subnet is None:
            raise ValueError(f"zone {zone!r} has no subnet (zones: {', '.join(self._subnets)})")
        used = self._addresses[zone]
        usable = subnet.num_addresses - 5
        if len(used) >= usable:
            raise ValueError(f"subnet {subnet} of {zone} has no free address")
        while True:
            address = str(subnet.network_address + 4 + self._rng.randrange(usable))
            if address not in used:
                used.add(address)
                return address

    def release(self, zone: str, address: str) -> None:
        """An address back to its subnet once its instance is terminated."""
        self._addresses.get(zone, set()).discard(address)

    def subnet_id(self, zone: str) -> str:
        return "subnet-" + _digest(f"subnet/{self.region}/{zone}")

    def hostname(self, address: str) -> str:
        """EC2's private DNS name: ip-10-0-1-2.ec2.internal in us-east-1,
        ip-10-0-1-2.<region>.compute.internal elsewhere."""
        domain = "ec2.internal" if self.region == "us-east-1" else f"{self.region}.compute.internal"
        return f"ip-{address.replace('.', '-')}.{domain}"


def fake_image_id(key: str) -> str:
    """A stable AMI id for an image name."""
    return "ami-" + _digest(f"image/{key}")


def _digest(text: str) -> str:
    return "0" + hashlib.sha256(text.encode()).hexdigest()[:16]
