"""How many keys of one controller the operator reconciles at once.

Karpenter sizes each controller's MaxConcurrentReconciles from the CPU the container
requests (CPU_REQUESTS, millicores): `LinearScaleReconciles(cores, min, max)` gives `min`
at one core (or less), `max` at 60 cores and a straight line between, on whole cores
rounded up (pkg/utils/controller/controller.go). A controller here declares the same
numbers (`max_concurrent_reconciles = LinearScale(1000, 5000)` for the NodeClaim
lifecycle) or a fixed count, and the operator's driver computes its workers with
`worker_count`.

Karpenter's workers are goroutines, and its lifecycle runs 1,000 of them on one core. Ours
are threads under one interpreter lock, so a worker only helps while it waits on a
request, and a count is capped at `WORKER_CEILING`:

- past 100 launches in flight, more would mostly wait elsewhere: the API client allows
  bursts of 300 requests, then 200 a second (a launch makes about three: the finalizer,
  the labels, the status), and the AWS batcher runs at most 100 CreateFleet batches at
  once (`cloud.aws.batcher.Window`); a hundred launches reach one CreateFleet window
  together (bench/burst_in_memory.py: 148 NodeClaims launched within 2.6 s);
- it is Karpenter's own floor for its other request-bound controllers (node termination,
  eviction, the disruption queue: 100 at one core);
- a hundred idle threads cost about 1.5 MB of memory and 0.3 % of a core for their
  one-second wake-ups, so the two controllers at the ceiling (the NodeClaim lifecycle
  and node termination) keep the process at a few hundred threads, never thousands.

More cores do not lift the ceiling: the interpreter runs one thread at a time however
many cores the container has. Below it, Karpenter's formula decides.

Three of Karpenter's controllers (the NodeClaim lifecycle, node termination and the
eviction queue) also size the token bucket that paces their retries from their workers:
`bucket_config` is its `GetTypedBucketConfigs`, and `ScaledBucket` declares one
(runtime.ratelimit.RetryLimits). The bucket follows Karpenter's count, not the capped one:
it paces how often failed keys come back, which the interpreter lock does not change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Karpenter's CPU_REQUESTS default (and what a value of 0 or less means).
DEFAULT_CPU_REQUESTS = 1000
WORKER_CEILING = 100
# Karpenter's line runs from 1 core to 60.
_CORES_AT_MAXIMUM = 60


@dataclass(frozen=True)
class LinearScale:
    """Karpenter's `LinearScaleReconciles(CPUCount, minimum, maximum)`."""

    minimum: int
    maximum: int

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.maximum:
            raise ValueError(f"LinearScale({self.minimum}, {self.maximum}): need "
                             f"1 <= minimum <= maximum")

    def at(self, cores: float) -> int:
        """The count Karpenter gives a container requesting `cores` CPU."""
        slope = (self.maximum - self.minimum) / (_CORES_AT_MAXIMUM - 1)
        result = int(slope * (math.ceil(cores) - 1)) + self.minimum
        return min(max(result, self.minimum), self.maximum)


Concurrency = int | LinearScale


def bucket_config(min_qps: int, min_reconciles: int, concurrent_reconciles: int
                  ) -> tuple[int, int]:
    """Karpenter's `GetTypedBucketConfigs(minQPS, minReconciles, concurrentReconciles)`:
    `min_qps` retries a second at `min_reconciles` workers, rising in proportion to the
    workers (rounded up), with a burst of ten seconds' worth: (qps, burst)."""
    if min_qps < 1 or min_reconciles < 1:
        raise ValueError(f"bucket_config({min_qps}, {min_reconciles}, ...): need a "
                         f"minimum QPS and a minimum of workers of at least 1")
    qps = math.ceil(concurrent_reconciles * (min_qps / min_reconciles))
    return qps, qps * 10


@dataclass(frozen=True)
class ScaledBucket:
    """A retry bucket sized with the controller's workers as Karpenter sizes it:
    `bucket_config(min_qps, workers.minimum, workers.at(cores))`."""

    min_qps: int
    workers: LinearScale

    def at(self, cores: float) -> tuple[int, int]:
        return bucket_config(self.min_qps, self.workers.minimum, self.workers.at(cores))


def cores(cpu_requests: int) -> float:
    """Karpenter's CPUCount: the container's CPU request (millicores) in cores; 0 or less
    means the default request."""
    return (cpu_requests if cpu_requests > 0 else DEFAULT_CPU_REQUESTS) / 1000


def worker_count(declared: Concurrency, cpu_requests: int = DEFAULT_CPU_REQUESTS,
                 ceiling: int = WORKER_CEILING) -> int:
    """The workers of a controller that declares `declared`, in a container requesting
    `cpu_requests` millicores: Karpenter's count, at most `ceiling`, at least 1."""
    wanted = declared.at(cores(cpu_requests)) if isinstance(declared, LinearScale) else declared
    return max(1, min(int(wanted), ceiling))
