"""Issue 21's acceptance for the traffic metrics: a real broker with ``metrics.listener``, a
confluent-kafka producer and consumer running for several seconds, the endpoint scraped
before and after. The broker's messages-in, bytes-in and bytes-out rates (counter deltas over
the time between the scrapes) agree within 10 % with the clients' own (records and bytes over
their run).

What Kafka counts as bytes (``franz.metrics.traffic``): ``BytesInPerSec`` and
``BytesOutPerSec`` are the record batches' sizes (``MemoryRecords.sizeInBytes``: 61-byte
batch headers and each record's varint framing included), not the clients' key and value
bytes. The clients here count key + value bytes; with 1,000-byte values the framing adds
about 1 % (and a batch header per batch), so the rates agree within 10 %, and the broker's
exact figure is checked against the log itself: the partitions' ``kafka_log_log_size`` adds
up to the bytes in, their ``LogEndOffset`` to the messages in. Deleting the topic then
removes its per-topic samples, as Kafka removes its meters.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.metrics import Samples, metrics_url, scrape, value

BTM = "kafka_server_brokertopicmetrics_"
RQ = "kafka_network_requestmetrics_"
TOPIC = "traffic"
PARTITIONS = 3
VALUE_SIZE = 1000
RATE = 2000  # records/s
RUN_S = 5.0


def _delta(
    before: Samples, after: Samples, name: str, labels: dict[str, str] | None = None
) -> float:
    """``name``'s increase; a per-topic count not yet made before (Kafka makes a topic's
    meters on its first use) counts from 0."""
    key = tuple(sorted((labels or {}).items()))
    return value(after, name, labels) - before.get(name, {}).get(key, 0.0)


class _Reader(threading.Thread):
    """Reads every partition from offset 0 (assigned, no group) counting records and key +
    value bytes, until ``expected`` records or the deadline."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "traffic-reader",  # required by the client; offsets are not committed
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        self.records = 0
        self.bytes = 0
        self.expected: int | None = None
        self.first_at: float | None = None
        self.last_at = 0.0
        self.deadline = time.monotonic() + 120

    def run(self) -> None:
        try:
            while time.monotonic() < self.deadline:
                if self.expected is not None and self.records >= self.expected:
                    break
                for message in self.consumer.consume(1000, timeout=0.2):
                    if message.error():
                        continue
                    now = time.monotonic()
                    if self.first_at is None:
                        self.first_at = now
                    self.last_at = now
                    self.records += 1
                    self.bytes += len(message.value() or b"") + len(message.key() or b"")
        finally:
            self.consumer.close()


def test_scraped_rates_match_the_clients(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"metrics.listener": "127.0.0.1:0"}).start()
    url = metrics_url(broker)
    assert url is not None
    # flush.messages: the log flushes (fsyncs) every 1,000 records, for LogFlushStats.
    create_topic(broker.bootstrap, TOPIC, partitions=PARTITIONS, config={"flush.messages": "1000"})
    reader = _Reader(broker.bootstrap)
    reader.start()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": 1})
    payload = b"v" * VALUE_SIZE

    before = scrape(url)
    scraped_before = time.monotonic()
    sent = sent_bytes = 0
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < RUN_S:
        # Paced at RATE records/s: several seconds of traffic, a few MB on disk.
        while sent < elapsed * RATE:
            key = f"k{sent}".encode()
            producer.produce(TOPIC, payload, key=key, partition=sent % PARTITIONS)
            sent += 1
            sent_bytes += len(key) + VALUE_SIZE
        producer.poll(0)
        time.sleep(0.005)
    assert producer.flush(60) == 0
    produced_s = time.monotonic() - started
    # The producer side's interval ends now; the consumer's when it has read everything
    # (not after its close, which may take a while on a loaded machine).
    produced = scrape(url)
    produced_scraped_s = time.monotonic() - scraped_before
    reader.expected = sent
    deadline = time.monotonic() + 120
    while reader.records < sent and reader.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reader.records == sent, (reader.records, sent)
    after = scrape(url)
    consumed_scraped_s = time.monotonic() - scraped_before
    reader.join(timeout=60)
    assert reader.first_at is not None
    consumed_s = reader.last_at - started

    topic = {"topic": TOPIC}
    # Exact counts: every record appended once, by the leader.
    assert _delta(before, after, BTM + "messagesin_total") == sent
    assert _delta(before, after, BTM + "messagesin_total", topic) == sent
    assert _delta(before, produced, BTM + "messagesin_total", topic) == sent
    bytes_in = _delta(before, after, BTM + "bytesin_total", topic)
    assert _delta(before, produced, BTM + "bytesin_total", topic) == bytes_in
    bytes_out = _delta(before, after, BTM + "bytesout_total", topic)
    assert _delta(before, after, BTM + "bytesin_total") == bytes_in
    # The log holds exactly what BytesIn counted (a fresh topic), and as many records.
    sizes = [value(after, "kafka_log_log_size", {**topic, "partition": str(p)}) for p in range(3)]
    ends = [
        value(after, "kafka_log_log_logendoffset", {**topic, "partition": str(p)}) for p in range(3)
    ]
    assert sum(sizes) == bytes_in
    assert sum(ends) == sent
    # Kafka's bytes are the batches' (framing included): more than the payload, by little.
    assert sent_bytes < bytes_in < sent_bytes * 1.05 + 61 * sent / 10

    # Rates: counter deltas over the scrape interval against the clients' own.
    broker_rates = {
        "messages in": sent / produced_scraped_s,
        "bytes in": bytes_in / produced_scraped_s,
        "bytes out": bytes_out / consumed_scraped_s,
    }
    client_rates = {
        "messages in": sent / produced_s,
        "bytes in": sent_bytes / produced_s,
        "bytes out": reader.bytes / consumed_s,
    }
    for name, broker_rate in broker_rates.items():
        client_rate = client_rates[name]
        assert abs(broker_rate - client_rate) <= 0.10 * client_rate, (
            name,
            broker_rate,
            client_rate,
        )

    # Request counts and times, per API (RequestMetrics), and the request counts per topic.
    assert _delta(before, after, BTM + "totalproducerequests_total", topic) > 0
    assert _delta(before, after, BTM + "totalfetchrequests_total", topic) > 0
    assert _delta(before, after, BTM + "failedproducerequests_total") == 0
    produce_versions = {
        dict(labels)["version"]: count
        for labels, count in after[RQ + "requests_total"].items()
        if dict(labels)["request"] == "Produce"
    }
    assert sum(produce_versions.values()) > 0
    produces = value(after, RQ + "totaltimems_count", {"request": "Produce"})
    assert produces == sum(produce_versions.values())
    fetches = value(after, RQ + "totaltimems_count", {"request": "Fetch"})
    assert fetches == value(after, RQ + "totaltimems_count", {"request": "FetchConsumer"}) > 0
    for quantile in ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999"):
        p = value(after, RQ + "totaltimems", {"request": "Produce", "quantile": quantile})
        assert 0 <= p < 10_000
    # A consumer's long polls wait: their remote time shows it; local time stays short.
    assert value(after, RQ + "remotetimems", {"request": "FetchConsumer", "quantile": "0.999"}) > 0
    idle = value(after, "kafka_network_socketserver_networkprocessoravgidlepercent")
    assert 0 < idle <= 1
    assert (
        value(after, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count") > 0
    )
    assert value(after, "kafka_network_requestchannel_requestqueuesize") == 0
    flushes = _delta(before, after, "kafka_log_logflushstats_logflushrateandtimems_count")
    assert flushes >= sent // 1000 - PARTITIONS
    assert value(after, "kafka_log_logflushstats_logflushrateandtimems", {"quantile": "0.99"}) > 0

    # A deleted topic's per-topic counts and log gauges go (BrokerTopicStats.removeMetrics);
    # the all-topics counts stay.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([TOPIC])[TOPIC].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        gone = scrape(url)
        if (("topic", TOPIC),) not in gone[BTM + "messagesin_total"]:
            break
        time.sleep(0.2)
    assert (("topic", TOPIC),) not in gone[BTM + "messagesin_total"]
    assert value(gone, BTM + "messagesin_total") == value(after, BTM + "messagesin_total")
    assert not any(
        dict(labels).get("topic") == TOPIC for labels in gone.get("kafka_log_log_size", {})
    )


def test_a_batch_over_max_message_bytes_is_rejected_bytes(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"metrics.listener": "127.0.0.1:0"}).start()
    url = metrics_url(broker)
    assert url is not None
    create_topic(broker.bootstrap, "small", config={"max.message.bytes": "1000"})
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    producer.produce(
        "small", b"x" * 5000, on_delivery=lambda e, _m: errors.append(e.name()) if e else None
    )
    producer.flush(30)
    assert errors == ["MSG_SIZE_TOO_LARGE"]
    samples = scrape(url)
    topic = {"topic": "small"}
    # The whole record set as the request carried it (one batch: 5000 B of value + framing).
    assert 5000 < value(samples, BTM + "bytesrejected_total", topic) < 5200
    assert value(samples, BTM + "bytesrejected_total") == value(
        samples, BTM + "bytesrejected_total", topic
    )
    assert value(samples, BTM + "totalproducerequests_total", topic) == 1
    # MESSAGE_TOO_LARGE is an expected failure: not in FailedProduceRequestsPerSec.
    assert value(samples, BTM + "failedproducerequests_total", topic) == 0
    assert value(samples, BTM + "messagesin_total", topic) == 0
