"""The simulated EC2: a CloudProvider on a Clock for the simulator and the tests.

`SimulatedEC2` launches the offering CreateFleet would pick, runs out of capacity where the
scenario says so, registers Nodes into a ClusterAPI after the launch and registration
delays, injects interruptions onto `interruption_queue`, and keeps a ledger of what ran.
"""

from nodewright.cloud.sim.interruptions import InterruptionKind, SimulatedInterruptionQueue
from nodewright.cloud.sim.ledger import Ledger, LedgerEntry, SimCounters
from nodewright.cloud.sim.provider import SimEvent, SimulatedEC2
from nodewright.cloud.sim.settings import SimSettings
from nodewright.cloud.sim.world import CapacityRule, PriceOverride, parse_capacity, parse_prices

__all__ = [
    "CapacityRule",
    "InterruptionKind",
    "Ledger",
    "LedgerEntry",
    "PriceOverride",
    "SimCounters",
    "SimEvent",
    "SimSettings",
    "SimulatedEC2",
    "SimulatedInterruptionQueue",
    "parse_capacity",
    "parse_prices",
]
