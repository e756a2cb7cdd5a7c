"""AlterReplicaLogDirs (KIP-113) on an embedded ``franz broker`` with two log dirs, through
the wire (``franz.admin.cluster_wire``, what ``franz reassign-partitions`` sends) and real
clients (confluent-kafka):

* a partition moves with its data while an idempotent acks=all producer and a consumer run:
  DescribeLogDirs (and ``franz log-dirs``) shows its future replica and its lag meanwhile;
  nothing acknowledged is lost or read twice, the old dir is removed after
  ``file.delete.delay.ms``;
* a move survives a clean restart and a SIGKILL: the ``-future`` dir is found again and the
  copy resumes;
* the answers for an unknown dir, a relative path, the replica's own dir and a topic that
  does not exist yet, which is then created in the dir asked for;
* ``replica.alter.log.dirs.io.max.bytes.per.second`` holds a move within 20 % of the rate,
  and without it the same move runs several times faster.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from franz.admin.cluster_wire import ClusterClient
from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.cluster import AckedProducer
from tests.support.reassign import consume, create_topic, eventually, log_dirs, outcome, produce

pytestmark = pytest.mark.timeout(180)

RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
MB = 1_000_000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """An embedded broker (id 0) with log dirs ``dir-a`` and ``dir-b``; replaced log dirs
    are removed 1 s after a move (``log.segment.delete.delay.ms``)."""
    dirs = [(tmp_path / name).resolve() for name in ("dir-a", "dir-b")]
    proc = BrokerProcess(
        tmp_path / "broker",
        {
            "log.dirs": ",".join(map(str, dirs)),
            "log.segment.delete.delay.ms": "1000",
            "auto.create.topics.enable": "false",
        },
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def client(broker: BrokerProcess) -> ClusterClient:
    return ClusterClient(broker.bootstrap, timeout_ms=30_000, client_id="alter-log-dirs-test")


def where(broker: BrokerProcess, topic: str) -> dict[str, list[tuple[bool, int, int]]]:
    """Log dir -> [(is future, size, offset lag)] of ``topic``-0 there."""
    described = client(broker).describe_log_dirs(0, {topic: [0]})
    return {
        log_dir: [(r.is_future, r.size, r.offset_lag) for (_, p), r in info.replicas if p == 0]
        for log_dir, info in described.items()
    }


def move(broker: BrokerProcess, topic: str, target: str) -> ErrorCode:
    return client(broker).alter_replica_log_dirs(0, {(topic, 0): target})[(topic, 0)]


def current_and_other(broker: BrokerProcess, topic: str) -> tuple[str, str]:
    found = where(broker, topic)
    (current,) = [d for d, replicas in found.items() if replicas]
    (other,) = [d for d in found if d != current]
    return current, other


def moved_to(broker: BrokerProcess, topic: str, target: str) -> bool:
    found = where(broker, topic)
    return found[target] == [(False, found[target][0][1], 0)] if found[target] else False


def set_rate(broker: BrokerProcess, rate: int | None) -> None:
    """This broker's dynamic ``replica.alter.log.dirs.io.max.bytes.per.second`` (None:
    removed), as ``reassign-partitions --replica-alter-log-dirs-throttle`` sets it."""
    entry = (
        ConfigEntry(RATE_KEY, None, incremental_operation=AlterConfigOpType.DELETE)
        if rate is None
        else ConfigEntry(RATE_KEY, str(rate), incremental_operation=AlterConfigOpType.SET)
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("BROKER", "0", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)


def dir_names(path: str) -> list[str]:
    return sorted(child.name for child in Path(path).iterdir() if child.is_dir())


class Reader:
    """A consumer of ``topic``-0 from offset 0 that keeps every value it reads."""

    def __init__(self, broker: BrokerProcess, topic: str) -> None:
        self.consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "log_level": 2}
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.values: list[bytes] = []

    def read(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for message in self.consumer.consume(1000, 0.1):
                assert message.error() is None, message.error()
                self.values.append(message.value())

    def close(self) -> None:
        self.consumer.close()


def test_a_partition_moves_with_its_data_while_clients_produce_and_consume(
    broker: BrokerProcess,
) -> None:
    topic = "moving"
    create_topic(broker.bootstrap, topic, [[0]])
    loaded = produce(broker.bootstrap, topic, 0, 6000, 1000)
    source, target = current_and_other(broker, topic)
    set_rate(broker, MB // 2)
    producer = AckedProducer(broker.bootstrap, topic, [0], pad=b"p" * 100)
    reader = Reader(broker, topic)
    try:
        reader.read(0.5)
        assert move(broker, topic, target) == ErrorCode.NONE
        # Throttled at 500 kB/s, the 6 MB take ~10 s: the future replica shows meanwhile.
        lags: list[int] = []

        def future_seen() -> bool:
            found = where(broker, topic)
            futures = [r for r in found[target] if r[0]]
            lags.extend(lag for _, _, lag in futures)
            return bool(futures) and found[source] == [(False, found[source][0][1], 0)]

        eventually(future_seen, 20, "the future replica in DescribeLogDirs")
        assert lags[-1] > 0
        assert any(name.endswith("-future") for name in dir_names(target))
        code, out, err = outcome(log_dirs("franz", broker.bootstrap, "--describe"))
        assert (code, err) == (0, "")
        report = json.loads(out.splitlines()[2])
        (only,) = report["brokers"]
        listed = {
            (d["logDir"], p["partition"], p["isFuture"]): p["offsetLag"]
            for d in only["logDirs"]
            for p in d["partitions"]
            if p["partition"] == f"{topic}-0"
        }
        assert set(listed) == {(source, f"{topic}-0", False), (target, f"{topic}-0", True)}
        assert listed[source, f"{topic}-0", False] == 0
        assert listed[target, f"{topic}-0", True] > 0
        reader.read(1.0)
        set_rate(broker, None)
        eventually(lambda: moved_to(broker, topic, target), 60, f"{topic}-0 in {target}")
        assert where(broker, topic)[source] == []
        reader.read(1.0)
    finally:
        assert producer.stop() == 0
    assert producer.errors == []
    acked = producer.values(0)
    assert len(acked) > 100
    deadline = time.monotonic() + 30
    while len(reader.values) < len(loaded) + len(acked) and time.monotonic() < deadline:
        reader.read(0.5)
    reader.close()
    assert reader.values[: len(loaded)] == loaded
    numbers = [int(v.split(b" ")[0]) for v in reader.values[len(loaded) :]]
    assert numbers == sorted(acked) == list(range(len(acked)))
    # The moved replica serves everything from its new dir; the old dir goes.
    assert consume(broker.bootstrap, topic, 0, len(loaded)) == loaded
    eventually(lambda: topic not in " ".join(dir_names(source)), 10, "the old dir removed")
    assert f"{topic}-0" in dir_names(target)
    assert not any(name.endswith("-future") for name in dir_names(target))


def test_a_move_survives_a_clean_restart_and_a_crash(broker: BrokerProcess) -> None:
    topic = "resumed"
    create_topic(broker.bootstrap, topic, [[0]])
    values = produce(broker.bootstrap, topic, 0, 10_000, 1000)
    source, target = current_and_other(broker, topic)
    # ~1 MiB at each (re)start, then 250 kB/s: the restarts come well before the end.
    set_rate(broker, MB // 4)
    assert move(broker, topic, target) == ErrorCode.NONE

    def copied() -> int:
        futures = [size for future, size, _ in where(broker, topic)[target] if future]
        return futures[0] if futures else 0

    eventually(lambda: copied() > 0, 20, "the copy starts")
    assert broker.stop() == 0  # clean shutdown mid-move (the throttle is kept)
    broker.start()
    eventually(lambda: copied() > 0, 20, "the future replica after the restart")
    before = copied()
    eventually(lambda: copied() > before, 20, "the copy resumes")
    assert [(f, lag > 0) for f, _, lag in where(broker, topic)[target]] == [(True, True)]
    broker.kill()  # a crash mid-move
    broker.start()
    eventually(lambda: copied() > 0, 20, "the future replica after the crash")
    assert where(broker, topic)[source][0][0] is False
    set_rate(broker, None)
    eventually(lambda: moved_to(broker, topic, target), 60, f"{topic}-0 in {target}")
    assert consume(broker.bootstrap, topic, 0, len(values)) == values
    assert not any(name.endswith("-future") for name in dir_names(target))


def test_unknown_dirs_own_dir_and_a_topic_created_later(broker: BrokerProcess) -> None:
    topic = "placed"
    create_topic(broker.bootstrap, topic, [[0]])
    source, other = current_and_other(broker, topic)
    answers = client(broker).alter_replica_log_dirs(
        0, {(topic, 0): "/nonexistent/log-dir", (topic, 1): "dir-a"}
    )
    assert answers == {
        (topic, 0): ErrorCode.LOG_DIR_NOT_FOUND,
        (topic, 1): ErrorCode.LOG_DIR_NOT_FOUND,
    }
    assert move(broker, topic, source) == ErrorCode.NONE
    assert [r[0] for r in where(broker, topic)[source]] == [False]
    assert where(broker, topic)[other] == []
    # A topic that does not exist yet: its partition is created in the dir asked for
    # (Kafka's preferred log dir), not in the one holding fewer partitions.
    for name in ("later-a", "later-b"):
        later = client(broker).alter_replica_log_dirs(0, {(name, 0): source})
        assert later == {(name, 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        create_topic(broker.bootstrap, name, [[0]])
        assert [r[0] for r in where(broker, name)[source]] == [False]
        assert where(broker, name)[other] == []
    sent = produce(broker.bootstrap, "later-a", 0, 10, 100)
    assert consume(broker.bootstrap, "later-a", 0, 10) == sent


def test_the_throttle_holds_a_move_within_20_percent(broker: BrokerProcess) -> None:
    topic = "throttled"
    rate = 3 * MB
    create_topic(broker.bootstrap, topic, [[0]])
    produce(broker.bootstrap, topic, 0, 24_000, 1000)
    source, target = current_and_other(broker, topic)
    size = where(broker, topic)[source][0][1]
    set_rate(broker, rate)
    start = time.monotonic()
    assert move(broker, topic, target) == ErrorCode.NONE
    eventually(lambda: moved_to(broker, topic, target), 60, f"{topic}-0 in {target}")
    throttled = size / (time.monotonic() - start)
    assert 0.8 * rate <= throttled <= 1.2 * rate, f"{throttled / MB:.2f} MB/s"
    # Without the throttle the move back runs well above the rate.
    set_rate(broker, None)
    start = time.monotonic()
    assert move(broker, topic, source) == ErrorCode.NONE
    eventually(lambda: moved_to(broker, topic, source), 60, f"{topic}-0 back in {source}")
    assert size / (time.monotonic() - start) > 3 * rate
