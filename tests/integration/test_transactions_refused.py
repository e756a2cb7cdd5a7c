"""Transactional producers fail at once, with the reason, until Franz has transactions.

FindCoordinator for a transactional id (key type 1) and InitProducerId with one answer
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), the code every client treats as fatal
(``franz.broker.handlers.find_coordinator`` cites where). Before, COORDINATOR_NOT_AVAILABLE
made each client retry until its own timeout and then report a coordinator problem. So each
test below gives its client a long timeout and asserts the error it reports is 53, not a
timeout: a retrying client could only fail with the latter.

Idempotent producers (InitProducerId without a transactional id) keep working, with each
client. The broker logs the refusal: INFO the first time per client, DEBUG afterwards
(``franz.broker.refusals``).
"""

from __future__ import annotations

import asyncio
import datetime
import warnings
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.errors

import aiokafka
import aiokafka.errors
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest as FindCoordinatorV1
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from franz.errors import ErrorCode
from franz.protocol.messages import build, request_type
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, consume_with, create_topic, produce_with
from tests.support.wire import WireClient

#: Longer than any of these clients' fatal paths, far shorter than their retry budgets.
CLIENT_TIMEOUT_S = 30
REFUSED_LINE = "refused transactions to client"


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("txn-refused")
    proc = BrokerProcess(data_dir).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def _info_lines(broker: BrokerProcess, client_id: str) -> list[str]:
    return [
        line
        for line in broker.output().splitlines()
        if REFUSED_LINE in line and f"{client_id!r}" in line and " INFO " in line
    ]


def test_find_coordinator_for_a_transactional_id_is_fatal_with_a_message(shared_broker):
    with WireClient.connect(shared_broker.bootstrap, client_id="wire-txn") as client:
        v1 = client.request(FindCoordinatorV1(key="tx-wire", key_type=1))
        assert v1.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, v1
        assert "transactions" in (v1.error_message or ""), v1
        v4 = client.request(FindCoordinatorV4(key_type=1, coordinator_keys=("a", "b")))
        assert [c.error_code for c in v4.coordinators] == [53, 53], v4
        assert [c.key for c in v4.coordinators] == ["a", "b"], v4
        group = client.request(build(request_type(10, 1), {"key": "g", "key_type": 0}))
        assert group.error_code == ErrorCode.NONE, group
        init = client.request(
            build(request_type(22, 4), {"transactional_id": "tx-wire", "transaction_timeout": 6e4})
        )
        assert init.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, init
        assert init.producer_id == -1, init
    # Three refusals from one client: one INFO line, the rest at DEBUG (not shown at INFO).
    assert len(_info_lines(shared_broker, "wire-txn")) == 1, shared_broker.output()


def test_confluent_kafka_init_transactions_fails_at_once(shared_broker):
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": shared_broker.bootstrap,
            "transactional.id": "tx-confluent",
            "client.id": "txn-confluent",
        }
    )
    with pytest.raises(confluent_kafka.KafkaException) as caught:
        producer.init_transactions(CLIENT_TIMEOUT_S)
    error = caught.value.args[0]
    assert error.code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, error
    assert error.fatal(), error
    assert "does not support transactions" in error.str(), error
    assert len(_info_lines(shared_broker, "txn-confluent")) == 1, shared_broker.output()


def test_kafka_python_init_transactions_fails_at_once(shared_broker):
    producer = kafka.KafkaProducer(
        bootstrap_servers=shared_broker.bootstrap,
        transactional_id="tx-kafka-python",
        client_id="txn-kafka-python",
        max_block_ms=CLIENT_TIMEOUT_S * 1000,
    )
    try:
        with pytest.raises(kafka.errors.TransactionalIdAuthorizationFailedError):
            producer.init_transactions()
    finally:
        producer.close(timeout=5)
    assert len(_info_lines(shared_broker, "txn-kafka-python")) == 1, shared_broker.output()


def test_aiokafka_transactional_producer_fails_at_once(shared_broker):
    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=shared_broker.bootstrap,
            transactional_id="tx-aiokafka",
            client_id="txn-aiokafka",
        )
        try:
            # aiokafka 0.14 waits for its producer id in start(), so start() fails.
            with pytest.raises(aiokafka.errors.TransactionalIdAuthorizationFailed):
                await asyncio.wait_for(producer.start(), CLIENT_TIMEOUT_S)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert len(_info_lines(shared_broker, "txn-aiokafka")) == 1, shared_broker.output()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_idempotent_producers_still_work(shared_broker, client):
    topic = f"idempotent-{client}"
    create_topic(shared_broker.bootstrap, topic)
    config: dict[str, object] = {
        "confluent-kafka": {"enable.idempotence": True},
        "kafka-python": {"enable_idempotence": True},
        "aiokafka": {"enable_idempotence": True},
    }[client]
    records = [OutRecord(b"k%d" % i, b"v%d" % i, partition=0) for i in range(10)]
    result = produce_with(client, shared_broker.bootstrap, topic, records, config=config)
    assert [a.offset for a in result.acks if a is not None] == list(range(10)), result
    consumed = consume_with("confluent-kafka", shared_broker.bootstrap, topic, [0], 10)
    assert [(c.key, c.value) for c in consumed] == [(r.key, r.value) for r in records]
    assert "Traceback" not in shared_broker.output(), shared_broker.output()


def test_init_producer_id_without_transactional_id_gets_an_id(shared_broker):
    with WireClient.connect(shared_broker.bootstrap) as client:
        response = client.request(
            InitProducerIdRequest(
                transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60)
            )
        )
    assert response.error_code == ErrorCode.NONE, response
    assert response.producer_id >= 0 and response.producer_epoch == 0, response
