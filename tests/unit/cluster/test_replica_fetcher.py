"""The follower side of replication without sockets: fetcher ids as Kafka computes them,
whole-batch cutting, follower appends keeping bytes and leader epochs, and truncation on
fetch (KIP-320) between real ``Partition`` replicas: the leader's ``diverging_epoch`` answer
and the follower's ``truncation_offset``, until the logs are byte-identical."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.cluster.partition import LeaderAndIsrPartitionState, Partition, end_offset_for_epoch
from franz.cluster.replica_fetcher import (
    ReplicaFetcherConfig,
    ReplicaFetcherManager,
    fetcher_id_for,
    java_string_hash,
    truncation_offset,
    whole_batches_length,
)
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import ErrorCode, InvalidRecordError, OffsetOutOfRangeError
from franz.metadata.cache import MetadataCache
from franz.protocol.api_keys import ApiKey
from franz.protocol.client import decode_body
from franz.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from franz.protocol.fetch_response import FetchPartitionData, decode_fetch_response
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import RECORDS_PER_BATCH, make_batch, small_config

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.uuid4()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[dict[int, Partition]]:
    """Replicas of ``TP`` on brokers 1-3, each over its own real log."""
    logs = {
        b: Log(tmp_path / f"broker-{b}" / TP.dir_name, TP, small_config(), ManualClock())
        for b in (1, 2, 3)
    }
    yield {b: Partition(TP, TOPIC_ID, log, broker_id=b) for b, log in logs.items()}
    for log in logs.values():
        log.close()


def lead(partition: Partition, epoch: int) -> None:
    partition.make_leader(
        LeaderAndIsrPartitionState(
            TP.topic, TP.partition, partition.broker_id, epoch, (1, 2, 3), (1, 2, 3)
        )
    )


def follow(partition: Partition, leader: int, epoch: int) -> None:
    partition.make_follower(
        LeaderAndIsrPartitionState(TP.topic, TP.partition, leader, epoch, (1, 2, 3), (1, 2, 3))
    )


def produce(leader: Partition, batches: int) -> None:
    for _ in range(batches):
        leader.append_records_to_leader(make_batch(leader.log_end_offset, 1_700_000_000_000))


def log_bytes(partition: Partition) -> bytes:
    return b"".join(s.read_bytes(0, s.size) for s in partition.log.segments)


def epochs(partition: Partition) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in partition.log.leader_epoch_cache.entries]


def replicate(follower: Partition, leader: Partition) -> list[int]:
    """What the fetcher does, in process: fetch with the follower's LEO and latest epoch,
    truncate on each diverging answer, then append what the leader has. Returns the
    truncation offsets, in order."""
    truncations: list[int] = []
    for _ in range(10):
        latest = follower.log.leader_epoch_cache.latest_epoch
        fetch_offset = follower.log_end_offset
        diverging = leader.diverging_epoch(fetch_offset, latest) if latest >= 0 else None
        if diverging is None:
            break
        offset = truncation_offset(follower, fetch_offset, *diverging)
        truncations.append(offset)
        follower.truncate_to(offset)
    else:
        raise AssertionError("truncation did not converge")
    data = leader.log.read(follower.log_end_offset, 1 << 20).read_bytes()
    if data:
        follower.append_records_to_follower(data)
    follower.update_follower_high_watermark(leader.high_watermark)
    return truncations


# -- pure functions --------------------------------------------------------------------------


def test_java_string_hash_matches_java() -> None:
    # Values of java.lang.String.hashCode.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # a known Integer.MIN_VALUE
    assert fetcher_id_for(TopicPartition("polygenelubricants", 0), 7) == 0


def test_fetcher_id_is_kafkas() -> None:
    # Utils.abs(31 * topic.hashCode + partition) % numFetchers
    assert fetcher_id_for(TopicPartition("hello", 3), 1) == 0
    # 31 * 99162322 + 3 overflows to -1220934311 in Java; jshell: Math.abs(...) % 4 == 3.
    assert fetcher_id_for(TopicPartition("hello", 3), 4) == 3
    ids = {fetcher_id_for(TopicPartition("t", p), 3) for p in range(30)}
    assert ids == {0, 1, 2}


def test_whole_batches_length_drops_a_partial_tail() -> None:
    one = bytes(make_batch(0, 1000))
    two = one + bytes(make_batch(0, 1000))
    assert whole_batches_length(memoryview(two)) == len(two)
    assert whole_batches_length(memoryview(two[:-1])) == len(one)
    assert whole_batches_length(memoryview(two[: len(one) + 5])) == len(one)
    assert whole_batches_length(memoryview(b"")) == 0


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (-1, None),  # undefined
        (0, (0, 0)),  # below every entry: itself, ending where the first starts
        (1, (1, 10)),
        (2, (1, 10)),  # unknown in between: the floor entry, ending at the next start
        (3, (3, 20)),
        (4, (3, 20)),
        (5, (5, 99)),  # the latest: the LEO
        (6, None),  # newer than any known
    ],
)
def test_end_offset_for_epoch_is_kafkas(requested: int, expected: tuple[int, int] | None) -> None:
    assert end_offset_for_epoch([(1, 0), (3, 10), (5, 20)], requested, 99) == expected
    assert end_offset_for_epoch([], requested, 99) is None


# -- follower appends ------------------------------------------------------------------------


def test_follower_append_keeps_bytes_offsets_and_epochs(replicas: dict[int, Partition]) -> None:
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    produce(leader, 3)
    lead(leader, 2)  # a later leader epoch of the same leader
    produce(leader, 2)
    follow(follower, 1, 2)
    assert replicate(follower, leader) == []
    assert log_bytes(follower) == log_bytes(leader)
    assert follower.log_end_offset == leader.log_end_offset == 5 * RECORDS_PER_BATCH
    assert epochs(follower) == epochs(leader) == [(0, 0), (2, 3 * RECORDS_PER_BATCH)]
    assert follower.high_watermark == leader.high_watermark
    checkpoint = follower.log.dir / "leader-epoch-checkpoint"
    assert checkpoint.read_text() == (leader.log.dir / "leader-epoch-checkpoint").read_text()


def test_follower_high_watermark_is_min_of_leaders_and_its_leo(
    replicas: dict[int, Partition],
) -> None:
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    produce(leader, 2)
    follow(follower, 1, 0)
    follower.append_records_to_follower(leader.log.read(0, 1 << 20).read_bytes())
    follower.update_follower_high_watermark(10_000)
    assert follower.high_watermark == follower.log_end_offset
    follower.update_follower_high_watermark(RECORDS_PER_BATCH)
    assert follower.high_watermark == RECORDS_PER_BATCH


# -- truncation on fetch (KIP-320) -----------------------------------------------------------


def test_a_consistent_fetch_does_not_diverge(replicas: dict[int, Partition]) -> None:
    leader = replicas[1]
    lead(leader, 0)
    produce(leader, 2)
    assert leader.diverging_epoch(2 * RECORDS_PER_BATCH, 0) is None
    assert leader.diverging_epoch(RECORDS_PER_BATCH, 0) is None


def test_leader_answers_diverging_epoch_and_out_of_range(replicas: dict[int, Partition]) -> None:
    leader = replicas[1]
    lead(leader, 0)
    produce(leader, 2)
    lead(leader, 1)
    produce(leader, 1)
    a = 2 * RECORDS_PER_BATCH
    # A fetcher at 3 batches whose last epoch is 0: epoch 0 ended at A here.
    assert leader.diverging_epoch(3 * RECORDS_PER_BATCH, 0) == (0, a)
    # An epoch newer than any known here cannot be placed: OFFSET_OUT_OF_RANGE, as Kafka.
    with pytest.raises(OffsetOutOfRangeError):
        leader.diverging_epoch(3 * RECORDS_PER_BATCH, 7)


def test_old_leader_truncates_its_unreplicated_tail(replicas: dict[int, Partition]) -> None:
    """The classic case: the old leader wrote B that no follower has; a follower became
    leader at a new epoch and wrote C; the old leader follows, truncates B, copies C."""
    old, new = replicas[1], replicas[2]
    lead(old, 0)
    produce(old, 3)  # A
    follow(new, 1, 0)
    replicate(new, old)
    produce(old, 2)  # B: the old leader only
    lead(new, 1)
    produce(new, 4)  # C
    follow(old, 2, 1)
    assert replicate(old, new) == [3 * RECORDS_PER_BATCH]
    assert log_bytes(old) == log_bytes(new)
    assert epochs(old) == epochs(new) == [(0, 0), (1, 3 * RECORDS_PER_BATCH)]


def test_truncation_walks_back_over_epochs_the_leader_never_had(
    replicas: dict[int, Partition],
) -> None:
    """Follower epochs {0, 2}, leader epochs {0, 1, 3}: the first answer (epoch 1) is unknown
    to the follower, which goes back to the end of its epoch 0; the second answer (epoch 0
    ends earlier at the leader) cuts the rest; then the logs are identical."""
    f, leader = replicas[1], replicas[2]
    b = RECORDS_PER_BATCH
    lead(f, 0)
    produce(f, 4)  # epoch 0: [0, 4b)
    follow(leader, 1, 0)
    leader.append_records_to_follower(f.log.read(0, 1 << 20, max_offset=3 * b).read_bytes())
    lead(f, 2)
    produce(f, 2)  # epoch 2 at the old leader: [4b, 6b)
    lead(leader, 1)
    produce(leader, 1)  # epoch 1: [3b, 4b)
    lead(leader, 3)
    produce(leader, 3)  # epoch 3: [4b, 7b)
    follow(f, 2, 3)
    assert replicate(f, leader) == [4 * b, 3 * b]
    assert log_bytes(f) == log_bytes(leader)
    assert epochs(f) == epochs(leader) == [(0, 0), (1, 3 * b), (3, 4 * b)]


def test_truncate_fully_and_start_at(replicas: dict[int, Partition]) -> None:
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    produce(leader, 2)
    follow(follower, 1, 0)
    replicate(follower, leader)
    follower.truncate_fully_and_start_at(100)
    assert (follower.log_start_offset, follower.log_end_offset) == (100, 100)
    assert epochs(follower) == []
    assert log_bytes(follower) == b""


def test_an_empty_follower_starting_inside_a_batch_restarts_at_the_batch(
    replicas: dict[int, Partition],
) -> None:
    """DeleteRecords moved the leader's log start into a batch: a new replica that starts
    its log there gets that whole batch and restarts its log at the batch's base offset
    (Kafka's ``UnexpectedAppendOffsetException`` case), then follows byte for byte."""
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    produce(leader, 3)
    leader.log.update_high_watermark(leader.log_end_offset)
    inside = RECORDS_PER_BATCH + 1  # in the second batch
    assert leader.log.maybe_increment_log_start_offset(inside)
    follow(follower, 1, 0)
    follower.truncate_fully_and_start_at(inside)  # where the fetcher restarts a new replica
    info = leader.read(inside, 1 << 20, min_one_message=True, up_to_leo=True)
    follower.append_records_to_follower(info.read_bytes())
    assert follower.log_end_offset == leader.log_end_offset
    assert log_bytes(follower) == log_bytes(leader)[len(log_bytes(leader)) * 1 // 3 :]
    follower.maybe_increment_follower_log_start_offset(leader.log_start_offset)
    assert follower.log_start_offset == RECORDS_PER_BATCH  # until its HW allows the leader's
    follower.update_follower_high_watermark(leader.high_watermark)
    follower.maybe_increment_follower_log_start_offset(leader.log_start_offset)
    assert follower.log_start_offset == inside


def test_a_follower_append_behind_its_log_end_is_still_refused(
    replicas: dict[int, Partition],
) -> None:
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    produce(leader, 2)
    follow(follower, 1, 0)
    replicate(follower, leader)
    first = leader.read(0, 1 << 20, min_one_message=True, up_to_leo=True).read_bytes()
    with pytest.raises(InvalidRecordError, match="out of order offsets"):
        follower.append_records_to_follower(first)


# -- the wire: diverging_epoch in Fetch responses ---------------------------------------------


@pytest.mark.parametrize("version", [12, 13, 16, 17])
def test_diverging_epoch_round_trips_through_kio_and_the_fetcher_decoder(version: int) -> None:
    topic = FetchTopicResult(
        "orders",
        TOPIC_ID,
        [
            FetchPartitionResult(
                0,
                high_watermark=7,
                last_stable_offset=7,
                log_start_offset=0,
                diverging_epoch=(3, 42),
            ),
            FetchPartitionResult(1, error_code=6, diverging_epoch=(1, 5), current_leader=(2, 9)),
            FetchPartitionResult(2, high_watermark=1),
        ],
    )
    body = b"".join(c for c in encode_fetch_response(version, [topic]) if isinstance(c, bytes))
    ours = decode_fetch_response(version, body)
    parts = ours.responses[0].partitions
    assert [p.diverging_epoch for p in parts] == [(3, 42), (1, 5), None]
    assert [p.current_leader for p in parts] == [None, (2, 9), None]
    kio = decode_body(ApiKey.FETCH, version, body)
    kio_parts = kio.responses[0].partitions
    assert [
        (int(p.diverging_epoch.epoch), int(p.diverging_epoch.end_offset)) for p in kio_parts
    ] == [
        (3, 42),
        (1, 5),
        (-1, -1),
    ]


def idempotent_batch(sequence: int, count: int = 3) -> bytearray:
    builder = RecordBatchBuilder(producer_id=4242, producer_epoch=0, base_sequence=sequence)
    for j in range(count):
        builder.append(1_700_000_000_000 + j, b"k", f"v{sequence + j}".encode())
    return builder.build()


def test_follower_rebuilds_producer_state_so_a_new_leader_dedupes_a_retry(
    replicas: dict[int, Partition],
) -> None:
    """Producer state is replayed from the replicated batch headers: when the follower
    becomes leader, a producer's retry of a batch the old leader had acknowledged is
    answered as a duplicate with its original offsets, not written twice."""
    leader, follower = replicas[1], replicas[2]
    lead(leader, 0)
    leader.append_records_to_leader(idempotent_batch(0))
    retried = idempotent_batch(3)
    first = leader.append_records_to_leader(bytearray(retried))
    follow(follower, 1, 0)
    replicate(follower, leader)
    entry = follower.log.producer_state.last_entry(4242)
    assert entry is not None and entry.last_seq == 5
    lead(follower, 1)
    again = follower.append_records_to_leader(bytearray(retried))
    assert again.duplicate
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset)
    assert follower.log_end_offset == 6


# -- ReplicaManager wiring ----------------------------------------------------------------------


def test_leader_and_isr_and_stop_replica_start_and_stop_fetchers(
    tmp_path: Path, open_manager: Callable[..., LogManager]
) -> None:
    """A new follower gets a fetcher for its leader from its LEO; a new epoch restarts it;
    becoming leader removes it; StopReplica at the current epoch (Kafka's ``>=``) too; an
    idle fetcher stops. The leaders are not reachable here: only the states are looked at."""

    def leader_and_isr(manager: ReplicaManager, leader: int, epoch: int) -> None:
        assert (
            manager.become_leader_or_follower(
                [LeaderAndIsrPartitionState(TP.topic, 0, leader, epoch, (0, 1, 2), (0, 1, 2))],
                {TP.topic: TOPIC_ID},
            )
            == {}
        )

    async def scenario() -> None:
        manager = ReplicaManager(open_manager(tmp_path / "logs"), broker_id=0)
        fetchers = ReplicaFetcherManager(
            ReplicaFetcherConfig(broker_id=0, num_fetchers=2),
            manager,
            MetadataCache(0),
            lambda: 7,
        )
        manager.replica_fetcher_manager = fetchers
        try:
            leader_and_isr(manager, leader=1, epoch=0)
            assert fetchers.fetch_state(TP) == (1, 0)
            assert list(fetchers.fetchers) == [(1, fetcher_id_for(TP, 2))]
            leader_and_isr(manager, leader=2, epoch=1)
            assert fetchers.fetch_state(TP) == (2, 0)
            await asyncio.sleep(0)
            assert [leader for leader, _ in fetchers.fetchers] == [2]
            leader_and_isr(manager, leader=0, epoch=2)
            assert fetchers.fetch_state(TP) is None and not fetchers.fetchers
            leader_and_isr(manager, leader=1, epoch=3)
            assert fetchers.fetch_state(TP) == (1, 0)
            assert manager.stop_replicas({TP: (2, False)}) == {TP: ErrorCode.FENCED_LEADER_EPOCH}
            assert fetchers.fetch_state(TP) == (1, 0)
            assert manager.stop_replicas({TP: (3, False)}) == {TP: ErrorCode.NONE}
            assert fetchers.fetch_state(TP) is None and not fetchers.fetchers
            assert TP in manager.partitions  # delete_partition=False keeps the replica
        finally:
            await fetchers.shutdown()

    asyncio.run(scenario())


def test_a_storage_error_on_the_followers_log_marks_the_partition_failed(
    tmp_path: Path, open_manager: Callable[..., LogManager]
) -> None:
    """KAFKA_STORAGE_ERROR on the follower's own dir (Kafka's ``markPartitionFailed``): the
    response's records cannot be appended, the fetcher drops the partition and the manager
    lists it as failed; the next LeaderAndIsr for it starts afresh."""

    async def scenario() -> None:
        manager = ReplicaManager(open_manager(tmp_path / "logs"), broker_id=0)
        fetchers = ReplicaFetcherManager(
            ReplicaFetcherConfig(broker_id=0), manager, MetadataCache(0), lambda: 7
        )
        manager.replica_fetcher_manager = fetchers
        try:
            manager.become_leader_or_follower(
                [LeaderAndIsrPartitionState(TP.topic, 0, 1, 0, (0, 1), (0, 1))],
                {TP.topic: TOPIC_ID},
            )
            (fetcher,) = fetchers.fetchers.values()
            state = fetcher.partitions[TP]
            manager.partitions[TP].log.mark_offline()
            data = FetchPartitionData(0, 0, 3, 3, 0, records=memoryview(make_batch(0, 1000)))
            assert fetcher._process(TP, state, data) is False
            assert TP not in fetcher.partitions and TP in fetchers.failed_partitions
        finally:
            await fetchers.shutdown()

    asyncio.run(scenario())


def test_a_fetcher_idle_in_its_backoff_stops_when_its_last_partition_goes(
    tmp_path: Path, open_manager: Callable[..., LogManager]
) -> None:
    """StopReplica removes a fetcher's last partition while the fetcher waits out a backoff:
    the removal wakes the wait and the idle fetcher's close cancels it in the same loop
    iteration. Python 3.11's ``asyncio.wait_for`` swallowed that cancel (it returns the
    woken wait's result), the fetcher then waited without end, and its broker's SIGTERM
    hung until SIGKILL (a CI run of test_reassignment_brokers, broker 1 retiring)."""

    async def scenario() -> None:
        manager = ReplicaManager(open_manager(tmp_path / "logs"), broker_id=0)
        fetchers = ReplicaFetcherManager(
            ReplicaFetcherConfig(broker_id=0), manager, MetadataCache(0), lambda: 7
        )
        manager.replica_fetcher_manager = fetchers
        try:
            manager.become_leader_or_follower(
                [LeaderAndIsrPartitionState(TP.topic, 0, 1, 0, (0, 1), (0, 1))],
                {TP.topic: TOPIC_ID},
            )
            (fetcher,) = fetchers.fetchers.values()
            state = fetcher.partitions[TP]
            state.truncating = False
            state.delay_until = time.monotonic() + 30  # a backoff: the wait has a timeout
            for _ in range(5):
                await asyncio.sleep(0)  # the fetcher task now waits for a change
            assert manager.stop_replicas({TP: (1, False)}) == {TP: ErrorCode.NONE}
            assert not fetchers.fetchers
        finally:
            async with asyncio.timeout(10):
                await fetchers.shutdown()

    asyncio.run(scenario())
