"""InitProducerId without a transactional id: idempotent producers (KIP-98) get a fresh id at
epoch 0 with each client, beside the transaction coordinator (transactional ids are tested in
``test_transaction_coordinator``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, consume_with, create_topic, produce_with
from tests.support.wire import WireClient


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("init-producer-id")
    proc = BrokerProcess(data_dir).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


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
