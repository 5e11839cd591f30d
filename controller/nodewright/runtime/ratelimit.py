"""The one token bucket and the one exponential backoff every layer uses.

- `TokenBucket`: `rate` tokens a second, at most `burst` saved up. `try_accept` takes a
  token only when one is there (events are dropped otherwise); `reserve` always takes one,
  going into debt, and returns how long to wait for it (golang.org/x/time/rate's
  reservation, which client-go's QPS limiter and controller-runtime's overall retry limit
  are built on).
- `Backoff`: `initial` multiplied by `factor` per failure up to `maximum`, with optional
  jitter (client-go's reflector adds up to 100 %; the simulator's drivers add none, to
  stay deterministic).
- `RetryLimits`: what a controller declares for its work queue's retries (its
  `retry_limits`): a per-key `Backoff` and an overall bucket, fixed or sized with its
  workers as Karpenter sizes it (`runtime.concurrency.ScaledBucket`); `RateLimiter` is the
  limiter built from it (controller-runtime's MaxOf(per-item exponential, bucket)).

Time is given (`now`, seconds), never read here, so the virtual clock drives both in the
simulator and tests count waits without sleeping.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from nodewright.runtime.clock import Clock
from nodewright.runtime.concurrency import DEFAULT_CPU_REQUESTS, ScaledBucket, cores

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

# controller-runtime's default overall retry bucket: 10 a second, bursts of 100.
DEFAULT_BUCKET = (10.0, 100)


@dataclass(frozen=True)
class RetryLimits:
    """A controller's retry rate limit: the larger of `backoff` for the key and a wait
    for a token of the controller's bucket (`bucket`: (qps, burst), or sized with the
    workers). The default is controller-runtime's DefaultTypedControllerRateLimiter."""

    backoff: Backoff = RECONCILE_BACKOFF
    bucket: tuple[float, int] | ScaledBucket = DEFAULT_BUCKET

    def bucket_at(self, cpu_requests: int = DEFAULT_CPU_REQUESTS) -> tuple[float, int]:
        """(qps, burst) in a container requesting `cpu_requests` millicores."""
        if isinstance(self.bucket, ScaledBucket):
            qps, burst = self.bucket.at(cores(cpu_requests))
            return float(qps), burst
        return self.bucket

    def limiter(self, cpu_requests: int = DEFAULT_CPU_REQUESTS) -> RateLimiter:
        qps, burst = self.bucket_at(cpu_requests)
        return RateLimiter(self.backoff.initial, self.backoff.maximum, qps, burst)


DEFAULT_RETRY = RetryLimits()


class RateLimiter:
    """controller-runtime's MaxOf(per-item exponential backoff, overall token bucket):
    `when` gives the delay before a retry of `key` at time `now` (seconds)."""

    def __init__(self, base: float = RECONCILE_BACKOFF.initial,
                 maximum: float = RECONCILE_BACKOFF.maximum,
                 qps: float = DEFAULT_BUCKET[0], burst: int = DEFAULT_BUCKET[1]) -> None:
        self.backoff = Backoff(initial=base, maximum=maximum)
        self.qps = qps
        self.burst = burst
        self._now = 0.0
        # The bucket reads the time `when` was given.
        self._bucket = TokenBucket(qps, burst, now=lambda: self._now)
        self._failures: dict[str, int] = {}

    def when(self, key: str, now: float) -> float:
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        self._now = now
        return max(self.backoff.delay(failures), self._bucket.reserve())

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)
