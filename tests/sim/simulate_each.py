"""`python -m tests.sim.simulate_each SCENARIO JSON [SCENARIO JSON ...]`: each scenario
simulated in turn in this one process (`nodewright simulate SCENARIO --json JSON --quiet`),
with a line `done NAME CODE` after each; what a failed run printed follows its line."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from nodewright.cli import main as nodewright

DONE = "done"


def main(argv: list[str]) -> int:
    pairs = list(zip(argv[::2], argv[1::2], strict=True))
    for scenario, json_path in pairs:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                code = nodewright(["simulate", scenario, "--json", json_path, "--quiet"])
            except Exception as error:  # reported with the run's output
                print(f"{type(error).__name__}: {error}")
                code = 99
        print(f"{DONE} {Path(scenario).name} {code}", flush=True)
        if code:
            print(printed.getvalue(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
