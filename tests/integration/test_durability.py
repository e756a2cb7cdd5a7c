"""What a Franz broker acknowledged survives a crash (SIGKILL) and a clean restart.

A confluent-kafka producer (acks=all, in a thread) writes continuously to a 3-partition
topic and records every acknowledged (partition, offset, value) from its delivery reports.
The broker is SIGKILLed mid-stream and restarted on the same data dir; then every
acknowledged record must be at its acknowledged offset with its value, every stored record
must be one the producer sent, and new appends must continue right after the recovered log
end. With one broker, acks=all means "appended to the log (the page cache)", so a process
crash may lose nothing that was acknowledged.

A clean stop (SIGTERM) and start must keep everything too, with the same log end offsets.
Segments are small (``log.segment.bytes``) so recovery crosses segment rolls.
"""

from __future__ import annotations

import threading
import time

import confluent_kafka

from tests.support.clients import (
    OutRecord,
    consume_with,
    create_topic,
    end_offsets,
    produce_with,
)

PARTITIONS = 3
TOPIC = "durable"
OVERRIDES = {"log.segment.bytes": str(256 * 1024)}
#: librdkafka's batches stay below the small segments: its default ``batch.size`` (1 MB) lets a
#: loaded machine's batches grow past 256 KiB, which Kafka and Franz refuse with
#: RECORD_LIST_TOO_LARGE (a CI run).
SMALL_BATCHES = {"batch.size": 64 * 1024}


class _Writer:
    """Produces ``value i`` records round-robin over the partitions until stopped."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: dict[tuple[int, int], bytes] = {}
        self.sent: set[bytes] = set()
        self.failures = 0
        self._stop = threading.Event()
        self._producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 2,
                **SMALL_BATCHES,
                "message.timeout.ms": 5000,
                "retries": 0,  # a resend after the crash could land twice: keep it simple
                "reconnect.backoff.max.ms": 500,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.acked[msg.partition(), msg.offset()] = msg.value()
        else:
            self.failures += 1

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"value %d " % i + b"x" * (i % 200)
            try:
                self._producer.produce(
                    TOPIC, value, partition=i % PARTITIONS, on_delivery=self._on_delivery
                )
            except BufferError:
                self._producer.poll(0.01)
                continue
            self.sent.add(value)
            i += 1
            if i % 100 == 0:
                self._producer.poll(0)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(15)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _consume_all(bootstrap: str) -> dict[tuple[int, int], bytes | None]:
    ends = end_offsets(bootstrap, TOPIC, range(PARTITIONS))
    assert all(low == 0 for low, _ in ends.values()), ends
    total = sum(high for _, high in ends.values())
    got = consume_with("confluent-kafka", bootstrap, TOPIC, range(PARTITIONS), total, 120)
    stored = {(r.partition, r.offset): r.value for r in got}
    assert len(stored) == len(got) == total, "a (partition, offset) was delivered twice"
    for partition, (_, high) in ends.items():
        offsets = sorted(o for p, o in stored if p == partition)
        assert offsets == list(range(high)), f"partition {partition} has gaps in 0..{high - 1}"
    return stored


def test_acknowledged_records_survive_sigkill(broker_factory, tmp_path):
    broker = broker_factory(tmp_path / "b", OVERRIDES).start()
    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    writer = _Writer(broker.bootstrap)
    writer.start()
    try:
        _wait_for(lambda: len(writer.acked) >= 20_000, 120, "20,000 acknowledgements")
        broker.kill()
        acked_at_kill = len(writer.acked)
    finally:
        writer.stop()
    assert acked_at_kill >= 20_000

    broker.start()
    stored = _consume_all(broker.bootstrap)
    missing = {k: v for k, v in writer.acked.items() if stored.get(k) != v}
    assert not missing, (
        f"{len(missing)} of {len(writer.acked)} acknowledged records are not at their offset "
        f"after the crash, e.g. {sorted(missing.items())[:5]}\n{broker.output()[-3000:]}"
    )
    print(
        f"{acked_at_kill} acknowledged when killed, {len(writer.acked)} in all, "
        f"{writer.failures} failed; {len(stored)} stored after recovery"
    )
    strangers = [k for k, v in stored.items() if v not in writer.sent]
    assert not strangers, f"records nobody produced at {strangers[:10]}"

    # The recovered log takes new appends right after its end.
    ends = end_offsets(broker.bootstrap, TOPIC, range(PARTITIONS))
    after = [OutRecord(None, b"after %d" % p, partition=p) for p in range(PARTITIONS)]
    result = produce_with(
        "confluent-kafka", broker.bootstrap, TOPIC, after, config=SMALL_BATCHES, timeout=30
    )
    assert [(a.partition, a.offset) for a in result.acks if a] == [
        (p, ends[p][1]) for p in range(PARTITIONS)
    ]


def test_clean_stop_and_start_keep_everything(broker_factory, tmp_path):
    broker = broker_factory(tmp_path / "b", OVERRIDES).start()
    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    records = [
        OutRecord(b"k%d" % i, b"value %d " % i + b"y" * (i % 300), (("h", b"%d" % i),), i % 3)
        for i in range(10_000)
    ]
    result = produce_with(
        "confluent-kafka", broker.bootstrap, TOPIC, records, config=SMALL_BATCHES, timeout=60
    )
    before = end_offsets(broker.bootstrap, TOPIC, range(PARTITIONS))

    assert broker.stop() == 0, broker.output()
    broker.start()

    assert end_offsets(broker.bootstrap, TOPIC, range(PARTITIONS)) == before
    got = consume_with(
        "confluent-kafka", broker.bootstrap, TOPIC, range(PARTITIONS), len(records), 120
    )
    stored = {(r.partition, r.offset): (r.key, r.value, r.headers) for r in got}
    assert len(stored) == len(got) == len(records)
    for record, ack in zip(records, result.acks, strict=True):
        assert ack is not None
        assert stored[ack.partition, ack.offset] == (record.key, record.value, record.headers)
