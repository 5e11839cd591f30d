"""How fast failed keys come back: each controller's retry limiter, sized as Karpenter
sizes it.

Karpenter paces the retries of three controllers with a token bucket sized from their
workers (`GetTypedBucketConfigs`): the NodeClaim lifecycle (10 a second per 1,000
workers), node termination (10 per 100) and the eviction queue (100 per 100), each with a
burst of ten seconds' worth and its own per-key backoff; every other controller keeps
controller-runtime's default (10 a second, bursts of 100, 5 ms doubling to 1000 s).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nodewright import metrics
from nodewright.controllers.node.termination import eviction
from nodewright.controllers.node.termination.controller import NodeTermination
from nodewright.controllers.nodeclaim import NodeClaimLifecycle
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.operator.workqueue import WorkQueue
from nodewright.runtime.concurrency import LinearScale, bucket_config
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF, RateLimiter, RetryLimits
from tests.controllers.test_karpenter_terminator import Bench, counter
from tests.operator.world import RealTimeWorld

World = Callable[..., RealTimeWorld]


@pytest.mark.parametrize(("min_qps", "min_reconciles", "concurrent", "qps", "burst"), [
    pytest.param(10, 10, 10, 10, 100,
                 id="scale of QPS is 100%, concurrentReconciles is equal to minimumReconciles"),
    pytest.param(10, 10, 20, 20, 200,
                 id="scale of QPS is 100%, concurrentReconciles is double minimumReconciles"),
    pytest.param(10, 100, 100, 10, 100,
                 id="scale of QPS is 10%, concurrentReconciles is equal to minimumReconciles"),
    pytest.param(10, 100, 200, 20, 200,
                 id="scale of QPS is 10%, concurrentReconciles is double minimumReconciles"),
    pytest.param(25, 100, 150, 38, 380,
                 id="scale of QPS is 25%, concurrentReconciles is 1.5x minimumReconciles"),
])
def test_bucket_configs_as_karpenter_computes_them(min_qps: int, min_reconciles: int,
                                                   concurrent: int, qps: int,
                                                   burst: int) -> None:
    """Karpenter's pkg/utils/controller/suite_test.go, "GetTypedBucketConfigs
    calculations", DescribeTable "should calculate QPS and bucket size correctly" (each
    Entry is a case, named by its text)."""
    assert bucket_config(min_qps, min_reconciles, concurrent) == (qps, burst)


@pytest.mark.parametrize(("cpu_requests", "lifecycle", "termination", "evictions"), [
    (1000, (10, 100), (10, 100), (100, 1000)),
    # 8 cores: 1,474 lifecycle workers, 681 termination and eviction workers.
    (8000, (15, 150), (69, 690), (681, 6810)),
    (60000, (50, 500), (500, 5000), (5000, 50000)),
])
def test_the_three_buckets_follow_karpenters_workers(
        cpu_requests: int, lifecycle: tuple[int, int], termination: tuple[int, int],
        evictions: tuple[int, int]) -> None:
    """The lifecycle's, termination's and the eviction queue's buckets, from Karpenter's
    worker counts (not the capped counts of threads: the bucket paces retries, which the
    interpreter lock does not change)."""
    for limits, expected in ((NodeClaimLifecycle.retry_limits, lifecycle),
                             (NodeTermination.retry_limits, termination)):
        assert limits.bucket_at(cpu_requests) == (float(expected[0]), expected[1])
    assert eviction.RETRY_BUCKET.at(cpu_requests / 1000) == evictions
    assert LinearScale(1000, 5000).at(8) == 1474 and LinearScale(100, 5000).at(8) == 681


def failing_together(limiter: RateLimiter, keys: int) -> list[float]:
    """The delays before the retries of `keys` keys that all failed at the same moment."""
    queue = WorkQueue("retries", limiter)
    return [queue.add_rate_limited(f"nodeclaim-{i}", now=0.0) for i in range(keys)]


def test_a_wave_of_lifecycle_failures_comes_back_at_the_buckets_pace() -> None:
    """120 NodeClaims failing at once on one core: the first hundred (the burst) are
    retried after the key's own second, the others 10 a second after that; on 60 cores
    (a burst of 500) all of them after a second."""
    one_core = failing_together(NodeClaimLifecycle.retry_limits.limiter(1000), 120)
    assert one_core[:101] == [1.0] * 101
    assert one_core[119] == pytest.approx(2.0)
    sixty_cores = failing_together(NodeClaimLifecycle.retry_limits.limiter(60000), 120)
    assert sixty_cores == [1.0] * 120


def test_controllers_without_limits_keep_controller_runtimes_default() -> None:
    limiter = RetryLimits().limiter()
    assert (limiter.backoff, limiter.qps, limiter.burst) == (RECONCILE_BACKOFF, 10.0, 100)


def test_the_operator_sizes_each_queues_limiter_with_its_cpu_request(make_world: World
                                                                     ) -> None:
    """CPU_REQUESTS=8000: the lifecycle's and termination's queues and the eviction
    retries get Karpenter's 8-core buckets; the provisioner keeps the default."""
    world = make_world()
    operator = Operator(world.cluster, world.cloud,
                        OperatorSettings(identity="sizing", leader_elect=False,
                                         cpu_requests=8000))
    built = operator.controllers.built
    lifecycle = operator.driver.retry_limiter(built["nodeclaim.lifecycle"])
    assert (lifecycle.qps, lifecycle.burst, lifecycle.backoff.initial,
            lifecycle.backoff.maximum) == (15.0, 150, 1.0, 60.0)
    termination = built["node.termination"]
    limiter = operator.driver.retry_limiter(termination)
    assert (limiter.qps, limiter.burst, limiter.backoff.initial,
            limiter.backoff.maximum) == (69.0, 690, 0.1, 10.0)
    assert isinstance(termination, NodeTermination)
    evictions = termination.terminator.evictor.retry_bucket
    assert (evictions.rate, evictions.burst) == (681, 6810)
    provisioner = operator.driver.retry_limiter(built["provisioner"])
    assert (provisioner.qps, provisioner.burst) == (10.0, 100)


def test_evictions_refused_together_come_back_at_the_eviction_queues_pace() -> None:
    """1,030 pods a PodDisruptionBudget keeps on their node, each refused (429) at the
    same moment on one core: a pod is tried again after its own 100 ms only while the
    eviction queue's bucket has a token for it (a burst of 1,000, then 100 a second), so
    100 ms later 1,010 are tried again and the last twenty wait their turn."""
    metrics.PODS_EVICTION_REQUESTS.clear()
    bench = Bench()
    bench.pdb("none", maxUnavailable=0)
    pods = [bench.pod(f"app-{i}") for i in range(1030)]
    for pod in pods:
        bench.evictor.remove(pod, None, bench.node, "Drifted")
    assert counter("karpenter_pods_eviction_requests_total", code="429") == 1030
    bench.clock.advance(0.1)
    for pod in pods:
        bench.evictor.remove(pod, None, bench.node, "Drifted")
    assert counter("karpenter_pods_eviction_requests_total", code="429") == 1030 + 1010
