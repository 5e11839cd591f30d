"""Functions the dead-code check (tools/dead_code.py) counts as used although nothing in
the package calls them by name. Keep it short: each entry says who calls it."""

from __future__ import annotations

# Called by a framework, by name.
ENTRY_POINTS: dict[str, str] = {
    "collect": "prometheus_client calls a registered collector's collect() (metrics.py)",
    "do_GET": "http.server calls its handler's do_GET (operator/endpoints.py)",
    "log_message": "http.server logs each request through it (operator/endpoints.py)",
    "ignore_aliases": "PyYAML's Dumper asks it before writing anchors (cli/snapshot.py)",
}

# Called by tests only, kept on purpose until they move (each a known item of issue 29).
TEST_ONLY: dict[str, str] = {
    "is_leader": "client-go's LeaderElector.IsLeader (and the Operator's); the "
                 "leader-election tests wait on it",
    "recover": "the simulated EC2's counterpart of impair(), driven by the stories",
    "greedy_pattern": "scheduling/knapsack.py, unused since column pricing; goes with the "
                      "packer split",
}

NAMES: frozenset[str] = frozenset(ENTRY_POINTS) | frozenset(TEST_ONLY)
