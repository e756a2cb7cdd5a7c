"""The transaction coordinator against a real broker process: the wire protocol and real
transactional producers (confluent-kafka, kafka-python, aiokafka).

Transactional *produce* and read_committed fetches are the Produce/Fetch helper's (issue 19);
``test_confluent_kafka_commit_and_abort_are_seen_by_read_committed`` needs them (it passes
once the branches are merged).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka

import aiokafka

from franz.errors import ErrorCode
from franz.protocol.messages import build, request_type
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.wire import WireClient

#: Far more than any answer needs, so that a timeout is a failure, not a slow machine.
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("txn-coordinator")
    proc = BrokerProcess(
        data_dir,
        overrides={
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
            "transaction.max.timeout.ms": "120000",
            "transaction.state.log.num.partitions": "4",
        },
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def _req(client: WireClient, api_key: int, version: int, data: dict[str, Any]) -> Any:
    return client.request(build(request_type(api_key, version), data))


def _coordinator(client: WireClient, transactional_id: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        found = _req(client, 10, 3, {"key": transactional_id, "key_type": 1})
        if found.error_code == 0 or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _init(client: WireClient, tid: str, timeout_ms: int = 60_000, **kw: int) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        body = {"transactional_id": tid, "transaction_timeout": timeout_ms, **kw}
        answer = _req(client, 22, 4, body)
        retriable = (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if answer.error_code not in retriable or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _describe(client: WireClient, tid: str) -> Any:
    return _req(client, 65, 0, {"transactional_ids": [tid]}).transaction_states[0]


def _wait_state(client: WireClient, tid: str, state: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        described = _describe(client, tid)
        if described.transaction_state == state or time.monotonic() > deadline:
            return described
        time.sleep(0.1)


def _add(client: WireClient, tid: str, pid: int, epoch: int, topic: str, parts: list[int]) -> Any:
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": parts}],
    }
    answer = _req(client, 24, 3, body)
    return {
        (t.name, int(p.partition_index)): ErrorCode(int(p.partition_error_code))
        for t in answer.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def _end(client: WireClient, tid: str, pid: int, epoch: int, commit: bool) -> ErrorCode:
    body = {
        "transactional_id": tid,
        "producer_id": pid,
        "producer_epoch": epoch,
        "committed": commit,
    }
    return ErrorCode(int(_req(client, 26, 3, body).error_code))


def test_find_coordinator_for_a_transactional_id_creates_the_state_topic(broker):
    with WireClient.connect(broker.bootstrap) as client:
        found = _coordinator(client, "tx-find")
        assert found.error_code == ErrorCode.NONE, found
        assert found.node_id == 0
        v4 = _req(client, 10, 4, {"key_type": 1, "coordinator_keys": ["a", "b"]})
        assert [c.error_code for c in v4.coordinators] == [0, 0], v4
        metadata = _req(client, 3, 9, {"topics": [{"name": "__transaction_state"}]})
        (topic,) = metadata.topics
        assert topic.error_code == 0 and topic.is_internal, topic
        assert len(topic.partitions) == 4


def test_init_commit_abort_and_retries_on_the_wire(broker):
    create_topic(broker.bootstrap, "txn-wire", partitions=2)
    tid = "tx-wire"
    with WireClient.connect(broker.bootstrap) as client:
        assert _coordinator(client, tid).error_code == 0
        first = _init(client, tid)
        assert first.error_code == 0 and first.producer_epoch == 0, first
        pid = first.producer_id
        assert _describe(client, tid).transaction_state == "Empty"
        # EndTxn with nothing in progress: INVALID_TXN_STATE (Kafka's Empty case).
        assert _end(client, tid, pid, 0, commit=True) == ErrorCode.INVALID_TXN_STATE
        added = _add(client, tid, pid, 0, "txn-wire", [0, 1])
        assert set(added.values()) == {ErrorCode.NONE}, added
        ongoing = _describe(client, tid)
        assert ongoing.transaction_state == "Ongoing"
        assert [(t.topic, sorted(t.partitions)) for t in ongoing.topics] == [("txn-wire", [0, 1])]
        # Unknown topic: that partition UNKNOWN_TOPIC_OR_PARTITION, nothing else tried.
        missing = _add(client, tid, pid, 0, "no-such-topic", [0])
        assert missing == {("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert _add(client, tid, pid + 1, 0, "txn-wire", [0]) == {
            ("txn-wire", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING
        }
        assert _add(client, tid, pid, 1, "txn-wire", [0]) == {
            ("txn-wire", 0): ErrorCode.PRODUCER_FENCED
        }
        assert _end(client, tid, pid, 0, commit=True) == ErrorCode.NONE
        done = _wait_state(client, tid, "CompleteCommit")
        assert done.transaction_state == "CompleteCommit", done
        assert done.topics == ()
        # Retries of a completed EndTxn (Kafka's rules).
        assert _end(client, tid, pid, 0, commit=True) == ErrorCode.NONE
        assert _end(client, tid, pid, 0, commit=False) == ErrorCode.INVALID_TXN_STATE
        # An abort of a new transaction.
        assert set(_add(client, tid, pid, 0, "txn-wire", [1]).values()) == {ErrorCode.NONE}
        assert _end(client, tid, pid, 0, commit=False) == ErrorCode.NONE
        assert _wait_state(client, tid, "CompleteAbort").transaction_state == "CompleteAbort"
        # The markers are in the partitions' logs: their end offsets moved.
        offsets = _req(
            client,
            2,
            5,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": "txn-wire",
                        "partitions": [
                            {"partition_index": 0, "timestamp": -1},
                            {"partition_index": 1, "timestamp": -1},
                        ],
                    }
                ],
            },
        )
        ends = {int(p.partition_index): int(p.offset) for p in offsets.topics[0].partitions}
        assert ends == {0: 1, 1: 2}, ends  # p0: COMMIT; p1: COMMIT then ABORT
        # KIP-360: the same producer asks for a bump with its id and epoch.
        bumped = _init(client, tid, producer_id=pid, producer_epoch=0)
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, pid, 1)
        # ... and a producer naming another id is fenced.
        stale = _init(client, tid, producer_id=pid + 7, producer_epoch=3)
        assert stale.error_code == ErrorCode.PRODUCER_FENCED, stale
        listed = _req(client, 66, 1, {"state_filters": ["CompleteAbort", "Bogus"]})
        assert listed.error_code == 0
        assert list(listed.unknown_state_filters) == ["Bogus"]
        assert tid not in [t.transactional_id for t in listed.transaction_states]  # now Empty
        listed = _req(client, 66, 0, {"producer_id_filters": [pid]})
        assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
            (tid, "Empty")
        ]


def test_the_next_transaction_starts_at_once_after_end_txn_on_one_broker(broker):
    """EndTxn is answered before its markers start, and on one broker the markers and the
    CompleteCommit are written in one event-loop step right after the answer: the
    AddPartitionsToTxn a client sends as soon as EndTxn is answered finds the transaction
    complete, never in PrepareCommit (CONCURRENT_TRANSACTIONS, which librdkafka and Kafka's
    Java producer retry only after 20 ms). Each answer is checked, every time."""
    create_topic(broker.bootstrap, "txn-next", partitions=2)
    tid = "tx-next"
    with WireClient.connect(broker.bootstrap) as client:
        assert _coordinator(client, tid).error_code == 0
        first = _init(client, tid)
        assert first.error_code == 0, first
        pid, epoch = first.producer_id, first.producer_epoch
        for i in range(200):
            added = _add(client, tid, pid, epoch, "txn-next", [0, 1])
            assert set(added.values()) == {ErrorCode.NONE}, (i, added)
            assert _end(client, tid, pid, epoch, commit=i % 2 == 0) == ErrorCode.NONE, i
        last = _wait_state(client, tid, "CompleteAbort")
        assert last.transaction_state == "CompleteAbort", last


def test_invalid_transaction_timeout(broker):
    with WireClient.connect(broker.bootstrap) as client:
        _coordinator(client, "tx-timeout-bad")
        over = _init(client, "tx-timeout-bad", timeout_ms=120_001)
        assert over.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT, over
        zero = _init(client, "tx-timeout-bad", timeout_ms=0)
        assert zero.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT, zero
        assert _init(client, "tx-timeout-bad", timeout_ms=120_000).error_code == 0
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "tx-timeout-bad-ck",
            "transaction.timeout.ms": 900_000,
        }
    )
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        producer.init_transactions(30)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced(broker):
    create_topic(broker.bootstrap, "txn-expire", partitions=1)
    tid = "tx-expire"
    with WireClient.connect(broker.bootstrap) as client:
        _coordinator(client, tid)
        first = _init(client, tid, timeout_ms=1000)
        pid = first.producer_id
        assert set(_add(client, tid, pid, 0, "txn-expire", [0]).values()) == {ErrorCode.NONE}
        aborted = _wait_state(client, tid, "CompleteAbort")
        assert aborted.transaction_state == "CompleteAbort", aborted
        assert aborted.producer_epoch == 1  # bumped by the fence
        assert _end(client, tid, pid, 0, commit=True) == ErrorCode.PRODUCER_FENCED


def test_a_timed_out_transaction_with_records_is_aborted_and_the_lso_advances(broker):
    """Issue 19's acceptance: records of a transaction left open hold the LSO (read_committed
    consumers get nothing past it); once ``transaction.timeout.ms`` passes the coordinator
    aborts it, the LSO moves past its marker, and the records stay invisible to read_committed."""
    topic = "txn-expire-records"
    create_topic(broker.bootstrap, topic, partitions=1)
    stuck = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "tx-expire-records",
            "transaction.timeout.ms": 2000,
        }
    )
    stuck.init_transactions(30)
    stuck.begin_transaction()
    for i in range(3):
        stuck.produce(topic, f"open-{i}".encode())
    assert stuck.flush(30) == 0  # in the log, not committed
    reader = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "txn-expire-reader",
            "isolation.level": "read_committed",
        }
    )
    tp = confluent_kafka.TopicPartition(topic, 0)
    try:
        # With read_committed, librdkafka's ListOffsets asks for the LSO.
        lso = reader.get_watermark_offsets(tp, timeout=10, cached=False)[1]
        assert lso == 0, "an open transaction's first offset holds the LSO"
        deadline = time.monotonic() + DEADLINE_S
        while lso == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            lso = reader.get_watermark_offsets(tp, timeout=10, cached=False)[1]
        assert lso == 4, "the coordinator's abort marker (offset 3) moves the LSO past it"
        with WireClient.connect(broker.bootstrap) as client:
            described = _wait_state(client, "tx-expire-records", "CompleteAbort")
            assert described.transaction_state == "CompleteAbort", described
        # A later committed record is all read_committed sees.
        writer = confluent_kafka.Producer(
            {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-expire-after"}
        )
        writer.init_transactions(30)
        writer.begin_transaction()
        writer.produce(topic, b"after")
        writer.commit_transaction(30)
        reader.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while not values and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == [b"after"]
    finally:
        reader.close()


def test_init_while_a_transaction_is_ongoing_fences_and_aborts_it(broker):
    create_topic(broker.bootstrap, "txn-fence", partitions=1)
    tid = "tx-fence"
    with WireClient.connect(broker.bootstrap) as client:
        _coordinator(client, tid)
        first = _init(client, tid)
        pid = first.producer_id
        assert set(_add(client, tid, pid, 0, "txn-fence", [0]).values()) == {ErrorCode.NONE}
        answer = _req(client, 22, 4, {"transactional_id": tid, "transaction_timeout": 60_000})
        assert answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS, answer
        second = _init(client, tid)  # the retry gets the second bump
        assert (second.error_code, second.producer_id, second.producer_epoch) == (0, pid, 2)
        assert _describe(client, tid).transaction_state == "Empty"
        assert _end(client, tid, pid, 0, commit=False) == ErrorCode.PRODUCER_FENCED


def test_confluent_kafka_zombie_is_fenced(broker):
    create_topic(broker.bootstrap, "txn-zombie", partitions=1)
    config = {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-zombie"}
    first = confluent_kafka.Producer(config)
    first.init_transactions(30)
    second = confluent_kafka.Producer(config)
    second.init_transactions(30)
    first.begin_transaction()
    first.produce("txn-zombie", b"zombie")
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        first.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal(), error
    assert error.code() in (
        confluent_kafka.KafkaError._FENCED,
        confluent_kafka.KafkaError.PRODUCER_FENCED,
        confluent_kafka.KafkaError.INVALID_PRODUCER_EPOCH,
    ), error


def test_kafka_python_and_aiokafka_init_transactions(broker):
    producer = kafka.KafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id="tx-kafka-python"
    )
    try:
        producer.init_transactions()
    finally:
        producer.close(timeout=10)

    async def run() -> None:
        aio = aiokafka.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id="tx-aiokafka"
        )
        await aio.start()
        await aio.stop()

    asyncio.run(run())
    with WireClient.connect(broker.bootstrap) as client:
        for tid in ("tx-kafka-python", "tx-aiokafka"):
            described = _describe(client, tid)
            assert described.error_code == 0 and described.transaction_state == "Empty", described


def test_confluent_kafka_commit_and_abort_are_seen_by_read_committed(broker):
    create_topic(broker.bootstrap, "txn-ck", partitions=1)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-ck"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("txn-ck", b"aborted")
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce("txn-ck", b"committed")
    producer.commit_transaction(30)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "txn-ck-reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["txn-ck"])
    values = []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and len(values) < 1:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"committed"]


def test_transaction_state_survives_sigkill(tmp_path):
    proc = BrokerProcess(tmp_path, overrides={"transaction.state.log.num.partitions": "2"})
    proc.start()
    try:
        create_topic(proc.bootstrap, "txn-restart", partitions=1)
        with WireClient.connect(proc.bootstrap) as client:
            _coordinator(client, "tx-restart")
            first = _init(client, "tx-restart")
            pid = first.producer_id
            added = _add(client, "tx-restart", pid, 0, "txn-restart", [0])
            assert set(added.values()) == {ErrorCode.NONE}
        proc.kill()
        proc.start()
        with WireClient.connect(proc.bootstrap) as client:
            _coordinator(client, "tx-restart")
            described = _wait_state(client, "tx-restart", "Ongoing")
            assert described.transaction_state == "Ongoing", described
            assert (described.producer_id, described.producer_epoch) == (pid, 0)
            assert _end(client, "tx-restart", pid, 0, commit=True) == ErrorCode.NONE
            assert _wait_state(client, "tx-restart", "CompleteCommit").error_code == 0
            again = _init(client, "tx-restart")
            assert (again.producer_id, again.producer_epoch) == (pid, 1), again
    finally:
        code = proc.stop()
    assert code == 0, proc.output()
