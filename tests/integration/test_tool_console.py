"""``franz console-producer`` and ``franz console-consumer`` as subprocesses against a real
broker, crossed with other clients.

The tools are checked against each other (keys, headers, nulls) and against confluent-kafka,
kafka-python and kcat, so the bytes on the wire are right in both directions; against the
stored batches for ``--compression-codec``; against committed offsets for ``--group``; and
every error case on its exit code and one-line message. One broker (auto-create off, no
initial rebalance delay) serves the module; each test uses its own topics.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import confluent_kafka
import pytest
from kafka.partitioner.default import murmur2

from tests.support.broker import BrokerProcess
from tests.support.clients import (
    ALL_CODECS,
    OutRecord,
    codec_problems,
    consume_with,
    create_topic,
    end_offsets,
    produce_with,
    stored_batches,
)

ALL_FIELDS = [
    "--property", "print.timestamp=true",
    "--property", "print.partition=true",
    "--property", "print.offset=true",
    "--property", "print.headers=true",
    "--property", "print.key=true",
]  # fmt: skip


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("console-broker"),
        {"auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0"},
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


@pytest.fixture
def topic(broker: BrokerProcess) -> str:
    name = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name)
    return name


def tool(
    name: str, bootstrap: str, *args: str, stdin: bytes = b"", timeout: float = 30
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "franz", name, "--bootstrap-server", bootstrap, *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )


def produce(bootstrap: str, topic: str, lines: bytes, *args: str) -> None:
    result = tool("console-producer", bootstrap, "--topic", topic, *args, stdin=lines)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"" and result.stderr == b""


def consume(bootstrap: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return tool("console-consumer", bootstrap, *args)


def processed(result: subprocess.CompletedProcess[bytes]) -> int:
    """The count of Kafka's closing line, which must be the last line on stderr."""
    last = result.stderr.decode().splitlines()[-1]
    prefix, _, rest = last.partition("Processed a total of ")
    assert prefix == "" and rest.endswith(" messages"), result.stderr
    return int(rest.removesuffix(" messages"))


def one_line_error(result: subprocess.CompletedProcess[bytes], tool_name: str) -> str:
    lines = [
        line
        for line in result.stderr.decode().splitlines()
        if not line.startswith("Processed a total of")
    ]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"franz {tool_name}: error: "), lines
    return lines[0]


KEYS_AND_HEADERS = {"parse.key": "true", "parse.headers": "true", "null.marker": "<null>"}


def props(items: dict[str, str]) -> list[str]:
    return [arg for key, value in items.items() for arg in ("--property", f"{key}={value}")]


# -- round trips -------------------------------------------------------------------------------


def test_round_trip_with_keys_and_headers(broker: BrokerProcess, topic: str) -> None:
    lines = (
        "h1:v1,h2:v2\tk1\tfirst value\n"
        "trace:ü\tk2\tsecond\twith tab\r\n"  # \r\n ends a line too; the value keeps its tab
        "<null>\t<null>\tno headers, null key\n"
        "h:<null>\tk4\t<null>\n"
        "h:\t\t\n"  # empty header value, empty key, empty value: not nulls
    ).encode()
    produce(broker.bootstrap, topic, lines, *props(KEYS_AND_HEADERS))
    result = consume(
        broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "5", *ALL_FIELDS
    )
    assert result.returncode == 0, result.stderr
    assert processed(result) == 5
    out = result.stdout.decode().split("\n")
    assert out[-1] == ""
    rows = [line.split("\t") for line in out[:-1]]
    for offset, row in enumerate(rows):
        kind, _, ts = row[0].partition(":")
        assert kind == "CreateTime" and abs(int(ts) - time.time() * 1000) < 60_000
        assert row[1:3] == ["Partition:0", f"Offset:{offset}"]
    assert [row[3:] for row in rows] == [
        ["h1:v1,h2:v2", "k1", "first value"],
        ["trace:ü", "k2", "second", "with tab"],
        ["NO_HEADERS", "null", "no headers, null key"],
        ["h:null", "k4", "null"],
        ["h:", "", ""],
    ]
    # The bytes on the wire, read by two other clients.
    for client in ("confluent-kafka", "kcat"):
        got = consume_with(client, broker.bootstrap, topic, [0], 5)
        assert [(r.key, r.value, r.headers) for r in got] == [
            (b"k1", b"first value", (("h1", b"v1"), ("h2", b"v2"))),
            (b"k2", b"second\twith tab", (("trace", "ü".encode()),)),
            (None, b"no headers, null key", ()),
            (b"k4", None, (("h", None),)),
            (b"", b"", (("h", b""),)),
        ], client


T0 = 1_700_000_000_000


def test_consumer_prints_what_another_client_produced(broker: BrokerProcess, topic: str) -> None:
    records = [
        OutRecord(b"\xffkey", b"bin\x00\xfe", (("a", b"1"), ("b", None)), timestamp_ms=T0),
        OutRecord(None, None, (), timestamp_ms=T0 + 1),
    ]
    produce_with("confluent-kafka", broker.bootstrap, topic, records)
    result = consume(
        broker.bootstrap,
        "--topic",
        topic,
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--max-messages",
        "2",
        *ALL_FIELDS,
        "--property",
        "null.literal=<nil>",
        "--property",
        "headers.separator=;",
        "--property",
        "key.separator= | ",
        "--property",
        "line.separator=#\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        b"CreateTime:1700000000000 | Partition:0 | Offset:0 | a:1;b:<nil> | \xffkey"
        b" | bin\x00\xfe#\n"
        b"CreateTime:1700000000001 | Partition:0 | Offset:1 | NO_HEADERS | <nil> | <nil>#\n"
    )


def test_producer_lines_reach_another_client_byte_for_byte(broker: BrokerProcess) -> None:
    name = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name, partitions=4)
    keys = [f"key-{i}".encode() for i in range(20)]
    lines = b"".join(k + b":" + b"v\xff" + k + b"\n" for k in keys)
    produce(
        broker.bootstrap,
        name,
        lines,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        "--sync",
    )
    got = consume_with("confluent-kafka", broker.bootstrap, name, [0, 1, 2, 3], 20)
    assert sorted((r.key, r.value) for r in got) == sorted((k, b"v\xff" + k) for k in keys)
    # The Java client's partitioner (murmur2), so a key lands where Kafka's tool puts it.
    for record in got:
        assert record.partition == (murmur2(record.key) & 0x7FFFFFFF) % 4, record


# -- consumer flags ----------------------------------------------------------------------------


def numbered(broker: BrokerProcess, topic: str, count: int) -> None:
    produce(broker.bootstrap, topic, b"".join(b"m%d\n" % i for i in range(count)))


def test_max_messages_stops_after_n(broker: BrokerProcess, topic: str) -> None:
    numbered(broker, topic, 10)
    result = consume(broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"m0\nm1\nm2\n"
    assert processed(result) == 3


def test_timeout_ms_ends_an_idle_run(broker: BrokerProcess, topic: str) -> None:
    numbered(broker, topic, 2)
    started = time.monotonic()
    result = consume(broker.bootstrap, "--topic", topic, "--from-beginning", "--timeout-ms", "1000")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"m0\nm1\n"
    assert processed(result) == 2
    assert elapsed < 10


def test_partition_and_offset(broker: BrokerProcess) -> None:
    name = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name, partitions=2)
    records = [OutRecord(None, b"p%d-%d" % (p, i), partition=p) for p in (0, 1) for i in range(4)]
    produce_with("confluent-kafka", broker.bootstrap, name, records)

    def run(*args: str) -> list[str]:
        result = consume(broker.bootstrap, "--topic", name, "--timeout-ms", "1000", *args)
        assert result.returncode == 0, result.stderr
        return result.stdout.decode().splitlines()

    assert run("--partition", "1", "--offset", "2", "--property", "print.offset=true") == [
        "Offset:2\tp1-2",
        "Offset:3\tp1-3",
    ]
    assert run("--partition", "0", "--offset", "earliest") == ["p0-0", "p0-1", "p0-2", "p0-3"]
    assert run("--partition", "0", "--from-beginning", "--max-messages", "1") == ["p0-0"]
    assert run("--partition", "0", "--offset", "latest") == []
    assert run("--partition", "1") == []  # Kafka: from the end unless --offset/--from-beginning


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def test_group_commits_and_the_next_run_resumes(broker: BrokerProcess, topic: str) -> None:
    numbered(broker, topic, 6)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = consume(
        broker.bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "4",
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout == b"m0\nm1\nm2\nm3\n"
    # Only printed records are committed, though the fetch brought all six.
    assert committed(broker.bootstrap, group, topic) == 4
    second = consume(broker.bootstrap, "--topic", topic, "--group", group, "--timeout-ms", "2000")
    assert second.returncode == 0, second.stderr
    assert second.stdout == b"m4\nm5\n"
    assert committed(broker.bootstrap, group, topic) == 6


def test_without_group_nothing_is_committed(broker: BrokerProcess, topic: str) -> None:
    numbered(broker, topic, 2)
    result = consume(broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "2")
    assert result.returncode == 0 and result.stdout == b"m0\nm1\n", result.stderr
    # Kafka's generated console-consumer-NNNNN group does not commit: no group of the broker
    # holds an offset for this topic (a committing group would be listed with it).
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    groups = admin.list_consumer_groups(request_timeout=10).result().valid
    for group in groups:
        assert committed(broker.bootstrap, group.group_id, topic) < 0, group.group_id


def test_include_regex_matches_whole_topic_names(broker: BrokerProcess) -> None:
    stem = f"inc-{uuid.uuid4().hex[:6]}"
    for suffix in ("a", "b", "a-x"):
        create_topic(broker.bootstrap, f"{stem}-{suffix}")
        produce(broker.bootstrap, f"{stem}-{suffix}", suffix.encode() + b"\n")
    result = consume(
        broker.bootstrap, "--include", f"{stem}-(a|b)", "--from-beginning", "--timeout-ms", "3000"
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.decode().splitlines()) == ["a", "b"]


def test_sigterm_stops_cleanly_with_the_count(broker: BrokerProcess, topic: str) -> None:
    numbered(broker, topic, 3)
    args = [
        sys.executable,
        "-m",
        "franz",
        "console-consumer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--from-beginning",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines == [b"m0\n", b"m1\n", b"m2\n"]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.decode().splitlines()[-1] == "Processed a total of 3 messages"


# -- producer flags ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_each_codec_is_stored_as_asked(broker: BrokerProcess, topic: str, codec: str) -> None:
    lines = b"".join(b"record %d of a compressible run of text\n" % i for i in range(500))
    produce(broker.bootstrap, topic, lines, "--compression-codec", codec)
    batches = stored_batches(broker, topic, 0)
    assert sum(b.records_count for b in batches) == 500
    assert codec_problems(batches, codec) == []  # type: ignore[arg-type]


def test_compression_codec_without_value_is_gzip(broker: BrokerProcess, topic: str) -> None:
    lines = b"".join(b"gzip me %d gzip me\n" % i for i in range(200))
    produce(broker.bootstrap, topic, lines, "--compression-codec")
    assert codec_problems(stored_batches(broker, topic, 0), "gzip") == []


def test_producer_config_file_and_properties(
    broker: BrokerProcess, topic: str, tmp_path: Path
) -> None:
    config = tmp_path / "producer.properties"
    config.write_text("compression.type=gzip\nlinger.ms=5\n")
    # The file's compression.type loses to --compression-codec (Kafka sets it last).
    lines = b"".join(b"aaaaaaaaaaaaaaaaaaaa %d\n" % i for i in range(200))
    produce(
        broker.bootstrap,
        topic,
        lines,
        "--producer.config",
        str(config),
        "--compression-codec",
        "lz4",
        "--producer-property",
        "client.id=mine",
    )
    assert codec_problems(stored_batches(broker, topic, 0), "lz4") == []


# -- errors ------------------------------------------------------------------------------------


def test_unknown_topic_fails_the_producer(broker: BrokerProcess) -> None:
    result = tool(
        "console-producer",
        broker.bootstrap,
        "--topic",
        "no-such-topic",
        "--max-block-ms",
        "1000",
        stdin=b"a\nb\n",
    )
    assert result.returncode == 1
    line = one_line_error(result, "console-producer")
    assert "2 of 2 record(s) were not delivered to topic 'no-such-topic'" in line
    assert "nknown topic" in line


def test_unparsable_line_fails_after_the_lines_before_it(broker: BrokerProcess, topic: str) -> None:
    result = tool(
        "console-producer",
        broker.bootstrap,
        "--topic",
        topic,
        "--property",
        "parse.key=true",
        stdin=b"k\tv\nno separator\nk2\tv2\n",
    )
    assert result.returncode == 1
    assert one_line_error(result, "console-producer").endswith(
        "No key separator found on line number 2: 'no separator'"
    )
    assert [r.value for r in consume_with("confluent-kafka", broker.bootstrap, topic, [0], 1)] == [
        b"v"
    ]


def test_unknown_topic_and_partition_fail_the_consumer(broker: BrokerProcess, topic: str) -> None:
    result = consume(broker.bootstrap, "--topic", "no-such-topic", "--timeout-ms", "1000")
    assert result.returncode == 1
    assert "topic 'no-such-topic' does not exist" in one_line_error(result, "console-consumer")
    result = consume(broker.bootstrap, "--topic", topic, "--partition", "3")
    assert result.returncode == 1
    assert f"partition 3 of topic '{topic}' does not exist" in one_line_error(
        result, "console-consumer"
    )


@pytest.mark.parametrize("name", ["console-producer", "console-consumer"])
def test_unreachable_cluster(name: str) -> None:
    args = [
        "--topic",
        "t",
        "--max-block-ms" if name == "console-producer" else "--timeout-ms",
        "1000",
    ]
    started = time.monotonic()
    result = tool(name, "127.0.0.1:1", *args, stdin=b"x\n")
    assert result.returncode == 1
    line = one_line_error(result, name)
    assert "could not reach the cluster at 127.0.0.1:1 within 1000 ms" in line
    assert "check that it is running" in line
    assert time.monotonic() - started < 15


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "t", "--offset", "3"], "The partition is required when offset is specified."),
        (["--topic", "t", "--partition", "0", "--group", "g"], "Options group and partition"),
        (["--topic", "t", "--partition", "0", "--offset", "-1"], "offset value '-1' is incorrect"),
        (["--partition", "0", "--offset", "1", "--include", "x"], "The topic is required"),
        (["--topic", "t", "--include", "x"], "exactly one of --topic or --include"),
        (["--topic", "t", "--property", "print.key"], "--property expects key=value"),
        (["--topic", "t", "--group", "a", "--consumer-property", "group.id=b"],
         "Detected group ids: 'a', 'b'"),
        (["--topic", "t", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"],
         "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest'"),
    ],
)  # fmt: skip
def test_consumer_bad_flags_exit_2(args: Sequence[str], message: str) -> None:
    result = consume("127.0.0.1:1", *args)
    assert result.returncode == 2, result.stderr
    assert message in one_line_error(result, "console-consumer")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compression-codec", "brotli"], "--compression-codec 'brotli'"),
        (["--property", "headers.separator=:"], "headers.separator and headers.key.separator"),
    ],
)
def test_producer_bad_flags_exit_2(args: Sequence[str], message: str) -> None:
    result = tool("console-producer", "127.0.0.1:1", "--topic", "t", *args)
    assert result.returncode == 2, result.stderr
    assert message in one_line_error(result, "console-producer")


def test_help_and_missing_required_flags() -> None:
    for name in ("console-producer", "console-consumer"):
        helped = subprocess.run(
            [sys.executable, "-m", "franz", name, "--help"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert helped.returncode == 0
        assert helped.stdout.startswith(f"usage: franz {name}")
        assert "--bootstrap-server" in helped.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "franz", "console-producer"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert missing.returncode == 2
    assert "the following arguments are required: --bootstrap-server, --topic" in missing.stderr


def test_producer_tuning_flags_still_deliver_every_line(broker: BrokerProcess, topic: str) -> None:
    # Kafka's flags for acks, batch.size, linger.ms (--timeout), retries and timeouts are
    # accepted and passed on; the records arrive in order.
    lines = b"".join(b"line %d\n" % i for i in range(50))
    produce(broker.bootstrap, topic, lines, "--request-required-acks", "1", "--batch-size",
            "200", "--timeout", "0", "--message-send-max-retries", "5", "--retry-backoff-ms",
            "50", "--request-timeout-ms", "5000", "--metadata-expiry-ms", "10000",
            "--max-memory-bytes", "1048576", "--socket-buffer-size", "65536")  # fmt: skip
    got = consume_with("confluent-kafka", broker.bootstrap, topic, [0], 50)
    assert [r.value for r in got] == [b"line %d" % i for i in range(50)]
    # batch.size=200 bytes: the 50 records cannot share one batch.
    assert len(stored_batches(broker, topic, 0)) > 1


def test_isolation_level_read_committed_reads_plain_records(
    broker: BrokerProcess, topic: str
) -> None:
    numbered(broker, topic, 2)
    result = consume(broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages",
                     "2", "--isolation-level", "read_committed")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"m0\nm1\n"


def test_producer_sigterm_flushes_what_was_read(broker: BrokerProcess, topic: str) -> None:
    args = [sys.executable, "-m", "franz", "console-producer", "--bootstrap-server",
            broker.bootstrap, "--topic", topic, "--timeout", "60000"]  # fmt: skip
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"one\ntwo\n")
        proc.stdin.flush()
        time.sleep(1.0)  # read, and held back by linger.ms=60000
        assert end_offsets(broker.bootstrap, topic, [0]) == {0: (0, 0)}
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    got = consume_with("confluent-kafka", broker.bootstrap, topic, [0], 2)
    assert [r.value for r in got] == [b"one", b"two"]


def test_config_files(broker: BrokerProcess, topic: str, tmp_path: Path) -> None:
    reader = tmp_path / "reader.properties"
    reader.write_text("parse.key=true\nkey.separator=:\n")
    produce(broker.bootstrap, topic, b"k:v\n", "--reader-config", str(reader))
    formatter = tmp_path / "formatter.properties"
    formatter.write_text("print.key=true\nkey.separator=|\n")
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = tmp_path / "consumer.properties"
    consumer.write_text(f"group.id={group}\nauto.offset.reset=earliest\n")
    result = consume(broker.bootstrap, "--topic", topic, "--max-messages", "1",
                     "--formatter-config", str(formatter), "--consumer.config", str(consumer),
                     "--property", "key.separator=>")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"k>v\n"  # --property wins over the file
    assert committed(broker.bootstrap, group, topic) == 1  # the file's group.id was used


def test_log_append_time_is_printed_as_such(broker: BrokerProcess) -> None:
    name = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name, config={"message.timestamp.type": "LogAppendTime"})
    produce(broker.bootstrap, name, b"x\n")
    result = consume(broker.bootstrap, "--topic", name, "--from-beginning", "--max-messages",
                     "1", "--property", "print.timestamp=true")  # fmt: skip
    assert result.returncode == 0, result.stderr
    kind, _, rest = result.stdout.decode().partition(":")
    assert kind == "LogAppendTime" and rest.endswith("\tx\n"), result.stdout
