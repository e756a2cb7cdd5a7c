"""Produce (0): append record batches to partition leaders.

The hot path. Records stay opaque: ``Log.append_as_leader`` checks each batch's header and
CRC, patches offsets and leader epoch in place, and writes the bytes as they came; nothing
here decodes a record. Per partition the outcome is an error code (errors as values):
INVALID_TOPIC_EXCEPTION (also for internal topics such as ``__consumer_offsets``, which only
the coordinator writes), UNKNOWN_TOPIC_OR_PARTITION (Produce never auto-creates, as in
Kafka; Metadata does), CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD, INVALID_TIMESTAMP,
the idempotence errors, KAFKA_STORAGE_ERROR, and NOT_LEADER_OR_FOLLOWER for a partition this
broker does not lead (``franz.broker.leader_routing``; v10+ with the current leader's id,
epoch and endpoint, KIP-951). INVALID_RECORD and INVALID_TIMESTAMP for
individual records (a null key on a compacted topic, a timestamp out of
``message.timestamp.before.max.ms`` / ``after.max.ms``) carry ``record_errors`` and
``error_message`` at v8+ (KIP-467; ``franz.storage.log_validator``). A zstd batch below
v7 is UNSUPPORTED_COMPRESSION_TYPE (KIP-110; Kafka's ``ProduceRequest.validateRecords``).

acks: 1 answers once the batch is in the leader's log. -1 (all): the committed ISR must hold
at least ``min.insync.replicas`` (capped by the replication factor) before the append, else
NOT_ENOUGH_REPLICAS and nothing is written; after it the response waits until the high
watermark passes each partition's batch (Kafka's ``DelayedProduce``,
``ReplicaManager.wait_for_replication``): REQUEST_TIMED_OUT after the request's
``timeout_ms``, NOT_LEADER_OR_FOLLOWER if leadership moved meanwhile,
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum. With the ISR being this
broker alone the high watermark is already there: the response is built in the same turn,
with no waiting object. acks=0 sends no response;
as Kafka does, a failed acks=0 produce closes the connection so the client notices.
Produce v0-2 (pre-0.11 clients) carry message sets of magic 0/1: each partition's set is
validated (CRC-32 per message: CORRUPT_MESSAGE) and up-converted to one v2 batch before the
append (``franz.protocol.records.legacy``), as Kafka 3.9 does; the log only sees v2.
Transactional produce (KIP-98): batches with the isTransactional attribute (bit 4) are
appended like idempotent ones; the partition's producer state opens the producer's
transaction at its first such batch (the LSO stays there until the coordinator's marker,
``franz.broker.txn_markers``), and its errors map to Kafka's codes (INVALID_PRODUCER_EPOCH,
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_TXN_STATE, ...; ``error_code_for``). A request
carrying transactional batches but no ``transactional_id`` is refused whole with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's ``handleProduceRequest``:
``hasTransactionalRecords`` and no authorized transactional id).

KIP-890 part 1 (``transaction.partition.verification.enable``, default true; Kafka 3.9's
``ReplicaManager.handleProduceAppend``): with a ``transactional_id``, the partitions with
transactional batches (of one producer id and epoch, else every partition is
INVALID_PRODUCER_ID_MAPPING, Kafka's ``InvalidPidMappingException``) whose producer has no
transaction ongoing there are verified with the transaction coordinator
(``franz.broker.txn_verification``) before the append, which then carries the partition's
verification guard. A partition not verified is not appended; its error, as Kafka maps it:
INVALID_TXN_STATE "Partition was not added to the transaction" (v3-10) or
TRANSACTION_ABORTABLE without a message (v11+) when the coordinator does not have it in the
transaction; NOT_ENOUGH_REPLICAS "Unable to verify the partition has been added to the
transaction. Underlying error: <name>" for NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and CONCURRENT_TRANSACTIONS (retriable errors old
clients may not retry; NOT_ENOUGH_REPLICAS does not make them refresh metadata); the others
(INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, ...) as they come, without a message.
Requests without a ``transactional_id`` (plain and idempotent producers) and partitions
whose producer's transaction is already ongoing go straight to the append, in the request's
turn. While a transactional Produce of a connection waits for its verification, the
connection's next transactional Produce waits for it (``_verifying``): appends stay in
arrival order, which idempotence needs, as Kafka's muted channel keeps them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from collections.abc import Awaitable, Coroutine
from typing import Any, Final

from franz.broker.authz import authorize, filter_authorized
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.broker.leader_routing import current_leader, leader_nodes, local_partition
from franz.broker.topic_manager import validate_topic_name
from franz.broker.txn_verification import VerificationResult
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import (
    ApiError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    error_code_for,
)
from franz.metadata.cache import is_internal_topic
from franz.network.connection import CloseConnection
from franz.protocol.legacy_versions import encode_legacy_produce_response
from franz.protocol.messages import timedelta_ms
from franz.protocol.records.batch import MAGIC_V2
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.legacy import record_set_magic, upconvert
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition

__all__ = ["handle"]

log = logging.getLogger(__name__)

#: The first Produce version that may carry zstd batches (KIP-110).
ZSTD_MIN_VERSION = 7
#: The first Produce version with the current-leader hints (KIP-951).
LEADER_HINT_VERSION = 10
#: The low byte of a batch's ``attributes`` (``franz.protocol.records.batch``).
_ATTRIBUTES_LOW = 22
#: The isTransactional attribute bit (``DefaultRecordBatch.TRANSACTIONAL_FLAG_MASK``).
_TRANSACTIONAL_BIT = 0x10
#: baseOffset int64 + batchLength int32: the bytes a batch's ``batchLength`` does not count.
_LOG_OVERHEAD = 12
#: Produce v3 introduced record batches (magic 2); v0-2 carry message sets of magic 0/1.
FIRST_BATCH_VERSION = 3
#: The first Produce version answered TRANSACTION_ABORTABLE (KIP-890; Kafka's
#: ``genericError`` operation for ``apiVersion > 10``).
TRANSACTION_ABORTABLE_VERSION = 11


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    if (
        request.transactional_id is not None
        and ctx.api_version >= FIRST_BATCH_VERSION
        and ctx.services.config.get("transaction.partition.verification.enable")
    ):
        previous = _verifying.get(ctx.connection)
        if previous is not None and not previous.done():
            return _track(ctx, _after(previous, ctx, request))
        return _verify_and_append(ctx, request, track=True)
    return _append_all(ctx, request, None)


#: Per connection, the transactional Produce still waiting for its verification (or waiting
#: for one that is): the connection's next transactional Produce waits for it, so appends
#: keep the arrival order that idempotence needs (``franz.network.connection``'s eager
#: handling; Kafka mutes the channel until the response is sent).
_verifying: weakref.WeakKeyDictionary[Any, asyncio.Future[HandlerResult]] = (
    weakref.WeakKeyDictionary()
)


def _track(
    ctx: RequestContext, work: Coroutine[Any, Any, HandlerResult]
) -> asyncio.Future[HandlerResult]:
    task = asyncio.ensure_future(work)
    _verifying[ctx.connection] = task
    return task


async def _after(
    previous: asyncio.Future[HandlerResult], ctx: RequestContext, request: Any
) -> HandlerResult:
    await asyncio.wait([previous])  # its outcome is its own request's
    result = _verify_and_append(ctx, request, track=False)
    if inspect.isawaitable(result):
        return await result
    return result


def _verify_and_append(
    ctx: RequestContext, request: Any, *, track: bool
) -> HandlerResult | Awaitable[HandlerResult]:
    """KIP-890 (module docstring): start the verification of the request's transactional
    partitions; append at once when none needs the coordinator."""
    producer = _transactional_producer(ctx, request)
    if producer is _MIXED_PRODUCERS:
        return _refuse_all(
            ctx,
            request,
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            "Transactional records contained more than one producer ID",
        )
    if producer is None:
        return _append_all(ctx, request, None)
    producer_id, epoch, sequences = producer
    started = ctx.services.txn_verifier.maybe_start_transaction_verification(
        producer_id, epoch, sequences
    )
    if not started.guards:
        return _append_all(ctx, request, started)
    work = _verified(ctx, request, started, producer_id, epoch)
    return _track(ctx, work) if track else work


async def _verified(
    ctx: RequestContext,
    request: Any,
    started: VerificationResult,
    producer_id: int,
    epoch: int,
) -> HandlerResult:
    """KIP-890: wait for the coordinator's verification, then append what it verified."""
    verification = await ctx.services.txn_verifier.complete_transaction_verification(
        request.transactional_id,
        producer_id,
        epoch,
        started,
        abortable=ctx.api_version >= TRANSACTION_ABORTABLE_VERSION,
    )
    result = _append_all(ctx, request, verification)
    if inspect.isawaitable(result):
        return await result
    return result


def _append_all(
    ctx: RequestContext, request: Any, verification: VerificationResult | None
) -> HandlerResult | Awaitable[HandlerResult]:
    services = ctx.services
    acks = request.acks
    replica_manager = services.replica_manager
    cache = services.metadata_cache
    bad_acks = acks not in (0, 1, -1)
    txn_unauthorized = (
        ctx.api_version >= FIRST_BATCH_VERSION
        and _has_transactional_records(request)
        and (
            request.transactional_id is None
            or not authorize(
                ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
            )
        )
    )
    # ACLs (KafkaApis.handleProduceRequest): WRITE on each topic.
    authorized = filter_authorized(
        ctx, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in request.topic_data)
    )
    zstd_refused = ctx.api_version < ZSTD_MIN_VERSION
    failed = False
    legacy = ctx.api_version < FIRST_BATCH_VERSION
    responses = []
    #: acks=all: the appended partitions' response entries and required offsets.
    replicating: dict[TopicPartition, tuple[dict[str, Any], int]] = {}
    for topic_data in request.topic_data:
        name = topic_data.name
        partition_responses = []
        topic_error: ErrorCode | None = None
        try:
            validate_topic_name(name)
        except ApiError as exc:
            topic_error = exc.code
        else:
            if name not in authorized:
                topic_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not cache.contains(name):
                topic_error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif is_internal_topic(name):
                # Kafka: "Cannot append to internal topic"; only coordinators write there.
                topic_error = ErrorCode.INVALID_TOPIC_EXCEPTION
        if txn_unauthorized:
            # Kafka answers the whole request with it, before any other check.
            topic_error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif bad_acks:
            topic_error = ErrorCode.INVALID_REQUIRED_ACKS
        for partition_data in topic_data.partition_data:
            index = partition_data.index
            if topic_error is not None:
                failed = True
                partition_responses.append(_error(index, topic_error, None))
                continue
            records = partition_data.records
            if not records:
                failed = True
                partition_responses.append(
                    _error(index, ErrorCode.CORRUPT_MESSAGE, "the record set is empty")
                )
                continue
            # Message sets (v0-2) carry their codec elsewhere; up-conversion refuses zstd.
            if zstd_refused and not legacy and _is_zstd(records):
                failed = True
                partition_responses.append(
                    _error(
                        index,
                        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                        f"Produce requests with version {ctx.api_version} are not allowed to use "
                        "ZStandard compression",
                    )
                )
                continue
            tp = TopicPartition(name, index)
            routed = local_partition(services, tp)
            if isinstance(routed, ErrorCode):
                if routed != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    # Kafka's appendToLocalLog counts a partition not led here too.
                    replica_manager.topic_stats.produce_request(name)
                failed = True
                partition_responses.append(_error(index, routed, None))
                continue
            guard = None
            if verification is not None:
                refused = verification.errors.get(tp)
                if refused is not None:
                    failed = True
                    partition_responses.append(_error(index, *_verification_error(refused)))
                    continue
                guard = verification.guards.get(tp)
            try:
                if legacy:
                    records = _upconvert(records)
                info = replica_manager.append(
                    tp, records, required_acks=acks, verification_guard=guard
                )
            except (InvalidRecordError, InvalidTimestampError) as exc:
                failed = True
                log.debug("produce to %s-%d failed: %s", name, index, exc)
                partition_responses.append(_record_errors(index, exc, replica_manager, tp))
                continue
            except Exception as exc:
                failed = True
                code = error_code_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("unexpected error appending to %s-%d", name, index)
                else:
                    log.debug("produce to %s-%d failed: %s", name, index, exc)
                partition_responses.append(_append_error(index, code, replica_manager, tp))
                continue
            if legacy:  # ProduceMessageConversionsPerSec (franz.metrics.traffic)
                replica_manager.topic_stats.produce_converted(
                    name, info.last_offset - info.first_offset + 1
                )
            response = {
                "index": index,
                "error_code": 0,
                "base_offset": info.first_offset,
                "log_append_time": info.log_append_time,
                "log_start_offset": info.log_start_offset,
            }
            partition_responses.append(response)
            if acks == -1:
                required = info.last_offset + 1
                outcome = replica_manager.replication_done(tp, required)
                if outcome is None:
                    replicating[tp] = (response, required)
                elif outcome != ErrorCode.NONE:
                    failed = True
                    response["error_code"] = outcome
        responses.append({"name": name, "partition_responses": partition_responses})
    if acks == 0:
        if failed:
            raise CloseConnection
        return None
    if replicating:
        return _delayed(ctx, request, responses, replicating, failed)
    return _body(ctx, responses, failed)


async def _delayed(
    ctx: RequestContext,
    request: Any,
    responses: list[dict[str, Any]],
    replicating: dict[TopicPartition, tuple[dict[str, Any], int]],
    failed: bool,
) -> HandlerResult:
    """acks=all: wait for the followers (Kafka's ``DelayedProduce``), then answer."""
    outcomes = await ctx.services.replica_manager.wait_for_replication(
        {tp: required for tp, (_response, required) in replicating.items()},
        timedelta_ms(request.timeout),
    )
    for tp, code in outcomes.items():
        if code != ErrorCode.NONE:
            failed = True
            replicating[tp][0]["error_code"] = code
    return _body(ctx, responses, failed)


def _body(ctx: RequestContext, responses: list[dict[str, Any]], failed: bool) -> HandlerResult:
    body: dict[str, Any] = {"responses": responses, "throttle_time": 0}
    if failed and ctx.api_version >= LEADER_HINT_VERSION:
        _add_leader_hints(ctx, body)
    if ctx.api_version < FIRST_BATCH_VERSION:
        return RawBody([encode_legacy_produce_response(ctx.api_version, body)])
    return body


def _add_leader_hints(ctx: RequestContext, body: dict[str, Any]) -> None:
    """KIP-951 (v10+): each NOT_LEADER_OR_FOLLOWER partition names its current leader and
    epoch, and the response lists those leaders' endpoints, so the client goes straight to
    the new leader without a Metadata round trip (Kafka's ``handleProduceRequest``)."""
    leaders = []
    for topic in body["responses"]:
        for partition in topic["partition_responses"]:
            if partition["error_code"] != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                continue
            tp = TopicPartition(topic["name"], partition["index"])
            leader = current_leader(ctx.services, tp, ctx.listener_name)
            partition["current_leader"] = leader.hint()
            leaders.append(leader)
    body["node_endpoints"] = [
        {"node_id": node.id, "host": node.host, "port": node.port, "rack": node.rack}
        for node in leader_nodes(leaders)
    ]


def _upconvert(records: memoryview) -> bytearray:
    """Produce v0-2: a message set of magic 0/1 becomes one v2 batch (Kafka's
    ``LogValidator`` up-conversion); a v2 batch there is INVALID_RECORD, as in Kafka."""
    magic = record_set_magic(records)
    if magic is not None and magic >= MAGIC_V2:
        raise InvalidRecordError(
            "Produce requests with version 0-2 may only carry message format v0 or v1"
        )
    return upconvert(records)


def _has_transactional_records(request: Any) -> bool:
    """Kafka's ``ProduceRequest.hasTransactionalRecords``: any batch of any partition with
    the isTransactional attribute (bit 4). Batch headers only: baseOffset int64 and
    batchLength int32 lead to the next batch."""
    for topic_data in request.topic_data:
        for partition_data in topic_data.partition_data:
            records = partition_data.records
            if not records:
                continue
            size = len(records)
            position = 0
            while position + _ATTRIBUTES_LOW < size:
                if records[position + _ATTRIBUTES_LOW] & _TRANSACTIONAL_BIT:
                    return True
                length = int.from_bytes(
                    records[position + 8 : position + _LOG_OVERHEAD], "big", signed=True
                )
                if length < 0:
                    break  # corrupt: the append refuses it
                position += _LOG_OVERHEAD + length
    return False


#: The marker of a request whose transactional batches name more than one producer.
_MIXED_PRODUCERS: Final[tuple[int, int, dict[TopicPartition, int]]] = (-1, -1, {})
#: Offsets in a v2 batch header: producerId int64, producerEpoch int16, baseSequence int32.
_PRODUCER_ID, _PRODUCER_EPOCH, _BASE_SEQUENCE = 43, 51, 53
_HEADER_END = 61


def _transactional_producer(
    ctx: RequestContext, request: Any
) -> tuple[int, int, dict[TopicPartition, int]] | None:
    """Kafka's ``handleProduceAppend`` scan: the producer id and epoch of the batches with a
    producer id and the isTransactional bit, and per partition holding some the first
    batch's base sequence; None when there are none, ``_MIXED_PRODUCERS`` when they name
    more than one (id, epoch). Partitions of unknown or internal topics are left to the
    append loop's checks, as Kafka verifies only the entries that passed them."""
    cache = ctx.services.metadata_cache
    producers: set[tuple[int, int]] = set()
    sequences: dict[TopicPartition, int] = {}
    for topic_data in request.topic_data:
        name = topic_data.name
        if not cache.contains(name) or is_internal_topic(name):
            continue
        for partition_data in topic_data.partition_data:
            records = partition_data.records
            if not records:
                continue
            size = len(records)
            position = 0
            while position + _HEADER_END <= size:
                producer_id = int.from_bytes(
                    records[position + _PRODUCER_ID : position + _PRODUCER_EPOCH],
                    "big",
                    signed=True,
                )
                if records[position + _ATTRIBUTES_LOW] & _TRANSACTIONAL_BIT and producer_id >= 0:
                    epoch = int.from_bytes(
                        records[position + _PRODUCER_EPOCH : position + _BASE_SEQUENCE],
                        "big",
                        signed=True,
                    )
                    producers.add((producer_id, epoch))
                    tp = TopicPartition(name, partition_data.index)
                    if tp not in sequences:  # Kafka: records.firstBatch.baseSequence
                        sequences[tp] = int.from_bytes(
                            records[_BASE_SEQUENCE : _BASE_SEQUENCE + 4], "big", signed=True
                        )
                length = int.from_bytes(
                    records[position + 8 : position + _LOG_OVERHEAD], "big", signed=True
                )
                if length < 0:
                    break  # corrupt: the append refuses it
                position += _LOG_OVERHEAD + length
    if not producers:
        return None
    if len(producers) > 1:
        return _MIXED_PRODUCERS
    (producer_id, epoch), = producers
    return producer_id, epoch, sequences


def _verification_error(code: ErrorCode) -> tuple[ErrorCode, str | None]:
    """A failed verification as Kafka's ``handleProduceAppend`` answers it (module
    docstring): INVALID_TXN_STATE with its message, the retriable coordinator errors as
    NOT_ENOUGH_REPLICAS, the rest unchanged and without a message."""
    if code is ErrorCode.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _RETRIABLE_VERIFICATION_ERRORS:
        return ErrorCode.NOT_ENOUGH_REPLICAS, (
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {code.name}"
        )
    return code, None


#: Verification errors Kafka 3.9 answers as NOT_ENOUGH_REPLICAS (no epoch-bump support).
_RETRIABLE_VERIFICATION_ERRORS: Final = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)


def _refuse_all(
    ctx: RequestContext, request: Any, code: ErrorCode, message: str
) -> HandlerResult:
    """Every partition ``code`` and ``message`` (Kafka's ``handleError`` of an exception
    thrown by ``handleProduceAppend``: ``ProduceRequest.getErrorResponse`` with the
    exception's message)."""
    if request.acks == 0:
        raise CloseConnection
    responses = [
        {
            "name": topic_data.name,
            "partition_responses": [
                _error(p.index, code, message) for p in topic_data.partition_data
            ],
        }
        for topic_data in request.topic_data
    ]
    return _body(ctx, responses, True)


def _is_zstd(records: memoryview | bytes) -> bool:
    """Whether the first batch's codec (``attributes`` bits 0-2) is zstd (Kafka's
    ``ProduceRequest.validateRecords`` looks at the first batch)."""
    if len(records) <= _ATTRIBUTES_LOW:
        return False
    return records[_ATTRIBUTES_LOW] & 0x07 == CompressionType.ZSTD


def _error(index: int, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "error_message": message,
    }


#: Kafka's ``ReplicaManager.appendToLocalLog`` answers these with no log start offset; any
#: other failed append reports the partition's.
_NO_LOG_START_OFFSET: Final = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


def _append_error(
    index: int, code: ErrorCode, replica_manager: ReplicaManager, tp: TopicPartition
) -> dict[str, Any]:
    """A failed append as Kafka answers it: no ``error_message`` (Kafka sends one only for
    record validation errors, below; the reason is in the broker's log), and the log start
    offset unless ``code`` is one of ``_NO_LOG_START_OFFSET``."""
    response = _error(index, code, None)
    if code not in _NO_LOG_START_OFFSET:
        partition = replica_manager.partitions.get(tp)
        if partition is not None:
            response["log_start_offset"] = partition.log_start_offset
    return response


def _record_errors(
    index: int,
    exc: InvalidRecordError | InvalidTimestampError,
    replica_manager: ReplicaManager,
    tp: TopicPartition,
) -> dict[str, Any]:
    """A partition refused by record validation (KIP-467, Kafka's ``RecordValidationException``
    branch of ``ReplicaManager.appendToLocalLog``): v8+ lists the rejected records
    (``record_errors``: batch index and message) with the error's message, and the
    partition's log start offset, as Kafka answers."""
    response = _error(index, error_code_for(exc), exc.message)
    if exc.record_errors:
        response["record_errors"] = [
            {"batch_index": error.batch_index, "batch_index_error_message": error.message}
            for error in exc.record_errors
        ]
        partition = replica_manager.partitions.get(tp)
        if partition is not None:
            response["log_start_offset"] = partition.log_start_offset
    return response
