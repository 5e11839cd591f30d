#!/usr/bin/env python3
"""Drift roll-out benchmark: a NodePool of N one-pod nodes (the workshop's NodePool with a
Drifted budget of B %) whose template changes, simulated on the virtual clock with the real
controllers until every original node is replaced.

It reports the cluster time the roll-out took against what Karpenter v1.14.1 would take
(`tests/disruption/rollout.py`: ceil(N / room) waves of a replacement's launch,
registration and startup taints plus one 10 s poll), the ratio, the commands that were in
flight at once at most, and the CPU seconds and peak RSS of the run. Goal (issue 31): a
300-node pool with a 10 % budget within 1.2x Karpenter's time.

    python bench/drift_rollout.py [--nodes 300] [--budget 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "controller"))

from nodewright.cloud.sim.settings import SimSettings  # noqa: E402
from nodewright.cluster import objects  # noqa: E402
from tests.disruption.rollout import drifted_fleet, karpenter_roll_out_seconds  # noqa: E402
from tests.harness import World  # noqa: E402


def roll_out(nodes: int, budget_percent: int) -> dict[str, Any]:
    settings = SimSettings()
    world = World(sim=settings)
    began_cpu = time.process_time()
    originals = drifted_fleet(world, nodes, f"{budget_percent}%")
    setup_cpu = time.process_time() - began_cpu
    disruption = world.controllers.disruption
    assert disruption is not None
    began = world.clock.now()
    most = 0
    while originals & {objects.name(c) for c in world.nodeclaims()}:
        world.advance(5)
        most = max(most, len(disruption.disruption.orchestrator.commands))
        if (world.clock.now() - began).total_seconds() > 24 * 3600:
            raise SystemExit(f"{nodes} nodes: not rolled out within a day of cluster time")
    took = (world.clock.now() - began).total_seconds()
    karpenter = karpenter_roll_out_seconds(nodes, budget_percent / 100, settings)
    return {
        "nodes": nodes, "budget_percent": budget_percent,
        "cluster_seconds": took, "karpenter_seconds": karpenter,
        "ratio": round(took / karpenter, 3), "most_commands_in_flight": most,
        "setup_cpu_seconds": round(setup_cpu, 1),
        "roll_out_cpu_seconds": round(time.process_time() - began_cpu - setup_cpu, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--budget", type=int, default=10, help="Drifted budget, percent")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    row = roll_out(args.nodes, args.budget)
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{row['nodes']} nodes, budget {row['budget_percent']} %: rolled out in "
              f"{row['cluster_seconds']:.0f} s of cluster time; Karpenter "
              f"{row['karpenter_seconds']:.0f} s; ratio {row['ratio']} (goal <= 1.2); at most "
              f"{row['most_commands_in_flight']} commands in flight; CPU "
              f"{row['setup_cpu_seconds']} s setup + {row['roll_out_cpu_seconds']} s roll-out; "
              f"peak RSS {row['peak_rss_mib']} MiB")
    return 0 if row["ratio"] <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
