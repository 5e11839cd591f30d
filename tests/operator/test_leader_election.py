"""Two controller processes on one cluster: one leads and writes, the other stands by with
warm caches; when the leader dies the standby takes the Lease once it expires, and a
leader that stops cleanly hands it over at once."""

from __future__ import annotations

from datetime import timedelta

from nodewright.operator.leader import LeaseTiming
from nodewright.runtime.clock import parse_time
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import FAST_LEASE, RealTimeWorld
from tests.support.operator import crash

LEASE = ("Lease", "nodewright-leader-election", "kube-system")


def lease_spec(world: RealTimeWorld) -> dict[str, object]:
    spec: dict[str, object] = world.cluster.get(*LEASE)["spec"]
    return spec


def holder(world: RealTimeWorld) -> str:
    return str(lease_spec(world).get("holderIdentity") or "")


def test_only_the_leader_writes_and_a_standby_takes_over_when_it_dies(
        world: RealTimeWorld) -> None:
    first = world.operator("first")
    eventually(first.is_leader, "the first replica to lead")
    second = world.operator("second")
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    assert holder(world) == "first"
    assert not second.is_leader()
    assert second.driver.reconciles == 0  # it watched, queued, and wrote nothing
    assert second.driver.synced()  # and stays ready for the probe
    assert second.ready() is None

    crash(first)
    last_renewal = parse_time(str(lease_spec(world)["renewTime"]))
    eventually(second.is_leader, "the standby to take the Lease")
    spec = lease_spec(world)
    assert spec["holderIdentity"] == "second"
    assert spec["leaseTransitions"] == 1
    # Not before the Lease expired: a lease duration after the last renewal the standby saw
    # (how soon after is the machine's doing: this one may be loaded).
    taken = parse_time(str(spec["acquireTime"]))
    assert taken - last_renewal >= timedelta(seconds=FAST_LEASE.lease_duration)

    world.scale("inflate", 12)
    world.wait_until_running(pods=12, nodes=2)
    assert world.instance_types() == ["m5.large", "m5.large"]


def test_a_clean_stop_releases_the_lease_for_the_next_replica(world: RealTimeWorld) -> None:
    # A 30 s lease: the standby could not take it over in time unless it was released.
    leader = world.operator("leader", timing=LeaseTiming(lease_duration=30.0,
                                                          renew_deadline=20.0,
                                                          retry_period=0.1))
    eventually(leader.is_leader, "the first replica to lead")
    standby = world.operator("standby")
    assert leader.stop(timeout=5)
    assert not leader.is_leader()
    eventually(standby.is_leader, "the standby to take the released Lease")
    spec = lease_spec(world)
    assert spec["holderIdentity"] == "standby"
    assert spec["leaseDurationSeconds"] == FAST_LEASE.lease_duration  # the standby's own


def test_a_leader_that_cannot_renew_steps_down(world: RealTimeWorld) -> None:
    leader = world.operator("leader")
    eventually(leader.is_leader, "the replica to lead")
    # Someone else takes the Lease by force (as after a partition healed).
    lease = world.cluster.get(*LEASE)
    lease["spec"]["holderIdentity"] = "usurper"
    world.cluster.update(lease)
    eventually(lambda: leader.lost_leadership.is_set(), "the leader to notice it lost")
    assert not leader.is_leader()
    assert leader.healthy() == "lost the leader Lease"
    # It does not campaign again: the process exits and comes back as a new candidate.
    assert leader.elector is not None and not leader.elector.is_leader()
