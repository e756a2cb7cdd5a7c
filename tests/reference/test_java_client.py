"""Issue 15, item 5: Kafka's Java client and Kafka Streams against Franz, as against Kafka.

Kafka's own published programs do the work, on the session's Apache Kafka and on a Franz
broker with the same inputs, and the tests assert the same results on both:

- ``org.apache.kafka.tools.VerifiableProducer`` (kafka-tools): the producer with acks=all and
  ``enable.idempotence`` left at its default (true); the records it acknowledged, exactly,
  and the batches as stored carry a producer id and sequences (idempotent, no duplicates);
- ``org.apache.kafka.tools.VerifiableConsumer``: the classic group protocol with the
  ``CooperativeStickyAssignor``, consumers joining and leaving (incremental rebalances), the
  records consumed, exactly, and the group's committed offsets;
- the admin client through Kafka's tools (``test_tools.py``: topics, configs, groups,
  offsets, delete-records, log-dirs, leader-election, all ``Admin`` calls);
- ``org.apache.kafka.streams.examples.wordcount.WordCountDemo``: a repartition topic, a
  state store (RocksDB) and its changelog; the updates and final counts, and the internal
  topics' configs. Maven Central has no ``kafka-streams-examples`` 3.9.x: the demo is
  3.8.0's jar, run on kafka-streams 3.9.2 (``tests/reference/pom.xml``). With
  ``processing.guarantee=exactly_once_v2`` it runs on transactions (issue 19): a
  transactional producer per stream thread, read_committed consumers, offsets committed in
  the transactions (TxnOffsetCommit).

Every program runs in its own JVM (about 1-2 s to start): the two brokers' runs go side by
side, and each test starts as few JVMs as its scenario needs.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from tests.reference.test_tools import assert_same, mask_topic_ids, run
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, end_offsets
from tests.support.kafka_ref import HasBootstrap, KafkaBroker, run_kafka_tool, start_kafka_tool

BROKERS = ("kafka", "franz")
WORD_COUNT = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"


def on_both(
    brokers: dict[str, HasBootstrap], step: Callable[[str, HasBootstrap], Any]
) -> dict[str, Any]:
    """``step(name, broker)`` on both brokers side by side (JVM start-up dominates)."""
    with ThreadPoolExecutor(len(brokers)) as pool:
        futures = {name: pool.submit(step, name, broker) for name, broker in brokers.items()}
        return {name: future.result() for name, future in futures.items()}


def read_topic(
    bootstrap: str,
    topic: str,
    until: Callable[[list[Any]], bool],
    start: int = confluent_kafka.OFFSET_BEGINNING,
    timeout: float = 120.0,
) -> list[Any]:
    """The records of ``topic`` from offset ``start`` of each partition (the beginning by
    default), read (confluent-kafka, no group) until ``until(records)`` holds; fails after
    ``timeout``."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rt-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    records: list[Any] = []
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([confluent_kafka.TopicPartition(topic, p, start) for p in partitions])
        deadline = time.monotonic() + timeout
        while not until(records):
            assert time.monotonic() < deadline, f"{topic}: {len(records)} records so far"
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None, message.error()
                records.append(message)
        return records
    finally:
        consumer.close()


#: The exit code of a JVM that ran its shutdown hooks on SIGTERM (128 + 15).
STOPPED_BY_SIGTERM = 143


def stop(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGTERM (the programs' shutdown hooks close their clients), wait, reap; the exit
    code (``STOPPED_BY_SIGTERM`` when the program was still running)."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


# -- Kafka Streams ----------------------------------------------------------------------------

WORDCOUNT_LINES = [
    "all streams lead to kafka",
    "hello kafka streams",
    "join kafka summit",
    "Franz speaks Kafka, Kafka's log: all of it",
    "streams of streams",
]
#: The application id of WordCountDemo's at-least-once run (its default, ``streams-wordcount``,
#: would do as well), the ``count()`` store's generated name, and the internal topics'
#: names Streams derives from them.
APP_ID = "rt-wordcount"
STORE = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
REPARTITION = f"{APP_ID}-{STORE}-repartition"
CHANGELOG = f"{APP_ID}-{STORE}-changelog"
INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"


def expected_word_counts() -> dict[str, int]:
    """WordCountDemo's topology: lower-case, split on ``\\W+``, count per word."""
    return dict(Counter(w for line in WORDCOUNT_LINES for w in re.split(r"\W+", line.lower())))


@pytest.fixture(scope="module")
def wordcount_input(kafka: KafkaBroker, franz: BrokerProcess) -> None:
    """WordCountDemo's topics (the names are fixed in the demo) on both brokers, the input
    holding ``WORDCOUNT_LINES``."""
    for broker in (kafka, franz):
        for topic in (INPUT, OUTPUT):
            create_topic(broker.bootstrap, topic)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        for line in WORDCOUNT_LINES:
            producer.produce(INPUT, line.encode())
        assert producer.flush(30) == 0


def word_count(
    broker: HasBootstrap, work: Path, app_id: str, **properties: str
) -> list[tuple[str, int]]:
    """Run WordCountDemo as ``app_id`` (with ``properties``) until the output topic has the
    final counts, then stop it; the updates it wrote, in order.

    Fails fast when the demo exits or logs an ERROR (a stream thread died).
    """
    expected = expected_word_counts()
    ((_, start),) = end_offsets(broker.bootstrap, OUTPUT, [0]).values()
    work.mkdir(parents=True, exist_ok=True)
    config = work / f"{app_id}.properties"
    props = {
        "application.id": app_id,
        "bootstrap.servers": broker.bootstrap,
        "state.dir": str(work / f"{app_id}-state"),
        "commit.interval.ms": "200",
        **properties,
    }
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log = work / f"{app_id}.out"
    demo = start_kafka_tool(WORD_COUNT, config, log=log)
    try:

        def final(records: list[Any]) -> bool:
            latest = {r.key().decode(): struct.unpack(">q", r.value())[0] for r in records}
            assert demo.poll() is None and " ERROR " not in log.read_text(), log.read_text()
            return latest == expected

        records = read_topic(broker.bootstrap, OUTPUT, final, start=start)
    finally:
        code = stop(demo)
    assert code == STOPPED_BY_SIGTERM, log.read_text()
    return [(r.key().decode(), struct.unpack(">q", r.value())[0]) for r in records]


def test_word_count_demo(
    brokers: dict[str, HasBootstrap], wordcount_input: None, tmp_path: Path
) -> None:
    """WordCountDemo (streams-plaintext-input -> streams-wordcount-output, at least once) on
    both brokers: the same updates per word, the same internal topics and configs."""
    expected = expected_word_counts()
    outputs = on_both(brokers, lambda name, broker: word_count(broker, tmp_path / name, APP_ID))
    # Every update per word, in order (the store's cache is off: one update per input word).
    for name in BROKERS:
        per_word: dict[str, list[int]] = {}
        for word, count in outputs[name]:
            per_word.setdefault(word, []).append(count)
        assert per_word == {w: list(range(1, n + 1)) for w, n in expected.items()}, name
    assert outputs["franz"] == outputs["kafka"]

    # The internal topics Streams created, with the configs it gave them.
    described = run(
        brokers, "topics", "--bootstrap-server", "{bootstrap}", "--describe",
        "--topic", f"{APP_ID}-.*",
    )  # fmt: skip
    assert_same(described, mask_topic_ids)
    lines = described["kafka", "kafka"].stdout.splitlines()
    summary = {line.split()[1]: line for line in lines if line.startswith("Topic: ")}
    assert sorted(summary) == [CHANGELOG, REPARTITION]
    assert "cleanup.policy=compact" in summary[CHANGELOG]
    assert "cleanup.policy=delete" in summary[REPARTITION]


@pytest.mark.parametrize("broker_name", ["kafka", "franz"])
def test_word_count_demo_exactly_once_v2(
    brokers: dict[str, HasBootstrap], wordcount_input: None, tmp_path: Path, broker_name: str
) -> None:
    """WordCountDemo with processing.guarantee=exactly_once_v2 (a transactional producer,
    read_committed consumers) counts the same words once each."""
    expected = expected_word_counts()
    updates = word_count(
        brokers[broker_name], tmp_path, "rt-eos-wordcount",
        **{"processing.guarantee": "exactly_once_v2"},
    )  # fmt: skip
    assert dict(updates) == expected
    assert len(updates) == sum(expected.values())


# -- the producer -----------------------------------------------------------------------------

VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
DUMP_LOG = "kafka.tools.DumpLogSegments"


def events(text: str) -> list[dict[str, Any]]:
    """The JSON event lines the Verifiable* tools print (log4j's lines are not JSON)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def log_dir(broker: HasBootstrap) -> Path:
    if isinstance(broker, KafkaBroker):
        return broker.log_dir
    assert isinstance(broker, BrokerProcess)
    return Path(broker.overrides["log.dirs"])


def test_idempotent_producer(brokers: dict[str, HasBootstrap], tmp_path: Path) -> None:
    """VerifiableProducer, acks=all, idempotence at its default: every record acknowledged
    once, at the same partition and offset on both brokers, in batches that carry a producer
    id and gap-free sequences."""
    topic, count, partitions = "rt-verifiable", 3000, 3
    # VerifiableProducer sets retries=0, which turns the default idempotence off (KIP-679
    # keeps it on only with no conflicting setting); retries back at Kafka's default, and
    # enable.idempotence left unset, as most applications leave it.
    config = tmp_path / "producer.properties"
    config.write_text("retries=2147483647\n")

    def produce(name: str, broker: HasBootstrap) -> list[dict[str, Any]]:
        create_topic(broker.bootstrap, topic, partitions)
        result = run_kafka_tool(
            VERIFIABLE_PRODUCER, "--bootstrap-server", broker.bootstrap, "--topic", topic,
            "--max-messages", str(count), "--acks", "-1", "--repeating-keys", "30",
            "--producer.config", config,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return events(result.stdout)

    produced = on_both(brokers, produce)
    acked: dict[str, list[tuple[int, int, str, str]]] = {}
    for name in BROKERS:
        kinds = Counter(e["name"] for e in produced[name])
        assert kinds == {"startup_complete": 1, "producer_send_success": count,
                         "shutdown_complete": 1, "tool_data": 1}, (name, kinds)  # fmt: skip
        acked[name] = sorted(
            (e["partition"], e["offset"], e["key"], e["value"])
            for e in produced[name]
            if e["name"] == "producer_send_success"
        )
        # No duplicates, no gaps: each value once, each partition's offsets from 0.
        assert sorted(int(v) for *_, v in acked[name]) == list(range(count))
        for p in range(partitions):
            offsets = [o for q, o, *_ in acked[name] if q == p]
            assert offsets == list(range(len(offsets))), (name, p)
    assert acked["franz"] == acked["kafka"]

    # Kafka's DumpLogSegments, one JVM for both brokers' segments.
    files = [
        log_dir(brokers[name]) / f"{topic}-{p}" / "00000000000000000000.log"
        for name in BROKERS
        for p in range(partitions)
    ]
    dumped = run_kafka_tool(DUMP_LOG, "--files", ",".join(map(str, files)))
    assert dumped.returncode == 0, dumped.stderr
    sections = re.split(r"^Dumping (\S+)$", dumped.stdout, flags=re.M)[1:]
    assert [Path(f) for f in sections[::2]] == files
    for path, text in zip(sections[::2], sections[1::2], strict=True):
        batches = re.findall(
            r"count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) producerId: (-?\d+)",
            text,
        )
        assert batches, (path, text)
        sequence, producer_ids = 0, set()
        for n, base, last, pid in batches:
            assert (int(base), int(last)) == (sequence, sequence + int(n) - 1), (path, text)
            sequence += int(n)
            producer_ids.add(int(pid))
        assert len(producer_ids) == 1 and producer_ids.pop() >= 0, (path, producer_ids)


# -- the consumer -----------------------------------------------------------------------------

COOPERATIVE_STICKY = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


class VerifiableConsumer:
    """One VerifiableConsumer process in a group (classic protocol, cooperative-sticky), and
    what its events say: the partitions it owns, the records it consumed, its commits."""

    def __init__(self, bootstrap: str, topic: str, group: str, log: Path) -> None:
        self.log = log
        self.proc = start_kafka_tool(
            VERIFIABLE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic,
            "--group-id", group, "--group-protocol", "classic",
            "--assignment-strategy", COOPERATIVE_STICKY, "--reset-policy", "earliest",
            "--verbose", log=log,
        )  # fmt: skip

    def events(self) -> list[dict[str, Any]]:
        return events(self.log.read_text())

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for event in self.events():
            partitions = {p["partition"] for p in event.get("partitions", ())}
            if event["name"] == "partitions_assigned":
                owned |= partitions
            elif event["name"] == "partitions_revoked":
                owned -= partitions
        return owned

    def committed(self) -> dict[int, int]:
        committed: dict[int, int] = {}
        for event in self.events():
            if event["name"] == "offsets_committed":
                assert event["success"], event
                committed.update({o["partition"]: o["offset"] for o in event["offsets"]})
        return committed

    def records(self) -> list[tuple[int, int, str]]:
        return [
            (e["partition"], e["offset"], e["value"])
            for e in self.events()
            if e["name"] == "record_data"
        ]

    def rebalances(self) -> list[tuple[str, list[int]]]:
        """The non-empty assignments and revocations, in order."""
        return [
            (e["name"], sorted(p["partition"] for p in e["partitions"]))
            for e in self.events()
            if e["name"] in ("partitions_assigned", "partitions_revoked") and e["partitions"]
        ]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.2)


def test_cooperative_consumers(brokers: dict[str, HasBootstrap], tmp_path: Path) -> None:
    """Two VerifiableConsumers share a group: A alone, then B joins (A gives up half of its
    partitions and keeps the rest: an incremental rebalance), then A leaves (B takes its
    partitions). Each record is consumed once, the same on both brokers, and the group's
    committed offsets are the log end offsets."""
    topic, group, partitions, per_round = "rt-coop", "rt-coop", 4, 50
    everything = set(range(partitions))

    def produce_round(bootstrap: str, round_: int) -> None:
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for p in range(partitions):
            for i in range(per_round):
                producer.produce(topic, f"r{round_}-p{p}-{i}".encode(), partition=p)
        assert producer.flush(30) == 0

    def scenario(name: str, broker: HasBootstrap) -> dict[str, VerifiableConsumer]:
        create_topic(broker.bootstrap, topic, partitions)
        produce_round(broker.bootstrap, 0)
        consumers: dict[str, VerifiableConsumer] = {}

        def committed() -> dict[int, int]:
            out: dict[int, int] = {}
            for consumer in consumers.values():
                for p, offset in consumer.committed().items():
                    out[p] = max(out.get(p, 0), offset)
            return out

        def all_committed(round_: int) -> Callable[[], bool]:
            return lambda: committed() == dict.fromkeys(everything, (round_ + 1) * per_round)

        def start(member: str) -> VerifiableConsumer:
            consumers[member] = VerifiableConsumer(
                broker.bootstrap, topic, group, tmp_path / f"{name}-{member}.out"
            )
            return consumers[member]

        try:
            a = start("a")
            wait_until(all_committed(0), f"{name}: A consumed round 0")
            assert a.owned() == everything
            b = start("b")
            wait_until(
                lambda: (
                    a.owned() | b.owned() == everything
                    and len(a.owned()) == len(b.owned()) == partitions // 2
                ),
                f"{name}: A and B share the partitions",
            )
            produce_round(broker.bootstrap, 1)
            wait_until(all_committed(1), f"{name}: A and B consumed round 1")
            assert stop(a.proc) == STOPPED_BY_SIGTERM, a.log.read_text()
            wait_until(lambda: b.owned() == everything, f"{name}: B took A's partitions")
            produce_round(broker.bootstrap, 2)
            wait_until(all_committed(2), f"{name}: B consumed round 2")
            assert stop(b.proc) == STOPPED_BY_SIGTERM, b.log.read_text()
        finally:
            for consumer in consumers.values():
                if consumer.proc.poll() is None:
                    consumer.proc.kill()
                    consumer.proc.wait()
        return consumers

    runs = on_both(brokers, scenario)
    expected = sorted(
        (p, r * per_round + i, f"r{r}-p{p}-{i}")
        for r in range(3)
        for p in range(partitions)
        for i in range(per_round)
    )
    for name in BROKERS:
        a, b = runs[name]["a"], runs[name]["b"]
        # Once each: every commit preceded the rebalance that moved its partition.
        assert sorted(a.records() + b.records()) == expected, name
        # Cooperative: A revoked only what B was given, and kept the rest throughout.
        (_, first), (_, moved), (_, kept) = a.rebalances()
        assert a.rebalances() == [
            ("partitions_assigned", first), ("partitions_revoked", moved),
            ("partitions_revoked", kept),
        ], name  # fmt: skip
        assert first == sorted(everything) and len(moved) == partitions // 2
        assert b.rebalances() == [
            ("partitions_assigned", moved), ("partitions_assigned", kept),
            ("partitions_revoked", sorted(everything)),
        ], name  # fmt: skip

    described = run(
        brokers, "consumer-groups", "--bootstrap-server", "{bootstrap}", "--describe",
        "--group", group, "--timeout", "30000",  # not 5 s: a loaded CI box timed out
    )  # fmt: skip
    assert_same(described)
    rows = [line.split() for line in described["kafka", "kafka"].stdout.splitlines()[2:]]
    assert sorted(row[2:6] for row in rows) == [
        [str(p), str(3 * per_round), str(3 * per_round), "0"] for p in range(partitions)
    ]


def test_streams_on_the_reference_class_path(kafka_libs: Path) -> None:
    """The fetch brings Kafka Streams, the demo and RocksDB's Linux build."""
    names = {p.name for p in kafka_libs.iterdir()}
    assert "kafka-streams-3.9.2.jar" in names
    assert "kafka-streams-examples-3.8.0.jar" in names
    assert any(n.startswith("rocksdbjni-") and n.endswith("-linux64.jar") for n in names)
