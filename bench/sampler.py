#!/usr/bin/env python3
"""A sampling profiler for a whole Python process, every thread (cProfile sees only the
main thread, and the controller reconciles in its driver thread).

    python bench/sampler.py OUT MODULE [ARGS...]     # like python -m MODULE ARGS...

Every 5 ms it records each thread's stack; at exit it writes to OUT, per thread, the
functions most often on the stack (inclusive) and at its top (exclusive), as percentages
of that thread's samples. bench/e2e_scale.py --profile runs the controller under it.
"""

from __future__ import annotations

import atexit
import runpy
import sys
import threading
import time
from collections import Counter
from types import FrameType

INTERVAL = 0.005
TOP = 40


class Sampler:
    def __init__(self) -> None:
        self.inclusive: dict[str, Counter[str]] = {}
        self.exclusive: dict[str, Counter[str]] = {}
        self.samples: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(INTERVAL):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    self._record(names.get(ident, str(ident)), frame)

    def _record(self, thread: str, frame: FrameType | None) -> None:
        seen: set[str] = set()
        top = True
        inclusive = self.inclusive.setdefault(thread, Counter())
        while frame is not None:
            code = frame.f_code
            where = f"{code.co_filename.rsplit('/site-packages/', 1)[-1]}:{code.co_name}"
            if top:
                self.exclusive.setdefault(thread, Counter())[where] += 1
                top = False
            if where not in seen:
                seen.add(where)
                inclusive[where] += 1
            frame = frame.f_back
        self.samples[thread] += 1

    def write(self, path: str) -> None:
        self._stop.set()
        with open(path, "w") as out:
            for thread, count in self.samples.most_common():
                out.write(f"== thread {thread}: {count} samples ({count * INTERVAL:.1f} s)\n")
                for title, table in (("inclusive", self.inclusive[thread]),
                                     ("exclusive", self.exclusive.get(thread, Counter()))):
                    out.write(f"-- {title}\n")
                    for where, hits in table.most_common(TOP):
                        out.write(f"{100 * hits / count:6.1f}%  {where}\n")


def main() -> None:
    out, module, *args = sys.argv[1:]
    sampler = Sampler()
    atexit.register(sampler.write, out)
    sys.argv = [module, *args]
    started = time.monotonic()
    sampler.start()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.stderr.write(f"sampled for {time.monotonic() - started:.1f} s into {out}\n")


if __name__ == "__main__":
    main()
