"""The replication bench's pure parts: readiness, the replication mode, the unavailability
measure, the settings (the bench itself starts clusters and is not a timed test)."""

from __future__ import annotations

from pathlib import Path

from bench.ack_probe import longest_gap
from bench.replication_bench import (
    outage_summary,
    parse_args,
    replication_mode,
    settings_from_args,
)
from bench.replication_systems import (
    PartitionView,
    TopicView,
    follower_share,
    log_bytes,
    topic_ready,
)

FULL = {0: PartitionView(1, (1, 2, 3), (1, 2, 3)), 1: PartitionView(2, (2, 3, 1), (2, 3, 1))}


def test_a_topic_is_ready_when_every_live_broker_shows_live_leaders_and_full_isrs() -> None:
    view = TopicView((1, 2, 3), FULL)
    assert topic_ready([view, view, view], [1, 2, 3], 2, 3)
    shrunk = TopicView((1, 2, 3), {**FULL, 1: PartitionView(2, (2, 3, 1), (2, 3))})
    assert not topic_ready([shrunk, shrunk, shrunk], [1, 2, 3], 2, 3)
    assert not topic_ready([view, view, None], [1, 2, 3], 2, 3)
    assert not topic_ready([view, TopicView((1, 2), FULL)], [1, 2, 3], 2, 3)
    assert not topic_ready([view], [2, 3], 2, 3)  # a leader on a dead broker, a broker too many
    assert not topic_ready([view], [1, 2, 3], 3, 3)  # partition 2 not known yet


def test_follower_share_is_the_emptiest_followers_part_of_its_leaders_bytes() -> None:
    sizes = {1: {0: 1000, 1: 1000}, 2: {0: 1000, 1: 1000}, 3: {0: 500, 1: 1000}}
    assert follower_share(sizes, FULL) == 0.5
    assert follower_share({1: {0: 1000}, 2: {1: 1000}}, FULL) == 0.0
    assert follower_share({}, FULL) is None
    assert follower_share(sizes, {0: PartitionView(1, (1,), (1,))}) is None


def test_log_bytes_sums_the_segments_of_each_partition_of_the_topic(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(b"x" * 10)
    (tmp_path / "t-0" / "00000000000000000010.log").write_bytes(b"x" * 5)
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"x" * 99)
    (tmp_path / "t-x-1").mkdir()
    (tmp_path / "t-x-1" / "00000000000000000000.log").write_bytes(b"x")
    assert log_bytes(tmp_path, "t") == {0: 15}
    assert log_bytes(tmp_path / "missing", "t") == {}


def test_replication_mode_says_replicated_not_replicated_or_partly() -> None:
    assert replication_mode(1.0).startswith("replicated")
    assert replication_mode(0.0).startswith("NOT replicated")
    assert replication_mode(0.4).startswith("partly")
    assert replication_mode(None).startswith("unknown")


def test_longest_gap_runs_from_the_last_ack_before_the_signal_to_the_first_after() -> None:
    ms = 1_000_000
    acks = [0, 1 * ms, 2 * ms, 900 * ms, 901 * ms, 2000 * ms]
    # signal at 2.5 ms: last ack before it at 2 ms, next at 900 ms
    assert longest_gap(acks, 2 * ms + ms // 2, 901 * ms) == 0.898
    # the end bounds the stretch even when no ack came yet
    assert longest_gap(acks, 2 * ms + ms // 2, 500 * ms) == 0.498
    # no ack before the signal: from the signal itself
    assert longest_gap([10 * ms], 0, 10 * ms) == 0.01


def test_outage_summary_keeps_the_runs_that_came_back() -> None:
    assert outage_summary([1.0, None, 3.0, 2.0]) == (2.0, 3.0, 1)
    assert outage_summary([None]) == (None, None, 1)


def test_quick_and_full_settings() -> None:
    full = settings_from_args(parse_args([]))
    assert (full.records, full.runs, full.session_ms, full.peer) == (2_000_000, 5, 18000, "kafka")
    quick = settings_from_args(parse_args(["--quick", "--peer", "none"]))
    assert (quick.records, quick.runs, quick.session_ms, quick.peer) == (200_000, 2, 6000, "none")
    assert quick.warm_up and not settings_from_args(parse_args(["--no-warm-up"])).warm_up
    assert settings_from_args(parse_args(["--records", "1000", "--runs", "3"])).runs == 3
