"""``franz producer-perf-test``, ``franz consumer-perf-test`` and ``franz end-to-end-latency``
as subprocesses against a real broker: Kafka's output lines parse, the counts are right
(checked with a real client's end offsets and committed offsets), the throttle holds, and
every failure is one line with the right exit code."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import confluent_kafka
import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import consume_with, create_topic, end_offsets

MIB = 1024 * 1024

WINDOW = re.compile(
    r"^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$"
)
TOTAL = re.compile(
    r"^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d\d) ms avg latency, (\d+\.\d\d) ms max latency, (\d+) ms 50th, (\d+) ms 95th, "
    r"(\d+) ms 99th, (\d+) ms 99\.9th\.$"
)
HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
NUM4 = r"(\d+\.\d{4}|NaN|Infinity)"
CSV = re.compile(
    rf"^({DATE}), ({DATE}), (\d+\.\d{{4}}), {NUM4}, (\d+), {NUM4}, (\d+), (-?\d+), {NUM4}, {NUM4}$"
)
DETAILED = re.compile(
    rf"^({DATE}), 0, (\d+\.\d{{4}}), {NUM4}, (\d+), {NUM4}, (\d+), (-?\d+), {NUM4}, {NUM4}$"
)
E2E_PROGRESS = re.compile(r"^(\d+)\t(\d+\.\d+(E-?\d+)?)$")
E2E_AVG = re.compile(r"^Avg latency: (\d+\.\d{4}) ms$")
E2E_PCT = re.compile(r"^Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)$")


def franz(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def quiet_broker(broker_factory: type[BrokerProcess], tmp_path: Path) -> Iterator[BrokerProcess]:
    """No topic auto-creation (so unknown topics are errors) and no initial rebalance delay
    (so consumer-perf-test's join is quick)."""
    proc = broker_factory(
        tmp_path / "b",
        {"auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0"},
    ).start()
    yield proc


def total_of(stdout: str) -> re.Match[str]:
    last = stdout.strip().splitlines()[-1]
    match = TOTAL.match(last)
    assert match, f"not Kafka's total line: {last!r}\n{stdout}"
    return match


def produce_perf(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    done = franz(
        "producer-perf-test",
        "--topic", topic,
        "--num-records", str(count),
        "--record-size", str(size),
        "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(total_of(done.stdout).group(1)) == count


# -- producer-perf-test -----------------------------------------------------------------------


def test_producer_perf_test_sends_every_record_and_prints_kafkas_total_line(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "perf", partitions=2)
    done = franz(
        "producer-perf-test",
        "--topic", "perf",
        "--num-records", "20000",
        "--record-size", "100",
        "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={quiet_broker.bootstrap}", "acks=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    total = total_of(done.stdout)
    count, rate, mb = int(total.group(1)), float(total.group(2)), float(total.group(3))
    avg, top = float(total.group(4)), float(total.group(5))
    p50, p95, p99, p999 = (int(total.group(i)) for i in range(6, 10))
    assert count == 20000
    assert rate > 0
    assert mb == pytest.approx(rate * 100 / MIB, abs=0.006)
    assert p50 <= p95 <= p99 <= p999 <= top
    assert 0 <= avg <= top
    offsets = end_offsets(quiet_broker.bootstrap, "perf", [0, 1])
    assert sum(high - low for low, high in offsets.values()) == 20000


def test_producer_perf_test_with_bootstrap_server_and_a_payload_file(
    quiet_broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(quiet_broker.bootstrap, "lines")
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\n\ngamma\n")
    done = franz(
        "producer-perf-test",
        "--topic", "lines",
        "--num-records", "300",
        "--payload-file", str(payloads),
        "--throughput", "-1",
        "--bootstrap-server", quiet_broker.bootstrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Reading payloads from: {payloads.resolve()}"
    assert lines[1] == "Number of messages read: 3"
    assert int(total_of(done.stdout).group(1)) == 300
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": quiet_broker.bootstrap, "group.id": "check"}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition("lines", 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < 300 and time.monotonic() < deadline:
            values += [m.value() for m in consumer.consume(300, 0.5) if m.error() is None]
    finally:
        consumer.close()
    assert len(values) == 300
    assert set(values) <= {b"alpha", b"beta", b"gamma"}
    assert len(set(values)) == 3  # picked at random among all of them


def test_producer_perf_test_throttles_to_the_given_throughput(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "slow")
    started = time.monotonic()
    done = franz(
        "producer-perf-test",
        "--topic", "slow",
        "--num-records", "4000",
        "--record-size", "10",
        "--throughput", "2000",
        "--bootstrap-server", quiet_broker.bootstrap,
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    rate = float(total_of(done.stdout).group(2))
    # Kafka's throttler never holds back sends of the first millisecond (elapsed time 0),
    # and then adds 1/throughput s of sleep per record: the rate ends a little above target
    assert took >= 1.5
    assert rate <= 2000 * 1.5
    assert end_offsets(quiet_broker.bootstrap, "slow", [0])[0][1] == 4000


def test_producer_perf_test_prints_a_window_line_every_5_seconds(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "windows")
    done = franz(
        "producer-perf-test",
        "--topic", "windows",
        "--num-records", "6500",
        "--record-size", "10",
        "--throughput", "1000",
        "--bootstrap-server", quiet_broker.bootstrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2, done.stdout
    window = WINDOW.match(lines[0])
    assert window, lines[0]
    assert 4000 <= int(window.group(1)) < 6500
    assert float(window.group(2)) == pytest.approx(1000, rel=0.3)
    assert int(total_of(done.stdout).group(1)) == 6500


def test_producer_perf_test_creates_the_topic_where_the_cluster_auto_creates(
    broker: BrokerProcess,
) -> None:
    produce_perf(broker.bootstrap, "made-by-perf", 1000)
    assert end_offsets(broker.bootstrap, "made-by-perf", [0])[0][1] == 1000


def test_producer_perf_test_print_metrics_prints_kafkas_metrics_table(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "metered")
    done = franz(
        "producer-perf-test",
        "--topic", "metered",
        "--num-records", "1000",
        "--record-size", "10",
        "--throughput", "-1",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--print-metrics",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert TOTAL.match(lines[0])
    assert lines[1] == ""
    assert re.match(r"^Metric Name +Value$", lines[2])
    names = [line.split(" : ", 1)[0] for line in lines[3:]]
    assert len({len(name) for name in names}) == 1  # padded to the longest name
    rows = {name.rstrip(): value for name, value in (line.split(" : ", 1) for line in lines[3:])}
    assert names == sorted(names)
    assert int(rows["librdkafka:txmsgs:{client-id=perf-producer-client}"]) == 1000


def test_producer_perf_test_unknown_topic_fails_with_one_line(
    quiet_broker: BrokerProcess,
) -> None:
    done = franz(
        "producer-perf-test",
        "--topic", "missing",
        "--num-records", "10",
        "--record-size", "10",
        "--throughput", "-1",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--timeout", "5000",
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "franz producer-perf-test: error: topic 'missing' does not exist (and the cluster "
        "does not create it); create it with franz topics --create"
    ]


def test_producer_perf_test_unreachable_broker_fails_after_timeout() -> None:
    port = closed_port()
    started = time.monotonic()
    done = franz(
        "producer-perf-test",
        "--topic", "t",
        "--num-records", "10",
        "--record-size", "10",
        "--throughput", "-1",
        "--producer-props", f"bootstrap.servers=127.0.0.1:{port}",
        "--timeout", "1000",
    )  # fmt: skip
    assert time.monotonic() - started < 15
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"franz producer-perf-test: error: could not reach the cluster at 127.0.0.1:{port}"
    )
    assert "check that the broker is running" in lines[0]


def test_producer_perf_test_refuses_bad_flags(quiet_broker: BrokerProcess) -> None:
    base = ["producer-perf-test", "--topic", "t", "--num-records", "10", "--throughput", "-1"]
    boot = ["--bootstrap-server", quiet_broker.bootstrap]
    no_payload = franz(*base, *boot)
    assert no_payload.returncode == 2
    assert "--record-size" in no_payload.stderr
    both = franz(*base, *boot, "--record-size", "10", "--payload-monotonic")
    assert both.returncode == 2
    no_servers = franz(*base, "--record-size", "10")
    assert no_servers.returncode == 2
    assert "bootstrap" in no_servers.stderr
    zero = franz(*base[:-2], "--num-records", "0", "--throughput", "-1", "--record-size", "1")
    assert zero.returncode == 2


# -- producer-perf-test with transactions (Kafka 3.9: on iff --transaction-duration-ms > 0) ---


def transactions_listed(bootstrap: str) -> dict[str, str]:
    """``{transactional id: state}`` from ``franz transactions list``."""
    done = franz("transactions", "--bootstrap-server", bootstrap, "list")
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()[1:]]
    return {row[0].strip(): row[3].strip() for row in rows}


def committed_values(bootstrap: str, topic: str, count: int) -> list[bytes | None]:
    """The values a read_committed confluent-kafka consumer reads from partition 0."""
    consumed = consume_with(
        "confluent-kafka", bootstrap, topic, [0], count,
        config={"isolation.level": "read_committed"},
    )  # fmt: skip
    return [r.value for r in consumed]


def test_producer_perf_test_commits_a_transaction_every_duration(
    quiet_broker: BrokerProcess,
) -> None:
    """4000 records at 1000/s with 1000 ms transactions: every record is committed (a
    read_committed consumer reads 0..3999 once each), the output is Kafka's, and the one
    partition holds one COMMIT marker per transaction: about one a second of the run. Each
    transaction but the last spans at least 1000 ms of sends, so there are at most the run's
    seconds + 1; the sends take at least 4 s, so there are at least 3 even if each commit
    took a whole second (the throttler lets the records held back meanwhile go at once)."""
    create_topic(quiet_broker.bootstrap, "txn-perf")
    started = time.monotonic()
    done = franz(
        "producer-perf-test",
        "--topic", "txn-perf",
        "--num-records", "4000",
        "--payload-monotonic",
        "--throughput", "1000",
        "--transaction-duration-ms", "1000",
        "--producer-props", f"bootstrap.servers={quiet_broker.bootstrap}",
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert all(WINDOW.match(line) for line in lines[:-1]), done.stdout
    assert int(total_of(done.stdout).group(1)) == 4000
    values = committed_values(quiet_broker.bootstrap, "txn-perf", 4000)
    assert sorted(values, key=lambda v: int(v or b"-1")) == [str(i).encode() for i in range(4000)]
    end = end_offsets(quiet_broker.bootstrap, "txn-perf", [0])[0][1]
    markers = end - 4000
    assert 3 <= markers <= int(took) + 1, (markers, took)
    listed = transactions_listed(quiet_broker.bootstrap)
    assert listed.get("performance-producer-default-transactional-id") == "CompleteCommit"


def test_producer_perf_test_transactional_id_flag_wins_and_alone_is_no_transaction(
    quiet_broker: BrokerProcess,
) -> None:
    """Kafka 3.9's rules: --transactional-id alone leaves transactions off (no marker, no
    transactional id at the coordinator); with a positive duration it overrides the
    transactional.id of --producer-props; a transactional.id with transactions off is
    refused with exit code 1 before anything is sent (Kafka's producer fails its first
    send)."""
    create_topic(quiet_broker.bootstrap, "txn-flags")
    base = [
        "producer-perf-test", "--topic", "txn-flags", "--num-records", "500",
        "--record-size", "10", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={quiet_broker.bootstrap}",
    ]  # fmt: skip
    alone = franz(*base, "--transactional-id", "alone-id")
    assert alone.returncode == 0, alone.stderr
    assert end_offsets(quiet_broker.bootstrap, "txn-flags", [0])[0][1] == 500
    assert "alone-id" not in transactions_listed(quiet_broker.bootstrap)

    flag = franz(
        *base, "transactional.id=from-props", "--transactional-id", "from-flag",
        "--transaction-duration-ms", "60000",
    )  # fmt: skip
    assert flag.returncode == 0, flag.stderr
    assert int(total_of(flag.stdout).group(1)) == 500
    # one transaction (the final commit): 500 records and one marker
    assert end_offsets(quiet_broker.bootstrap, "txn-flags", [0])[0][1] == 1001
    assert len(committed_values(quiet_broker.bootstrap, "txn-flags", 1000)) == 1000
    listed = transactions_listed(quiet_broker.bootstrap)
    assert listed.get("from-flag") == "CompleteCommit"
    assert "from-props" not in listed

    off = franz(*base, "transactional.id=from-props", "--transaction-duration-ms", "0")
    assert off.returncode == 1
    assert off.stdout == ""
    assert off.stderr.splitlines() == [
        "franz producer-perf-test: error: transactional.id=from-props is set but transactions "
        "are off (--transaction-duration-ms 0 is not positive), and a transactional producer "
        "cannot send outside a transaction; give --transaction-duration-ms MS or drop "
        "transactional.id"
    ]
    assert end_offsets(quiet_broker.bootstrap, "txn-flags", [0])[0][1] == 1001


# -- consumer-perf-test -----------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    return datetime.strptime(text[:-4], "%Y-%m-%d %H:%M:%S").replace(
        microsecond=int(text[-3:]) * 1000
    )


def test_consumer_perf_test_reads_every_record_and_prints_kafkas_csv(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "feed", partitions=2)
    produce_perf(quiet_broker.bootstrap, "feed", 20000)
    done = franz(
        "consumer-perf-test",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--topic", "feed",
        "--messages", "20000",
        "--group", "perf-g",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == HEADER
    assert len(lines) == 2, done.stdout
    row = CSV.match(lines[1])
    assert row, lines[1]
    start, end = parse_date(row.group(1)), parse_date(row.group(2))
    elapsed_ms = round((end - start).total_seconds() * 1000)
    assert row.group(3) == f"{20000 * 100 / MIB:.4f}"
    assert int(row.group(5)) == 20000
    rebalance, fetch = int(row.group(7)), int(row.group(8))
    assert rebalance + fetch == elapsed_ms
    assert rebalance > 0
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": quiet_broker.bootstrap, "group.id": "perf-g"}
    )
    try:
        committed = consumer.committed(
            [confluent_kafka.TopicPartition("feed", p) for p in (0, 1)], timeout=10
        )
    finally:
        consumer.close()
    # Every partition is committed at its end. librdkafka's sticky partitioner may put all
    # keyless records in one partition: an empty partition has no committed offset (-1001).
    ends = end_offsets(quiet_broker.bootstrap, "feed", [0, 1])
    assert sum(end for _, end in ends.values()) == 20000
    assert {tp.partition: tp.offset for tp in committed} == {
        p: end if end > 0 else confluent_kafka.OFFSET_INVALID for p, (_, end) in ends.items()
    }


def test_consumer_perf_test_detailed_stats_and_hidden_header(
    quiet_broker: BrokerProcess,
) -> None:
    create_topic(quiet_broker.bootstrap, "detail")
    produce_perf(quiet_broker.bootstrap, "detail", 20000, size=10)
    done = franz(
        "consumer-perf-test",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--topic", "detail",
        "--messages", "20000",
        "--show-detailed-stats",
        "--reporting-interval", "1",
        "--hide-header",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines, "no detailed line"
    counts = []
    for line in lines:
        row = DETAILED.match(line)
        assert row, line
        counts.append(int(row.group(4)))
    assert counts == sorted(counts)
    assert counts[-1] <= 20000


def test_consumer_perf_test_warns_when_the_topic_runs_dry(quiet_broker: BrokerProcess) -> None:
    create_topic(quiet_broker.bootstrap, "dry")
    produce_perf(quiet_broker.bootstrap, "dry", 500, size=10)
    done = franz(
        "consumer-perf-test",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--topic", "dry",
        "--messages", "1000",
        "--timeout", "1000",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == HEADER
    assert lines[1] == (
        "WARNING: Exiting before consuming the expected number of messages: timeout (1000 ms) "
        "exceeded. You can use the --timeout option to increase the timeout."
    )
    row = CSV.match(lines[2])
    assert row, lines[2]
    assert int(row.group(5)) == 500


def test_consumer_perf_test_include_regex_date_format_and_metrics(
    quiet_broker: BrokerProcess,
) -> None:
    for topic in ("inc-a", "inc-b", "other"):
        create_topic(quiet_broker.bootstrap, topic)
        produce_perf(quiet_broker.bootstrap, topic, 300, size=10)
    done = franz(
        "consumer-perf-test",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--include", "inc-.*",
        "--messages", "600",
        "--group", "inc-g",
        "--date-format", "HH:mm:ss",
        "--print-metrics",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == HEADER
    fields = lines[1].split(", ")
    assert re.fullmatch(r"\d\d:\d\d:\d\d", fields[0]) and fields[4] == "600"
    assert lines[2] == ""
    assert re.match(r"^Metric Name +Value$", lines[3])
    rows = {n.rstrip(): v for n, v in (line.split(" : ", 1) for line in lines[4:])}
    assert "librdkafka:rxmsgs:{client-id=perf-consumer-client}" in rows
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": quiet_broker.bootstrap, "group.id": "inc-g"}
    )
    try:
        committed = consumer.committed(
            [confluent_kafka.TopicPartition(t, 0) for t in ("inc-a", "inc-b", "other")],
            timeout=10,
        )
    finally:
        consumer.close()
    # exactly the records counted were committed, none of the topic left out
    assert [tp.offset for tp in committed] == [300, 300, confluent_kafka.OFFSET_INVALID]


def test_consumer_perf_test_unknown_topic_and_unreachable_broker_fail_with_one_line(
    quiet_broker: BrokerProcess,
) -> None:
    unknown = franz(
        "consumer-perf-test",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--topic", "nowhere",
        "--messages", "1",
    )  # fmt: skip
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines() == [
        "franz consumer-perf-test: error: topic 'nowhere' does not exist; create it with "
        "franz topics --create, or check the name"
    ]
    port = closed_port()
    gone = franz(
        "consumer-perf-test",
        "--bootstrap-server", f"127.0.0.1:{port}",
        "--topic", "t",
        "--messages", "1",
        "--timeout", "1000",
    )  # fmt: skip
    assert gone.returncode == 1
    lines = gone.stderr.splitlines()
    assert len(lines) == 1, gone.stderr
    assert f"could not reach the cluster at 127.0.0.1:{port} within 1000 ms" in lines[0]
    missing = franz("consumer-perf-test", "--bootstrap-server", "x:1", "--topic", "t")
    assert missing.returncode == 2
    assert "--messages" in missing.stderr


# -- end-to-end-latency -----------------------------------------------------------------------


def check_e2e_output(stdout: str, count: int) -> None:
    lines = stdout.strip().splitlines()
    progress = [E2E_PROGRESS.match(line) for line in lines[:-2]]
    assert all(progress), stdout
    assert [int(m.group(1)) for m in progress if m] == list(range(0, count, 1000))
    avg = E2E_AVG.match(lines[-2])
    assert avg, lines[-2]
    pct = E2E_PCT.match(lines[-1])
    assert pct, lines[-1]
    p50, p99, p999 = (int(pct.group(i)) for i in (1, 2, 3))
    assert p50 <= p99 <= p999
    assert float(avg.group(1)) > 0


def test_end_to_end_latency_positional_form(quiet_broker: BrokerProcess) -> None:
    create_topic(quiet_broker.bootstrap, "e2e")
    produce_perf(quiet_broker.bootstrap, "e2e", 10, size=5)  # records before the run
    done = franz("end-to-end-latency", quiet_broker.bootstrap, "e2e", "1001", "1", "100")
    assert done.returncode == 0, done.stderr
    check_e2e_output(done.stdout, 1001)
    assert end_offsets(quiet_broker.bootstrap, "e2e", [0])[0][1] == 1011


def test_end_to_end_latency_flags_form_creates_a_missing_topic(
    quiet_broker: BrokerProcess, tmp_path: Path
) -> None:
    props = tmp_path / "client.properties"
    props.write_text("client.id=e2e-client\n")
    done = franz(
        "end-to-end-latency",
        "--bootstrap-server", quiet_broker.bootstrap,
        "--topic", "fresh",
        "--num-records", "50",
        "--producer-acks", "all",
        "--record-size", "20",
        "--command-config", str(props),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        'Topic "fresh" does not exist. Will create topic with 1 partition(s) and '
        "replication factor = 1"
    )
    check_e2e_output("\n".join(lines[1:]), 50)
    assert end_offsets(quiet_broker.bootstrap, "fresh", [0])[0][1] == 50


def test_end_to_end_latency_bad_arguments_and_unreachable_broker() -> None:
    acks = franz("end-to-end-latency", "127.0.0.1:1", "t", "5", "0", "10")
    assert acks.returncode == 2
    assert "Latency testing requires synchronous acknowledgement. Please use 1 or all" in (
        acks.stderr
    )
    mixed = franz("end-to-end-latency", "127.0.0.1:1", "t", "5", "1", "10", "--topic", "u")
    assert mixed.returncode == 2
    assert "USAGE" in mixed.stderr
    port = closed_port()
    gone = franz(
        "end-to-end-latency", f"127.0.0.1:{port}", "t", "5", "1", "10", "--timeout", "1000"
    )
    assert gone.returncode == 1
    lines = gone.stderr.splitlines()
    assert len(lines) == 1, gone.stderr
    assert f"could not reach the cluster at 127.0.0.1:{port}" in lines[0]


def test_perf_tools_have_help() -> None:
    for tool in ("producer-perf-test", "consumer-perf-test", "end-to-end-latency"):
        done = franz(tool, "--help")
        assert done.returncode == 0
        assert f"franz {tool}" in done.stdout
