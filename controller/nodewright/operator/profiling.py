"""ENABLE_PROFILING: Python's counterpart of Go's net/http/pprof on the metrics port.

- `/debug/pprof/` lists what is served.
- `/debug/pprof/threads` (also `/debug/pprof/goroutine`, the name Go users reach for):
  the current stack of every thread, by thread name (`sys._current_frames`), to see what
  a stuck or busy controller is doing.
- `/debug/pprof/profile?seconds=N` (default 30, as Go's; at most 300): a CPU sample. A
  sampling thread reads every thread's stack each 10 ms for N seconds and answers in the
  folded-stack format (`thread;outer;...;inner count` per line), which flamegraph.pl,
  speedscope and inferno read.
- `/debug/pprof/heap`: the live objects the garbage collector tracks, counted by type
  (largest first), a first look at what memory holds.

Off by default: a stack dump shows internals, and a profile costs CPU while it runs.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from types import FrameType
from urllib.parse import parse_qs

PREFIX = "/debug/pprof"
DEFAULT_PROFILE_SECONDS = 30.0
MAX_PROFILE_SECONDS = 300.0
SAMPLE_INTERVAL_SECONDS = 0.01
HEAP_TYPES_SHOWN = 100

Answer = tuple[int, str]  # HTTP status, plain-text body
_INDEX = f"""profiles (ENABLE_PROFILING):
  {PREFIX}/threads              every thread's current stack (alias: {PREFIX}/goroutine)
  {PREFIX}/profile?seconds=30   sampled CPU profile, folded stacks (flamegraph.pl, speedscope)
  {PREFIX}/heap                 live objects tracked by the garbage collector, by type
"""


def handles(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def answer(path: str, query: str) -> Answer:
    """The response to a GET of `path` under /debug/pprof."""
    name = path.removeprefix(PREFIX).strip("/")
    if name == "":
        return 200, _INDEX
    if name in ("threads", "goroutine"):
        return 200, thread_stacks()
    if name == "profile":
        try:
            seconds = _seconds(query)
        except ValueError as error:
            return 400, f"seconds: {error}\n"
        return 200, cpu_profile(seconds)
    if name == "heap":
        return 200, heap_summary()
    return 404, f"unknown profile {name!r}\n\n{_INDEX}"


def _seconds(query: str) -> float:
    values = parse_qs(query).get("seconds")
    if not values:
        return DEFAULT_PROFILE_SECONDS
    try:
        seconds = float(values[0])
    except ValueError:
        raise ValueError(f"{values[0]!r} is not a number") from None
    if not 0 < seconds <= MAX_PROFILE_SECONDS:
        raise ValueError(f"must be above 0 and at most {MAX_PROFILE_SECONDS:g}")
    return seconds


def _thread_names() -> dict[int, str]:
    return {thread.ident: thread.name for thread in threading.enumerate()
            if thread.ident is not None}


def thread_stacks() -> str:
    """Every thread's current stack, innermost call last, as tracebacks print them."""
    names = _thread_names()
    frames = sys._current_frames()
    parts = [f"{len(frames)} threads\n"]
    for ident, frame in sorted(frames.items(), key=lambda item: names.get(item[0], "")):
        parts.append(f"\nthread {names.get(ident, '?')!r} (id {ident}):\n")
        parts.append("".join(traceback.format_stack(frame)))
    return "".join(parts)


def _folded(thread: str, frame: FrameType | None) -> str:
    calls: list[str] = []
    while frame is not None:
        code = frame.f_code
        calls.append(f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})")
        frame = frame.f_back
    return ";".join([thread, *reversed(calls)])


def cpu_profile(seconds: float, *, interval: float = SAMPLE_INTERVAL_SECONDS,
                sleep: Callable[[float], None] = time.sleep,
                now: Callable[[], float] = time.monotonic) -> str:
    """Samples every other thread's stack each `interval` for `seconds`; folded stacks,
    most frequent first, with a header line saying how many samples were taken."""
    counts: Counter[str] = Counter()
    me = threading.get_ident()
    samples = 0
    end = now() + seconds
    while True:
        names = _thread_names()
        for ident, frame in sys._current_frames().items():
            if ident != me:
                counts[_folded(names.get(ident, f"thread-{ident}"), frame)] += 1
        samples += 1
        if now() >= end:
            break
        sleep(interval)
    header = f"# {samples} samples over {seconds:g}s, every {interval * 1000:g}ms\n"
    return header + "".join(f"{stack} {count}\n" for stack, count in counts.most_common())


def heap_summary(objects: Iterable[object] | None = None) -> str:
    """Objects tracked by the garbage collector, counted by type, largest count first."""
    counts = Counter(type(item).__qualname__ for item in
                     (gc.get_objects() if objects is None else objects))
    lines = [f"{count} {name}\n" for name, count in counts.most_common(HEAP_TYPES_SHOWN)]
    return f"# {sum(counts.values())} objects tracked, {len(counts)} types\n" + "".join(lines)
