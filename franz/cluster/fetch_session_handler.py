"""The fetcher's side of incremental fetch sessions (KIP-227): Kafka's ``FetchSessionHandler``
as its replica fetchers use it (``RemoteLeaderEndPoint``). Sans-IO: it turns "the partitions
I want now" into what one Fetch request carries, and a Fetch response's top-level fields into
the next request's session metadata.

A session is (session id, epoch) on the leader's side, holding each partition's last fetch
position. Request metadata (Kafka's ``FetchMetadata``)::

    (0, 0)     INITIAL: a full request asking the leader to create a session
    (X, 0)     close session X and create a new one (after an error): a full request
    (X, n>0)   incremental in session X: only partitions added or altered since the last
               request are sent, removed ones go in ``forgotten_topics_data``; the leader
               answers only partitions with news (records, an error, a new high watermark
               or log start offset)

``build`` compares the wanted partitions (in the caller's order: the order of a full request
decides which partitions a size-limited response serves first) with the session's
(``PartitionData`` equality: fetch offset, log start offset, max bytes, current leader epoch,
last fetched epoch, topic id). ``handle_response`` validates the response against the session
(a full response must name every session partition and no other; an incremental one only
session partitions) and moves the metadata on, exactly as Kafka's ``handleResponse``:

* a top-level error: FETCH_SESSION_ID_NOT_FOUND starts over from INITIAL, any other closes
  the session and attempts a new one; the response is not processed;
* a full response with session id 0: the leader made no session (cache full, or an old
  version without sessions): the next request is full again;
* a full response with an id: incremental from epoch 1;
* an incremental response with session id 0: the leader closed the session: INITIAL;
* else the next epoch (after ``Int32.MAX`` comes 1).

``handle_error`` (the request failed: connection lost, timeout) closes the session and
attempts a new one on the next request.

Glossary: *altered*: in the session and wanted again with different ``PartitionData``;
*replaced*: the same partition wanted under another topic id (a re-created topic): forgotten
under the old id and sent under the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from franz.errors import ErrorCode
from franz.storage.files import TopicPartition

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "FetchMetadata",
    "FetchRequestData",
    "FetchSessionHandler",
    "PartitionData",
    "next_epoch",
]

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
_INT32_MAX: Final = 2**31 - 1
_ZERO_UUID: Final = uuid.UUID(int=0)


def next_epoch(epoch: int) -> int:
    """Kafka's ``FetchMetadata.nextEpoch``: FINAL stays FINAL, ``Int32.MAX`` wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _INT32_MAX:
        return 1
    return epoch + 1


@dataclass(frozen=True, slots=True)
class FetchMetadata:
    """A request's (session id, epoch); full when the epoch is INITIAL or FINAL."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing_attempt_new(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))


INITIAL: Final = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)


@dataclass(frozen=True, slots=True)
class PartitionData:
    """One partition of a Fetch request (Kafka's ``FetchRequest.PartitionData``)."""

    topic_id: uuid.UUID
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """What one request carries: ``to_send`` (all partitions when ``metadata.is_full``, else
    the added and altered ones), ``to_forget`` (removed and replaced partitions, with the topic
    id the session knew them by), the whole session as of this request, and whether every
    partition has a topic id (else the request must name topics, below v13)."""

    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[tuple[TopicPartition, uuid.UUID]]
    session_partitions: dict[TopicPartition, PartitionData]
    metadata: FetchMetadata
    can_use_topic_ids: bool


class FetchSessionHandler:
    """One fetcher's session with one leader (module docstring)."""

    def __init__(self) -> None:
        self.next_metadata: FetchMetadata = INITIAL
        #: The partitions the leader's session holds (as of the last request), in order.
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        #: Topic id -> name of the session's topics (empty when topic ids are not used).
        self.session_topic_names: dict[uuid.UUID, str] = {}

    def build(self, wanted: Mapping[TopicPartition, PartitionData]) -> FetchRequestData:
        """The next request for ``wanted`` (every partition to fetch now, in order)."""
        without_ids = sum(1 for data in wanted.values() if data.topic_id == _ZERO_UUID)
        can_use_topic_ids = without_ids == 0
        topic_names = {
            data.topic_id: tp.topic for tp, data in wanted.items() if data.topic_id != _ZERO_UUID
        }
        metadata = self.next_metadata
        if metadata.is_full:
            self.session_partitions = dict(wanted)
            self.session_topic_names = topic_names if can_use_topic_ids else {}
            return FetchRequestData(
                dict(wanted), [], dict(self.session_partitions), metadata, can_use_topic_ids
            )
        pending = dict(wanted)
        to_send: dict[TopicPartition, PartitionData] = {}
        to_forget: list[tuple[TopicPartition, uuid.UUID]] = []
        for tp, previous in list(self.session_partitions.items()):
            data = pending.pop(tp, None)
            if data is None:
                del self.session_partitions[tp]
                to_forget.append((tp, previous.topic_id))
                if previous.topic_id == _ZERO_UUID:
                    can_use_topic_ids = False
                continue
            if (
                previous.topic_id != data.topic_id
                and previous.topic_id != _ZERO_UUID
                and data.topic_id != _ZERO_UUID
            ):
                to_forget.append((tp, previous.topic_id))
                self.session_partitions[tp] = data
                to_send[tp] = data
            elif previous != data:
                self.session_partitions[tp] = data
                to_send[tp] = data
        for tp, data in pending.items():  # new partitions, in the caller's order
            self.session_partitions[tp] = data
            to_send[tp] = data
        self.session_topic_names = topic_names if can_use_topic_ids else {}
        return FetchRequestData(
            to_send, to_forget, dict(self.session_partitions), metadata, can_use_topic_ids
        )

    def handle_response(
        self,
        error_code: int,
        session_id: int,
        partitions: Iterable[TopicPartition],
        topic_ids: Iterable[uuid.UUID] = (),
    ) -> bool:
        """Move the session on after a response (module docstring); True if the response's
        partitions may be processed. ``partitions`` are the response's (their names resolved
        through ``session_topic_names`` for v13+), ``topic_ids`` its topic ids (v13+)."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = INITIAL
            else:
                self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        seen = set(partitions)
        unknown_ids = bool(self.session_topic_names) and any(
            topic_id not in self.session_topic_names for topic_id in topic_ids
        )
        extra = bool(seen - self.session_partitions.keys())
        if self.next_metadata.is_full:
            omitted = bool(self.session_partitions.keys() - seen)
            if extra or omitted or unknown_ids:
                self.next_metadata = INITIAL
                return False
            self.next_metadata = (
                INITIAL
                if session_id == INVALID_SESSION_ID
                else FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))
            )
            return True
        if extra or unknown_ids:
            self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        self.next_metadata = (
            INITIAL if session_id == INVALID_SESSION_ID else self.next_metadata.next_incremental()
        )
        return True

    def handle_error(self) -> None:
        """The request failed: close the session and attempt a new one next time."""
        self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
