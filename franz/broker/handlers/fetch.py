"""Fetch (1): consumers read committed batches, long-polling for new ones.

* Reads whole batches from the one holding the fetch offset (a mid-batch offset returns its
  batch; the client skips the records before it), up to each partition's ``max_bytes`` and
  the request's ``max_bytes`` (capped by the broker's ``fetch.max.bytes``); the first
  partition with data returns at least one batch even if larger (KIP-74).
* Records are not copied: each partition's data is a ``FileRegion`` of its segment file,
  written with ``sendfile`` by the network layer (``franz.protocol.fetch`` encodes the rest).
* Long poll: fewer than ``min_bytes`` and no error -> wait until an append to one of the
  partitions (``ReplicaManager.wait_for_appends``; watching from the read on, Kafka's
  ``tryCompleteElseWatch``) or ``max_wait_ms``, then read again.
* Incremental fetch sessions (v7+, KIP-227): ``franz.broker.fetch_session``.
* A topic with ``compression.type=zstd`` answers UNSUPPORTED_COMPRESSION_TYPE to Fetch below
  v10, as Kafka does (KIP-110; by the topic's config, not the stored batches).
* Topic ids replace names from v13; an unknown id gets UNKNOWN_TOPIC_ID.
* Isolation (KIP-98, Kafka's ``FetchIsolation``): every partition answers its last stable
  offset (``Partition.last_stable_offset``: the first offset of the oldest open transaction,
  or the HW). READ_UNCOMMITTED reads up to the HW, READ_COMMITTED (``isolation_level`` 1, v4+)
  up to the LSO (``TXN_COMMITTED``) and answers the aborted transactions overlapping the
  batches sent (Kafka's ``UnifiedLog.addAbortedTransactions``: from the fetch offset to the
  offset after the last batch sent, ``Partition.collect_aborted_transactions``), so the
  consumer drops their records; READ_UNCOMMITTED answers null there. Still ``sendfile``: only
  the read's bound and the list change. The upper bound is exact (the batch headers of the
  range are walked, ``_next_offset_after``), and only when the transaction index has an
  abort at or after the fetch offset below the LSO; Kafka's is an offset-index entry at or
  past the range's end (coarser; the consumer ignores the extra entries either way). A
  consumer's long poll wakes when the HW moves and when a marker is appended
  (``franz.broker.txn_markers``): both move the LSO.
* Fetch v0-3 (pre-0.11 clients): the batches read are down-converted to message sets of
  magic 0 (v0-1) or 1 (v2-3) in memory (``franz.protocol.records.legacy``), as Kafka 3.9
  does, and sized as Kafka sends them (the read's size: cut, or padded with an overflow
  batch, ``downconvert_for_fetch``); a zstd batch gives UNSUPPORTED_COMPRESSION_TYPE. The
  zero-copy path above is untouched for v4+.
* Leader routing (``franz.broker.leader_routing``): a partition not hosted here is
  NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION when the metadata cache does not know
  it); ``current_leader_epoch`` is fenced first; a consumer below v11 must fetch from the
  leader (NOT_LEADER_OR_FOLLOWER from a follower), one at v11+ reads a follower replica up to
  its high watermark, as Kafka (KIP-392, no ``replica.selector``). v16+ responses carry the
  current-leader hints (KIP-951).
* Truncation on fetch (v12+, KIP-320, Kafka's ``Partition.readRecords``): a partition whose
  ``last_fetched_epoch`` is given and does not end at or after its fetch offset in this
  replica's leader-epoch cache gets ``diverging_epoch`` {epoch, end offset} and no records
  (``Partition.diverging_epoch``), answered at once; an epoch this replica cannot place, or
  a fetch offset below the log start offset, OFFSET_OUT_OF_RANGE.
* Follower fetches (replica id >= 0, ``replica_state`` from v15, KIP-903): only from the
  leader and only by a replica assigned to the partition (else NOT_LEADER_OR_FOLLOWER, as
  Kafka's ``followerReplicaOrThrow``); the request's first read records the follower's fetch
  offset and log start offset on the leader before reading, unless the fetch diverges or is
  out of range (``ReplicaManager.update_follower_fetch_state``: ISR expansion, HW); the
  re-reads of its long poll do not (Kafka's ``updateFetchState = !readFromPurgatory``). Reads
  go up to the log end offset, not the HW. A follower's long poll
  wakes on appends; a consumer's when the HW advances.
* Replication throttles (KIP-73, ``franz.cluster.replication_quota``): while this leader's
  ``leader.replication.throttled.rate`` is exceeded, a follower outside the ISR gets no
  records for the partitions its topic's ``leader.replication.throttled.replicas`` lists with
  this broker (Kafka's ``shouldLeaderThrottle``; they count nothing towards ``min_bytes``, as
  in its ``DelayedFetch``, so the follower's long poll waits); every answer to a follower
  counts its throttled partitions' records against the quota (``sizeOfThrottledPartitions``,
  in sync or not; 0 bytes too once a rate is set).
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from franz.broker.authz import authorize_cluster, authorizer_of, filter_authorized
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    CachedPartition,
    FetchSession,
    SessionKey,
)
from franz.broker.leader_routing import (
    CONSUMER_REPLICA_ID,
    current_leader,
    leader_nodes,
    local_partition,
)
from franz.cluster.replication_quota import ReplicationQuota
from franz.errors import ErrorCode, error_code_for
from franz.protocol.fetch import (
    FIRST_NODE_ENDPOINTS,
    FetchPartitionResult,
    FetchTopicResult,
    FileRegion,
    NodeEndpoint,
    encode_fetch_response,
)
from franz.protocol.legacy_versions import LEGACY_FETCH_BELOW
from franz.protocol.messages import timedelta_ms
from franz.protocol.records.legacy import MAGIC_V0, MAGIC_V1, downconvert_for_fetch
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition
from franz.storage.log import FetchDataInfo

__all__ = ["handle"]

_ZERO_UUID = uuid.UUID(int=0)
#: A v2 batch's first fields: baseOffset int64, batchLength int32, partitionLeaderEpoch
#: int32, magic int8, crc uint32, attributes int16, lastOffsetDelta int32.
_HEADER_PREFIX = struct.Struct(">qi4x1x4x2xi")
#: baseOffset + batchLength: the bytes before a batch's ``batchLength`` counts.
_LOG_OVERHEAD = 12
#: The first Fetch version that may carry zstd batches (KIP-110).
ZSTD_MIN_VERSION = 10
#: The first Fetch version whose consumers send client metadata (KIP-392, rack id).
FIRST_CLIENT_METADATA_VERSION = 11


@dataclass(slots=True)
class _Plan:
    version: int
    partitions: list[CachedPartition]
    topic_ids: dict[str, uuid.UUID]
    session: FetchSession | None
    incremental: bool
    max_bytes: int
    min_bytes: int
    max_wait_ms: int
    require_leader: bool
    read_committed: bool = False
    #: The fetching follower's broker id, -1 for a consumer.
    follower_id: int = -1
    follower_epoch: int = -1
    #: Topics the principal may not read: TOPIC_AUTHORIZATION_FAILED (``_unauthorized``).
    unauthorized: frozenset[str] = frozenset()


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    services = ctx.services
    version = ctx.api_version
    metadata = services.metadata_cache
    requested: list[CachedPartition] = []
    topic_ids: dict[str, uuid.UUID] = {}
    for topic in request.topics:
        name: str = getattr(topic, "topic", None) or ""
        topic_id = getattr(topic, "topic_id", None)
        if version >= 13:
            name = metadata.topic_name(topic_id) or f"<unknown topic id {topic_id}>"
            topic_ids[name] = topic_id if topic_id is not None else _ZERO_UUID
        else:
            topic_ids[name] = metadata.topic_id(name) or _ZERO_UUID
        for p in topic.partitions:
            requested.append(
                CachedPartition(
                    name,
                    p.partition,
                    p.fetch_offset,
                    p.partition_max_bytes,
                    getattr(p, "current_leader_epoch", -1),
                    getattr(p, "last_fetched_epoch", -1),
                    fetcher_log_start_offset=getattr(p, "log_start_offset", -1),
                )
            )
    forgotten: list[SessionKey] = []
    for topic in getattr(request, "forgotten_topics_data", ()) or ():
        name = getattr(topic, "topic", None) or ""
        if version >= 13:
            name = metadata.topic_name(topic.topic_id) or f"<unknown topic id {topic.topic_id}>"
        forgotten.extend((name, p) for p in topic.partitions)

    session_id = getattr(request, "session_id", 0)
    epoch = getattr(request, "session_epoch", FINAL_EPOCH)
    replica_id = _replica_id(request)
    cache = services.fetch_sessions
    session: FetchSession | None = None
    incremental = False
    if version >= 7:
        if epoch == FINAL_EPOCH:
            if session_id:
                cache.remove(session_id)
        elif epoch == INITIAL_EPOCH:
            if session_id:
                cache.remove(session_id)
            # A follower's session is privileged: consumers never evict it (Kafka's).
            session = cache.create(privileged=replica_id >= 0, size=len(requested))
            if session is not None:
                for cached in requested:
                    session.upsert(cached)
        else:
            found = cache.lookup(session_id, epoch)
            if isinstance(found, ErrorCode):
                return RawBody(encode_fetch_response(version, [], error_code=found))
            session = found
            incremental = True
            for cached in requested:
                session.upsert(cached)
            for key in forgotten:
                session.forget(key)
            cache.touch(session)
            if not session.partitions:
                # Kafka: a session left empty is closed; the answer is sessionless.
                cache.remove(session.session_id)
                session, incremental = None, False
            for cached in session.partitions.values() if session is not None else ():
                if cached.topic not in topic_ids:
                    topic_ids[cached.topic] = metadata.topic_id(cached.topic) or _ZERO_UUID
    if session is not None:
        # Epochs wrap from Int32.MAX to 1 (0 and -1 are the initial and final markers).
        session.next_epoch = (epoch % (2**31 - 1)) + 1 if incremental else 1
        partitions = list(session.partitions.values())
    else:
        partitions = requested
    plan = _Plan(
        version=version,
        partitions=partitions,
        topic_ids=topic_ids,
        session=session,
        incremental=incremental,
        max_bytes=min(request.max_bytes, services.fetch_max_bytes, _quota_window_bytes(ctx)),
        min_bytes=request.min_bytes,
        max_wait_ms=timedelta_ms(request.max_wait),
        require_leader=_fetch_only_leader(version, replica_id),
        read_committed=getattr(request, "isolation_level", 0) == 1,
        follower_id=max(replica_id, -1),
        follower_epoch=_replica_epoch(request),
        unauthorized=_unauthorized(ctx, replica_id, partitions),
    )
    results, total, errors = _read(ctx, plan)
    if plan.max_wait_ms <= 0 or not partitions or total >= plan.min_bytes or errors:
        return _respond(ctx, plan, results)
    # Watching starts now, in the step of the read (Kafka's tryCompleteElseWatch): the long
    # poll's task first runs later, and an append in between must wake it.
    tps = [TopicPartition(c.topic, c.partition) for c in partitions]
    waiter = services.replica_manager.watch_appends(tps, follower=plan.follower_id >= 0)
    return _long_poll(ctx, plan, tps, waiter)


async def _long_poll(
    ctx: RequestContext, plan: _Plan, tps: list[TopicPartition], waiter: asyncio.Future[None]
) -> HandlerResult:
    replica_manager = ctx.services.replica_manager
    deadline = time.monotonic() + plan.max_wait_ms / 1000
    follower = plan.follower_id >= 0
    watching: asyncio.Future[None] | None = waiter
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or replica_manager.shutting_down:
            if watching is not None:  # unregister it
                await replica_manager.wait_for_appends(tps, 0, follower=follower, waiter=watching)
            break
        await replica_manager.wait_for_appends(tps, remaining, follower=follower, waiter=watching)
        watching = None
        results, total, errors = _read(ctx, plan, update_fetch_state=False)
        if total >= plan.min_bytes or errors:
            return _respond(ctx, plan, results)
    results, _, _ = _read(ctx, plan, update_fetch_state=False)
    return _respond(ctx, plan, results)


def _read(
    ctx: RequestContext, plan: _Plan, *, update_fetch_state: bool = True
) -> tuple[list[tuple[CachedPartition, FetchPartitionResult]], int, bool]:
    """Read every partition of ``plan``. ``update_fetch_state``: a follower's read records
    its fetch on the leader; only the request's first read does, never the re-reads of its
    long poll (Kafka's ``updateFetchState = !readFromPurgatory``): a fetch parked before its
    broker stopped must not make that broker look caught up, or even join the ISR, later."""
    remaining = plan.max_bytes
    total = 0
    errors = False
    min_one = True
    out = []
    follower_id = plan.follower_id
    replica_manager = ctx.services.replica_manager
    # The replication throttle: checked once per read, one comparison when unbounded.
    throttle = ctx.services.replication_quotas.leader if follower_id >= 0 else None
    if throttle is not None and not throttle.is_quota_exceeded():
        throttle = None
    for cached in plan.partitions:
        result = FetchPartitionResult(cached.partition)
        out.append((cached, result))
        if cached.topic in plan.unauthorized:
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            errors = True
            continue
        tp = TopicPartition(cached.topic, cached.partition)
        partition = local_partition(
            ctx.services,
            tp,
            current_leader_epoch=cached.current_leader_epoch,
            require_leader=plan.require_leader,
        )
        if isinstance(partition, ErrorCode):
            result.error_code = (
                ErrorCode.UNKNOWN_TOPIC_ID
                if plan.version >= 13 and not ctx.services.metadata_cache.contains(cached.topic)
                else partition
            )
            if partition != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                # A partition known here that could not be read (not led here, a fenced or
                # unknown leader epoch): Kafka's readFromLocalLog failure answers null aborted
                # transactions at READ_UNCOMMITTED, as a successful read does.
                result.aborted_transactions_null = not plan.read_committed
            errors = True
            continue
        if follower_id >= 0 and not partition.is_follower(follower_id):
            # Kafka's Partition.followerReplicaOrThrow.
            result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            result.aborted_transactions_null = not plan.read_committed
            errors = True
            continue
        if plan.version < ZSTD_MIN_VERSION and partition.log.config.compression_type == "zstd":
            # Kafka's KafkaApis.maybeConvertFetchedData: a topic that stores zstd (KIP-110)
            # answers UNSUPPORTED_COMPRESSION_TYPE below v10, with no offsets.
            result.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            errors = True
            continue
        result.aborted_transactions_null = not plan.read_committed
        result.high_watermark = partition.high_watermark
        result.last_stable_offset = partition.last_stable_offset
        result.log_start_offset = partition.log_start_offset
        if cached.last_fetched_epoch >= 0:
            try:
                diverging = partition.diverging_epoch(
                    cached.fetch_offset, cached.last_fetched_epoch
                )
            except Exception as exc:
                result.high_watermark = result.last_stable_offset = result.log_start_offset = -1
                result.error_code = error_code_for(exc)
                errors = True
                continue
            if diverging is not None:
                # KIP-320: no records; the fetcher truncates, then fetches again.
                result.diverging_epoch = diverging
                errors = True  # answered at once, as Kafka's hasDivergingEpoch
                continue
        if (
            update_fetch_state
            and follower_id >= 0
            and partition.log_start_offset <= cached.fetch_offset <= partition.log_end_offset
        ):
            # Kafka's Partition.fetchRecords: a follower's valid, non-diverging fetch records
            # its state (ISR expansion, HW) before the read; the response carries the new HW.
            replica_manager.update_follower_fetch_state(
                partition,
                follower_id,
                cached.fetch_offset,
                cached.fetcher_log_start_offset,
                partition.log_end_offset,
                plan.follower_epoch,
            )
            result.high_watermark = partition.high_watermark
            result.last_stable_offset = partition.last_stable_offset
        limit = min(cached.max_bytes, remaining)
        if limit <= 0 and not min_one:
            continue
        if follower_id >= 0:
            bound = partition.log_end_offset
        elif plan.read_committed:
            bound = result.last_stable_offset
        else:
            bound = result.high_watermark
        if not partition.log.offline and cached.fetch_offset == bound:
            # Nothing to read (Log.read would answer empty): the usual case of the idle
            # partitions of a long poll or a follower's session, re-read on every wake-up.
            continue
        if (
            throttle is not None
            and follower_id not in partition.isr
            and throttle.is_throttled(tp, partition.log.config)
        ):
            continue  # Kafka's shouldLeaderThrottle (module docstring)
        try:
            if plan.read_committed and follower_id < 0:
                # FetchIsolation.TXN_COMMITTED: up to the LSO.
                info = partition.log.read(
                    cached.fetch_offset,
                    max(limit, 0),
                    max_offset=bound,
                    min_one_message=min_one,
                )
                result.aborted_transactions = _aborted_transactions(partition, info, bound)
            else:
                info = partition.read(
                    cached.fetch_offset,
                    max(limit, 0),
                    min_one_message=min_one,
                    up_to_leo=follower_id >= 0,
                )
        except Exception as exc:
            # Kafka's ReplicaManager.readFromLocalLog: a failed read reports no offsets.
            result.high_watermark = result.last_stable_offset = result.log_start_offset = -1
            result.error_code = error_code_for(exc)
            errors = True
            continue
        if info.size:
            if plan.version < LEGACY_FETCH_BELOW:
                try:
                    result.records = [_downconvert(plan.version, info, cached.fetch_offset)]
                except Exception as exc:
                    result.error_code = error_code_for(exc)
                    errors = True
                    continue
            else:
                result.records = [FileRegion(info.fd, info.position, info.size)]
            remaining -= info.size
            total += info.size
            min_one = False
    return out, total, errors


def _aborted_transactions(partition: Any, info: FetchDataInfo, lso: int) -> list[tuple[int, int]]:
    """READ_COMMITTED: the aborted transactions overlapping the batches of ``info`` (Kafka's
    ``UnifiedLog.addAbortedTransactions``), as (producer id, first offset) pairs.

    Those with an ABORT marker at or after the fetch offset and a first offset below the
    offset after the last batch read (Kafka's ``collectAbortedTransactions(startOffset,
    upperBoundOffset)``). The index is asked first up to the LSO (nothing read can lie
    beyond it): with no abort there, which is the usual case, the batches are not looked at.
    """
    if not info.size:
        return []
    candidates = partition.collect_aborted_transactions(info.fetch_offset, lso)
    if not candidates:
        return []
    upper = _next_offset_after(info)
    return [txn.as_aborted_transaction() for txn in candidates if txn.first_offset < upper]


def _next_offset_after(info: FetchDataInfo) -> int:
    """The offset after the last batch of ``info``'s range: its batch headers are walked
    (baseOffset and batchLength, then the last batch's lastOffsetDelta), a 27-byte read per
    batch from the page cache; the records are not read."""
    position = info.position
    end = info.position + info.size
    next_offset = info.fetch_offset
    while position + _HEADER_PREFIX.size <= end:
        base_offset, length, last_offset_delta = _HEADER_PREFIX.unpack(
            os.pread(info.fd, _HEADER_PREFIX.size, position)
        )
        next_offset = base_offset + last_offset_delta + 1
        position += _LOG_OVERHEAD + length
    return next_offset


def _downconvert(version: int, info: FetchDataInfo, fetch_offset: int) -> bytes:
    """Fetch v0-1 read magic 0, v2-3 magic 1 (Kafka's ``FetchRequest`` down-conversion
    magic): the batches are read into memory and rebuilt, no ``sendfile``; sized as Kafka
    sends them (``downconvert_for_fetch``: cut or padded to the read's size)."""
    to_magic = MAGIC_V0 if version <= 1 else MAGIC_V1
    return downconvert_for_fetch(info.read_bytes(), to_magic, fetch_offset)


def _unauthorized(
    ctx: RequestContext, replica_id: int, partitions: list[CachedPartition]
) -> frozenset[str]:
    """ACLs (``KafkaApis.handleFetchRequest``): a follower needs CLUSTER_ACTION on the
    cluster, else every topic is refused; a consumer needs READ on each topic. An unknown
    topic id stays UNKNOWN_TOPIC_ID (Kafka resolves ids before authorizing)."""
    if authorizer_of(ctx) is None:
        return frozenset()  # the hot path without an authorizer: nothing to compute
    topics = {c.topic for c in partitions}
    if replica_id >= 0:
        allowed = authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)
        return frozenset() if allowed else frozenset(topics)
    known = {t for t in topics if ctx.services.metadata_cache.contains(t) or ctx.api_version < 13}
    return frozenset(known - filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, known))


def _replica_id(request: Any) -> int:
    """The fetching replica: ``replica_id`` below v15, ``replica_state.replica_id`` from v15
    (KIP-903)."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(request, "replica_id", CONSUMER_REPLICA_ID))


def _replica_epoch(request: Any) -> int:
    """The fetching broker's epoch (v15+ ``replica_state.replica_epoch``), -1 when absent."""
    state = getattr(request, "replica_state", None)
    return int(getattr(state, "replica_epoch", -1)) if state is not None else -1


def _fetch_only_leader(version: int, replica_id: int) -> bool:
    """Kafka's ``FetchParams.fetchOnlyLeader``: a follower, or a consumer without client
    metadata (below v11, KIP-392); a consumer's v11+ fetch may read a follower replica."""
    return replica_id >= 0 or (
        replica_id == CONSUMER_REPLICA_ID and version < FIRST_CLIENT_METADATA_VERSION
    )


def _leader_hints(
    ctx: RequestContext, results: list[tuple[CachedPartition, FetchPartitionResult]]
) -> list[NodeEndpoint]:
    """v16+ (KIP-951): NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH partitions name their
    current leader, and the response those leaders' endpoints (Kafka's
    ``handleFetchRequest``)."""
    leaders = []
    for cached, result in results:
        if result.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
            tp = TopicPartition(cached.topic, cached.partition)
            leader = current_leader(ctx.services, tp, ctx.listener_name)
            result.current_leader = (leader.leader_id, leader.leader_epoch)
            leaders.append(leader)
    return [NodeEndpoint(n.id, n.host, n.port, n.rack) for n in leader_nodes(leaders)]


def _respond(
    ctx: RequestContext,
    plan: _Plan,
    results: list[tuple[CachedPartition, FetchPartitionResult]],
) -> HandlerResult:
    if plan.follower_id < 0 and ctx.services.client_quotas.fetch.enabled:
        throttled = _fetch_quota_throttled(ctx, plan, results)
        if throttled is not None:
            return throttled
    # BytesOutPerSec, TotalFetchRequestsPerSec... per partition (franz.metrics.traffic).
    stats, follower = ctx.services.replica_manager.topic_stats, plan.follower_id >= 0
    for cached, result in results:
        stats.fetched(cached.topic, result.error_code, _records_size(result), follower)
    endpoints = _leader_hints(ctx, results) if plan.version >= FIRST_NODE_ENDPOINTS else None
    by_topic: dict[str, FetchTopicResult] = {}
    with_data: list[SessionKey] = []
    sent_data: list[tuple[CachedPartition, FetchPartitionResult]] = []
    for cached, result in results:
        has_data = bool(result.records)
        changed = cached.changed(result.high_watermark, result.log_start_offset)
        news = has_data or result.error_code or result.diverging_epoch is not None
        if plan.incremental and not (news or changed):
            continue
        if has_data:
            with_data.append((cached.topic, cached.partition))
            sent_data.append((cached, result))
        topic = by_topic.get(cached.topic)
        if topic is None:
            topic = by_topic[cached.topic] = FetchTopicResult(
                cached.topic, plan.topic_ids.get(cached.topic, _ZERO_UUID), []
            )
        topic.partitions.append(result)
    if plan.session is not None:
        plan.session.rotate_to_end(with_data)
    if plan.follower_id >= 0:
        quota = ctx.services.replication_quotas.leader
        if sent_data or quota.bounded:
            _record_throttled(ctx, quota, sent_data)
    return RawBody(
        encode_fetch_response(
            plan.version,
            list(by_topic.values()),
            session_id=plan.session.session_id if plan.session is not None else 0,
            node_endpoints=endpoints,
        )
    )


def _records_size(result: FetchPartitionResult) -> int:
    records = result.records
    if not records:
        return 0
    return sum(r.size if isinstance(r, FileRegion) else len(r) for r in records)


def _quota_window_bytes(ctx: RequestContext) -> int:
    """A consumer's cap on ``max_bytes`` under ``consumer_byte_rate``: what fits the quota
    window (Kafka's ``getMaxValueInQuotaWindow``); unbounded without a quota."""
    quota = ctx.services.client_quotas.fetch
    if not quota.enabled:
        return 2**31 - 1
    cap = quota.max_value_in_window(ctx.principal.name, ctx.client_id)
    return 2**31 - 1 if cap is None else int(min(cap, 2**31 - 1))


def _fetch_quota_throttled(
    ctx: RequestContext,
    plan: _Plan,
    results: list[tuple[CachedPartition, FetchPartitionResult]],
) -> HandlerResult | None:
    """``consumer_byte_rate`` (``franz.broker.client_quotas``): record the response's
    record bytes; over the quota, take them back and answer empty with the throttle time,
    the connection muted (Kafka's ``handleFetchRequest``: ``unrecordQuotaSensor``,
    ``getThrottledResponse``); the session's cached partitions are left as they were."""
    quota = ctx.services.client_quotas.fetch
    size = 0
    for _cached, result in results:
        for r in result.records:
            size += r.size if isinstance(r, FileRegion) else len(r)
    user, client_id = ctx.principal.name, ctx.client_id
    now_ms = ctx.services.client_quotas.now_ms()
    throttle_ms = quota.record(user, client_id, size, now_ms)
    if throttle_ms <= 0:
        return None
    quota.unrecord(user, client_id, size, now_ms)
    ctx.connection.throttle(throttle_ms)
    session_id = plan.session.session_id if plan.session is not None and plan.incremental else 0
    return RawBody(
        encode_fetch_response(plan.version, [], throttle_time_ms=throttle_ms, session_id=session_id)
    )


def _record_throttled(
    ctx: RequestContext,
    quota: ReplicationQuota,
    sent: list[tuple[CachedPartition, FetchPartitionResult]],
) -> None:
    """Kafka's ``sizeOfThrottledPartitions``: the leader's quota counts what its answer to a
    follower carries (``sent``: the partitions with records) for throttled partitions; 0 too
    once a rate is set (``franz.cluster.replication_quota``)."""
    partitions = ctx.services.replica_manager.partitions
    size = 0
    for cached, result in sent:
        tp = TopicPartition(cached.topic, cached.partition)
        partition = partitions.get(tp)
        if partition is not None and quota.is_throttled(tp, partition.log.config):
            size += sum(r.size if isinstance(r, FileRegion) else len(r) for r in result.records)
    if size or quota.bounded:
        quota.record(size)
