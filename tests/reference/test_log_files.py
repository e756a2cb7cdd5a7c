"""Issue 15, item 4: Franz's log files against Apache Kafka 3.9's own code.

One Franz broker writes topic ``t``: six produce runs of five records (keys, headers on odd
records, codecs none/gzip/snappy/lz4/zstd/none), each with its own idempotent producer, with
``log.segment.bytes=1200`` and ``log.index.interval.bytes=100`` so that there are several
segments, index and time-index entries, and producer snapshots (one per rolled segment and
one at the clean shutdown). Then:

- ``kafka.tools.DumpLogSegments`` reads every ``.log``, ``.index`` and ``.timeindex`` with
  each flag combination, with no error and exactly the output (stdout and stderr) of
  ``franz dump-log-segments`` (nothing normalised: both print the paths they were given);
- both tools print the same for Franz's and Kafka's producer snapshots (``.snapshot``);
- a Kafka broker started on a copy of Franz's log dir (same broker.id and cluster.id, the
  topic's znode written with Franz's topic id) serves the records;
- the other way round: Franz started on a log dir written by Kafka (stopped cleanly) serves
  Kafka's records, and ``franz dump-log-segments`` prints what Kafka prints for Kafka's files.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.broker import BrokerProcess
from tests.support.clients import (
    Consumed,
    OutRecord,
    consume_with,
    create_topic,
    produce_with,
)
from tests.support.kafka_ref import (
    DUMP_LOG_SEGMENTS,
    KafkaBroker,
    run_franz_tool,
    run_kafka_tool,
    zookeeper_commands,
)

TOPIC = "t"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd", "none")
INDEXED = (".log", ".index", ".timeindex")
SMALL_SEGMENTS = {"log.segment.bytes": "1200", "log.index.interval.bytes": "100"}


def produced() -> list[list[OutRecord]]:
    """Six runs of five records; odd records carry two headers (one with a null value)."""
    runs = []
    for run, codec in enumerate(CODECS):
        runs.append(
            [
                OutRecord(
                    f"k{run}-{i}".encode(),
                    f"value-{codec}-{run}-{i}-".encode() * 3,
                    headers=(("h1", b"x"), ("h2", None)) if i % 2 else (),
                )
                for i in range(5)
            ]
        )
    return runs


def write(bootstrap: str) -> None:
    for records, codec in zip(produced(), CODECS, strict=True):
        produce_with(
            "confluent-kafka",
            bootstrap,
            TOPIC,
            records,
            codec,
            config={"linger.ms": 0, "enable.idempotence": True},
        )


def check_served(bootstrap: str) -> None:
    """Every produced record comes back in order, with key, value and headers."""
    expected = [r for run in produced() for r in run]
    got = consume_with("confluent-kafka", bootstrap, TOPIC, [0], len(expected))
    assert [(c.offset, c.key, c.value, c.headers) for c in got] == [
        (offset, r.key, r.value, r.headers) for offset, r in enumerate(expected)
    ], _show(got)


def _show(got: list[Consumed]) -> str:
    return "\n".join(f"{c.offset} {c.key!r} {c.value!r} {c.headers!r}" for c in got)


def segment_files(partition_dir: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in partition_dir.iterdir() if p.suffix in suffixes)


@pytest.fixture(scope="module")
def franz_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir written by Franz and stopped cleanly (read-only for the tests: copy it)."""
    broker = BrokerProcess(tmp_path_factory.mktemp("franz-writer"), SMALL_SEGMENTS).start()
    try:
        create_topic(broker.bootstrap, TOPIC)
        write(broker.bootstrap)
    finally:
        code = broker.stop()
    assert code == 0, broker.output()
    log_dir = Path(broker.overrides["log.dirs"])
    assert len(segment_files(log_dir / f"{TOPIC}-0", ".log")) >= 2, "expected several segments"
    return log_dir


def create_on_fresh_kafka(kafka: KafkaBroker, topic: str, timeout: float = 240.0) -> None:
    """Create ``topic`` (one partition) on a Kafka that has just started.

    Under CI load a fresh Kafka once named no controller in Metadata for 90 s, and
    librdkafka's CreateTopics failed "while waiting for controller": wait for the controller
    first, then try CreateTopics for 30 s at a time until ``timeout`` (an attempt that timed
    out on the client may still have created the topic: TOPIC_ALREADY_EXISTS is then fine).
    """
    deadline = time.monotonic() + timeout
    kafka.wait_for_controller(timeout=timeout)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 2})
    while True:
        try:
            create_topic(kafka.bootstrap, topic, timeout=30)
            return
        except KafkaException as e:
            if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS and _has_leaders(admin, topic):
                return
            if time.monotonic() > deadline:
                raise
        except AssertionError:  # created, but no leader yet within the attempt
            if time.monotonic() > deadline:
                raise
        time.sleep(1)


def _has_leaders(admin: AdminClient, topic: str) -> bool:
    try:
        metadata = admin.list_topics(topic, timeout=30).topics[topic]
    except KafkaException:
        return False
    return metadata.error is None and all(p.leader >= 0 for p in metadata.partitions.values())


@pytest.fixture(scope="module")
def kafka_log_dir(
    kafka_libs: Path, zookeeper: str, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The same records written by Apache Kafka (its own chroot), stopped cleanly."""
    base = tmp_path_factory.mktemp("kafka-writer")
    kafka = KafkaBroker(base, f"{zookeeper}/kafka-writer", properties=SMALL_SEGMENTS).start()
    try:
        create_on_fresh_kafka(kafka, TOPIC)
        write(kafka.bootstrap)
    finally:
        kafka.stop()
    assert kafka.stopped_cleanly(), kafka.output()[-5000:]
    return kafka.log_dir


DUMP_FLAGS = [
    pytest.param([], id="plain"),
    pytest.param(["--deep-iteration"], id="deep-iteration"),
    pytest.param(["--print-data-log"], id="print-data-log"),
    pytest.param(["--print-data-log", "--skip-record-metadata"], id="skip-record-metadata"),
    pytest.param(["--verify-index-only"], id="verify-index-only"),
    pytest.param(["--index-sanity-check"], id="index-sanity-check"),
]


def compare_dumps(files: list[Path], flags: list[str]) -> None:
    joined = ",".join(map(str, files))
    kafka = run_kafka_tool(DUMP_LOG_SEGMENTS, "--files", joined, *flags)
    franz = run_franz_tool("dump-log-segments", "--files", joined, *flags)
    assert kafka.returncode == 0, kafka.stderr
    assert franz.returncode == 0, franz.stderr
    assert franz.stdout.splitlines() == kafka.stdout.splitlines()
    assert franz.stderr.splitlines() == kafka.stderr.splitlines()


@pytest.mark.parametrize("flags", DUMP_FLAGS)
def test_dump_log_segments_prints_what_kafka_prints_for_franz_files(
    kafka_libs: Path, franz_log_dir: Path, flags: list[str]
) -> None:
    compare_dumps(
        segment_files(franz_log_dir / f"{TOPIC}-0", ".log", ".index", ".timeindex"), flags
    )


@pytest.mark.parametrize("flags", [DUMP_FLAGS[2], DUMP_FLAGS[4]])
def test_dump_log_segments_prints_what_kafka_prints_for_kafka_files(
    kafka_log_dir: Path, flags: list[str]
) -> None:
    compare_dumps(
        segment_files(kafka_log_dir / f"{TOPIC}-0", ".log", ".index", ".timeindex"), flags
    )


def test_dump_log_segments_prints_what_kafka_prints_for_producer_snapshots(
    franz_log_dir: Path, kafka_log_dir: Path
) -> None:
    """Franz's and Kafka's ``.snapshot`` files, decoded by both tools: one line per producer."""
    franz_snapshots = segment_files(franz_log_dir / f"{TOPIC}-0", ".snapshot")
    kafka_snapshots = segment_files(kafka_log_dir / f"{TOPIC}-0", ".snapshot")
    assert franz_snapshots and kafka_snapshots, "segment rolls and shutdowns write snapshots"
    compare_dumps(franz_snapshots + kafka_snapshots, [])
    # Franz's shutdown snapshot knows all six producers, each with its five records.
    last = run_franz_tool("dump-log-segments", "--files", franz_snapshots[-1]).stdout
    entries = [line for line in last.splitlines() if line.startswith("producerId: ")]
    assert [line.split()[1] for line in entries] == [str(i) for i in range(len(CODECS))]
    assert all(" firstSequence: 0 lastSequence: 4 " in line for line in entries)


def test_kafka_serves_a_log_dir_written_by_franz(
    franz_log_dir: Path, zk_chroot: str, tmp_path: Path
) -> None:
    """Kafka, started on Franz's files with Franz's broker.id and cluster.id, serves them.

    Franz's embedded mode keeps topics in ``franz-metadata.json``, not in ZooKeeper, so the
    test writes what Kafka's controller would have: ``/cluster/id`` and
    ``/brokers/topics/t`` (version 3, Franz's topic id, partition 0 on broker 0).
    """
    log_dir = tmp_path / "logs"
    shutil.copytree(franz_log_dir, log_dir)
    meta = dict(
        line.split("=", 1)
        for line in (log_dir / "meta.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    topics = json.loads((log_dir / "franz-metadata.json").read_text())["topics"]
    chroot = "/" + zk_chroot.split("/", 1)[1]
    cluster = json.dumps({"version": "1", "id": meta["cluster.id"]}, separators=(",", ":"))
    topic = json.dumps(
        {
            "version": 3,
            "topic_id": topics[TOPIC]["topic_id"],
            "partitions": topics[TOPIC]["partitions"],
            "adding_replicas": {},
            "removing_replicas": {},
        },
        separators=(",", ":"),
    )
    shell = zookeeper_commands(
        zk_chroot.split("/", 1)[0],
        [
            f"create {chroot}",
            f"create {chroot}/cluster",
            f"create {chroot}/cluster/id {cluster}",
            f"create {chroot}/brokers",
            f"create {chroot}/brokers/topics",
            f"create {chroot}/brokers/topics/{TOPIC} {topic}",
        ],
    )
    assert shell.returncode == 0, shell.stdout + shell.stderr
    assert f"Created {chroot}/brokers/topics/{TOPIC}" in shell.stdout + shell.stderr
    kafka = KafkaBroker(
        tmp_path / "kafka", zk_chroot, broker_id=int(meta["broker.id"]), log_dir=log_dir
    ).start()
    try:
        check_served(kafka.bootstrap)
    finally:
        kafka.stop()
    output = kafka.output()
    assert kafka.stopped_cleanly(), output[-5000:]
    assert " ERROR " not in output, [line for line in output.splitlines() if " ERROR " in line]


def test_franz_serves_a_log_dir_written_by_kafka(kafka_log_dir: Path, tmp_path: Path) -> None:
    """Franz, started on Kafka's files, serves them.

    Kafka in ZooKeeper mode keeps topics in ZooKeeper; Franz's embedded mode reads them from
    ``franz-metadata.json``, so the test writes that file with Kafka's topic id (from the
    partition's ``partition.metadata``), as the other test writes Kafka's znodes.
    """
    log_dir = tmp_path / "logs"
    shutil.copytree(kafka_log_dir, log_dir)
    topic_id = dict(
        line.split(": ", 1)
        for line in (log_dir / f"{TOPIC}-0" / "partition.metadata").read_text().splitlines()
    )["topic_id"]
    (log_dir / "franz-metadata.json").write_text(
        json.dumps(
            {
                "version": 1,
                "topics": {TOPIC: {"topic_id": topic_id, "partitions": {"0": [0]}, "configs": {}}},
            }
        )
    )
    broker = BrokerProcess(tmp_path / "franz", {"log.dirs": str(log_dir)}).start()
    try:
        check_served(broker.bootstrap)
    finally:
        code = broker.stop()
    assert code == 0, broker.output()
    # No ERROR, and no WARNING either (Kafka's empty cleaner-offset-checkpoint once gave one).
    assert not [
        line for line in broker.output().splitlines() if " ERROR " in line or " WARNING " in line
    ]
