"""Client quotas against real clients (issue 20's acceptance): a confluent-kafka producer and
consumer trying to go faster than a 1 MB/s client-id quota hold within 10 % of it over
30 s, and librdkafka reports the broker's throttling (``stats_cb``'s ``throttle``).

Kafka's windowed rate (11 samples of 1 s, at least 10 s counted) lets a client take up to
10 s worth of its quota at once (``ALLOWANCE``), then paces it, and the samples expiring
every 11 s let it take part of that again: over 30 s from a cold start Kafka 3.9.2 itself
let the same confluent-kafka producer through at 1.24x the quota (37.3 MB; 1.14x over
45 s), and Franz, which follows its arithmetic, did the same (1.21-1.29x). So the tests
check the acknowledged bytes against the quota over 30 s within 10 %, once that one window
of allowance is taken off: ``0.9 q T <= sent <= 1.1 q T + ALLOWANCE``."""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, Producer

from franz.admin.client_quotas import alter_client_quotas
from tests.support.broker import BrokerProcess
from tests.support.wire import WireClient, create_topics

QUOTA = 1024 * 1024
SECONDS = 30.0
VALUE = b"v" * 10_000
#: ``quota.window.num - 1`` windows of ``quota.window.size.seconds`` at the quota.
ALLOWANCE = QUOTA * 10


def _check_rate(sent: float) -> None:
    ratio = sent / (QUOTA * SECONDS)
    assert 0.9 * QUOTA * SECONDS <= sent <= 1.1 * QUOTA * SECONDS + ALLOWANCE, (
        f"{ratio:.3f} of the quota over {SECONDS} s"
    )


def _max_throttle(stats: list[str]) -> int:
    most = 0
    for text in stats:
        for broker in json.loads(text).get("brokers", {}).values():
            most = max(most, int(broker.get("throttle", {}).get("max", 0)))
    return most


def _set_quota(broker: BrokerProcess, client_id: str, key: str) -> None:
    [(_, code, message)] = alter_client_quotas(
        broker.bootstrap, [((("client-id", client_id),), {key: float(QUOTA)})]
    )
    assert code == 0, message


def test_producer_held_to_client_quota(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as admin:
        assert create_topics(admin, {"quota-produce": 1}).topics[0].error_code == 0
    _set_quota(broker, "quota-producer", "producer_byte_rate")
    stats: list[str] = []
    acked: list[tuple[float, int]] = []

    def delivered(err: Any, message: Any) -> None:
        if err is None:
            acked.append((time.monotonic(), len(message.value())))

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "quota-producer",
            "linger.ms": 5,
            "acks": 1,
            "queue.buffering.max.kbytes": 4096,
            "statistics.interval.ms": 1000,
            "stats_cb": stats.append,
        }
    )
    started = time.monotonic()
    deadline = started + SECONDS
    while time.monotonic() < deadline:
        try:
            producer.produce("quota-produce", VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        else:
            producer.poll(0)
    producer.poll(1)
    producer.purge()
    producer.flush(10)
    _check_rate(sum(size for at, size in acked if at <= deadline))
    assert _max_throttle(stats) > 0


def test_consumer_held_to_client_quota(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as admin:
        assert create_topics(admin, {"quota-fetch": 1}).topics[0].error_code == 0
    # 48 MB to read, written by a client without a quota.
    loader = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for _ in range(4800):
        while True:
            try:
                loader.produce("quota-fetch", VALUE)
                break
            except BufferError:
                loader.poll(0.05)
    assert loader.flush(60) == 0
    _set_quota(broker, "quota-consumer", "consumer_byte_rate")
    stats: list[str] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "quota-consumer",
            "group.id": "quota-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "statistics.interval.ms": 1000,
            "stats_cb": stats.append,
        }
    )
    consumer.subscribe(["quota-fetch"])
    received = 0
    first: float | None = None
    try:
        while first is None or time.monotonic() < first + SECONDS:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            now = time.monotonic()
            if first is None:
                first = now
            received += len(message.value())
            assert first is not None and now < first + 120
    finally:
        consumer.close()
    _check_rate(received)
    assert _max_throttle(stats) > 0
