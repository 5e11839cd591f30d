"""Moved to `nodewright.api.quantity` (the API is the bottom layer); kept so that
`nodewright.scheduling.quantity` imports keep working."""

from nodewright.api.quantity import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resources,
    add,
    exceeded,
    fits,
    format_quantity,
    format_resources,
    maximum,
    parse_quantity,
    parse_resources,
    subtract,
)

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "Resources",
    "add",
    "exceeded",
    "fits",
    "format_quantity",
    "format_resources",
    "maximum",
    "parse_quantity",
    "parse_resources",
    "subtract",
]
