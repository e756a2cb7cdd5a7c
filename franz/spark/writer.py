"""The ``franz`` sink: batch and streaming writes of DataFrames to topics, as Spark's Kafka sink.

::

    (df.selectExpr("user_id as key", "to_json(struct(*)) as value")
       .write.format("franz").mode("append")          # batch: say "append" (see below)
       .option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "page-stats").save())

    (df.writeStream.format("franz")                   # streaming: append or complete mode
       .option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "page-stats")
       .option("checkpointLocation", "/data/checkpoints/page-stats")
       .start())

A batch write must say ``mode("append")``: Spark refuses its default mode, ErrorIfExists, for
every Python data source ("UNSUPPORTED_DATA_SOURCE_SAVE_MODE"), where Spark's JVM Kafka sink
takes it as append.

Columns and options follow Spark's Kafka sink (:mod:`franz.spark.write_rows` has the table):
``value`` (required), ``key``, ``headers``, ``partition``, ``timestamp``, and ``topic`` unless
the ``topic`` option is set (the option wins). ``kafka.*`` options go to the producer
(librdkafka), over the sink's defaults ``acks=all``, ``enable.idempotence=true``,
``linger.ms=5`` and ``partitioner=murmur2_random`` (keys land where a Java client would put
them). ``kafka.max.block.ms`` bounds each metadata wait, as in the Java producer
(default 60 s); ``kafka.message.timeout.ms`` (librdkafka's ``delivery.timeout.ms``) bounds
delivery, and the final flush waits at most that long plus 10 s.

Each write task (``write()``, in an executor's Python worker) opens its own producer, checks
each topic it meets in the metadata (an unknown topic fails the task at once, unless the
broker auto-creates it), produces every row, polls as it goes and flushes at the end. Any
delivery error, or records still undelivered after the flush, fails the task with the
topic-partition and the error. Spark's ``SaveMode.Overwrite`` is refused for batch writes, as
Spark's Kafka sink does (topics are append-only); streaming ``complete`` mode is accepted and
appends, also as Spark does.

Exactly-once for replayed micro-batches
---------------------------------------
Spark replays micro-batch N when its checkpoint has ``offsets/N`` but not ``commits/N``: the
driver died after, or while, running the sink's ``commit(messages, N)``. Spark's own Kafka sink
then writes batch N a second time. This sink keeps a **marker** on the cluster instead: in
``FranzStreamWriter.commit(messages, N)`` (a driver-side process) it commits, for the consumer
group ``franz-spark-sink-<queryId>`` (a standalone group: no member ever joins it), offset
``N + 1`` with metadata ``{"batchId": N, "queryId": ..., "rows": ...}`` on partition 0 of
every topic the batch wrote to. The query id lives in the checkpoint, so it survives
restarts. Before producing, each ``write()`` task fetches the group's committed offsets; if
the highest marked batch id is ``>= N`` it produces nothing, drains its input and reports the
task as skipped (logged at WARNING).

The guarantee, exactly:

* A batch whose sink ``commit()`` completed (marker stored) is never written again, whatever
  Spark replays later: exactly once for those replays.
* A batch whose ``commit()`` never ran or did not store its marker is written again in full
  on replay; a task that fails mid-write leaves the records it already delivered, and a
  retried or speculative task attempt writes its rows again. That is at-least-once, as
  Spark's own Kafka sink. Per-task markers would not close this gap soundly: a task's rows
  are the same on replay only if the plan partitions the batch deterministically, and a
  failed attempt's partial output can't be told apart without transactions.
* A marker is an offset commit, so it expires like one: after ``offsets.retention.minutes``
  (7 days by default) without a new batch, the group's offsets are deleted and a replay after
  that would write again. Deleting the group (``franz consumer-groups --delete``) has the
  same effect.
* If storing the marker fails, ``commit()`` logs a warning and lets Spark commit the batch
  (raising would make Spark replay the batch with no marker, a certain duplicate).

The marker group shows up in ``consumer-groups --list``; its "offset" is a batch number, not
a position, so its lag means nothing. On a secured cluster the query's principal needs
Describe and Read on the group ``franz-spark-sink-*`` (OffsetFetch, OffsetCommit): a write
task that can't read the markers fails rather than risk a duplicate.

Exactly once: ``.option("exactlyOnce", "true")``
-----------------------------------------------
Streaming writes only (a batch write refuses it: a batch job has no id that survives a
re-run, so a failed job run again would write its committed tasks again). Each write task of
micro-batch N writes its rows and a marker of its own in **one Kafka transaction**
(transactional id ``franz-spark-<queryId>-<partition>``, marker group
``franz-spark-sink-<queryId>-<partition>``); a later attempt of the task fences the earlier
ones, and a task whose marker already records batch N produces nothing, or only the rows
an earlier attempt whose input was cut short did not commit (:mod:`franz.spark.txn_writer`
has the protocol). The driver-side marker above is not used. A ``read_committed`` consumer
of the output then sees each row exactly once, through task failures and retries,
speculative attempts, and a driver killed at any point, provided a replayed micro-batch
gives each task partition the same rows, in the same order (a replayable source such as
``format("franz")`` or files, the same partitioning, deterministic expressions; a task that
finds otherwise fails rather than write twice). When a task fails *upstream* of the sink
(a UDF raises, the driver dies), PySpark just ends the sink's input; the task sees that on
the worker's socket and aborts. Should that check ever answer "don't know" (it rests on
PySpark's worker internals), the attempt commits the rows it got, a ``read_committed``
consumer may see them before the retry writes the rest, and they stay if the batch never
succeeds. Turning ``exactlyOnce`` on for an existing checkpoint whose last
batch is replayed writes that batch again (its driver-side marker is not consulted). The
cost:

* one transaction per task per micro-batch (InitProducerId, a marker OffsetFetch,
  AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn: a few round trips, and the
  commit markers, one control record per written partition);
* consumers must read with ``isolation.level=read_committed`` (librdkafka's default; the
  Java consumer's is ``read_uncommitted``, which also sees aborted attempts' records); they
  read up to the LSO, so an open transaction holds them back until it ends;
* a task's transaction must finish within ``kafka.transaction.timeout.ms`` (60 s by default,
  at most the broker's ``transaction.max.timeout.ms``, 15 min) or the coordinator aborts it
  and the task fails (and so would every retry): raise it for big micro-batches;
* ``consumer-groups --list`` shows one marker group per task partition, and the cluster keeps
  one transactional id per task partition (expired after ``transactional.id.expiration.ms``);
  ``kafka.transactional.id`` can't be set; the principal needs Write on those transactional
  ids and Read on the groups.

Batch writes (``df.write.format("franz").save()``) are plain at-least-once writes; their
``commit`` / ``abort`` only log. ``abort`` has nothing to undo: records already delivered
stay in the log (Kafka has no way to take them back outside transactions).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from franz.spark.config import OptionError, client_config, parse_bool
from franz.spark.write_rows import (
    FranzCommitMessage,
    SinkColumns,
    batch_records,
    batch_topics,
    decode_marker,
    digest_records,
    encode_marker,
    marker_group,
    producer_settings,
    sink_columns,
)

__all__ = [
    "Deliveries",
    "FranzBatchWriter",
    "FranzStreamWriter",
    "FranzWriteError",
    "flush_timeout_s",
    "produce_all",
]

log = logging.getLogger("franz.spark.writer")

#: How many records are produced between two ``poll(0)`` calls (delivery reports, errors).
POLL_EVERY = 1000

#: librdkafka's ``message.timeout.ms`` default (the Java producer's ``delivery.timeout.ms``
#: is 120 s; librdkafka's is 300 s).
DEFAULT_MESSAGE_TIMEOUT_MS = 300_000


class FranzWriteError(RuntimeError):
    """A write task could not deliver its records; the message names topic, partition, error."""


class Deliveries:
    """The producer's delivery-report callback: counts per topic-partition, the first error."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], int] = {}
        self.error: str | None = None

    def __call__(self, err: Any, msg: Any) -> None:
        if err is not None:
            if self.error is None:
                self.error = (
                    f"Failed to deliver a record to topic {msg.topic()} partition "
                    f"{msg.partition()}: {err.str()}"
                )
            return
        tp = (msg.topic(), msg.partition())
        self.counts[tp] = self.counts.get(tp, 0) + 1

    def check(self) -> None:
        if self.error is not None:
            raise FranzWriteError(self.error)

    def by_topic(self) -> dict[str, dict[int, int]]:
        out: dict[str, dict[int, int]] = {}
        for (topic, partition), count in sorted(self.counts.items()):
            out.setdefault(topic, {})[partition] = count
        return out


def _topic_partitions(producer: Any, topic: str, bootstrap: str, max_block_ms: int) -> int:
    """The partition count of ``topic``, waiting at most ``max_block_ms`` for metadata.

    The producer's metadata request may let the broker auto-create the topic (librdkafka's
    producer default, as Java's); a topic still unknown after that fails the write, with the
    Java producer's words.
    """
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + max_block_ms / 1000
    last = "no metadata"
    while True:
        left = deadline - time.monotonic()
        try:
            metadata = producer.list_topics(topic, timeout=max(left, 0.001))
        except KafkaException as exc:
            raise FranzWriteError(
                f"Topic {topic} not present in metadata after {max_block_ms} ms: could not "
                f"fetch metadata from {bootstrap}: {exc.args[0].str()}"
            ) from None
        entry = metadata.topics.get(topic)
        error = None if entry is None else entry.error
        if entry is not None and error is None and entry.partitions:
            return len(entry.partitions)
        if error is not None and error.code() in (
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.TOPIC_EXCEPTION,
        ):
            raise FranzWriteError(
                f"Topic {topic} not present in metadata after {max_block_ms} ms: {error.str()}"
            )
        last = "no partitions" if error is None else error.str()
        if time.monotonic() >= deadline:
            raise FranzWriteError(
                f"Topic {topic} not present in metadata after {max_block_ms} ms: {last}"
            )
        time.sleep(0.05)  # e.g. LEADER_NOT_AVAILABLE just after auto-creation


def flush_timeout_s(conf: Mapping[str, str]) -> float:
    raw = conf.get("message.timeout.ms", conf.get("delivery.timeout.ms"))
    timeout_ms = DEFAULT_MESSAGE_TIMEOUT_MS if raw is None else int(raw)
    return timeout_ms / 1000 + 10.0


def produce_batches(
    conf: Mapping[str, str], max_block_ms: int, columns: SinkColumns, batches: Iterator[Any]
) -> FranzCommitMessage:
    """Produce every row of ``batches`` (pyarrow RecordBatches) and wait for delivery.

    On any failure the records still queued in the producer are purged before raising, so a
    failed task stops writing at once (records already sent may still land).
    """
    from confluent_kafka import Producer

    deliveries = Deliveries()
    producer = Producer({**conf, "on_delivery": deliveries})
    bootstrap = conf.get("bootstrap.servers", "?")
    known: dict[str, int] = {}
    try:
        rows = produce_all(producer, deliveries, bootstrap, max_block_ms, columns, batches, known)
        timeout = flush_timeout_s(conf)
        remaining = producer.flush(timeout)
        deliveries.check()
        if remaining:
            raise FranzWriteError(
                f"{remaining} of {rows} records to {sorted(known)} not delivered to "
                f"{bootstrap} within {timeout:.0f} s"
            )
    except BaseException:
        producer.purge(in_queue=True, in_flight=False, blocking=False)
        producer.flush(0)
        raise
    return FranzCommitMessage(rows=rows, counts=deliveries.by_topic())


def produce_all(
    producer: Any,
    deliveries: Deliveries,
    bootstrap: str,
    max_block_ms: int,
    columns: SinkColumns,
    batches: Iterator[Any],
    known: dict[str, int],
    digest: Any | None = None,
) -> int:
    """Hand every row to ``producer`` (``known``: topic -> partition count, filled as topics
    are met); the number of rows. ``digest`` (a ``hashlib`` object), if given, is fed every
    record (:func:`franz.spark.write_rows.digest_records`)."""
    from confluent_kafka import KafkaException

    rows = 0
    produce = producer.produce
    plain = not columns.headers and columns.timestamp is None
    for batch in batches:
        for topic in batch_topics(batch, columns):
            if topic not in known:
                known[topic] = _topic_partitions(producer, topic, bootstrap, max_block_ms)
        records = batch_records(batch, columns)
        if digest is not None:
            records = digest_records(records, digest)
        for topic, key, value, partition, headers, timestamp in records:
            while True:
                try:
                    if plain:  # keywords cost ~40 % more per call: pass them only if needed
                        produce(topic, value, key, partition)
                    else:
                        produce(topic, value, key, partition, timestamp=timestamp, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)  # the local queue is full: let deliveries drain it
                    deliveries.check()
                except KafkaException as exc:
                    where = f"partition {partition}" if partition >= 0 else "its partitioner"
                    raise FranzWriteError(
                        f"Failed to send a record to topic {topic} ({where}; the topic has "
                        f"{known.get(topic, '?')} partitions): {exc.args[0].str()}"
                    ) from None
            rows += 1
            if rows % POLL_EVERY == 0:
                producer.poll(0)
                deliveries.check()
    return rows


def _written_topics(messages: list[WriterCommitMessage | None]) -> set[str]:
    topics: set[str] = set()
    for message in messages:
        if isinstance(message, FranzCommitMessage):
            topics.update(topic for topic, parts in message.counts.items() if parts)
    return topics


def _rows(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.rows for m in messages if isinstance(m, FranzCommitMessage))


class _FranzWriter:
    """What both writers share: validated options and columns (checked at planning time)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.client = client_config(options)
        self.conf, self.max_block_ms = producer_settings(self.client)
        self.columns = sink_columns(schema, options.get("topic"))
        self.topic_option = options.get("topic")
        self.exactly_once = parse_bool(options, "exactlyOnce", False)
        if self.exactly_once and "transactional.id" in self.client:
            raise OptionError(
                "Kafka option 'kafka.transactional.id' is not supported with exactlyOnce: the "
                "sink sets one per write task (franz-spark-<queryId>-<partition>)"
            )


class FranzBatchWriter(_FranzWriter, DataSourceArrowWriter):
    """``df.write.format("franz")``: at-least-once, append only (as Spark's Kafka sink)."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise ValueError(
                "Save mode Overwrite not allowed for Kafka: topics are append-only. "
                'Use mode("append") (a Python data source has no ErrorIfExists mode, the '
                "default of Spark's Kafka sink)."
            )
        super().__init__(options, schema)
        if self.exactly_once:
            raise OptionError(
                "Option 'exactlyOnce' applies to streaming writes only (writeStream): a batch "
                "write has no id that survives a re-run, so a failed job run again would "
                "write its committed tasks again; leave it unset for df.write"
            )

    def write(self, iterator: Iterator[Any]) -> FranzCommitMessage:
        return produce_batches(self.conf, self.max_block_ms, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info(
            "batch write committed: %d records to %s",
            _rows(messages),
            sorted(_written_topics(messages)),
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "batch write aborted; %d records of the tasks that finished stay in %s "
            "(nothing to undo: topics are append-only)",
            _rows(messages),
            sorted(_written_topics(messages)),
        )


class FranzStreamWriter(_FranzWriter, DataSourceStreamArrowWriter):
    """``df.writeStream.format("franz")``: append and complete modes; a micro-batch whose
    commit completed is never written twice (see the module docstring)."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        super().__init__(options, schema)
        self.complete_mode = overwrite  # Kafka can't truncate: complete mode appends, as Spark

    def _admin_config(self) -> dict[str, str | int | float | bool]:
        """The marker client's settings: the user's, without the producer-only
        ``max.block.ms`` (librdkafka refuses unknown keys), and quiet below errors."""
        conf: dict[str, str | int | float | bool] = {"log_level": 3}
        conf.update({k: v for k, v in self.client.items() if k != "max.block.ms"})
        return conf

    def _last_marked_batch(self, query_id: str) -> int | None:
        """The highest batch id marked committed for ``query_id``, or None."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka.admin import AdminClient

        group = marker_group(query_id)
        admin = AdminClient(self._admin_config())
        timeout = self.max_block_ms / 1000
        future = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=timeout
        )[group]
        try:
            result = future.result(timeout=timeout + 5)
        except Exception as exc:
            raise FranzWriteError(
                f"Could not read the sink's commit markers (group {group}) from "
                f"{self.client.get('bootstrap.servers')}: {exc}"
            ) from None
        marked = [
            decode_marker(tp.metadata, tp.offset)
            for tp in result.topic_partitions or []
            if tp.error is None and tp.offset >= 0
        ]
        found = [batch for batch in marked if batch is not None]
        return max(found) if found else None

    def write(self, iterator: Iterator[Any]) -> FranzCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        query_id = batch_id = task_partition = None
        if context is not None:
            query_id = context.getLocalProperty("sql.streaming.queryId")
            raw_batch = context.getLocalProperty("streaming.sql.batchId")
            batch_id = int(raw_batch) if raw_batch is not None else None
            task_partition = context.partitionId()
        if self.exactly_once:
            if query_id is None or batch_id is None or task_partition is None:
                raise FranzWriteError(
                    "exactlyOnce needs the streaming query id and batch id of the write task "
                    "(TaskContext local properties sql.streaming.queryId, "
                    "streaming.sql.batchId); none were found"
                )
            from franz.spark.txn_writer import write_transactional

            return write_transactional(
                self.client,
                self.conf,
                self.max_block_ms,
                self.columns,
                iterator,
                query_id,
                batch_id,
                task_partition,
            )
        if query_id is not None and batch_id is not None:
            last = self._last_marked_batch(query_id)
            if last is not None and batch_id <= last:
                skipped = sum(batch.num_rows for batch in iterator)
                log.warning(
                    "query %s batch %d task %s: skipped %d rows, the batch was already "
                    "committed (marker: batch %d)",
                    query_id,
                    batch_id,
                    task_partition,
                    skipped,
                    last,
                )
                return FranzCommitMessage(
                    query_id=query_id,
                    batch_id=batch_id,
                    task_partition=task_partition,
                    skipped=True,
                )
        message = produce_batches(self.conf, self.max_block_ms, self.columns, iterator)
        message.query_id = query_id
        message.batch_id = batch_id
        message.task_partition = task_partition
        return message

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        query_ids = {m.query_id for m in messages if isinstance(m, FranzCommitMessage)}
        query_ids.discard(None)
        if not query_ids:
            log.info("batch %d: no task reported a query id; nothing to mark", batchId)
            return
        query_id = str(sorted(q for q in query_ids if q is not None)[0])
        reports = [m for m in messages if isinstance(m, FranzCommitMessage)]
        if self.exactly_once:  # each task committed its rows and its marker: nothing to mark
            log.info(
                "query %s batch %d committed: %d records in %d transactions (%d tasks skipped)",
                query_id,
                batchId,
                _rows(messages),
                sum(1 for m in reports if m.rows and not m.skipped),
                sum(1 for m in reports if m.skipped),
            )
            return
        if reports and all(m.skipped for m in reports):
            log.warning("query %s batch %d: replay skipped, already marked", query_id, batchId)
            return
        topics = _written_topics(messages)
        if self.topic_option is not None:
            topics.add(self.topic_option)
        rows = _rows(messages)
        if not topics:
            log.info("query %s batch %d wrote nothing; nothing to mark", query_id, batchId)
            return
        try:
            self._store_marker(query_id, batchId, rows, sorted(topics))
        except Exception as exc:  # see the module docstring: never make Spark replay
            log.warning(
                "query %s batch %d: could not store the sink's commit marker (%s); a replay "
                "of this batch would write it again",
                query_id,
                batchId,
                exc,
            )
            return
        log.info(
            "query %s batch %d committed: %d records to %s", query_id, batchId, rows, sorted(topics)
        )

    def _store_marker(self, query_id: str, batch_id: int, rows: int, topics: list[str]) -> None:
        """Commit the marker through the admin API (OffsetCommit with no member, as a
        standalone group's commit), bounded by ``kafka.max.block.ms``."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        metadata = encode_marker(query_id, batch_id, rows)
        group = marker_group(query_id)
        offsets = [TopicPartition(t, 0, batch_id + 1, metadata=metadata) for t in topics]
        timeout = self.max_block_ms / 1000
        admin = AdminClient(self._admin_config())
        future = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, offsets)], request_timeout=timeout
        )[group]
        result = future.result(timeout=timeout + 5)
        errors = [
            f"{tp.topic}-{tp.partition}: {tp.error}"
            for tp in result.topic_partitions or []
            if tp.error is not None
        ]
        if errors:
            raise FranzWriteError("; ".join(errors))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.exactly_once:
            log.warning(
                "batch %d aborted; the tasks that finished committed their transactions and "
                "markers (a replay skips them), the others left nothing visible to "
                "read_committed consumers",
                batchId,
            )
            return
        log.warning(
            "batch %d aborted; %d records of the tasks that finished stay in %s (nothing to "
            "undo: topics are append-only; no marker is stored, so a replay writes the batch "
            "again)",
            batchId,
            _rows(messages),
            sorted(_written_topics(messages)),
        )
