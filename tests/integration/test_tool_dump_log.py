"""``franz dump-log-segments`` on files written by a real broker (Kafka's kafka-dump-log.sh).

Records are produced with confluent-kafka; the broker is stopped (SIGTERM: logs flushed,
indexes trimmed) and the tool reads its files as a subprocess. Outputs are parsed field by
field: every batch listed with ``isvalid: true`` and the produced offsets, counts, keys and
values; a byte flipped in a copy of the log makes its batch ``isvalid: false``; a tampered
index is reported as Kafka reports it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import confluent_kafka

from franz.protocol.records import iter_batches
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, produce_with

SEGMENT = "00000000000000000000"
_FIELD = re.compile(r"(\w+): (\S+)")


def dump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "dump-log-segments", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def batch_lines(stdout: str) -> list[dict[str, str]]:
    return [
        dict(_FIELD.findall(line)) for line in stdout.splitlines() if line.startswith("baseOffset:")
    ]


def record_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("| ")]


def produce_batches(bootstrap: str, topic: str, batches: list[list[OutRecord]]) -> None:
    """One batch per inner list: the producer lingers until the list's last record is queued.

    With linger 0 librdkafka's sender may take the first record before the rest are queued and
    split a list in two (a CI run saw five batches); a long linger with ``batch.num.messages``
    set to the list's size sends each list whole (full batch, or the flush at the end).
    """
    for records in batches:
        config = {"linger.ms": 30_000, "batch.num.messages": len(records)}
        produce_with("confluent-kafka", bootstrap, topic, records, config=config)


def partition_dir(broker: BrokerProcess, topic: str, partition: int = 0) -> Path:
    return Path(broker.overrides["log.dirs"]) / f"{topic}-{partition}"


def written(
    broker_factory: type[BrokerProcess], tmp_path: Path, interval: int = 1
) -> tuple[BrokerProcess, list[list[OutRecord]]]:
    """A stopped broker whose topic ``t`` holds 4 batches (3, 2, 1, 4 records)."""
    broker = broker_factory(tmp_path / "b", {"log.index.interval.bytes": str(interval)}).start()
    create_topic(broker.bootstrap, "t")
    batches = [
        [OutRecord(f"k{b}-{i}".encode(), f"value-{b}-{i}".encode()) for i in range(n)]
        for b, n in enumerate([3, 2, 1, 4])
    ]
    produce_batches(broker.bootstrap, "t", batches)
    assert broker.stop() == 0
    return broker, batches


def test_log_lists_every_batch_valid_with_offsets_and_counts(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    log = partition_dir(broker, "t") / f"{SEGMENT}.log"
    result = dump("--files", log)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping {log}"
    assert lines[1] == "Log starting offset: 0"
    parsed = batch_lines(result.stdout)
    assert [(b["baseOffset"], b["lastOffset"], b["count"]) for b in parsed] == [
        ("0", "2", "3"),
        ("3", "4", "2"),
        ("5", "5", "1"),
        ("6", "9", "4"),
    ]
    stored = list(iter_batches(log.read_bytes()))
    position = 0
    for fields, batch in zip(parsed, stored, strict=True):
        assert fields["isvalid"] == "true"
        assert fields["magic"] == "2"
        assert fields["compresscodec"] == "none"
        assert fields["position"] == str(position)
        assert fields["size"] == str(batch.size_in_bytes)
        assert fields["crc"] == str(batch.crc)
        assert fields["CreateTime"] == str(batch.max_timestamp)
        assert fields["isTransactional"] == "false" and fields["isControl"] == "false"
        assert fields["deleteHorizonMs"] == "OptionalLong.empty"
        position += batch.size_in_bytes
    # Field order is Kafka's printBatchLevel order.
    assert list(parsed[0]) == [
        "baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
        "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl",
        "deleteHorizonMs", "position", "CreateTime", "size", "magic", "compresscodec", "crc",
        "isvalid",
    ]  # fmt: skip
    assert record_lines(result.stdout) == []  # shallow by default
    assert "invalid bytes" not in result.stdout


def test_deep_iteration_prints_the_produced_keys_and_values(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, batches = written(broker_factory, tmp_path)
    log = partition_dir(broker, "t") / f"{SEGMENT}.log"
    result = dump("--deep-iteration", "--print-data-log", "--files", log)
    assert result.returncode == 0, result.stderr
    records = record_lines(result.stdout)
    produced = [r for batch in batches for r in batch]
    assert len(records) == len(produced) == 10
    pattern = re.compile(
        r"\| offset: (\d+) CreateTime: (\d+) keySize: (\d+) valueSize: (\d+) "
        r"sequence: (-?\d+) headerKeys: \[\] key: (\S+) payload: (\S+)$"
    )
    for offset, (line, record) in enumerate(zip(records, produced, strict=True)):
        match = pattern.match(line)
        assert match, line
        assert int(match.group(1)) == offset
        assert int(match.group(3)) == len(record.key or b"")
        assert int(match.group(4)) == len(record.value or b"")
        assert match.group(6).encode() == record.key
        assert match.group(7).encode() == record.value
    # Deep iteration without --print-data-log: record metadata only.
    shallow = dump("--deep-iteration", "--files", log)
    assert len(record_lines(shallow.stdout)) == 10
    assert all(" key: " not in line for line in record_lines(shallow.stdout))


def test_index_and_timeindex_dumps_agree_with_the_log(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    directory = partition_dir(broker, "t")
    log = (directory / f"{SEGMENT}.log").read_bytes()
    last_offset_at = {b.position: b.last_offset for b in iter_batches(log)}
    result = dump("--files", f"{directory / SEGMENT}.index,{directory / SEGMENT}.timeindex")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no mismatch
    entries = [
        (int(m.group(1)), int(m.group(2)))
        for m in re.finditer(r"^offset: (\d+) position: (\d+)$", result.stdout, re.M)
    ]
    # index.interval.bytes=1: an entry for every batch after the first (Kafka indexes a batch
    # when more than the interval was appended before it), at the batch's last offset.
    expected = [(last, position) for position, last in sorted(last_offset_at.items())]
    assert entries == expected[1:]
    times = [
        (int(m.group(1)), int(m.group(2)))
        for m in re.finditer(r"^timestamp: (\d+) offset: (\d+)$", result.stdout, re.M)
    ]
    assert times, result.stdout
    batches = {b.last_offset: b.max_timestamp for b in iter_batches(log)}
    for timestamp, offset in times:
        assert batches[offset] == timestamp
    verify = dump("--verify-index-only", "--files", f"{directory / SEGMENT}.index")
    assert verify.returncode == 0 and verify.stderr == ""
    assert "offset:" not in verify.stdout
    sanity = dump("--index-sanity-check", "--files", f"{directory / SEGMENT}.index")
    assert f"{directory / SEGMENT}.index passed sanity check." in sanity.stdout


def test_a_flipped_byte_makes_its_batch_invalid(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    original = partition_dir(broker, "t") / f"{SEGMENT}.log"
    copy = tmp_path / "copy" / f"{SEGMENT}.log"
    copy.parent.mkdir()
    shutil.copy(original, copy)
    data = bytearray(copy.read_bytes())
    where = data.index(b"value-1-1")  # inside the second batch's records
    data[where] ^= 0x01
    copy.write_bytes(bytes(data))
    result = dump("--deep-iteration", "--print-data-log", "--files", copy)
    assert result.returncode == 0, result.stderr
    validity = [b["isvalid"] for b in batch_lines(result.stdout)]
    assert validity == ["true", "false", "true", "true"]
    assert "payload: walue-1-1" in result.stdout  # 'v' ^ 1 == 'w': the record still decodes


def test_a_truncated_tail_is_reported_as_invalid_bytes(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    original = (partition_dir(broker, "t") / f"{SEGMENT}.log").read_bytes()
    copy = tmp_path / f"{SEGMENT}.log"
    copy.write_bytes(original[:-10])
    last = list(iter_batches(original))[-1]
    result = dump("--files", copy)
    assert result.returncode == 0
    assert len(batch_lines(result.stdout)) == 3
    assert f"Found {last.size_in_bytes - 10} invalid bytes at the end of {copy.name}" in (
        result.stdout
    )


def test_verify_index_only_reports_a_tampered_index(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    directory = partition_dir(broker, "t")
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in (".log", ".index"):
        shutil.copy(directory / f"{SEGMENT}{suffix}", copy / f"{SEGMENT}{suffix}")
    index = bytearray((copy / f"{SEGMENT}.index").read_bytes())
    assert len(index) >= 16
    # Entry 0 (offset 4, the position of the second batch, offsets 3-4) now claims offset 3.
    assert index[0:4] == (4).to_bytes(4, "big")
    index[0:4] = (3).to_bytes(4, "big")
    (copy / f"{SEGMENT}.index").write_bytes(bytes(index))
    result = dump("--verify-index-only", "--files", copy / f"{SEGMENT}.index")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"Dumping {copy / SEGMENT}.index"]
    assert result.stderr.splitlines() == [
        f"Mismatches in :{(copy / SEGMENT).absolute()}.index",
        "  Index offset: 3, log offset: 4",
    ]


def test_offsets_decoder_decodes_a_committed_offset(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"offsets.topic.num.partitions": "1"}).start()
    create_topic(broker.bootstrap, "t")
    produce_batches(broker.bootstrap, "t", [[OutRecord(b"k", b"v")] * 6])
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g1", "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition("t", 0, 5)], asynchronous=False)
    finally:
        consumer.close()
    assert broker.stop() == 0
    log = partition_dir(broker, "__consumer_offsets") / f"{SEGMENT}.log"
    result = dump("--offsets-decoder", "--files", log)
    assert result.returncode == 0, result.stderr
    assert all(b["isvalid"] == "true" for b in batch_lines(result.stdout))
    commits = []
    for line in record_lines(result.stdout):
        match = re.search(r" key: (\{.*\}) payload: (\{.*\}|<DELETE>)$", line)
        assert match, line
        key = json.loads(match.group(1))
        if key["type"] in ("0", "1"):
            commits.append((key, json.loads(match.group(2))))
    assert len(commits) == 1, result.stdout
    key, value = commits[0]
    assert key == {"type": "1", "data": {"group": "g1", "topic": "t", "partition": 0}}
    assert value["data"]["offset"] == 5
    assert value["data"]["metadata"] == ""
    assert value["data"]["commitTimestamp"] > 0
    assert next(iter(value["data"])) == "offset"


def test_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    result = dump("--files", tmp_path / f"{SEGMENT}.log")
    assert result.returncode == 1
    assert result.stderr.startswith("franz dump-log-segments: error: cannot read")
    assert len(result.stderr.splitlines()) == 1
    assert dump().returncode == 2  # --files is required


def test_live_files_of_a_running_broker_with_compression(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    """A running broker's active segment: its indexes are preallocated (zero-filled past the
    last entry); the dump stops at the first zero entry and finds no mismatch."""
    broker = broker_factory(tmp_path / "b", {"log.index.interval.bytes": "1"}).start()
    create_topic(broker.bootstrap, "z")
    for b in range(3):
        records = [OutRecord(f"k{b}{i}".encode(), b"v" * 64) for i in range(3)]
        # One batch per list (see produce_batches: with the default linger librdkafka may
        # split a list).
        config = {"linger.ms": 30_000, "batch.num.messages": len(records)}
        produce_with("confluent-kafka", broker.bootstrap, "z", records, codec="gzip", config=config)
    seg = partition_dir(broker, "z") / SEGMENT
    assert Path(f"{seg}.index").stat().st_size > 1024  # preallocated while live
    result = dump("--deep-iteration", "--files", f"{seg}.log,{seg}.index,{seg}.timeindex")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    batches = batch_lines(result.stdout)
    assert [b["compresscodec"] for b in batches] == ["gzip"] * 3
    assert all(b["isvalid"] == "true" for b in batches)
    assert [b["count"] for b in batches] == ["3", "3", "3"]
    assert len(record_lines(result.stdout)) == 9
    assert re.findall(r"^offset: (\d+) position: \d+$", result.stdout, re.M) == ["5", "8"]
    assert re.findall(r"^timestamp: \d+ offset: (\d+)$", result.stdout, re.M) == ["5", "8"]


def test_offsets_decoder_decodes_group_metadata_of_a_consumer_group(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(
        tmp_path / "b",
        {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
    ).start()
    create_topic(broker.bootstrap, "t")
    assigned: list[object] = []
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "members",
            "client.id": "dumper",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe(["t"], on_assign=lambda _c, parts: assigned.extend(parts))
        deadline = time.monotonic() + 30
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert assigned, "no assignment within 30 s"
        consumer.commit(offsets=[confluent_kafka.TopicPartition("t", 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    assert broker.stop() == 0
    log = partition_dir(broker, "__consumer_offsets") / f"{SEGMENT}.log"
    result = dump("--offsets-decoder", "--files", log)
    assert result.returncode == 0, result.stderr
    groups = []
    for line in record_lines(result.stdout):
        match = re.search(r" key: (\{.*\}) payload: (\{.*\}|<DELETE>)$", line)
        assert match, line
        if json.loads(match.group(1))["type"] == "2" and match.group(2) != "<DELETE>":
            groups.append(json.loads(match.group(2)))
    assert groups, result.stdout
    stable = [g for g in groups if g["data"]["members"]]
    assert stable, groups
    value = stable[0]
    assert value["version"] == "3"
    data = value["data"]
    assert data["protocolType"] == "consumer"
    assert data["generation"] >= 1
    (member,) = data["members"]
    assert member["clientId"] == "dumper"
    assert member["memberId"] == data["leader"]
    # The consumer protocol's subscription and assignment are decoded, not base64.
    assert member["subscription"]["topics"] == ["t"]
    assert member["assignment"]["assignedPartitions"] == [{"topic": "t", "partitions": [0]}]


def test_verify_reports_each_corrupt_batch_with_its_position_and_fails(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker, _ = written(broker_factory, tmp_path)
    directory = partition_dir(broker, "t")
    intact = dump("--verify", "--files", f"{directory / SEGMENT}.log,{directory / SEGMENT}.index")
    assert intact.returncode == 0, intact.stderr
    assert "Verified 4 batches" in intact.stdout and ": 0 corrupt" in intact.stdout
    assert intact.stderr == ""

    data = bytearray((directory / f"{SEGMENT}.log").read_bytes())
    batches = list(iter_batches(bytes(data)))
    data[data.index(b"value-1-1")] ^= 0x01  # the second batch (offsets 3-4)
    data[data.index(b"value-3-2")] ^= 0x01  # the fourth batch (offsets 6-9)
    copy = tmp_path / f"{SEGMENT}.log"
    copy.write_bytes(bytes(data))
    result = dump("--verify", "--files", copy)
    assert result.returncode == 1
    assert f"Verified 4 batches ({len(data)} bytes) in {copy}: 2 corrupt" in result.stdout
    lines = result.stderr.splitlines()
    second, fourth = batches[1], batches[3]
    assert lines[0].startswith(f"Corrupt batch at position {second.position} in {copy}: CRC mism")
    assert lines[0].endswith(f"(baseOffset: 3 lastOffset: 4 size: {second.size_in_bytes})")
    assert lines[1].startswith(f"Corrupt batch at position {fourth.position} in {copy}: CRC mism")
    assert lines[2] == (
        "franz dump-log-segments: error: verification failed: 2 corrupt batch(es), "
        "index errors above"
    )

    copy.write_bytes((directory / f"{SEGMENT}.log").read_bytes() + b"\xde\xad" * 20)
    torn = dump("--verify", "--files", copy)
    assert torn.returncode == 1
    assert f"Invalid bytes at position {len(data)} in {copy} (40 bytes to the end)" in torn.stderr
