"""Questions tests ask of the scheduling types that the package itself never asks."""

from __future__ import annotations

from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.requirements import Requirements


def single_values(requirements: Requirements) -> dict[str, str]:
    """Labels fixed to one value: what a node launched from these will carry."""
    return {key: next(iter(requirement.values))
            for key, requirement in sorted(requirements.items())
            if not requirement.complement and len(requirement.values) == 1}


def available_offerings(instance_type: InstanceType) -> list[Offering]:
    return [offering for offering in instance_type.offerings if offering.available]
