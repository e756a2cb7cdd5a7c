"""Consumer-group questions to a cluster, answered as plain values (confluent-kafka's
``AdminClient`` underneath), for ``franz consumer-groups``.

Kafka's admin calls, one method each: ListGroups (``list_groups``), DescribeGroups
(``describe``), OffsetFetch (``committed``), Metadata/DescribeTopics (``topic_partitions``),
ListOffsets (``list_offsets``: -2 earliest, -1 latest, or a timestamp), OffsetCommit through
AlterConsumerGroupOffsets (``alter_offsets``), DeleteGroups (``delete_groups``). Every call
waits at most ``timeout_ms``; a cluster that does not answer becomes a ``ToolError`` naming
the bootstrap servers.

Group states are Kafka's names (``ConsumerGroupState.toString``: ``Stable``, ``Empty``,
``PreparingRebalance``, ``CompletingRebalance``, ``Dead``, ``Unknown``). A group that does not
exist is ``None`` (Dead, or GROUP_ID_NOT_FOUND from newer brokers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from franz.admin.client import UNREACHABLE_CODES, java_hash_set_order, quiet
from franz.admin.group_offsets import TP, LogOffsets
from franz.admin.group_tables import OffsetRow
from franz.admin.options import ToolError
from franz.errors import ErrorCode

__all__ = ["GroupAdmin", "GroupDescription", "Member", "group_error_text", "state_name"]

T = TypeVar("T")

_STATE_NAMES: Final = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}

#: Kafka's exception class per error code, for errors Kafka prints as ``exception.toString``.
_EXCEPTIONS: Final = {
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.GROUP_ID_NOT_FOUND: "GroupIdNotFoundException",
    ErrorCode.INVALID_GROUP_ID: "InvalidGroupIdException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "CoordinatorNotAvailableException",
}

OffsetQuery = Literal["earliest", "latest"] | int


def state_name(state: Any) -> str:
    """Kafka's name of a confluent-kafka ``ConsumerGroupState``."""
    return _STATE_NAMES.get(getattr(state, "name", ""), "Unknown")


def group_error_text(error: KafkaError) -> str:
    """A broker error as Kafka's tools print it: ``org.apache.kafka.common.errors.<Exception>:
    <message>`` for the group errors, Kafka's message for other known codes, else
    librdkafka's text."""
    try:
        code = ErrorCode(error.code())
    except ValueError:
        return str(error.str())
    if code in _EXCEPTIONS:
        return f"org.apache.kafka.common.errors.{_EXCEPTIONS[code]}: {code.message}"
    return code.message or str(error.str())


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str
    assignor: str
    coordinator_id: int
    coordinator_host: str
    coordinator_port: int
    members: tuple[Member, ...]


class GroupAdmin:
    """An ``AdminClient`` for the group commands; see the module docstring."""

    def __init__(
        self,
        config: Mapping[str, Any],
        bootstrap: str,
        timeout_ms: int,
        admin: AdminClient | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout_ms = timeout_ms
        self.timeout_s = timeout_ms / 1000
        # the tool reports what failed in one line (a --command-config may set log_level);
        # a long-lived caller (franz console) passes the AdminClient it already has
        self.admin = admin if admin is not None else AdminClient(quiet(dict(config)))

    def _wait(self, future: Future[T], what: str) -> T:
        """The future's result; a cluster that does not answer becomes a ``ToolError``."""
        try:
            return future.result(self.timeout_s + 5)
        except KafkaException as exc:
            if exc.args[0].code() not in UNREACHABLE_CODES:
                raise
        except TimeoutError:
            pass
        raise self._unreachable(what)

    def _unreachable(self, what: str) -> ToolError:
        return ToolError(
            f"no answer from {self.bootstrap} within {self.timeout_ms} ms ({what}): "
            "check that a broker is running there, or raise --timeout"
        )

    def list_groups(self) -> list[tuple[str, str]]:
        """``[(group, state)]`` sorted by group."""
        future = self.admin.list_consumer_groups(request_timeout=self.timeout_s)
        result = self._wait(future, "listing groups")
        for error in result.errors or []:
            if error.code() in UNREACHABLE_CODES:
                raise self._unreachable("listing groups")
            raise ToolError(f"listing groups: {group_error_text(error)}")
        return sorted((g.group_id, state_name(g.state)) for g in result.valid)

    def describe(self, groups: Sequence[str]) -> dict[str, GroupDescription | None]:
        if not groups:
            return {}
        futures = self.admin.describe_consumer_groups(list(groups), request_timeout=self.timeout_s)
        out: dict[str, GroupDescription | None] = {}
        for group in groups:
            try:
                d = self._wait(futures[group], f"describing group {group!r}")
            except KafkaException as exc:
                if exc.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
                    out[group] = None
                    continue
                raise ToolError(f"group {group!r}: {group_error_text(exc.args[0])}") from None
            state = state_name(d.state)
            out[group] = None if state == "Dead" else GroupDescription(
                group=group,
                state=state,
                assignor=d.partition_assignor or "",
                coordinator_id=d.coordinator.id,
                coordinator_host=d.coordinator.host,
                coordinator_port=d.coordinator.port,
                members=tuple(
                    Member(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.host,
                        tuple(
                            sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
                        ),
                    )
                    for m in d.members
                ),
            )
        return out

    def committed(self, group: str) -> dict[TP, int]:
        """Every committed offset of ``group`` (OffsetFetch for all topics)."""
        request = [ConsumerGroupTopicPartitions(group)]
        futures = self.admin.list_consumer_group_offsets(request, request_timeout=self.timeout_s)
        try:
            result = self._wait(futures[group], f"committed offsets of {group!r}")
        except KafkaException as exc:
            if exc.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
                return {}
            raise ToolError(f"group {group!r}: {group_error_text(exc.args[0])}") from None
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0 and tp.error is None
        }

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | None]:
        """``{topic: sorted partition numbers}``; None for a topic that does not exist."""
        names = sorted(set(topics))
        if not names:
            return {}
        futures = self.admin.describe_topics(TopicCollection(names), request_timeout=self.timeout_s)
        out: dict[str, list[int] | None] = {}
        for name in names:
            try:
                description = self._wait(futures[name], f"describing topic {name!r}")
            except KafkaException as exc:
                if exc.args[0].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    out[name] = None
                    continue
                raise ToolError(f"topic {name!r}: {group_error_text(exc.args[0])}") from None
            out[name] = sorted(p.id for p in description.partitions)
        return out

    def list_offsets(self, partitions: Iterable[TP], query: OffsetQuery) -> dict[TP, int]:
        """ListOffsets: the log start (``earliest``), log end (``latest``) or the first offset
        at or after a timestamp (-1 where there is none). Partitions that fail are left out."""
        spec: Any
        if query == "earliest":
            spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        elif query == "latest":
            spec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        else:
            spec = OffsetSpec.for_timestamp(int(query))
        wanted = {TopicPartition(t, p): spec for t, p in sorted(set(partitions))}
        if not wanted:
            return {}
        futures = self.admin.list_offsets(wanted, request_timeout=self.timeout_s)
        out: dict[TP, int] = {}
        for tp, future in futures.items():
            try:
                info = self._wait(future, "listing offsets")
            except KafkaException:
                continue
            out[(tp.topic, tp.partition)] = info.offset
        return out

    def log_offsets(self, partitions: Sequence[TP]) -> LogOffsets:
        return LogOffsets(
            start=self.list_offsets(partitions, "earliest"),
            end=self.list_offsets(partitions, "latest"),
        )

    def offset_rows(self, description: GroupDescription) -> list[OffsetRow]:
        """The rows of ``--describe`` (offsets view): per partition the committed offset
        (CURRENT-OFFSET), the log end offset and the LAG between them, with the member that
        owns it. Kafka's order: members by assignment size (largest first), each member's
        partitions by topic and partition; then committed partitions nobody owns, in the
        order of Kafka 3.9's ``HashSet<TopicPartition>`` of them (``java_hash_set_order``).
        One OffsetFetch and one batched ListOffsets (latest)."""
        group = description.group
        committed = self.committed(group)
        members = sorted(
            (m for m in description.members if m.assignment), key=lambda m: -len(m.assignment)
        )
        owned = [(tp, m) for m in members for tp in m.assignment]
        assigned = {tp for tp, _ in owned}
        unowned: list[tuple[TP, Member | None]] = [
            (tp, None) for tp in java_hash_set_order(sorted(committed)) if tp not in assigned
        ]
        ends = self.list_offsets([tp for tp, _ in owned + unowned], "latest")
        rows = []
        for tp, member in [*owned, *unowned]:
            current = committed.get(tp)
            end = ends.get(tp)
            rows.append(
                OffsetRow(
                    group,
                    tp[0],
                    tp[1],
                    current,
                    end,
                    end - current if current is not None and end is not None else None,
                    member.member_id if member else None,
                    member.host if member else None,
                    member.client_id if member else None,
                )
            )
        return rows

    def alter_offsets(self, group: str, offsets: Mapping[TP, int]) -> None:
        """Commit ``offsets`` for ``group`` (the group must have no active members)."""
        request = [
            ConsumerGroupTopicPartitions(
                group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
            )
        ]
        futures = self.admin.alter_consumer_group_offsets(request, request_timeout=self.timeout_s)
        try:
            result = self._wait(futures[group], f"committing offsets of {group!r}")
        except KafkaException as exc:
            raise ToolError(
                f"could not commit the new offsets of group '{group}': "
                f"{group_error_text(exc.args[0])}"
            ) from None
        failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
        if failed:
            details = ", ".join(f"{tp.topic}-{tp.partition}: {tp.error}" for tp in failed)
            raise ToolError(f"could not commit the new offsets of group '{group}': {details}")

    def delete_groups(self, groups: Sequence[str]) -> dict[str, str | None]:
        """``{group: None if deleted, else Kafka's error text}``."""
        futures = self.admin.delete_consumer_groups(list(groups), request_timeout=self.timeout_s)
        out: dict[str, str | None] = {}
        for group in groups:
            try:
                self._wait(futures[group], f"deleting group {group!r}")
                out[group] = None
            except KafkaException as exc:
                out[group] = group_error_text(exc.args[0])
        return out
