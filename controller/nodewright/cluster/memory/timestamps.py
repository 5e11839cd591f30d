"""Timestamps as the API server's objects carry them, one string per instant.

On a virtual clock thousands of writes happen at the same instant (kube-scheduler marking
ten thousand pods, the kubelet starting them), and every object would otherwise hold its
own copy of the same text. Strings are immutable, so objects can share one.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from nodewright.runtime.clock import format_time


@lru_cache(maxsize=256)
def time_text(value: datetime) -> str:
    """RFC 3339 (seconds), as `format_time`; the same string object for the same instant."""
    return format_time(value)


@lru_cache(maxsize=256)
def micro_time_text(value: datetime) -> str:
    """MicroTime, as Kubernetes writes an Event's eventTime."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
