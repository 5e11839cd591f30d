"""Where moto answers differently from EC2, made to answer as EC2 does.

- DescribeInstanceTypes with `processor-info.supported-architecture`: moto compares a list
  attribute by its first element only, so t2.small (`[i386, x86_64]`) fails the x86_64 value
  that EC2 matches it by. The filter is taken off the request moto sees and applied to its
  answer as EC2 applies it (any listed architecture matches), page by page.

And one change of speed only: moto draws its EC2 resource ids one hex digit at a time, and
every EC2 backend it builds (the test's region's and us-east-1's, which moto's request
routing builds, each time moto resets) registers its thousand-odd bundled images with a
volume and a snapshot each, some 50,000 digits drawn per test. `random_resource_id` draws
each id's digits at once from the same generator, as uniformly. And a backend's bundled
images are registered when something first reads its images (`amis`), not as it is built:
the us-east-1 backend moto's routing builds at every reset never reads them.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.handlers import BUILTIN_HANDLERS
from moto.ec2 import utils as ec2_utils
from moto.ec2.models.amis import AmiBackend
from moto.moto_api._internal import mock_random

ARCHITECTURE_FILTER = "processor-info.supported-architecture"
_KEY = "tests.aws.moto_fixes.architectures"


def _take_architecture_filter(params: dict[str, Any], context: dict[str, Any],
                              **_: Any) -> dict[str, Any] | None:
    # A new dict for the request: recorders of the call still see what the code asked.
    filters = params.get("Filters") or []
    wanted = [f for f in filters if f.get("Name") == ARCHITECTURE_FILTER]
    if not wanted:
        return None
    context[_KEY] = {value for f in wanted for value in f.get("Values", [])}
    sent = {key: value for key, value in params.items() if key != "Filters"}
    rest = [f for f in filters if f.get("Name") != ARCHITECTURE_FILTER]
    return {**sent, "Filters": rest} if rest else sent


def _apply_architecture_filter(parsed: dict[str, Any], context: dict[str, Any],
                               **_: Any) -> None:
    wanted = context.get(_KEY)
    if wanted is None or "InstanceTypes" not in parsed:
        return
    parsed["InstanceTypes"] = [
        t for t in parsed["InstanceTypes"]
        if wanted & set(t.get("ProcessorInfo", {}).get("SupportedArchitectures", []))]


def _random_resource_id(size: int = 8) -> str:
    return format(mock_random.getrandbits(4 * size), f"0{size}x")


class _BundledOnFirstRead:
    """`AmiBackend.amis`, its bundled images registered on the first read (by one thread;
    the others wait for them all)."""

    def __init__(self, load: Any) -> None:
        self._load = load
        self._lock = threading.RLock()  # the loading thread reads `amis` as it registers

    def __set__(self, backend: AmiBackend, amis: dict[str, Any]) -> None:
        backend.__dict__["_amis"] = amis
        backend.__dict__["_amis_state"] = "unloaded"

    def __get__(self, backend: AmiBackend | None, owner: type) -> Any:
        if backend is None:
            return self
        state = backend.__dict__
        if state.get("_amis_state") != "loaded":
            with self._lock:
                if state.get("_amis_state") == "unloaded":
                    state["_amis_state"] = "loading"
                    self._load(backend)
                    state["_amis_state"] = "loaded"
        return state["_amis"]


def install() -> None:
    """For every botocore session made from now on."""
    ec2_utils.random_resource_id = _random_resource_id
    if not isinstance(AmiBackend.__dict__.get("amis"), _BundledOnFirstRead):
        lazy = _BundledOnFirstRead(AmiBackend._load_amis)
        AmiBackend._load_amis = lambda self: None  # type: ignore[method-assign]
        AmiBackend.amis = lazy  # type: ignore[assignment]
    for spec in (("provide-client-params.ec2.DescribeInstanceTypes", _take_architecture_filter),
                 ("after-call.ec2.DescribeInstanceTypes", _apply_architecture_filter)):
        if spec not in BUILTIN_HANDLERS:
            BUILTIN_HANDLERS.append(spec)
