"""``bench.reassign_bench``'s pure parts: the plan, the ``--verify`` texts, the probe's
latencies and acknowledged records, a replica's records read from its files, the burst of a
quota window, the settings and the report (the bench itself moves GiBs and is not a test)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from bench.ack_probe import PROBE_VALUE_SIZE, probe_stamp
from bench.reassign_bench import parse_args, settings_from_args, source, target
from bench.reassign_checks import (
    Latency,
    acked_check,
    count_log_records,
    first_window_bytes,
    latency_summary,
    old_dirs,
    replica_records,
    verify_states,
)
from bench.reassign_report import Checks, Move, Results
from franz.errors import CorruptRecordError
from franz.protocol.records.inflated import build_batch

MS = 1_000_000


def test_the_plan_puts_broker_3_in_broker_1s_place() -> None:
    before = source()
    assert before == {0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1], 4: [1, 2], 5: [2, 1]}
    after = target(before)
    assert after == {0: [3, 2], 1: [2, 3], 2: [3, 2], 3: [2, 3], 4: [3, 2], 5: [2, 3]}
    assert before == source()  # not changed in place


def test_verify_states_reads_kafkas_lines_for_the_topic_only() -> None:
    output = (
        "Status of partition reassignment:\n"
        "Reassignment of partition t-0 is completed.\n"
        "Reassignment of partition t-1 is still in progress.\n"
        "There is no active reassignment of partition t-2, but replica set is 1,2 rather "
        "than 3,2.\n"
        "Reassignment of partition t-10 is completed.\n"
        "Reassignment of partition tt-3 is completed.\n"
        "\nClearing broker-level throttles on brokers 1,2,3\n"
    )
    assert verify_states(output, "t") == {
        0: "completed",
        1: "in progress",
        2: "not moving",
        10: "completed",
    }
    assert verify_states("", "t") == {}


def test_latency_summary_takes_the_records_sent_in_the_window() -> None:
    # (seq, sent, ack): latencies 1..100 ms sent at 0..99 ms, then one of 500 ms at 200 ms.
    deliveries = [(i, i * MS, i * MS + (i + 1) * MS) for i in range(100)]
    deliveries.append((100, 200 * MS, 700 * MS))
    summary = latency_summary(deliveries, 0, 100 * MS)
    assert summary == Latency(100, 50.0, 99.0, 100.0)
    late = latency_summary(deliveries, 100 * MS, 300 * MS)
    assert late == Latency(1, 500.0, 500.0, 500.0)
    assert latency_summary(deliveries, 300 * MS, 400 * MS) is None


def test_acked_check_counts_lost_and_duplicated_records() -> None:
    assert acked_check([0, 1, 2], [2, 1, 0, 7]) == (0, 0)  # unacknowledged extras are fine
    assert acked_check([0, 1, 2], [0, 2]) == (1, 0)
    assert acked_check([0, 1], [0, 1, 1, 1]) == (0, 2)


def test_probe_stamp_reads_the_probes_values_only() -> None:
    value = struct.pack(">qq", 42, 123) + bytes(PROBE_VALUE_SIZE - 16)
    assert probe_stamp(value) == (42, 123)
    assert probe_stamp(b"x" * 1024) is None
    assert probe_stamp(None) is None


def test_first_window_bytes_starts_when_the_copy_does() -> None:
    # idle until 2 s, then a burst of 110 MB in 1 s, then 10 MB/s; a sample every 0.5 s.
    def held(t: float) -> int:
        if t <= 2:
            return 5
        return 5 + int(min(t - 2, 1) * 110e6 + max(0, t - 3) * 10e6)

    samples = [(t / 2, held(t / 2)) for t in range(60)]
    assert first_window_bytes(samples, 11) == held(13) - 5
    assert first_window_bytes(samples[:10], 11) is None  # sampling ended within the window
    assert first_window_bytes([(0.0, 1), (1.0, 1)], 11) is None  # never started
    assert first_window_bytes([], 11) is None


def _batch(base: int, count: int, *, control: bool = False) -> bytes:
    records = [(0, None, b"v" * 10) for _ in range(count)]
    return bytes(build_batch(records, base_offset=base, is_control_batch=control))


def test_count_log_records_walks_the_segments_batches() -> None:
    first = _batch(0, 3) + _batch(3, 2)
    second = _batch(5, 4)
    assert count_log_records([first, second]).holds(9)
    counted = count_log_records([first, second])
    assert (counted.records, counted.next_offset, counted.gaps) == (9, 9, 0)
    gap = count_log_records([_batch(0, 3), _batch(4, 1)])
    assert (gap.records, gap.next_offset, gap.gaps) == (4, 5, 1)
    assert not gap.holds(5)
    control = count_log_records([_batch(0, 2) + _batch(2, 1, control=True)])
    assert (control.records, control.next_offset) == (2, 3)


def test_count_log_records_refuses_a_corrupt_batch() -> None:
    broken = bytearray(_batch(0, 3))
    broken[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        count_log_records([bytes(broken)])


def test_replica_records_and_old_dirs_read_a_log_dir(tmp_path: Path) -> None:
    for p, data in ((0, _batch(0, 5)), (1, _batch(0, 2))):
        d = tmp_path / f"t-{p}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(data)
    (tmp_path / "t-2.0123abcd-delete").mkdir()
    (tmp_path / "tt-0").mkdir()
    counts = replica_records(tmp_path, "t")
    assert sorted(counts) == [0, 1]
    assert counts[0].holds(5) and counts[1].holds(2)
    assert old_dirs(tmp_path, "t") == ["t-0", "t-1", "t-2.0123abcd-delete"]
    assert old_dirs(tmp_path / "missing", "t") == []


def test_settings_default_to_issue_18s_figures() -> None:
    cfg = settings_from_args(parse_args([]))
    assert cfg.size_bytes == 1 << 30 and cfg.records == 1 << 20
    assert cfg.throttle == 10_000_000 and cfg.scenarios == ("unthrottled", "throttled")
    quick = settings_from_args(parse_args(["--quick", "--cases", "throttled"]))
    assert quick.size_bytes == int(0.2 * (1 << 30)) and quick.scenarios == ("throttled",)
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(["--cases", "sideways"]))


def test_checks_errors_ok_allows_retriable_errors_only() -> None:
    assert Checks().errors_ok
    assert Checks(client_errors=["_TRANSPORT"]).errors_ok  # librdkafka recovers by itself
    retried = "NOT_LEADER_OR_FOLLOWER"
    assert Checks(errors=[retried], retriable={retried: True}).errors_ok
    assert not Checks(errors=["_MSG_TIMED_OUT"], retriable={"_MSG_TIMED_OUT": False}).errors_ok
    assert not Checks(fatal=["UNKNOWN_PRODUCER_ID: gone"]).errors_ok


def test_report_gives_rates_shares_and_verdicts() -> None:
    results = Results(10_000_000)
    results.labels = {"franz": "franz, 3 brokers"}
    move = Move("franz", "throttled", 10_000_000, 1 << 20, 1_100_000_000)
    move.exec_ns, move.verified_ns = 0, 110 * 10**9
    move.moved, move.steady_mb_s, move.first_window = 1_100_000_000, 9.5, 30_000_000
    move.before = Latency(5000, 4.0, 9.0, 20.0)
    move.during = Latency(55000, 5.0, 18.0, 60.0)
    move.checks = Checks(
        replicas_ok=True,
        led_by_3=[0, 2, 4],
        log_ok=list(range(6)),
        consumed_ok=list(range(6)),
        sent=60_000,
        acked=60_000,
        throttles_gone=True,
        old_dirs_s=0.2,
    )
    results.moves.append(move)
    assert move.mb_s == pytest.approx(10.0)
    assert move.share(move.mb_s) == pytest.approx(1.0)
    text = results.markdown()
    assert "| franz, 3 brokers | throttled |" in text
    assert "100%" in text and "95%" in text
    assert "2.0" in text  # p99 during / before
    assert "the throttle held within 20 % (whole move) PASS" in text
    assert "every record readable from the new replicas PASS" in text
    assert "no acknowledged record lost PASS" in text
    move.checks.lost = 3
    move.steady_mb_s = 7.0
    text = results.markdown()
    assert "no acknowledged record lost FAIL" in text
    assert "the throttle held within 20 % (steady, 10-90 %) FAIL" in text
