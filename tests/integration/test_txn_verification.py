"""KIP-890 part 1 on one broker: transaction verification (``franz.broker.txn_verification``,
``transaction.partition.verification.enable``, default true), on the wire.

A raw-protocol producer (``tests.support.txn_wire``) skips the step a real client never
skips: a transactional Produce for a partition never added with AddPartitionsToTxn, a
TxnOffsetCommit without AddOffsetsToTxn. Kafka 3.9 refuses both (the "hanging transaction"
KIP-890 prevents) and appends nothing; with verification turned off (a dynamic broker
config here) the old behaviour comes back: the batch is appended and opens a transaction no
coordinator knows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from franz.errors import ErrorCode
from tests.support import txn_wire
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.wire import WireClient, fetch, list_offsets

VERIFICATION = "transaction.partition.verification.enable"
LATEST = -1


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("txn-verification")
    proc = BrokerProcess(
        data_dir,
        overrides={
            "transaction.state.log.num.partitions": "3",
            "offsets.topic.num.partitions": "3",
        },
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(broker.bootstrap) as connection:
        yield connection


def _names(prefix: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"{prefix}-{suffix}", f"{prefix}-tid-{suffix}"


def _producer(broker: BrokerProcess, client: WireClient, tid: str) -> txn_wire.TxnProducer:
    txn_wire.find_coordinator(client, tid, 1)
    return txn_wire.init_producer(client, tid)


def _end_offset(client: WireClient, topic: str, partition: int = 0) -> int:
    answer = list_offsets(client, topic, partition, LATEST)
    assert answer.error_code == 0, answer
    return int(answer.offset)


@pytest.mark.parametrize(
    ("version", "code", "message"),
    [
        (9, ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"),
        (10, ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"),
        (11, ErrorCode.TRANSACTION_ABORTABLE, None),
    ],
)
def test_a_produce_to_a_partition_not_in_the_transaction_is_refused_and_not_appended(
    broker: BrokerProcess, client: WireClient, version: int, code: ErrorCode, message: str | None
) -> None:
    topic, tid = _names(f"ver-v{version}")
    create_topic(broker.bootstrap, topic, partitions=2)
    producer = _producer(broker, client, tid)
    # Partition 1 is in the transaction; partition 0 never was.
    assert txn_wire.add_partitions(client, producer, {topic: [1]}) == {(topic, 1): 0}
    refused = txn_wire.produce(
        client, version, tid, topic, 0, txn_wire.txn_batch(producer, 0, [b"hanging"])
    )
    assert (refused.error_code, refused.error_message) == (code, message), refused
    assert (refused.base_offset, refused.log_start_offset) == (-1, -1)
    assert _end_offset(client, topic, 0) == 0
    # The partition that was added takes the same producer's batch.
    added = txn_wire.produce(
        client, version, tid, topic, 1, txn_wire.txn_batch(producer, 0, [b"a"])
    )
    assert (added.error_code, added.base_offset) == (0, 0), added
    assert txn_wire.end_txn(client, producer, commit=False) == 0


def test_a_verified_transaction_appends_and_commits(broker: BrokerProcess, client: WireClient):
    topic, tid = _names("ver-ok")
    create_topic(broker.bootstrap, topic)
    producer = _producer(broker, client, tid)
    assert txn_wire.add_partitions(client, producer, {topic: [0]}) == {(topic, 0): 0}
    for sequence, value in enumerate([b"one", b"two", b"three"]):
        # The first batch is verified with the coordinator; the next ones find the
        # transaction ongoing in the partition.
        answer = txn_wire.produce(
            client, 11, tid, topic, 0, txn_wire.txn_batch(producer, sequence, [value])
        )
        assert (answer.error_code, answer.base_offset) == (0, sequence), answer
    assert txn_wire.end_txn(client, producer, commit=True) == 0
    # Three records and the commit marker.
    assert _end_offset(client, topic) == 4


def test_a_batch_after_the_transaction_ended_needs_a_new_verification(
    broker: BrokerProcess, client: WireClient
) -> None:
    topic, tid = _names("ver-ended")
    create_topic(broker.bootstrap, topic)
    producer = _producer(broker, client, tid)
    assert txn_wire.add_partitions(client, producer, {topic: [0]}) == {(topic, 0): 0}
    first = txn_wire.produce(client, 11, tid, topic, 0, txn_wire.txn_batch(producer, 0, [b"x"]))
    assert first.error_code == 0, first
    assert txn_wire.end_txn(client, producer, commit=True) == 0
    # (Until the markers are written the coordinator answers CONCURRENT_TRANSACTIONS, which
    # producers get as a retriable NOT_ENOUGH_REPLICAS.)
    txn_wire.wait_state(client, tid, "CompleteCommit")
    # The marker ended the transaction: the next transactional batch without
    # AddPartitionsToTxn is refused, not appended to a transaction no one knows.
    late = txn_wire.produce(client, 11, tid, topic, 0, txn_wire.txn_batch(producer, 1, [b"late"]))
    assert late.error_code == ErrorCode.TRANSACTION_ABORTABLE, late
    assert _end_offset(client, topic) == 2


def test_the_coordinator_answers_verify_only_without_adding(
    broker: BrokerProcess, client: WireClient
) -> None:
    topic, tid = _names("ver-only")
    create_topic(broker.bootstrap, topic, partitions=2)
    producer = _producer(broker, client, tid)
    assert txn_wire.add_partitions(client, producer, {topic: [0]}) == {(topic, 0): 0}
    for version in (4, 5):
        answer = txn_wire.verify_only(client, producer, {topic: [0, 1]}, version)
        assert answer.error_code == 0, answer
        [result] = answer.results_by_transaction
        codes = {
            (t.name, int(p.partition_index)): int(p.partition_error_code)
            for t in result.topic_results
            for p in t.results_by_partition
        }
        assert codes == {(topic, 0): 0, (topic, 1): ErrorCode.TRANSACTION_ABORTABLE}
    # Verification added nothing: partition 1 is still outside the transaction.
    refused = txn_wire.produce(client, 11, tid, topic, 1, txn_wire.txn_batch(producer, 0, [b"x"]))
    assert refused.error_code == ErrorCode.TRANSACTION_ABORTABLE, refused
    fenced = txn_wire.verify_only(
        client, txn_wire.TxnProducer(tid, producer.producer_id, producer.epoch + 1), {topic: [0]}
    )
    [result] = fenced.results_by_transaction
    assert [int(p.partition_error_code) for p in result.topic_results[0].results_by_partition] == [
        ErrorCode.PRODUCER_FENCED
    ]
    assert txn_wire.end_txn(client, producer, commit=False) == 0


def test_a_produce_with_a_stale_epoch_is_refused_by_the_verification(
    broker: BrokerProcess, client: WireClient
) -> None:
    topic, tid = _names("ver-fenced")
    create_topic(broker.bootstrap, topic)
    old = _producer(broker, client, tid)
    new = txn_wire.init_producer(client, tid)  # bumps the epoch: the old producer is fenced
    assert new.epoch == old.epoch + 1
    refused = txn_wire.produce(client, 11, tid, topic, 0, txn_wire.txn_batch(old, 0, [b"z"]))
    # PRODUCER_FENCED from the coordinator reaches producers as INVALID_PRODUCER_EPOCH.
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        None,
    ), refused
    assert _end_offset(client, topic) == 0


@pytest.mark.parametrize(
    ("version", "code"),
    [(3, ErrorCode.INVALID_TXN_STATE), (4, ErrorCode.TRANSACTION_ABORTABLE)],
)
def test_a_txn_offset_commit_outside_the_transaction_is_refused(
    broker: BrokerProcess, client: WireClient, version: int, code: ErrorCode
) -> None:
    topic, tid = _names(f"ver-toc{version}")
    group = f"{tid}-group"
    create_topic(broker.bootstrap, topic)
    producer = _producer(broker, client, tid)
    txn_wire.find_coordinator(client, group, 0)
    offsets = {(topic, 0): 5}
    assert txn_wire.txn_offset_commit(client, version, producer, group, offsets) == {
        (topic, 0): code
    }
    # Nothing pending: the committed offset is unknown, and not unstable.
    assert txn_wire.offset_fetch(client, group, topic, 0) == (0, -1)
    # With AddOffsetsToTxn first, the same commit is taken and pending until EndTxn.
    assert txn_wire.add_offsets(client, producer, group) == 0
    assert txn_wire.txn_offset_commit(client, version, producer, group, offsets) == {(topic, 0): 0}
    assert txn_wire.offset_fetch(client, group, topic, 0)[0] == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert txn_wire.end_txn(client, producer, commit=True) == 0
    txn_wire.wait_state(client, tid, "CompleteCommit")
    assert txn_wire.offset_fetch(client, group, topic, 0) == (0, 5)


def _set_verification(bootstrap: str, value: str | None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
    entry = ConfigEntry(VERIFICATION, value or "", incremental_operation=op)
    resource = ConfigResource("BROKER", "0", incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def test_verification_turned_off_appends_the_hanging_batch(
    broker: BrokerProcess, client: WireClient
) -> None:
    topic, tid = _names("ver-off")
    group = f"{tid}-group"
    create_topic(broker.bootstrap, topic)
    producer = _producer(broker, client, tid)
    txn_wire.find_coordinator(client, group, 0)
    _set_verification(broker.bootstrap, "false")
    try:
        answer = txn_wire.produce(
            client, 11, tid, topic, 0, txn_wire.txn_batch(producer, 0, [b"hanging"])
        )
        assert (answer.error_code, answer.base_offset) == (0, 0), answer
        assert txn_wire.txn_offset_commit(client, 4, producer, group, {(topic, 0): 1}) == {
            (topic, 0): 0
        }
    finally:
        _set_verification(broker.bootstrap, None)
    # Kafka 3.9's behaviour without KIP-890: the batch opened a transaction the coordinator
    # does not know, which holds the last stable offset (a "hanging transaction").
    assert _end_offset(client, topic) == 1
    data = fetch(client, topic, 0, 0)
    assert int(data.high_watermark) == 1 and int(data.last_stable_offset) == 0, data
    # Back on: the next partition of the same kind is refused again.
    create_topic(broker.bootstrap, f"{topic}-on")
    refused = txn_wire.produce(
        client, 11, tid, f"{topic}-on", 0, txn_wire.txn_batch(producer, 0, [b"x"])
    )
    assert refused.error_code == ErrorCode.TRANSACTION_ABORTABLE, refused
    assert txn_wire.end_txn(client, producer, commit=False) == ErrorCode.INVALID_TXN_STATE
