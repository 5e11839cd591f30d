"""The dead-code check `python3 dev.py test` runs: no function, method, class or property
of the package that nothing in the package uses, and no unreachable code.

    python tools/dead_code.py

Tests do not count as users: a function only tests call is test support and belongs in
tests/ (tests/support/). Names a framework calls are listed in
tools/dead_code_whitelist.py. Module-level constants and attributes are left to review
(model fields and counters read by tests would drown the report). Uses vulture.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vulture import Vulture

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dead_code_whitelist import NAMES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "controller" / "nodewright"
CHECKED = {"function", "method", "class", "property", "unreachable_code"}


def dead_code() -> list[str]:
    """One line per unused definition: path:line: what."""
    scanner = Vulture(ignore_names=sorted(NAMES))
    scanner.scavenge([str(PACKAGE)])
    return [item.get_report(add_size=False).replace(f"{ROOT}/", "")
            for item in scanner.get_unused_code(min_confidence=60)
            if item.typ in CHECKED]


def stale_whitelist() -> list[str]:
    """Whitelisted names the package no longer defines."""
    source = "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py"))
    return [f"tools/dead_code_whitelist.py: {name!r} is defined nowhere any more"
            for name in sorted(NAMES) if f"def {name}(" not in source]


def main() -> int:
    found = dead_code() + stale_whitelist()
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} unused: delete them, move what only tests use to tests/support/, "
              "or (a framework entry point) name them in tools/dead_code_whitelist.py")
        return 1
    print("no dead code")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
