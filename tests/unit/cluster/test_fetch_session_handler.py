"""The fetcher's side of incremental fetch sessions (``franz.cluster.fetch_session_handler``):
what each request carries and how responses move the session on, as Kafka's
``FetchSessionHandler`` (and its ``FetchSessionHandlerTest`` cases) does; and a property test
against a model of the leader's session (``franz.broker.fetch_session``): whatever the wanted
partitions do, the leader's session holds exactly what the fetcher last wanted."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from franz.broker.fetch_session import CachedPartition, FetchSession
from franz.cluster.fetch_session_handler import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchMetadata,
    FetchSessionHandler,
    PartitionData,
    next_epoch,
)
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
ZERO = uuid.UUID(int=0)


def data(offset: int, topic_id: uuid.UUID = T1, epoch: int = 3) -> PartitionData:
    return PartitionData(topic_id, offset, 0, 1048576, epoch, epoch)


def started(handler: FetchSessionHandler, session_id: int = 123) -> None:
    """A full request for A0, A1, B0 answered with a new session."""
    handler.build({A0: data(0), A1: data(0), B0: data(0, T2)})
    assert handler.handle_response(ErrorCode.NONE, session_id, [A0, A1, B0], [T1, T2])


def test_next_epoch_is_kafkas() -> None:
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_the_first_request_is_full_and_creates_a_session() -> None:
    handler = FetchSessionHandler()
    request = handler.build({A0: data(5), B0: data(7, T2)})
    assert request.metadata == FetchMetadata(0, INITIAL_EPOCH)
    assert request.metadata.is_full
    assert list(request.to_send) == [A0, B0] and not request.to_forget
    assert request.can_use_topic_ids
    assert handler.session_topic_names == {T1: "a", T2: "b"}
    assert handler.handle_response(ErrorCode.NONE, 77, [A0, B0], [T1, T2])
    assert handler.next_metadata == FetchMetadata(77, 1)


def test_incremental_requests_send_only_added_and_altered_partitions() -> None:
    handler = FetchSessionHandler()
    started(handler)
    unchanged = handler.build({A0: data(0), A1: data(0), B0: data(0, T2)})
    assert unchanged.metadata == FetchMetadata(123, 1) and not unchanged.to_send
    assert list(unchanged.session_partitions) == [A0, A1, B0]
    assert handler.handle_response(ErrorCode.NONE, 123, [], [])
    moved = handler.build({A0: data(10), A1: data(0), B0: data(0, T2, epoch=4)})
    assert moved.metadata == FetchMetadata(123, 2)
    assert moved.to_send == {A0: data(10), B0: data(0, T2, epoch=4)}
    assert not moved.to_forget


def test_partitions_no_longer_wanted_are_forgotten_new_ones_added() -> None:
    handler = FetchSessionHandler()
    started(handler)
    c0 = TopicPartition("c", 0)
    request = handler.build({A1: data(0), c0: data(3, uuid.UUID(int=3))})
    assert request.to_forget == [(A0, T1), (B0, T2)]
    assert request.to_send == {c0: data(3, uuid.UUID(int=3))}
    assert list(request.session_partitions) == [A1, c0]


def test_a_recreated_topic_is_forgotten_under_its_old_id_and_sent_under_the_new() -> None:
    handler = FetchSessionHandler()
    started(handler)
    new_id = uuid.UUID(int=9)
    request = handler.build({A0: data(0, new_id), A1: data(0), B0: data(0, T2)})
    assert request.to_forget == [(A0, T1)]
    assert request.to_send == {A0: data(0, new_id)}


def test_a_partition_without_topic_id_makes_the_request_name_topics() -> None:
    handler = FetchSessionHandler()
    request = handler.build({A0: data(0, ZERO), B0: data(0, T2)})
    assert not request.can_use_topic_ids
    assert handler.session_topic_names == {}


def test_a_full_response_without_session_id_keeps_requests_full() -> None:
    handler = FetchSessionHandler()
    handler.build({A0: data(0)})
    assert handler.handle_response(ErrorCode.NONE, 0, [A0], [T1])
    assert handler.next_metadata == FetchMetadata(0, INITIAL_EPOCH)
    assert handler.build({A0: data(1)}).metadata.is_full


def test_a_full_response_must_name_every_session_partition_and_no_other() -> None:
    handler = FetchSessionHandler()
    handler.build({A0: data(0), A1: data(0)})
    assert not handler.handle_response(ErrorCode.NONE, 5, [A0], [T1])  # A1 omitted
    assert handler.next_metadata == FetchMetadata(0, INITIAL_EPOCH)
    handler.build({A0: data(0)})
    assert not handler.handle_response(ErrorCode.NONE, 5, [A0, A1], [T1])  # A1 extra
    handler.build({A0: data(0)})
    assert not handler.handle_response(ErrorCode.NONE, 5, [A0], [T1, T2])  # unknown id


def test_an_incremental_response_may_omit_partitions_but_not_add_any() -> None:
    handler = FetchSessionHandler()
    started(handler)
    handler.build({A0: data(1), A1: data(0), B0: data(0, T2)})
    assert handler.handle_response(ErrorCode.NONE, 123, [A0], [T1])
    assert handler.next_metadata == FetchMetadata(123, 2)
    handler.build({A0: data(2), A1: data(0), B0: data(0, T2)})
    assert not handler.handle_response(ErrorCode.NONE, 123, [TopicPartition("z", 0)], [T1])
    assert handler.next_metadata == FetchMetadata(123, INITIAL_EPOCH)  # close it, start anew


def test_an_incremental_response_without_session_id_means_the_leader_closed_it() -> None:
    handler = FetchSessionHandler()
    started(handler)
    handler.build({A0: data(0), A1: data(0), B0: data(0, T2)})
    assert handler.handle_response(ErrorCode.NONE, 0, [], [])
    assert handler.next_metadata == FetchMetadata(0, INITIAL_EPOCH)


def test_session_errors_restart_the_session() -> None:
    handler = FetchSessionHandler()
    started(handler)
    handler.build({A0: data(0)})
    assert not handler.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [], [])
    assert handler.next_metadata == FetchMetadata(0, INITIAL_EPOCH)
    started(handler, 456)
    handler.build({A0: data(0)})
    assert not handler.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [], [])
    assert handler.next_metadata == FetchMetadata(456, INITIAL_EPOCH)  # close 456, new one
    request = handler.build({A0: data(0)})
    assert request.metadata.is_full and list(request.to_send) == [A0]


def test_a_lost_request_closes_the_session_and_attempts_a_new_one() -> None:
    handler = FetchSessionHandler()
    started(handler)
    handler.build({A0: data(0)})
    handler.handle_error()
    assert handler.next_metadata == FetchMetadata(123, INITIAL_EPOCH)


# -- against the leader's session ----------------------------------------------------------------

_TPS = [TopicPartition(t, p) for t in ("a", "b") for p in range(3)]


@given(st.lists(st.dictionaries(st.sampled_from(_TPS), st.integers(0, 3)), min_size=1, max_size=12))
def test_the_leaders_session_holds_what_the_fetcher_last_wanted(
    rounds: list[dict[TopicPartition, int]],
) -> None:
    """Each round the fetcher wants some partitions at some offsets; the leader's session
    (updated as ``franz.broker.handlers.fetch`` does: upsert what is sent, drop what is
    forgotten) then holds exactly those partitions at those offsets."""
    handler = FetchSessionHandler()
    leader = FetchSession(session_id=42)
    for wanted in rounds:
        request = handler.build({tp: data(offset, T1) for tp, offset in wanted.items()})
        if request.metadata.is_full:
            leader = FetchSession(session_id=42)
        for tp, p in request.to_send.items():
            leader.upsert(CachedPartition(tp.topic, tp.partition, p.fetch_offset, p.max_bytes))
        for tp, _ in request.to_forget:
            leader.forget((tp.topic, tp.partition))
        assert {(c.topic, c.partition): c.fetch_offset for c in leader.partitions.values()} == {
            (tp.topic, tp.partition): offset for tp, offset in wanted.items()
        }
        answered = list(request.session_partitions) if request.metadata.is_full else []
        assert handler.handle_response(ErrorCode.NONE, 42, answered)
