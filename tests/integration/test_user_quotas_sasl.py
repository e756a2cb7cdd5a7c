"""Quotas by user (issue 20, acceptance): on a ``SASL_PLAINTEXT`` broker, ``admin`` sets
``producer_byte_rate`` for user ``alice`` with ``franz configs --entity-type users
--command-config`` over the SASL listener itself (AlterClientQuotas through
``franz.admin.wire`` with SASL PLAIN); alice's SCRAM-authenticated producer is then held to
the quota and told so (``throttle_time_ms``, librdkafka's ``stats_cb`` ``throttle``), while
bob's, on the same broker, is not throttled at all.

The bound is the one ``test_client_quotas_clients`` justifies from Kafka's windowed rate:
over ``T`` seconds from a cold start a client gets ``0.9 q T <= sent <= 1.1 q T + 10 q``
(ten one-second windows of allowance, ``quota.window.num`` 11), plus what the client had in
flight when first throttled (a 30 s test can ignore it, a 5 s one cannot). With a small quota
a few seconds suffice to tell alice's producer from bob's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.sasl_support import command_config, franz_configs, sasl_broker
from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.timeout(120)

QUOTA = 64 * 1024
SECONDS = 5.0
VALUE = b"q" * 4096
#: ``quota.window.num - 1`` windows of ``quota.window.size.seconds`` at the quota.
ALLOWANCE = QUOTA * 10
#: librdkafka's queue (``queue.buffering.max.kbytes``): at most this much is in flight when
#: the broker first throttles, and the request that crosses the quota is accepted whole (Kafka
#: records it, then throttles: ``ClientQuotaManager.maybeRecordAndGetThrottleTimeMs``).
QUEUE_BYTES = 64 * 1024
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("user-quotas")
    proc = sasl_broker(data).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def _configs(broker: BrokerProcess, directory: Path, *args: str) -> str:
    done = franz_configs(broker.bootstrap, command_config(directory / "admin.properties"), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _produce_for(broker: BrokerProcess, user: str, topic: str) -> tuple[int, int]:
    """Produce as fast as the broker lets ``user`` for ``SECONDS``: (bytes acknowledged within
    those seconds, the largest throttle time librdkafka reported, ms)."""
    acked: list[tuple[float, int]] = []
    stats: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": PASSWORDS[user],
            "client.id": f"{user}-producer",
            "linger.ms": 5,
            "acks": 1,
            "queue.buffering.max.kbytes": QUEUE_BYTES // 1024,
            "statistics.interval.ms": 500,
            "stats_cb": stats.append,
        }
    )

    def delivered(err: Any, message: Any) -> None:
        if err is None:
            acked.append((time.monotonic(), len(message.value())))

    producer.produce(topic, b"warm-up", on_delivery=delivered)
    assert producer.flush(30) == 0
    acked.clear()
    started = time.monotonic()
    deadline = started + SECONDS
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.poll(0.6)  # one more statistics report
    producer.purge()
    producer.flush(10)
    most = 0
    for text in list(stats):
        for entry in json.loads(text).get("brokers", {}).values():
            most = max(most, int(entry.get("throttle", {}).get("max", 0)))
    return sum(size for at, size in acked if at <= deadline), most


def test_a_user_quota_throttles_alice_and_not_bob(broker: BrokerProcess, tmp_path: Path) -> None:
    for user, password in PASSWORDS.items():
        _configs(
            broker, tmp_path, "--entity-name", user, "--alter",
            "--add-config", f"SCRAM-SHA-256=[password={password}]",
        )  # fmt: skip
    done = _configs(
        broker, tmp_path, "--entity-name", "alice", "--alter",
        "--add-config", f"producer_byte_rate={QUOTA}",
    )  # fmt: skip
    assert done == "Completed updating config for user alice.\n"
    described = _configs(broker, tmp_path, "--describe", "--entity-name", "alice")
    assert f"Quota configs for user-principal 'alice' are producer_byte_rate={QUOTA}.0" in (
        described
    ), described

    alice_sent, alice_throttle = _produce_for(broker, "alice", "alice-topic")
    bob_sent, bob_throttle = _produce_for(broker, "bob", "bob-topic")
    upper = 1.1 * QUOTA * SECONDS + ALLOWANCE + QUEUE_BYTES
    assert 0.9 * QUOTA * SECONDS <= alice_sent <= upper, (alice_sent, upper)
    assert alice_throttle > 0
    assert bob_throttle == 0
    # bob's producer is not held anywhere near alice's bound.
    assert bob_sent > 2 * upper, (bob_sent, upper)
