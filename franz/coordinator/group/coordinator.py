"""The classic group coordinator: drives the pure state machine, parks requests, keeps offsets.

Kafka's ``GroupCoordinator`` + ``GroupMetadataManager`` (3.x, classic protocol), in one event
loop and without locks (``DESIGN.md`` principle 4):

* Every request becomes one event for ``states.step``; the outputs resolve the futures of the
  requests they answer (a JoinGroup parked during a rebalance is answered by the event that
  completes the join). The request's own future is registered before the step, so "answered
  at once" and "parked" are the same code path.
* Each group has one timer, armed at ``next_deadline_ms(snapshot)``; when it fires the group
  gets a ``Tick`` (session expiry, rebalance and sync timeouts, the initial delay).
* Offsets are cached in memory and written through ``CoordinatorLog`` to
  ``__consumer_offsets`` before the cache changes and before the commit is acknowledged.
  Group metadata is written when a rebalance completes (the group becomes Stable), when the
  group becomes Empty, and as a tombstone when it is deleted or expires.
* ``load_partition`` rebuilds groups and offsets from a replayed partition, at startup and
  when this broker becomes the partition's leader (``begin_loading`` first: its groups answer
  COORDINATOR_LOAD_IN_PROGRESS meanwhile); ``unload_partition`` drops them when it stops
  leading it. A group whose partition is not owned here answers NOT_COORDINATOR
  (``group_status``, Kafka's ``validateGroupStatus``), once ``__consumer_offsets`` exists.
* TxnOffsetCommit (``commit_txn_offsets``) writes a transactional batch whose offsets stay
  pending per producer id until ``handle_txn_completion`` hears the transaction's marker
  (``txn_offsets``, Kafka's ``handleTxnCommitOffsets`` / ``handleTxnCompletion``).
* ``expire_offsets`` (run every ``offsets.retention.check.interval.ms``) removes offsets of
  Empty groups after ``offsets.retention.minutes`` (KIP-211: measured from the time the group
  became Empty, or from the commit for groups that never had members), offsets of topics a
  Stable consumer group no longer subscribes to, and groups left Empty without offsets.

Validation that does not depend on group state (empty group ids, topics the broker does not
host, metadata larger than ``offset.metadata.max.bytes``) happens here, before any event.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping

from franz.clock import Clock
from franz.coordinator.group import states, txn_offsets
from franz.coordinator.group.consumer_protocol import subscribed_topics
from franz.coordinator.group.group import (
    CommitRequest,
    CoordinatorConfig,
    Group,
    GroupDescription,
    GroupListing,
    MemberDescription,
    commit_error,
    metadata_or_empty,
    snapshot_from_value,
)
from franz.coordinator.group.offsets_schema import partition_for as _partition_for
from franz.coordinator.group.offsets_topic import (
    CoordinatorLog,
    LoadedPartition,
    OffsetAndMetadata,
    Record,
    TopicPartitionKey,
    encode_records,
    group_metadata_record,
    group_tombstone,
    offset_commit_records,
    offset_tombstone,
)
from franz.coordinator.group.states import (
    GroupSnapshot,
    GroupState,
    JoinResponse,
    SyncResponse,
)
from franz.coordinator.group.txn_offsets import TxnOffsetCommits
from franz.errors import ApiError, ErrorCode

__all__ = [
    "CommitRequest",
    "CoordinatorConfig",
    "GroupCoordinator",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
]

log = logging.getLogger(__name__)


class GroupCoordinator(TxnOffsetCommits):
    """Serves the classic group APIs of every group of the ``__consumer_offsets`` partitions
    this broker leads (in single-node mode: all of them)."""

    def __init__(
        self,
        *,
        config: CoordinatorConfig,
        log_writer: CoordinatorLog,
        clock: Clock,
        partition_exists: Callable[[str, int], bool],
    ) -> None:
        self.config = config
        self._log = log_writer
        self._clock = clock
        self._partition_exists = partition_exists
        self._groups: dict[str, Group] = {}
        self._num_partitions = config.offsets_topic_num_partitions
        self._closed = False
        #: ``__consumer_offsets`` partitions whose groups are loaded here (this broker leads
        #: them) and those being loaded (Kafka's ``ownedPartitions`` / ``loadingPartitions``).
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        #: Until ``__consumer_offsets`` exists no partition can be owned; the group APIs
        #: then serve (the first write creates the topic), as the embedded broker always did.
        self._topic_known = False

    # --- housekeeping ---------------------------------------------------------------------

    def set_offsets_topic_partitions(self, count: int) -> None:
        """Use the existing topic's partition count (fixed once the topic exists)."""
        self._num_partitions = count
        self._topic_known = True

    # --- ownership (Kafka's onElection / onResignation) -----------------------------------

    def group_status(self, group_id: str) -> ErrorCode:
        """Kafka's ``validateGroupStatus``: COORDINATOR_LOAD_IN_PROGRESS while the group's
        partition loads, NOT_COORDINATOR when this broker does not lead it (the client asks
        FindCoordinator again), else NONE."""
        if not self._topic_known:
            return ErrorCode.NONE
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def is_loading(self, partition: int) -> bool:
        return partition in self._loading

    @property
    def loading(self) -> bool:
        """Whether any partition is loading (Kafka's ``GroupMetadataManager.isLoading``)."""
        return bool(self._loading)

    def begin_loading(self, partition: int) -> None:
        """This broker became the leader of ``partition`` (Kafka's ``onElection``): its
        groups answer COORDINATOR_LOAD_IN_PROGRESS until ``load_partition``."""
        self._owned.discard(partition)
        self._loading.add(partition)

    def unload_partition(self, partition: int) -> int:
        """This broker stopped leading ``partition`` (Kafka's ``onResignation``): its groups
        are unloaded (parked requests get NOT_COORDINATOR, timers stop) and forgotten;
        returns how many."""
        self._owned.discard(partition)
        self._loading.discard(partition)
        doomed = [g for g in self._groups.values() if self.partition_for(g.group_id) == partition]
        for group in doomed:
            self._unload(group)
            del self._groups[group.group_id]
        return len(doomed)

    def arm_loaded(self, group_ids: Iterable[str]) -> None:
        """Start groups just installed by ``load_partition`` (``arm_all`` for them)."""
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is not None:
                self._apply(group, states.GroupLoaded())

    def partition_for(self, group_id: str) -> int:
        return _partition_for(group_id, self._num_partitions)

    def _now(self) -> int:
        return self._clock.wall_ms()

    @property
    def groups(self) -> Mapping[str, Group]:
        return self._groups

    def shutdown(self) -> None:
        """Unload every group (Kafka's ``onGroupUnloaded``): parked requests are answered
        NOT_COORDINATOR, timers stop; clients rediscover the coordinator and rejoin."""
        self._closed = True
        for group in self._groups.values():
            self._unload(group)

    def _unload(self, group: Group) -> None:
        _, outputs = self._apply(group, states.Unload())
        self._deliver(group, outputs)
        group.cancel_timer()
        for member_id, join in group.join_waiters.items():
            if not join.done():
                join.set_result(JoinResponse(member_id, ErrorCode.NOT_COORDINATOR))
        for member_id, sync in group.sync_waiters.items():
            if not sync.done():
                sync.set_result(SyncResponse(member_id, ErrorCode.NOT_COORDINATOR))
        group.join_waiters.clear()
        group.sync_waiters.clear()

    def load_partition(self, partition: int, loaded: LoadedPartition) -> list[str]:
        """Install the groups and offsets replayed from one ``__consumer_offsets`` partition
        (Kafka's ``loadGroupsAndOffsets``) and own the partition; returns the groups
        installed. A group already cached is kept, not replaced (Kafka's ``loadGroup``: "there
        is already a cached group"), e.g. one created before ``__consumer_offsets`` existed."""
        now = self._clock.wall_ms()
        pending = loaded.pending_by_group()
        names = set(loaded.groups) | {g for g, offs in loaded.offsets.items() if offs}
        names = (names | set(pending)) - set(self._groups)
        for group_id in sorted(names):
            value = loaded.groups.get(group_id)
            snapshot = snapshot_from_value(group_id, value, self.config.group, now)
            stamp = value.current_state_timestamp if value is not None else -1
            group = Group(snapshot, stamp if stamp >= 0 else now)
            group.offsets.update(loaded.offsets.get(group_id, {}))
            group.appended_batch_offsets.update(loaded.appended.get(group_id, {}))
            group.pending_txn_offsets.update(pending.get(group_id, {}))
            self._groups[group_id] = group  # timers start with arm_all, in the event loop
        self._loading.discard(partition)
        self._owned.add(partition)
        return sorted(names)

    # --- the event path -------------------------------------------------------------------

    def _group(self, group_id: str, *, create: bool = False) -> Group | None:
        group = self._groups.get(group_id)
        if group is not None and group.snapshot.state is GroupState.DEAD:
            # A group deleted or expired: a new one with the same id starts afresh (Kafka
            # removes Dead groups from its cache).
            group.cancel_timer()
            del self._groups[group_id]
            group = None
        if group is None and create:
            group = Group(GroupSnapshot(group_id, config=self.config.group), self._clock.wall_ms())
            self._groups[group_id] = group
        return group

    def _apply(
        self, group: Group, event: states.Event
    ) -> tuple[GroupSnapshot, tuple[states.Output, ...]]:
        """Step ``group`` and re-arm its timer; returns (previous snapshot, outputs)."""
        now = self._clock.wall_ms()
        before = group.snapshot
        after, outputs = states.step(before, event, now)
        if after.state is not before.state:
            group.current_state_timestamp_ms = now
        group.snapshot = after
        self._arm(group)
        if after is not before:
            _log_changes(before, after, event)
        return before, outputs

    def _deliver(
        self, group: Group, outputs: Iterable[states.Output], error: ErrorCode | None = None
    ) -> None:
        for out in outputs:
            if error is not None and isinstance(out, SyncResponse) and out.error is ErrorCode.NONE:
                out = SyncResponse(out.member_id, error)
            if isinstance(out, JoinResponse):
                join = group.join_waiters.pop(out.member_id, None)
                if join is not None and not join.done():
                    join.set_result(out)
            elif isinstance(out, SyncResponse):
                sync = group.sync_waiters.pop(out.member_id, None)
                if sync is not None and not sync.done():
                    sync.set_result(out)

    async def _run(self, group: Group, event: states.Event) -> tuple[states.Output, ...]:
        """Step, store the group when the step asks for it (``PersistGroup``, before any
        response of the same step goes out, as Kafka's ``storeGroup``), then deliver."""
        _, outputs = self._apply(group, event)
        error: ErrorCode | None = None
        if any(isinstance(out, states.PersistGroup) for out in outputs):
            try:
                await self._append(group.group_id, [self._group_record(group)])
            except ApiError as exc:
                log.warning("group %s: storing group metadata failed: %s", group.group_id, exc)
                error = exc.code
        self._deliver(group, outputs, error)
        self._forget_if_unused(group)
        return outputs

    def _arm(self, group: Group) -> None:
        deadline = states.next_deadline_ms(group.snapshot)
        if deadline == group.timer_deadline_ms and group.timer is not None:
            return
        group.cancel_timer()
        if deadline is None or self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # loading before the loop runs: armed again on the first event
        delay = max(0.0, (deadline - self._clock.wall_ms()) / 1000)
        group.timer = loop.call_later(delay, self._on_timer, group.group_id)
        group.timer_deadline_ms = deadline

    def _on_timer(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        group.timer = None
        group.timer_deadline_ms = None
        task = asyncio.get_running_loop().create_task(self._run(group, states.Tick()))
        task.add_done_callback(_log_failure)

    def arm_all(self) -> None:
        """Start the loaded groups once the event loop runs (Kafka's ``onGroupLoaded``: every
        member's session restarts now) and arm their timers."""
        for group in self._groups.values():
            self._apply(group, states.GroupLoaded())

    # --- JoinGroup / SyncGroup / Heartbeat / LeaveGroup -----------------------------------

    async def join_group(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: states.Protocols,
        require_known_member_id: bool,
        supports_skip_assignment: bool = False,
    ) -> JoinResponse:
        if not group_id:
            return JoinResponse(member_id, ErrorCode.INVALID_GROUP_ID)
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return JoinResponse(member_id, status)
        group = self._group(group_id, create=member_id == "")
        if group is None:
            return JoinResponse(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        prefix = group_instance_id if group_instance_id is not None else client_id
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        event = states.JoinRequested(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            new_member_id=new_member_id,
            require_known_member_id=require_known_member_id,
            supports_skip_assignment=supports_skip_assignment,
        )
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[JoinResponse] = loop.create_future()
        # Which id the response will carry: the existing one, or the generated one.
        key = member_id or new_member_id
        old = group.join_waiters.pop(key, None)
        if old is not None and not old.done():
            old.set_result(JoinResponse(key, ErrorCode.REBALANCE_IN_PROGRESS))
        group.join_waiters[key] = waiter
        outputs = await self._run(group, event)
        response: JoinResponse | None = None
        if not waiter.done():
            # A refusal of a join without a member id names "" (not ``key``).
            for out in outputs:
                if isinstance(out, JoinResponse) and out.member_id == member_id:
                    group.join_waiters.pop(key, None)
                    response = out
                    break
        if response is None:
            response = await waiter
        self._forget_if_unused(group)
        return response

    async def sync_group(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: tuple[tuple[str, bytes], ...],
    ) -> SyncResponse:
        if not group_id:
            return SyncResponse(member_id, ErrorCode.INVALID_GROUP_ID)
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return SyncResponse(member_id, status)
        group = self._group(group_id)
        if group is None:
            return SyncResponse(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        waiter: asyncio.Future[SyncResponse] = asyncio.get_running_loop().create_future()
        old = group.sync_waiters.pop(member_id, None)
        if old is not None and not old.done():
            old.set_result(SyncResponse(member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        group.sync_waiters[member_id] = waiter
        await self._run(
            group,
            states.SyncRequested(
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
            ),
        )
        return await waiter

    async def heartbeat(
        self, *, group_id: str, member_id: str, generation_id: int, group_instance_id: str | None
    ) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return status
        group = self._group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        outputs = await self._run(
            group, states.Heartbeat(member_id, generation_id, group_instance_id)
        )
        for out in outputs:
            if isinstance(out, states.HeartbeatResponse) and out.member_id == member_id:
                return out.error
        return ErrorCode.UNKNOWN_SERVER_ERROR

    async def leave_group(
        self, *, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Remove ``members`` ((member_id, group_instance_id) pairs); returns the group-level
        error and one (member_id, group_instance_id, error) per member."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return status, []
        group = self._group(group_id)
        if group is None:
            # Kafka: NONE for the request, UNKNOWN_MEMBER_ID for each member.
            return ErrorCode.NONE, [(mid, gid, ErrorCode.UNKNOWN_MEMBER_ID) for mid, gid in members]
        outputs = await self._run(
            group,
            states.LeaveGroupRequested(
                tuple(states.LeaveRequested(mid, gid) for mid, gid in members)
            ),
        )
        answers = [o for o in outputs if isinstance(o, states.LeaveResponse)][: len(members)]
        if answers and all(a.error is ErrorCode.COORDINATOR_NOT_AVAILABLE for a in answers):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []  # a Dead group, as Kafka answers
        return ErrorCode.NONE, [(a.member_id, a.group_instance_id, a.error) for a in answers]

    # --- offsets --------------------------------------------------------------------------

    async def commit_offsets(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        retention_time_ms: int,
        offsets: Mapping[TopicPartitionKey, CommitRequest],
    ) -> dict[TopicPartitionKey, ErrorCode]:
        """Kafka's ``handleCommitOffsets`` for classic groups and standalone (simple) commits."""

        def all_failed(error: ErrorCode) -> dict[TopicPartitionKey, ErrorCode]:
            return dict.fromkeys(offsets, error)

        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return all_failed(status)
        group = self._group(group_id)
        if group is None:
            if generation_id >= 0:
                # A generation from a group this coordinator does not know: a stale member.
                return all_failed(ErrorCode.ILLEGAL_GENERATION)
            group = self._group(group_id, create=True)
            assert group is not None
        snapshot, error = states.accept_offset_commit(
            group.snapshot, member_id, generation_id, group_instance_id, self._clock.wall_ms()
        )
        if error is not ErrorCode.NONE:
            return all_failed(error)
        if snapshot is not group.snapshot:
            # The commit counted as a heartbeat: the member's session restarted.
            group.snapshot = snapshot
            self._arm(group)
        now = self._clock.wall_ms()
        expire = now + retention_time_ms if retention_time_ms >= 0 else None
        accepted, results = self._accept_commits(offsets, now, expire)
        if accepted:
            records = offset_commit_records(group_id, accepted.items())
            try:
                base = await self._append(group_id, records)
            except ApiError as exc:
                code = commit_error(exc.code)
                results.update(dict.fromkeys(accepted, code))
            else:
                group.offsets.update(accepted)
                group.appended_batch_offsets.update(dict.fromkeys(accepted, base))
                results.update(dict.fromkeys(accepted, ErrorCode.NONE))
        return {tp: results[tp] for tp in offsets}

    def _accept_commits(
        self, offsets: Mapping[TopicPartitionKey, CommitRequest], now: int, expire: int | None
    ) -> tuple[dict[TopicPartitionKey, OffsetAndMetadata], dict[TopicPartitionKey, ErrorCode]]:
        """The partitions of a commit that may be stored, and the errors of the others
        (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE: Kafka's per-partition checks)."""
        results: dict[TopicPartitionKey, ErrorCode] = {}
        accepted: dict[TopicPartitionKey, OffsetAndMetadata] = {}
        for tp, commit in offsets.items():
            metadata = commit.metadata or ""
            if not self._partition_exists(*tp):
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = OffsetAndMetadata(
                    offset=commit.offset,
                    leader_epoch=commit.leader_epoch,
                    metadata=metadata,
                    commit_timestamp_ms=now,
                    expire_timestamp_ms=expire,
                )
        return accepted, results

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartitionKey] | None
    ) -> dict[TopicPartitionKey, OffsetAndMetadata | None]:
        """Committed offsets of ``group_id`` (all of them when ``partitions`` is None); an
        unknown group or partition maps to None (offset -1 on the wire)."""
        group = self._group(group_id)
        offsets = group.offsets if group is not None else {}
        if partitions is None:
            return dict(sorted(offsets.items()))
        return {tp: offsets.get(tp) for tp in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartitionKey]
    ) -> tuple[ErrorCode, dict[TopicPartitionKey, ErrorCode]]:
        """OffsetDelete (KIP-496): allowed for Empty groups, and for topics a consumer group
        does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise)."""
        wanted = list(partitions)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, {}
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return status, {}
        group = self._group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        snapshot = group.snapshot
        error = states.validate_offset_delete(snapshot)
        if error is not ErrorCode.NONE:
            return error, {}
        subscribed: frozenset[str] | None = frozenset()
        if snapshot.state is not GroupState.EMPTY:
            # Topics of a consumer group's members stay; unknown subscriptions (another
            # protocol type, unreadable metadata) protect every topic, as in Kafka.
            subscribed = subscribed_topics(snapshot)
        results: dict[TopicPartitionKey, ErrorCode] = {}
        doomed: list[TopicPartitionKey] = []
        for tp in wanted:
            if subscribed is None or tp[0] in subscribed:
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            elif not self._partition_exists(*tp):
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                results[tp] = ErrorCode.NONE
                if tp in group.offsets:
                    doomed.append(tp)
        if doomed:
            await self._remove_offsets(group, doomed)
        return ErrorCode.NONE, results

    async def _remove_offsets(self, group: Group, tps: list[TopicPartitionKey]) -> None:
        await self._append(group.group_id, [offset_tombstone(group.group_id, tp) for tp in tps])
        for tp in tps:
            group.offsets.pop(tp, None)
        txn_offsets.remove_partitions(group, tps)

    async def on_topic_deleted(self, topic: str) -> None:
        """Kafka's ``handleDeletedPartitions``: offsets of a deleted topic are removed (its
        pending transactional ones too)."""
        for group in list(self._groups.values()):
            tps = [tp for tp in group.offsets if tp[0] == topic]
            if tps:
                await self._remove_offsets(group, tps)
            txn_offsets.remove_topic(group, topic)

    # --- describe / list / delete ---------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        """A group unknown here (the empty id included, which Kafka accepts for
        DescribeGroups) is reported Dead with no error."""
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            # Kafka's GroupCoordinator.EmptyGroup: no state, type, protocol or members.
            return GroupDescription(status, group_id, state="")
        group = self._group(group_id)
        if group is None:
            return GroupDescription(ErrorCode.NONE, group_id)
        s = group.snapshot
        stable = s.state is GroupState.STABLE and s.protocol_name is not None
        members = tuple(
            MemberDescription(
                member_id=mid,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=metadata_or_empty(m, s.protocol_name) if stable else b"",
                assignment=m.assignment if stable else b"",
            )
            for mid, m in s.members.items()
        )
        return GroupDescription(
            ErrorCode.NONE,
            group_id,
            state=s.state.value,
            protocol_type=s.protocol_type or "",
            protocol=(s.protocol_name or "") if stable else "",
            members=members,
        )

    def list_groups(self, states_filter: Iterable[str] = ()) -> list[GroupListing]:
        """Groups and their states; ``states_filter`` (case-insensitive, KIP-518) narrows."""
        wanted = {s.lower() for s in states_filter}
        listing = []
        for group_id, group in sorted(self._groups.items()):
            state = group.snapshot.state
            if state is GroupState.DEAD:
                continue
            if wanted and state.value.lower() not in wanted:
                continue
            listing.append(GroupListing(group_id, group.snapshot.protocol_type or "", state.value))
        return listing

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups: Empty groups lose their metadata and offsets (tombstones);
        NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND / INVALID_GROUP_ID otherwise."""
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            if not group_id:
                results[group_id] = ErrorCode.INVALID_GROUP_ID
                continue
            status = self.group_status(group_id)
            if status is not ErrorCode.NONE:
                results[group_id] = status
                continue
            group = self._group(group_id)
            if group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            outputs = await self._run(group, states.DeleteRequested())
            error = next(
                (o.error for o in outputs if isinstance(o, states.DeleteResponse)),
                ErrorCode.UNKNOWN_SERVER_ERROR,
            )
            if error is ErrorCode.NONE:
                await self._bury(group)
            results[group_id] = error
        return results

    async def _bury(self, group: Group) -> None:
        """Tombstones for a Dead group's offsets and metadata; drop it from the cache."""
        records: list[Record] = [offset_tombstone(group.group_id, tp) for tp in group.offsets]
        records.append(group_tombstone(group.group_id))
        group.cancel_timer()
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
        await self._append(group.group_id, records)

    def _forget_if_unused(self, group: Group) -> None:
        """Never-stored Empty groups without offsets (e.g. every join refused) are dropped."""
        s = group.snapshot
        if (
            s.state is GroupState.EMPTY
            and not s.members
            and not s.pending_member_ids
            and not group.offsets
            and not group.pending_txn_offsets
            and s.generation_id == 0
            and self._groups.get(group.group_id) is group
        ):
            group.cancel_timer()
            del self._groups[group.group_id]

    # --- expiry ---------------------------------------------------------------------------

    async def expire_offsets(self) -> int:
        """Kafka's ``cleanupGroupMetadata``: remove expired offsets, then Empty groups with no
        offsets left. Returns the number of offsets removed."""
        now = self._clock.wall_ms()
        retention = self.config.offsets_retention_ms
        removed = 0
        for group in list(self._groups.values()):
            expired = group.expired_offsets(now, retention)
            if expired:
                try:
                    await self._remove_offsets(group, expired)
                except ApiError as exc:
                    log.warning("group %s: expiring offsets failed: %s", group.group_id, exc)
                    continue
                removed += len(expired)
                log.info("group %s: removed %d expired offset(s)", group.group_id, len(expired))
            if (
                group.snapshot.state is GroupState.EMPTY
                and not group.offsets
                and not group.pending_txn_offsets
                and not group.snapshot.pending_member_ids
            ):
                self._apply(group, states.DeleteRequested())
                state: GroupState = group.snapshot.state
                if state is GroupState.DEAD:
                    try:
                        await self._bury(group)
                    except ApiError as exc:
                        log.warning("group %s: removing it failed: %s", group.group_id, exc)
        return removed

    # --- records --------------------------------------------------------------------------

    def _group_record(self, group: Group) -> Record:
        if group.snapshot.state is GroupState.DEAD:
            return group_tombstone(group.group_id)
        return group_metadata_record(group.group_id, group.metadata_value())

    async def _append(
        self,
        group_id: str,
        records: list[Record],
        producer: tuple[int, int] | None = None,
        verification_guard: object | None = None,
    ) -> int:
        """Append one batch to the group's partition; its base offset. A producer (id, epoch)
        makes it a transactional batch of that producer (TxnOffsetCommit), with its KIP-890
        ``verification_guard``."""
        batch = encode_records(
            records, self._clock.wall_ms(), self.config.compression, producer=producer
        )
        return await self._log.append(
            self.partition_for(group_id), batch, verification_guard=verification_guard
        )


def _log_changes(before: GroupSnapshot, after: GroupSnapshot, event: states.Event) -> None:
    """One INFO line per membership change and state change, as Kafka's coordinator logs
    them (members leaving or expiring, rebalances starting, generations stabilising)."""
    gone = [m for m in before.members if m not in after.members]
    if gone:
        why = {
            states.LeaveGroupRequested: "left the group",
            states.Tick: "session or rebalance timeout expired",
            states.JoinRequested: "was replaced (static membership)",
        }.get(type(event), "was removed")
        log.info("group %s: member(s) %s %s", after.group_id, ", ".join(gone), why)
    if after.state is before.state:
        return
    if after.state is GroupState.PREPARING_REBALANCE:
        log.info(
            "group %s: preparing to rebalance (generation %d, %d member(s))",
            after.group_id,
            after.generation_id,
            len(after.members),
        )
    elif after.state is GroupState.COMPLETING_REBALANCE:
        log.info(
            "group %s: generation %d with %d member(s), protocol %s, leader %s",
            after.group_id,
            after.generation_id,
            len(after.members),
            after.protocol_name,
            after.leader_id,
        )
    elif after.state is GroupState.STABLE:
        log.info("group %s: stable at generation %d", after.group_id, after.generation_id)
    elif after.state is GroupState.EMPTY:
        log.info("group %s: empty at generation %d", after.group_id, after.generation_id)
    elif isinstance(event, states.Unload):
        log.debug("group %s: unloaded", after.group_id)
    elif after.state is GroupState.DEAD:
        log.info("group %s: removed", after.group_id)


def _log_failure(task: asyncio.Task[object]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("group timer failed", exc_info=task.exception())
