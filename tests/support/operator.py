"""What tests do to a running operator that the operator never does to itself."""

from __future__ import annotations

from nodewright.operator.process import Operator


def crash(operator: Operator) -> None:
    """Die without a word (kill -9): nothing is released; the Lease runs out."""
    if operator.elector is not None:
        operator.elector.stop(release=False)
    operator.driver.stop()
