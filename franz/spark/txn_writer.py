"""The ``exactlyOnce`` write task: one Kafka transaction per write task per micro-batch.

With ``.option("exactlyOnce", "true")`` each write task of a streaming query writes its rows,
and a marker of its own, in one transaction (KIP-98; the marker rides on the transaction as
KIP-447's ``send_offsets_to_transaction`` does for a consumer's position). Task partition
``p`` of query ``Q`` (the checkpoint's query id, ``sql.streaming.queryId``) uses

* the ``transactional.id`` ``franz-spark-<Q>-<p>``, the same for every attempt of the task
  and every micro-batch, and
* the **task marker group** ``franz-spark-sink-<Q>-<p>``: a standalone consumer group (no
  member ever joins it) whose committed offset on partition 0 of the marker topic (the
  ``topic`` option, else the first topic the task writes to) is ``N + 1`` with metadata
  ``{"batchId": N, "queryId": Q, "rows": R, "digest": D}`` once ``R`` rows of micro-batch
  ``N``'s output of this task are committed, ``D`` the BLAKE2b digest of those rows in
  order (:func:`franz.spark.write_rows.digest_records`).

**A failed attempt may commit a prefix.** When a task fails upstream of the sink (a UDF
raises, a source read fails, the driver's JVM dies), Spark stops feeding the sink's Python
worker and the Arrow stream ``write()`` iterates simply ends, as a complete input does (seen
with PySpark 4.3: an attempt committed the 1,500 rows it had got of 3,000). Before
committing, :func:`input_cut_short` looks past the Arrow stream on the worker's socket: EOF
where Spark's ``END_OF_STREAM`` should be means the input was cut, and the transaction is
aborted instead. That check rests on PySpark's worker internals and can only say "don't
know" when they change, so an attempt may still commit the first ``R`` rows only. The next
attempt completes it: it reads the marker, feeds its own first ``R`` rows to the digest
without producing them, and if the digest is the marker's, writes the rest (its marker then
records all the rows); if not (the replay gives other rows, or the same ones in another
order, e.g. after a shuffle), it fails the task rather than write a row twice or drop one.

Micro-batch ``N`` on task partition ``p``, in :func:`write_transactional`:

1. Read up to the first non-empty Arrow batch. A task with no rows does nothing at all (no
   producer, no transaction, no marker).
2. ``init_transactions()`` (InitProducerId, bounded by ``kafka.max.block.ms`` as the Java
   producer's ``initTransactions``). It bumps the producer epoch of the transactional id,
   which fences every earlier attempt of the same task: a failed attempt's zombie, a
   speculative attempt, an executor cut off from the driver. Their later produce, AddOffsets
   or EndTxn fail with PRODUCER_FENCED / INVALID_PRODUCER_EPOCH. An earlier attempt's open
   transaction is aborted; one being committed is finished: Kafka's TransactionCoordinator
   answers CONCURRENT_TRANSACTIONS (librdkafka retries) until the earlier transaction is in
   CompleteCommit or CompleteAbort, i.e. until its markers are written everywhere. So when
   ``init_transactions()`` returns, the earlier attempts' outcome is final.
3. Fetch the task marker group's committed offsets with ``require_stable`` (OffsetFetch v7+,
   KIP-447): the group coordinator materializes a transaction's offsets only after its
   marker reaches ``__consumer_offsets`` (and in Kafka 3.9 on a scheduler thread after
   that), and answers UNSTABLE_OFFSET_COMMIT while any are pending instead of a stale
   offset. If the marker records a batch ``> N``, produce nothing and drain the input; if it
   records ``N`` with ``R`` rows, check and skip the first ``R`` rows (above), and if no
   rows are left report the task skipped (no transaction).
4. Otherwise ``begin_transaction()``, produce every (remaining) row, flush, then
   ``send_offsets_to_transaction`` with the marker (AddOffsetsToTxn, TxnOffsetCommit with
   generation -1 and no member: Kafka's coordinator accepts that for an Empty or unknown
   group, as for any standalone commit), then ``commit_transaction()`` (EndTxn). The data
   and the marker become visible together, or neither does.

Errors: an abortable error (``txn_requires_abort``: a delivery failure, a timed-out
transaction) aborts the transaction and fails the task; a fatal one (fenced by a newer
attempt, an authorization failure) fails it at once; a retriable commit error (outcome
unknown) is retried a few times, as librdkafka's documentation prescribes. A failed task
whose process died leaves its transaction open: the next attempt's ``init_transactions()``
aborts it, or the coordinator does after ``transaction.timeout.ms``.

The guarantee, exactly: a ``read_committed`` consumer of the output sees each row of each
micro-batch exactly once, **provided a replayed micro-batch gives each task partition the
same rows** (a source that replays the same offsets, e.g. ``format("franz")`` or the file
source; the same number of sink partitions; no non-deterministic expressions before the
sink), **in the same order when an attempt failed upstream after committing a prefix**
(otherwise the task fails with a message saying so; nothing is written twice). A
``read_uncommitted`` consumer also sees aborted attempts' records.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator, Mapping
from itertools import chain
from types import FrameType
from typing import Any

from franz.spark.write_rows import (
    FranzCommitMessage,
    SinkColumns,
    TaskMarker,
    batch_records,
    batch_topics,
    decode_task_marker,
    digest_records,
    encode_marker,
    task_marker_group,
    task_transactional_id,
)
from franz.spark.writer import Deliveries, FranzWriteError, produce_all

__all__ = [
    "COMMIT_ATTEMPTS",
    "input_cut_short",
    "read_task_marker",
    "skip_committed",
    "write_transactional",
]

log = logging.getLogger("franz.spark.txn_writer")

#: librdkafka's ``transaction.timeout.ms`` default (the Java producer's is 60 s too); with a
#: ``transactional.id`` librdkafka bounds ``message.timeout.ms`` by it.
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000

#: How often a commit whose outcome is unknown (a retriable error) is tried again.
COMMIT_ATTEMPTS = 5


def _first_rows(batches: Iterator[Any]) -> Any | None:
    """The first Arrow batch with rows (earlier empty ones are dropped), or None."""
    for batch in batches:
        if batch.num_rows:
            return batch
    return None


def _client_conf(client: Mapping[str, str]) -> dict[str, Any]:
    """Settings for the marker's admin client and group-metadata consumer: the user's
    ``kafka.*`` without the producer-only ``max.block.ms``, quiet below errors."""
    conf: dict[str, Any] = {"log_level": 3}
    conf.update({k: v for k, v in client.items() if k != "max.block.ms"})
    return conf


def read_task_marker(client: Mapping[str, str], group: str, timeout_ms: int) -> TaskMarker | None:
    """The task marker ``group`` records (stable offsets only; the highest batch id if it has
    several partitions), or None.

    UNSTABLE_OFFSET_COMMIT (a transaction's offsets still pending) is retried until
    ``timeout_ms``; any other failure raises :class:`FranzWriteError` (never guess: a
    missed marker would write the batch twice).
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_client_conf(client))
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        left = max(deadline - time.monotonic(), 0.1)
        future = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], require_stable=True, request_timeout=left
        )[group]
        unstable = False
        try:
            result = future.result(timeout=left + 5)
        except Exception as exc:
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code != KafkaError.UNSTABLE_OFFSET_COMMIT:
                raise FranzWriteError(
                    f"Could not read the sink's task marker (group {group}) from "
                    f"{client.get('bootstrap.servers')}: {exc}"
                ) from None
            unstable = True
        if not unstable:
            partitions = result.topic_partitions or []
            unstable = any(
                tp.error is not None and tp.error.code() == KafkaError.UNSTABLE_OFFSET_COMMIT
                for tp in partitions
            )
            if not unstable:
                errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in partitions if tp.error]
                if errors:
                    raise FranzWriteError(
                        f"Could not read the sink's task marker (group {group}): {errors}"
                    )
                marked = [
                    decode_task_marker(tp.metadata, tp.offset)
                    for tp in partitions
                    if tp.offset >= 0
                ]
                found = [marker for marker in marked if marker is not None]
                return max(found, key=lambda m: m.batch_id) if found else None
        if time.monotonic() >= deadline:
            raise FranzWriteError(
                f"The sink's task marker (group {group}) stayed UNSTABLE_OFFSET_COMMIT for "
                f"{timeout_ms} ms: a transaction holding it did not complete"
            )
        time.sleep(0.1)


def skip_committed(
    batches: Iterator[Any], columns: SinkColumns, count: int, digest: Any
) -> Iterator[Any] | None:
    """Consume the first ``count`` rows of ``batches`` into ``digest`` without producing
    them; the batches after them, or None if the input has fewer rows."""
    seen = 0
    for batch in batches:
        if seen == count:
            return chain([batch], batches)
        take = min(batch.num_rows, count - seen)
        for _ in digest_records(batch_records(batch.slice(0, take), columns), digest):
            pass
        seen += take
        if take < batch.num_rows:
            return chain([batch.slice(take)], batches)
    return iter(()) if seen == count else None


def input_cut_short() -> bool | None:
    """Whether this Python worker's input ended because the task failed (True), ended
    normally (False), or can't be told (None). Best effort, on PySpark's worker internals.

    A complete input is followed on the worker's socket by Spark's ``END_OF_STREAM``
    (``SpecialLengths``, -4), already in the reader's buffer when the Arrow stream ends (seen
    with PySpark 4.3); a task that failed upstream leaves EOF instead. The stream is the
    local ``input_data_stream`` of ``pyspark.worker``'s ``process``, found on the call
    stack; the check never blocks (a socket with nothing to read and an empty buffer gives
    None) and is skipped in pipelined mode (``SPARK_PIPELINED_UDF``), where another thread
    reads the stream.
    """
    import os
    import select
    import sys

    if os.environ.get("SPARK_PIPELINED_UDF") == "1":
        return None
    frame: FrameType | None = sys._getframe(1)
    stream = None
    while frame is not None:
        if frame.f_code.co_name == "process" and "input_data_stream" in frame.f_locals:
            stream = frame.f_locals["input_data_stream"]
            break
        frame = frame.f_back
    if stream is None or not hasattr(stream, "peek"):
        return None
    try:
        fd = stream.fileno()
        readable = bool(select.select([fd], [], [], 0)[0])
        was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        try:
            head = stream.peek(4)[:4]
        except BlockingIOError:
            return None
        finally:
            os.set_blocking(fd, was_blocking)
    except (OSError, ValueError):
        return None
    if head == b"\xff\xff\xff\xfc":  # END_OF_STREAM
        return False
    if head == b"" and readable:  # readable with nothing to read: EOF
        return True
    return None


def _group_metadata(client: Mapping[str, str], group: str) -> Any:
    """The marker group's metadata for ``send_offsets_to_transaction``: a consumer that never
    subscribes gives generation -1 and no member id (a standalone commit)."""
    from confluent_kafka import Consumer

    consumer = Consumer({**_client_conf(client), "group.id": group, "enable.auto.commit": False})
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


def _commit(producer: Any, timeout_s: float) -> None:
    from confluent_kafka import KafkaException

    for attempt in range(COMMIT_ATTEMPTS):
        try:
            producer.commit_transaction(timeout_s)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == COMMIT_ATTEMPTS - 1:
                raise


def _timeouts(conf: Mapping[str, str]) -> tuple[float, float]:
    """(flush timeout, transaction API timeout) in seconds: delivery is bounded by
    ``message.timeout.ms``, which librdkafka caps at ``transaction.timeout.ms``."""
    txn_ms = int(conf.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))
    message_ms = int(conf.get("message.timeout.ms", conf.get("delivery.timeout.ms", txn_ms)))
    return min(message_ms, txn_ms) / 1000 + 10.0, txn_ms / 1000 + 10.0


def write_transactional(
    client: Mapping[str, str],
    conf: Mapping[str, str],
    max_block_ms: int,
    columns: SinkColumns,
    batches: Iterator[Any],
    query_id: str,
    batch_id: int,
    task_partition: int,
) -> FranzCommitMessage:
    """Write one task's rows of micro-batch ``batch_id`` in one transaction (module
    docstring); ``client`` is the user's ``kafka.*`` settings, ``conf`` the producer's."""
    from confluent_kafka import KafkaException, Producer, TopicPartition

    def report(rows: int = 0, counts: Any = None, skipped: bool = False) -> FranzCommitMessage:
        return FranzCommitMessage(
            rows, counts or {}, query_id, batch_id, task_partition, skipped=skipped
        )

    first = _first_rows(batches)
    if first is None:
        return report()
    topics = batch_topics(first, columns)
    marker_topic = columns.topic_option or (topics[0] if topics else None)
    if marker_topic is None:
        raise ValueError(
            "null topic present in the data. Use the topic option for setting a default topic."
        )
    group = task_marker_group(query_id, task_partition)
    deliveries = Deliveries()
    producer = Producer(
        {
            **conf,
            "transactional.id": task_transactional_id(query_id, task_partition),
            "on_delivery": deliveries,
        }
    )
    bootstrap = conf.get("bootstrap.servers", "?")
    flush_s, txn_s = _timeouts(conf)
    try:
        producer.init_transactions(max_block_ms / 1000)
    except KafkaException as exc:
        raise FranzWriteError(
            f"init_transactions for {task_transactional_id(query_id, task_partition)} on "
            f"{bootstrap} failed: {exc.args[0].str()}"
        ) from None
    marker = read_task_marker(client, group, max_block_ms)
    digest = hashlib.blake2b(digest_size=16)
    done = 0  # rows of this batch an earlier attempt committed
    rest: Iterator[Any] = chain([first], batches)
    if marker is not None and marker.batch_id > batch_id:
        drained = sum(batch.num_rows for batch in rest)
        log.warning(
            "query %s batch %d task %d: skipped %d rows, the task marker records the later "
            "batch %d",
            *(query_id, batch_id, task_partition, drained, marker.batch_id),
        )
        return report(skipped=True)
    if marker is not None and marker.batch_id == batch_id:
        done = marker.rows
        remaining = skip_committed(rest, columns, done, digest)
        if remaining is None or digest.hexdigest() != marker.digest:
            raise FranzWriteError(
                f"query {query_id} batch {batch_id} task {task_partition}: an earlier attempt "
                f"committed {done} rows that are not the first {done} rows of this attempt "
                "(the replayed micro-batch gives this task other rows, or in another order): "
                "exactly once can't be kept"
            )
        resumed = _first_rows(remaining)
        if resumed is None:
            log.warning(
                "query %s batch %d task %d: skipped %d rows, this task's output of the batch "
                "is already committed",
                *(query_id, batch_id, task_partition, done),
            )
            return report(skipped=True)
        log.warning(
            "query %s batch %d task %d: an earlier attempt committed the first %d rows (its "
            "input ended early: the task failed upstream); writing the rest",
            *(query_id, batch_id, task_partition, done),
        )
        rest = chain([resumed], remaining)
    known: dict[str, int] = {}
    rows = 0
    in_transaction = False
    try:
        producer.begin_transaction()
        in_transaction = True
        rows = produce_all(
            producer, deliveries, bootstrap, max_block_ms, columns, rest, known, digest
        )
        if input_cut_short():
            raise FranzWriteError(
                f"query {query_id} batch {batch_id} task {task_partition}: the input ended "
                "without Spark's end of stream (the task failed upstream of the sink); the "
                "transaction is aborted"
            )
        unsent = producer.flush(flush_s)
        deliveries.check()
        if unsent:
            raise FranzWriteError(
                f"{unsent} of {rows} records to {sorted(known)} not delivered to "
                f"{bootstrap} within {flush_s:.0f} s"
            )
        metadata = encode_marker(query_id, batch_id, done + rows, digest.hexdigest())
        offsets = [TopicPartition(marker_topic, 0, batch_id + 1, metadata=metadata)]
        producer.send_offsets_to_transaction(offsets, _group_metadata(client, group), txn_s)
        _commit(producer, txn_s)
        in_transaction = False
    except BaseException as exc:
        _abort(producer, exc, in_transaction, txn_s)
        if isinstance(exc, KafkaException):
            error = exc.args[0]
            kind = "fatal" if error.fatal() else "abortable"
            raise FranzWriteError(
                f"query {query_id} batch {batch_id} task {task_partition}: transaction failed "
                f"({kind}, aborted): {error.str()}"
            ) from None
        raise
    log.info(
        "query %s batch %d task %d committed %d records in one transaction",
        query_id,
        batch_id,
        task_partition,
        rows,
    )
    return report(rows, deliveries.by_topic())


def _abort(producer: Any, exc: BaseException, in_transaction: bool, timeout_s: float) -> None:
    """Abort the open transaction unless the error is fatal (then the producer is unusable:
    the next attempt's ``init_transactions`` aborts it); never raises."""
    from confluent_kafka import KafkaException

    if not in_transaction:
        return
    if isinstance(exc, KafkaException) and exc.args[0].fatal():
        return
    producer.purge(in_queue=True, in_flight=False, blocking=False)
    try:
        producer.abort_transaction(timeout_s)
    except KafkaException as abort_error:
        log.warning("abort_transaction failed (%s); the next attempt aborts it", abort_error)
