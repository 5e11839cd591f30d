"""Voluntary disruption: emptiness, drift, multi- and single-node consolidation under
budgets, with an explanation for every node looked at (see docs/design/contracts.md)."""
