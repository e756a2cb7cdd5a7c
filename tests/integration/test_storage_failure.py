"""Storage failures as Kafka handles them, on a broker whose log dirs are small tmpfs mounts.

- The last online log dir fails (the disk fills under produce): the producer gets
  KAFKA_STORAGE_ERROR, the broker halts with exit code 1 and Kafka's fatal line, and after a
  restart with free space every acknowledged record is there.
- One of two log dirs fails: the broker keeps serving the other dir's partitions.
- A CreateTopics that fails on disk answers KAFKA_STORAGE_ERROR and leaves no topic behind.
"""

from __future__ import annotations

import subprocess
from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.support.clients import consume_with, create_topic
from tests.support.tmpfs import fill_with_a_file, mounted_tmpfs, remount

HALT_LINE = "Shutdown broker because all log dirs in"
VALUE_SIZE = 8 * 1024


def _producer(bootstrap: str) -> Producer:
    # retries=0: a retriable KAFKA_STORAGE_ERROR reaches the delivery report as sent.
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,
            "linger.ms": 5,
            "message.timeout.ms": 20_000,
        }
    )


def _produce(
    producer: Producer, topic: str, partition: int, values: list[bytes]
) -> tuple[list[tuple[int, bytes]], list[KafkaError]]:
    """Produce ``values`` and wait: (acknowledged (offset, value) pairs, delivery errors)."""
    acked: list[tuple[int, bytes]] = []
    errors: list[KafkaError] = []

    def report(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            acked.append((msg.offset(), msg.value()))
        else:
            errors.append(err)

    for value in values:
        producer.produce(topic, value=value, partition=partition, on_delivery=report)
        producer.poll(0)
    producer.flush(60)
    return acked, errors


def _topic_names(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=30).topics)


def test_storage_failure_of_the_last_log_dir_halts_the_broker_and_loses_nothing_acked(
    tmp_path, broker_factory
):
    with mounted_tmpfs(tmp_path / "disk", "8m") as disk:
        broker = broker_factory(tmp_path / "b", {"log.dirs": str(disk / "logs")}).start()
        create_topic(broker.bootstrap, "fill")
        producer = _producer(broker.bootstrap)
        acked: list[tuple[int, bytes]] = []
        errors: list[KafkaError] = []
        for round_ in range(200):  # 8 MiB / (8 KiB x 10) ~ 100 rounds
            values = [b"%06d" % (round_ * 10 + i) + b"v" * VALUE_SIZE for i in range(10)]
            ok, failed = _produce(producer, "fill", 0, values)
            acked += ok
            errors += failed
            if failed:
                break
        assert errors, "the tmpfs never filled up"
        assert len(acked) > 500
        codes = {e.code() for e in errors}
        assert KafkaError.KAFKA_STORAGE_ERROR in codes, errors

        assert broker.proc is not None
        try:
            code = broker.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the broker did not halt:\n{broker.output()}") from None
        assert code == 1, broker.output()
        output = broker.output()
        assert f"{HALT_LINE} {(disk / 'logs').resolve()} have failed" in output, output
        assert broker.stop() == 1

        remount(disk, "32m")
        broker.start()
        offsets = [offset for offset, _ in acked]
        assert offsets == list(range(len(acked)))
        consumed = consume_with("confluent-kafka", broker.bootstrap, "fill", [0], len(acked))
        stored = {r.offset: r.value for r in consumed}
        assert all(stored.get(offset) == value for offset, value in acked)
        # And the broker takes writes again.
        more, failed = _produce(_producer(broker.bootstrap), "fill", 0, [b"after"])
        assert not failed and more[0][0] >= len(acked)
        assert broker.stop() == 0


def test_storage_failure_of_one_log_dir_keeps_the_other_serving_and_create_topics_rolls_back(
    tmp_path, broker_factory
):
    big = tmp_path / "big"
    with mounted_tmpfs(tmp_path / "small", "1m") as small:
        log_dirs = f"{big},{small}"
        broker = broker_factory(tmp_path / "b", {"log.dirs": log_dirs}).start()
        create_topic(broker.bootstrap, "served")  # new partitions: the emptier dir, big first
        create_topic(broker.bootstrap, "lost")
        assert (big / "served-0").is_dir() and (small / "lost-0").is_dir()
        _, failed = _produce(_producer(broker.bootstrap), "served", 0, [b"one", b"two"])
        assert not failed
        lost_producer = _producer(broker.bootstrap)  # knows lost-0's leader from now on
        lost_acked, failed = _produce(lost_producer, "lost", 0, [b"kept"])
        assert not failed
        filler = fill_with_a_file(small)

        # Its second partition goes to the emptier dir, small, whose disk is full.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        future = admin.create_topics([NewTopic("doomed", num_partitions=2)])["doomed"]
        try:
            future.result(30)
        except Exception as exc:  # confluent-kafka raises KafkaException(KafkaError)
            error = exc.args[0]
            assert error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
        else:
            raise AssertionError("CreateTopics succeeded on a full disk")
        assert "doomed" not in _topic_names(broker.bootstrap)
        assert not list(big.glob("doomed-*")) and not list(small.glob("doomed-*"))
        assert broker.proc is not None and broker.proc.poll() is None

        # small is offline: its partitions answer KAFKA_STORAGE_ERROR, and Metadata shows
        # them without a leader, as Kafka's controller leaves them.
        _, failed = _produce(lost_producer, "lost", 0, [b"refused"])
        assert [e.code() for e in failed] == [KafkaError.KAFKA_STORAGE_ERROR]
        lost = admin.list_topics("lost", timeout=30).topics["lost"].partitions[0]
        assert lost.leader == -1 and lost.error.code() == KafkaError.LEADER_NOT_AVAILABLE

        # The other dir keeps serving: reads, writes, and new topics (placed there).
        _, failed = _produce(_producer(broker.bootstrap), "served", 0, [b"three"])
        assert not failed
        consumed = consume_with("confluent-kafka", broker.bootstrap, "served", [0], 3)
        assert [r.value for r in consumed] == [b"one", b"two", b"three"]
        create_topic(broker.bootstrap, "later", partitions=2)
        assert len(list(big.glob("later-*"))) == 2 and not list(small.glob("later-*"))
        assert broker.stop() == 0

        filler.unlink()
        broker.start()
        assert "doomed" not in _topic_names(broker.bootstrap)
        consumed = consume_with("confluent-kafka", broker.bootstrap, "served", [0], 3)
        assert [r.value for r in consumed] == [b"one", b"two", b"three"]
        consumed = consume_with("confluent-kafka", broker.bootstrap, "lost", [0], 1)
        assert [(r.offset, r.value) for r in consumed] == lost_acked
        create_topic(broker.bootstrap, "again", partitions=2)  # small is online again
        assert (small / "again-0").is_dir() or (small / "again-1").is_dir()
        assert broker.stop() == 0


def test_storage_failure_create_topics_on_a_full_single_dir_leaves_no_topic(
    tmp_path, broker_factory
):
    # The metadata file (franz-metadata.json, in the first log dir) cannot be written: the
    # topic is not created, and CreateTopics says why with KAFKA_STORAGE_ERROR.
    with mounted_tmpfs(tmp_path / "disk", "1m") as disk:
        broker = broker_factory(tmp_path / "b", {"log.dirs": str(disk / "logs")}).start()
        filler = fill_with_a_file(disk)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        future = admin.create_topics([NewTopic("nowhere", num_partitions=3)])["nowhere"]
        try:
            future.result(30)
        except Exception as exc:
            assert exc.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, exc
        else:
            raise AssertionError("CreateTopics succeeded on a full disk")
        assert "nowhere" not in _topic_names(broker.bootstrap)
        assert not list((disk / "logs").glob("nowhere-*"))
        assert not list((disk / "logs").glob("*.tmp"))
        filler.unlink()
        create_topic(broker.bootstrap, "nowhere", partitions=3)  # room again: it works
        assert broker.stop() == 0


def test_storage_failure_create_partitions_on_a_full_dir_adds_no_partition(
    tmp_path, broker_factory
):
    big = tmp_path / "big"
    with mounted_tmpfs(tmp_path / "small", "1m") as small:
        broker = broker_factory(tmp_path / "b", {"log.dirs": f"{big},{small}"}).start()
        create_topic(broker.bootstrap, "grow")
        assert (big / "grow-0").is_dir()
        filler = fill_with_a_file(small)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        future = admin.create_partitions([NewPartitions("grow", 3)])["grow"]
        try:
            future.result(30)
        except Exception as exc:
            assert exc.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, exc
        else:
            raise AssertionError("CreatePartitions succeeded on a full disk")
        grow = admin.list_topics("grow", timeout=30).topics["grow"]
        assert sorted(grow.partitions) == [0] and grow.partitions[0].leader == 0
        assert sorted(p.name for p in [*big.glob("grow-*"), *small.glob("grow-*")]) == ["grow-0"]
        assert broker.stop() == 0
        filler.unlink()
        broker.start()
        admin_after = AdminClient({"bootstrap.servers": broker.bootstrap})
        grow = admin_after.list_topics("grow", timeout=30).topics["grow"]
        assert sorted(grow.partitions) == [0]
        assert broker.stop() == 0
