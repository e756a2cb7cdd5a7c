"""Transactional offset commits (TxnOffsetCommit) until their transaction's marker.

The coordinator runs over ``RecordingLog`` (``test_coordinator``), which keeps the exact
batches written; markers are real end-transaction-marker batches appended to it, as
WriteTxnMarkers writes them, so a reload replays what a broker would have on disk. Kafka's
rules: ``GroupMetadata.prepareTxnOffsetCommit`` / ``onTxnOffsetCommitAppend`` /
``completePendingTxnOffsetCommit`` (the later-appended offset wins), ``GroupMetadataManager.
loadGroupsAndOffsets`` (pending per producer id until the marker) and ``GroupCoordinator.
handleTxnCommitOffsets`` (``validateOffsetCommit`` with ``isTransactional``).
"""

from __future__ import annotations

from collections.abc import Mapping

from franz.coordinator.group.coordinator import GroupCoordinator
from franz.coordinator.group.group import CommitRequest
from franz.coordinator.group.offsets_topic import (
    LoadedPartition,
    OffsetAndMetadata,
    TopicPartitionKey,
    encode_records,
    offset_commit_record,
    offset_tombstone,
    replay,
)
from franz.errors import ErrorCode, NotLeaderOrFollowerError
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from tests.unit.coordinator.test_coordinator import RecordingLog, join_one, make, run

PID = 4000
EPOCH = 3
T0 = ("t", 0)
T1 = ("t", 1)


async def txn_commit(
    c: GroupCoordinator,
    offsets: Mapping[TopicPartitionKey, int],
    *,
    group: str = "g",
    producer_id: int = PID,
    member_id: str = "",
    generation_id: int = -1,
    group_instance_id: str | None = None,
) -> dict[TopicPartitionKey, ErrorCode]:
    return await c.commit_txn_offsets(
        group_id=group,
        producer_id=producer_id,
        producer_epoch=EPOCH,
        member_id=member_id,
        generation_id=generation_id,
        group_instance_id=group_instance_id,
        offsets={tp: CommitRequest(o, metadata=f"m{o}") for tp, o in offsets.items()},
    )


async def plain_commit(
    c: GroupCoordinator, offsets: Mapping[TopicPartitionKey, int], group: str = "g"
) -> dict[TopicPartitionKey, ErrorCode]:
    return await c.commit_offsets(
        group_id=group,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        retention_time_ms=-1,
        offsets={tp: CommitRequest(o) for tp, o in offsets.items()},
    )


async def write_marker(
    c: GroupCoordinator, log: RecordingLog, commit: bool, group: str = "g", pid: int = PID
) -> int:
    """Append a marker to the group's partition (as WriteTxnMarkers) and tell the
    coordinator, as the broker's WriteTxnMarkers handler does; the partition."""
    partition = c.partition_for(group)
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    batch = build_end_txn_marker_batch(
        EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=EPOCH, timestamp=1
    )
    await log.append(partition, batch)
    c.handle_txn_completion(pid, [partition], commit)
    return partition


def offsets_of(c: GroupCoordinator, group: str = "g") -> dict[TopicPartitionKey, int]:
    return {tp: om.offset for tp, om in c.fetch_offsets(group, None).items() if om is not None}


def reloaded(log: RecordingLog) -> GroupCoordinator:
    c, _, _ = make(log)
    log.reload_into(c)
    return c


def test_txn_offsets_are_a_transactional_batch_of_the_producer_and_stay_pending() -> None:
    c, log, _ = make()

    async def go() -> None:
        assert await txn_commit(c, {T0: 5, T1: 7}) == {T0: ErrorCode.NONE, T1: ErrorCode.NONE}

    run(go)
    [batch] = log.batches[c.partition_for("g")]
    assert batch.is_transactional and not batch.is_control_batch
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (PID, EPOCH, -1)
    assert offsets_of(c) == {}
    assert c.fetch_offsets("g", [T0]) == {T0: None}
    assert c.has_pending_txn_offset("g", T0) and c.has_pending_txn_offset("g", T1)
    assert not c.has_pending_txn_offset("g", ("t", 2))
    assert "g" in c.groups  # a group holding only pending offsets is kept


def test_commit_marker_makes_them_committed_and_abort_drops_them() -> None:
    c, log, _ = make()

    async def go() -> None:
        await txn_commit(c, {T0: 5})
        await txn_commit(c, {T0: 6, T1: 9}, group="other", producer_id=PID + 1)
        await write_marker(c, log, commit=True)
        await write_marker(c, log, commit=False, group="other", pid=PID + 1)

    run(go)
    assert offsets_of(c) == {T0: 5}
    committed = c.fetch_offsets("g", [T0])[T0]
    assert committed is not None and committed.metadata == "m5"
    assert not c.has_pending_txn_offset("g", T0)
    assert offsets_of(c, "other") == {}
    assert not c.has_pending_txn_offset("other", T0)


def test_marker_on_another_partition_or_of_another_producer_completes_nothing() -> None:
    c, _, _ = make()

    async def go() -> None:
        await txn_commit(c, {T0: 5})
        partition = c.partition_for("g")
        c.handle_txn_completion(PID, [p for p in range(4) if p != partition], True)
        c.handle_txn_completion(PID + 1, [partition], True)

    run(go)
    assert offsets_of(c) == {} and c.has_pending_txn_offset("g", T0)


def test_a_plain_commit_appended_after_the_txn_commit_wins_at_commit() -> None:
    c, log, _ = make()

    async def go() -> None:
        await plain_commit(c, {T0: 1, T1: 1})
        await txn_commit(c, {T0: 5, T1: 5})
        await plain_commit(c, {T1: 2})  # later in the log than the transactional batch
        await write_marker(c, log, commit=True)

    run(go)
    # T0: the transactional offset was appended after the plain commit of 1; T1: the plain
    # commit of 2 was appended after it (Kafka's olderThan keeps it).
    assert offsets_of(c) == {T0: 5, T1: 2}
    assert offsets_of(reloaded(log)) == {T0: 5, T1: 2}


def test_a_second_txn_commit_of_the_same_partition_replaces_the_first() -> None:
    c, log, _ = make()

    async def go() -> None:
        await txn_commit(c, {T0: 5})
        await txn_commit(c, {T0: 8})
        await write_marker(c, log, commit=True)

    run(go)
    assert offsets_of(c) == {T0: 8}
    assert offsets_of(reloaded(log)) == {T0: 8}


def test_reload_holds_txn_offsets_until_their_marker_and_keeps_unmarked_ones_pending() -> None:
    c, log, _ = make()

    async def go() -> None:
        await plain_commit(c, {T0: 1})
        await txn_commit(c, {T0: 5})
        await write_marker(c, log, commit=True)
        await txn_commit(c, {T1: 7})
        await write_marker(c, log, commit=False)
        await txn_commit(c, {T0: 9, T1: 9})  # no marker yet

    run(go)
    again = reloaded(log)
    assert offsets_of(again) == {T0: 5}
    assert again.has_pending_txn_offset("g", T0) and again.has_pending_txn_offset("g", T1)

    async def finish() -> None:
        await write_marker(again, log, commit=True)

    run(finish)
    assert offsets_of(again) == {T0: 9, T1: 9}
    assert offsets_of(reloaded(log)) == {T0: 9, T1: 9}


def test_reload_of_a_group_known_only_from_pending_offsets_then_abort() -> None:
    c, log, _ = make()

    async def go() -> None:
        await txn_commit(c, {T0: 5}, group="lonely")

    run(go)
    again = reloaded(log)
    assert "lonely" in again.groups and again.has_pending_txn_offset("lonely", T0)

    async def abort() -> None:
        await write_marker(again, log, commit=False, group="lonely")

    run(abort)
    assert offsets_of(again, "lonely") == {} and not again.has_pending_txn_offset("lonely", T0)
    assert offsets_of(reloaded(log), "lonely") == {}


def test_replay_tombstones_in_a_txn_batch_remove_pending_offsets_only() -> None:
    """Kafka's loader: a tombstone of a transactional batch removes the producer's pending
    offset; one of a plain batch the committed offset."""
    views: list[RecordBatchView] = []
    base = 0

    def add(batch: bytearray) -> None:
        nonlocal base
        view = RecordBatchView(batch)
        view.set_base_offset(base)
        base = view.next_offset
        views.append(view)

    om = OffsetAndMetadata(3, commit_timestamp_ms=1)
    add(encode_records([offset_commit_record("g", T0, om)], 1))
    add(encode_records([offset_commit_record("g", T1, om)], 1, producer=(PID, 0)))
    add(encode_records([offset_tombstone("g", T1)], 1, producer=(PID, 0)))
    add(encode_records([offset_commit_record("g", T0, om)], 1, producer=(PID, 0)))
    add(
        build_end_txn_marker_batch(
            EndTransactionMarker(ControlRecordType.COMMIT, 0),
            producer_id=PID,
            producer_epoch=0,
            timestamp=1,
        )
    )
    loaded = replay(views, LoadedPartition())
    assert loaded.offsets == {"g": {T0: om}}
    assert loaded.appended == {"g": {T0: 3}}  # the transactional batch at offset 3 won
    assert loaded.pending == {}


def test_txn_commit_validation_is_transactional() -> None:
    """An anonymous TxnOffsetCommit (v0-2) is allowed in a group with members (a plain one is
    UNKNOWN_MEMBER_ID); a member identity (v3+) is checked as for OffsetCommit."""
    c, log, _ = make()

    async def go() -> None:
        joined = await join_one(c)
        member = joined.member_id
        assert (await plain_commit(c, {T0: 1}))[T0] is ErrorCode.UNKNOWN_MEMBER_ID
        assert (await txn_commit(c, {T0: 2}))[T0] is ErrorCode.NONE
        ok = await txn_commit(c, {T0: 3}, member_id=member, generation_id=1)
        assert ok[T0] is ErrorCode.NONE
        stale = await txn_commit(c, {T0: 4}, member_id=member, generation_id=0)
        assert stale[T0] is ErrorCode.ILLEGAL_GENERATION
        stranger = await txn_commit(c, {T0: 4}, member_id="nobody", generation_id=1)
        assert stranger[T0] is ErrorCode.UNKNOWN_MEMBER_ID
        fresh = await txn_commit(c, {T0: 4}, group="new", member_id="m", generation_id=2)
        assert fresh[T0] is ErrorCode.UNKNOWN_MEMBER_ID
        await write_marker(c, log, commit=True)

    run(go)
    assert offsets_of(c) == {T0: 3}
    assert "new" not in c.groups  # refused commits leave no group behind


def test_unknown_partitions_are_refused_whatever_the_group_status() -> None:
    c, _, _ = make()
    c.set_offsets_topic_partitions(4)  # no partition owned: NOT_COORDINATOR for every group

    async def go() -> dict[TopicPartitionKey, ErrorCode]:
        return await txn_commit(c, {T0: 1, ("nope", 0): 1, ("t", 99): 1})

    assert run(go) == {
        T0: ErrorCode.NOT_COORDINATOR,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", 99): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_oversized_metadata_and_failed_appends_leave_nothing_pending() -> None:
    c, log, _ = make(offset_metadata_max_bytes=3)

    async def go() -> None:
        too_big = await txn_commit(c, {T0: 12345})  # metadata "m12345"
        assert too_big == {T0: ErrorCode.OFFSET_METADATA_TOO_LARGE}
        log.fail = NotLeaderOrFollowerError("moved")
        assert await txn_commit(c, {T1: 1}) == {T1: ErrorCode.NOT_COORDINATOR}
        log.fail = None

    run(go)
    assert not c.has_pending_txn_offset("g", T0) and not c.has_pending_txn_offset("g", T1)
    assert "g" not in c.groups


def test_offset_delete_removes_pending_offsets_of_the_partition() -> None:
    c, log, _ = make()

    async def go() -> None:
        await plain_commit(c, {T0: 1})
        await txn_commit(c, {T0: 5, T1: 5})
        error, results = await c.delete_offsets("g", [T0])
        assert (error, results) == (ErrorCode.NONE, {T0: ErrorCode.NONE})
        await write_marker(c, log, commit=True)

    run(go)
    assert offsets_of(c) == {T1: 5}


def test_expiry_keeps_an_empty_group_with_pending_offsets() -> None:
    c, _, clock = make(offsets_retention_ms=1000)

    async def go() -> int:
        await txn_commit(c, {T0: 5})
        clock.advance(10_000)
        return await c.expire_offsets()

    assert run(go) == 0
    assert "g" in c.groups and c.has_pending_txn_offset("g", T0)


def test_a_deleted_topic_loses_its_pending_offsets() -> None:
    c, log, _ = make()

    async def go() -> None:
        await txn_commit(c, {T0: 5, ("u", 0): 6})
        await c.on_topic_deleted("t")
        await write_marker(c, log, commit=True)

    run(go)
    assert offsets_of(c) == {("u", 0): 6}
