"""A consume-transform-produce worker (confluent-kafka, exactly once), run as a process.

``python -m tests.support.eos_worker BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID``

The classic exactly-once loop of Kafka's documentation (KIP-98, KIP-447): a read_committed
consumer of ``INPUT`` in ``GROUP`` without auto-commit, a transactional producer with
``TRANSACTIONAL_ID``; per poll of up to ``BATCH`` records, one transaction writes
``out-<input value>`` (keyed by the input's ``partition:offset``) to ``OUTPUT`` and the
consumer's next positions to the group (``send_offsets_to_transaction``), then commits. A
retriable or abortable failure aborts and rewinds to the group's committed offsets. The test
SIGKILLs it at random moments and starts it again: the next instance's
``init_transactions`` fences the killed one and aborts its open transaction.

Prints one line per committed transaction (``committed <n records> <total>``) and ``idle``
when a poll finds nothing; exits 0 after ``IDLE_EXIT`` idle polls in a row.
"""

from __future__ import annotations

import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

BATCH = 500
IDLE_EXIT = 10


def _rewind(consumer: Consumer) -> None:
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=30):
        offset = tp.offset if tp.offset >= 0 else 0  # OFFSET_INVALID: no commit yet
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset))


def _commit(producer: Producer) -> None:
    """Commit; a retriable failure (outcome unknown) is retried, as confluent-kafka's
    documentation prescribes, a few times."""
    for attempt in range(5):
        try:
            producer.commit_transaction(60)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == 4:
                raise


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 20000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    consumer.subscribe([source])
    total = idle = 0
    while idle < IDLE_EXIT:
        messages = consumer.consume(BATCH, timeout=1.0)
        records = [m for m in messages if m.error() is None]
        for m in messages:
            if m.error() is not None and m.error().code() != KafkaError._PARTITION_EOF:
                print(f"consume error {m.error()}", flush=True)
        if not records:
            idle += 1
            print("idle", flush=True)
            continue
        idle = 0
        try:
            producer.begin_transaction()
            for m in records:
                producer.produce(
                    sink,
                    key=f"{m.partition()}:{m.offset()}".encode(),
                    value=b"out-" + (m.value() or b""),
                )
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            _commit(producer)
        except KafkaException as exc:
            error = exc.args[0]
            print(f"transaction failed: {error}", flush=True)
            if error.fatal():
                raise
            if error.txn_requires_abort():
                producer.abort_transaction(60)
            _rewind(consumer)
            continue
        total += len(records)
        print(f"committed {len(records)} {total}", flush=True)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
