"""The one token bucket and the one exponential backoff every layer uses.

- `TokenBucket`: `rate` tokens a second, at most `burst` saved up. `try_accept` takes a
  token only when one is there (events are dropped otherwise); `reserve` always takes one,
  going into debt, and returns how long to wait for it (golang.org/x/time/rate's
  reservation, which client-go's QPS limiter and controller-runtime's overall retry limit
  are built on).
- `Backoff`: `initial` multiplied by `factor` per failure up to `maximum`, with optional
  jitter (client-go's reflector adds up to 100 %; the simulator's drivers add none, to
  stay deterministic).

Time is given (`now`, seconds), never read here, so the virtual clock drives both in the
simulator and tests count waits without sleeping.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from nodewright.runtime.clock import Clock

Seconds = Callable[[], float]


def clock_seconds(clock: Clock) -> Seconds:
    """A controller clock as a source of seconds (its time as a POSIX timestamp)."""
    return lambda: clock.now().timestamp()


class TokenBucket:
    def __init__(self, rate: float, burst: int, *, now: Seconds) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs a rate above 0 and a burst of at least 1")
        self.rate = rate
        self.burst = float(burst)
        self._now = now
        self._tokens = float(burst)
        self._stamp: float | None = None

    def _refill(self) -> None:
        now = self._now()
        if self._stamp is not None:
            elapsed = max(now - self._stamp, 0.0)
            self._tokens = min(self.burst, self._tokens + elapsed * self.rate)
        self._stamp = now

    def try_accept(self) -> bool:
        """Take a token if one is there."""
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take a token, in debt if need be: the seconds until it is really there."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


@dataclass(frozen=True)
class Backoff:
    initial: float
    maximum: float
    factor: float = 2.0
    # Up to this fraction of the delay is added at random (0: deterministic).
    jitter: float = 0.0

    def delay(self, failures: int, rng: Callable[[], float] = random.random) -> float:
        """The wait after the `failures`-th failure in a row (1: the first)."""
        exponent = min(max(0, failures - 1), 64)
        base = min(self.initial * self.factor ** exponent, self.maximum)
        return base * (1 + rng() * self.jitter) if self.jitter else base


# client-go's reflector: 800 ms doubling to 30 s, with up to 100 % jitter.
REFLECTOR_BACKOFF = Backoff(initial=0.8, maximum=30.0, jitter=1.0)
# controller-runtime's per-item retry: 5 ms doubling to 1000 s.
RECONCILE_BACKOFF = Backoff(initial=0.005, maximum=1000.0)
