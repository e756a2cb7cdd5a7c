"""``franz.cluster.replication_quota``: Kafka's ``SimpleRate`` and ``ReplicationQuotaManager``
against a ``ManualClock`` (the first scenario is Kafka's own
``ReplicationQuotaManagerTest.shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses``)."""

from __future__ import annotations

import pytest

from franz.clock import ManualClock
from franz.cluster.replication_quota import ReplicationQuota, ReplicationQuotas, SampledRate
from franz.config.defs import LONG_MAX
from franz.config.topic import LogConfig
from franz.storage.files import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def leader_quota(clock: ManualClock, *, samples: int = 11, broker_id: int = 1) -> ReplicationQuota:
    return ReplicationQuota(
        clock, broker_id, "leader_replication_throttled_replicas", num_samples=samples
    )


def test_exceeds_then_returns_below_the_bound_as_time_passes():
    clock = ManualClock()
    quota = leader_quota(clock, samples=10)
    quota.update_quota(100)
    assert not quota.is_quota_exceeded()  # starts the first sample, at 0 s
    clock.advance(1500)
    quota.record(1)
    assert not quota.is_quota_exceeded()
    quota.record(149)  # 150 B in 1.5 s
    assert not quota.is_quota_exceeded()
    quota.record(1)  # 151 B in 1.5 s
    assert quota.rate() == pytest.approx(151 / 1.5)
    assert quota.is_quota_exceeded()
    clock.advance(500)  # 151 B in 2 s
    assert not quota.is_quota_exceeded()
    assert quota.rate() == pytest.approx(151 / 2)
    clock.advance(500)
    quota.record(99)  # 250 B in 2.5 s: exactly the bound is not above it
    assert quota.rate() == pytest.approx(250 / 2.5)
    assert not quota.is_quota_exceeded()
    quota.record(1)
    assert quota.is_quota_exceeded()
    clock.advance(2000)
    assert not quota.is_quota_exceeded()
    assert quota.rate() == pytest.approx(251 / 4.5)


def test_rate_is_over_at_least_one_window():
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    assert rate.measure(0) == 5000.0
    assert rate.measure(250) == 5000.0
    assert rate.measure(2000) == 2500.0


def test_old_samples_expire():
    rate = SampledRate(3, 1000)
    for second in range(3):
        rate.record(1000, second * 1000)
    # A sample is reset num * size (3 s) after its last event: at 3 s the first one.
    assert rate.measure(3000) == pytest.approx(2000 / 2.0)
    assert rate.measure(4000) == pytest.approx(1000 / 2.0)
    assert rate.measure(6000) == 0.0


def test_keeps_one_sample_more_than_configured():
    rate = SampledRate(2, 1000)
    for at_ms in (0, 999, 1000, 2000):
        rate.record(100, at_ms)
    # Three samples (0 s, 1 s, 2 s): the first, whose last event was at 0.999 s, still
    # counts at 2.5 s (a sample is reset num * size = 2 s after its last event).
    assert rate.measure(2500) == pytest.approx(400 / 2.5)
    assert rate.measure(3000) == pytest.approx(100 / 1.0)  # only the sample of 2 s is left


def test_unbounded_is_never_exceeded():
    clock = ManualClock()
    quota = leader_quota(clock)
    quota.record(10**15)
    assert quota.bound == LONG_MAX
    assert not quota.is_quota_exceeded()
    quota.update_quota(10**6)
    assert quota.is_quota_exceeded()
    quota.update_quota(LONG_MAX)
    assert not quota.is_quota_exceeded()


def test_a_zero_bound_throttles_once_anything_was_recorded():
    clock = ManualClock()
    quota = leader_quota(clock)
    quota.update_quota(0)
    assert not quota.is_quota_exceeded()
    quota.record(1)
    assert quota.is_quota_exceeded()


def config(leader: str = "", follower: str = "") -> LogConfig:
    return LogConfig().with_overrides(
        {
            "leader.replication.throttled.replicas": leader,
            "follower.replication.throttled.replicas": follower,
        }
    )


def test_throttled_partitions_are_those_listed_with_this_broker():
    quota = leader_quota(ManualClock(), broker_id=1)
    listed = config(leader="0:1,1:2,2:1")
    assert quota.is_throttled(TP0, listed)
    assert not quota.is_throttled(TP1, listed)
    assert quota.is_throttled(TopicPartition("t", 2), listed)
    assert not quota.is_throttled(TopicPartition("t", 3), listed)
    # The follower side reads the other list.
    follower = ReplicationQuotas(ManualClock(), 2).follower
    assert not follower.is_throttled(TP1, listed)
    assert follower.is_throttled(TP1, config(follower="1:2"))


def test_wildcard_and_empty_lists():
    quota = leader_quota(ManualClock())
    assert quota.is_throttled(TopicPartition("t", 7), config(leader="*"))
    assert not quota.is_throttled(TP0, config())
    assert not quota.is_throttled(TP0, LogConfig())


def test_a_changed_list_applies_at_once():
    quota = leader_quota(ManualClock(), broker_id=1)
    assert quota.is_throttled(TP0, config(leader="0:1"))
    assert not quota.is_throttled(TP0, config(leader="1:1"))
    assert quota.is_throttled(TP1, config(leader="1:1"))
    assert not quota.is_throttled(TP1, config())


def test_bounds_from_the_dynamic_layers():
    quotas = ReplicationQuotas(ManualClock(), 1)
    quotas.reconfigure({}, {"leader.replication.throttled.rate": "5000"})
    assert (quotas.leader.bound, quotas.follower.bound) == (5000, LONG_MAX)
    quotas.reconfigure(
        {"leader.replication.throttled.rate": "7000"},
        {
            "leader.replication.throttled.rate": "5000",
            "follower.replication.throttled.rate": "3000",
        },
    )
    assert (quotas.leader.bound, quotas.follower.bound) == (7000, 3000)
    quotas.reconfigure({}, {})
    assert (quotas.leader.bound, quotas.follower.bound) == (LONG_MAX, LONG_MAX)


def simulate_follower(bound: int, chunk: int, seconds: int, backoff_ms: int) -> float:
    """A follower fetching ``chunk`` bytes every 20 ms while its quota allows, and waiting
    ``backoff_ms`` when it does not (Kafka's empty ``buildFetch``): the bytes/s it moved."""
    clock = ManualClock()
    quota = ReplicationQuotas(clock, 2).follower
    quota.update_quota(bound)
    moved = 0
    while clock.monotonic_ns() < seconds * 1_000_000_000:
        if quota.is_quota_exceeded():
            clock.advance(backoff_ms)
            continue
        quota.record(chunk)
        moved += chunk
        clock.advance(20)
    return moved / seconds


@pytest.mark.parametrize("bound", [1_000_000, 5_000_000, 10_000_000])
def test_a_throttled_follower_moves_about_the_bound(bound):
    rate = simulate_follower(bound, chunk=1_048_576, seconds=60, backoff_ms=1000)
    assert abs(rate - bound) / bound < 0.1
