"""A tiny raw-socket Kafka client for tests: framed requests out, framed responses in.

Real clients hide what the broker does with a malformed or unexpected request (they retry,
reconnect, or refuse to send it at all). This client sends exactly the bytes a test asks for
and reports exactly what came back, so a test can tell "error response" from "connection
closed" from "no answer".

Wire format (Kafka protocol guide)::

    frame           size int32 (bytes after this field), payload
    request header  v1: request_api_key int16, request_api_version int16,
                        correlation_id int32, client_id nullable string (int16 length)
                    v2: v1 + tagged fields (uvarint count, 0 here); flexible versions only
    response header v0: correlation_id int32
                    v1: v0 + tagged fields; flexible versions, except ApiVersions, whose
                        response always uses header v0 (KIP-511)

Messages are kio's dataclasses (``kio.schema.<api>.v<N>.request``): a request class names its
header version (``__header_schema__``) and its response class is found with
``kio.index.load_response_from_request``, so the header rules above come from Kafka's schemas.
``encode_header`` writes a header by hand for versions kio has no class for (ApiVersions v127,
Produce v0-v2, Fetch v0-v3).

The helpers at the bottom (``api_versions``, ``metadata``, ``produce``, ``fetch``,
``list_offsets``, ``create_topics``) send one request at a version every client in
``shared/notes/feature-anchors.md`` can use and return the interesting part of the answer.
"""

from __future__ import annotations

import datetime
import io
import select
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from kio.index import load_response_from_request
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.create_topics.v5 import request as create_topics_v5
from kio.schema.create_topics.v5.response import CreateTopicsResponse
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.fetch.v12.response import PartitionData
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.list_offsets.v7.response import ListOffsetsPartitionResponse
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.produce.v9 import request as produce_v9
from kio.schema.produce.v9.response import PartitionProduceResponse
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from franz.protocol.records import Record, RecordBatchBuilder, iter_batches, iter_records

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "ConnectionClosed",
    "WireClient",
    "api_versions",
    "batch",
    "create_topics",
    "decode_records",
    "decode_response",
    "encode_header",
    "encode_request",
    "fetch",
    "fetch_all",
    "fetch_request",
    "frame",
    "list_offsets",
    "metadata",
    "metadata_request",
    "produce",
    "produce_request",
    "wait_for_leaders",
]

_INT32 = struct.Struct(">i")
_HEADER_V1 = struct.Struct(">hhi")

#: ListOffsets timestamps: -1 asks for the log end (high watermark), -2 for the log start.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


class ConnectionClosed(ConnectionError):
    """The broker closed the connection (EOF or reset) before a whole frame arrived."""


# -- encoding and decoding ---------------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    """``payload`` with its int32 size prefix."""
    return _INT32.pack(len(payload)) + payload


def encode_header(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None = "franz-tests",
    *,
    flexible: bool = False,
) -> bytes:
    """A request header written by hand: v1, or v2 (an empty tagged-field block) if flexible.

    ``client_id`` None is written as a null string (length -1), as Kafka allows.
    """
    out = _HEADER_V1.pack(api_key, api_version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        encoded = client_id.encode()
        out += struct.pack(">h", len(encoded)) + encoded
    if flexible:
        out += b"\x00"
    return out


def encode_request(
    request: Any, correlation_id: int, client_id: str | None = "franz-tests"
) -> bytes:
    """Header and body of a kio request (not framed), with the header version its schema names."""
    header_cls = request.__header_schema__
    buf = io.BytesIO()
    if header_cls not in (RequestHeaderV1, RequestHeaderV2):
        raise ValueError(f"unexpected request header {header_cls} for {type(request).__name__}")
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=request.__api_key__,
            request_api_version=request.__version__,
            correlation_id=correlation_id,
            client_id=client_id,
        ),
    )
    entity_writer(type(request))(buf, request)
    return buf.getvalue()


def decode_response(response_cls: type[Any], payload: bytes) -> tuple[int, Any]:
    """Decode a response frame's payload: ``(correlation_id, response)``.

    The whole payload must be consumed: trailing bytes mean the broker used a different
    version or header than the one asked for.
    """
    header_cls = response_cls.__header_schema__
    header, header_size = entity_reader(header_cls)(payload, 0)
    response, body_size = entity_reader(response_cls)(payload, header_size)
    if header_size + body_size != len(payload):
        raise ValueError(
            f"{response_cls.__module__}.{response_cls.__name__}: decoded "
            f"{header_size + body_size} of {len(payload)} bytes: {payload.hex()}"
        )
    return int(header.correlation_id), response


def batch(*records: tuple[bytes | None, bytes | None]) -> bytearray:
    """A valid v2 batch of ``(key, value)`` records stamped with the current time."""
    builder = RecordBatchBuilder()
    now = int(time.time() * 1000)
    for key, value in records:
        builder.append(now, key, value)
    return builder.build()


def decode_records(records: bytes | None) -> list[Record]:
    """Every record of a Fetch response's record set (whole batches only, CRC-checked)."""
    if not records:
        return []
    return [record for batch in iter_batches(records) for record in iter_records(batch)]


# -- the connection ----------------------------------------------------------------------------


class WireClient:
    """One TCP connection to a broker, speaking whole frames.

    ``send`` returns the correlation id it used (increasing from 1 unless one is given);
    ``recv`` reads the next frame and checks its correlation id when one is expected.
    Reads time out after ``timeout`` seconds (``socket.timeout``); a closed connection raises
    ``ConnectionClosed``.
    """

    def __init__(
        self, host: str, port: int, *, timeout: float = 10.0, client_id: str = "franz-tests"
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.client_id = client_id
        self._correlation_id = 0
        self._buffer = bytearray()

    @classmethod
    def connect(cls, bootstrap: str, **kwargs: Any) -> WireClient:
        host, _, port = bootstrap.rpartition(":")
        return cls(host, int(port), **kwargs)

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    # -- output

    def send_bytes(self, data: bytes) -> None:
        """Write raw bytes, framed or not."""
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(frame(payload))

    def send(self, request: Any, *, correlation_id: int | None = None) -> int:
        """Frame and send a kio request; return its correlation id."""
        if correlation_id is None:
            correlation_id = self.next_correlation_id()
        self.send_frame(encode_request(request, correlation_id, self.client_id))
        return correlation_id

    # -- input

    def _fill(self, count: int, deadline: float) -> None:
        while len(self._buffer) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"no complete frame within {self.timeout} s "
                    f"({len(self._buffer)} of {count} bytes received)"
                )
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(f"connection reset: {exc}") from exc
            except TimeoutError:
                continue
            if not chunk:
                raise ConnectionClosed(
                    f"connection closed by the broker after {len(self._buffer)} of {count} bytes"
                )
            self._buffer += chunk

    def recv_frame(self, timeout: float | None = None) -> bytes:
        """The payload of the next frame."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(4, deadline)
        (size,) = _INT32.unpack_from(self._buffer)
        if size < 0:
            raise ValueError(f"broker sent a frame of negative size {size}")
        self._fill(4 + size, deadline)
        payload = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return payload

    def recv(
        self,
        response_cls: type[Any],
        correlation_id: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Read and decode the next frame as ``response_cls``."""
        got, response = decode_response(response_cls, self.recv_frame(timeout))
        if correlation_id is not None and got != correlation_id:
            raise AssertionError(f"expected correlation id {correlation_id}, got {got}")
        return response

    def request(self, request: Any, timeout: float | None = None) -> Any:
        """Send a kio request and return its decoded response."""
        correlation_id = self.send(request)
        return self.recv(load_response_from_request(request), correlation_id, timeout)

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True once the broker has closed the connection (EOF or reset), False on timeout.

        Bytes the broker sends meanwhile are kept for ``recv_frame``; a test that expects
        a close and gets a response instead sees ``False`` here and the frame there.
        """
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            readable, _, _ = select.select([self.sock], [], [], remaining)
            if not readable:
                return False
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not chunk:
                return True
            self._buffer += chunk

    @property
    def pending(self) -> bytes:
        """Bytes received but not yet consumed as a frame."""
        return bytes(self._buffer)

    def close(self) -> None:
        self.sock.close()

    def abort(self) -> None:
        """Close with a TCP reset (SO_LINGER 0) instead of a FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- one-request helpers -----------------------------------------------------------------------


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def api_versions(client: WireClient) -> dict[int, tuple[int, int]]:
    """ApiVersions v3: ``{api_key: (min_version, max_version)}``; fails on an error code."""
    response: ApiVersionsResponse = client.request(
        ApiVersionsRequest(client_software_name="franz-tests", client_software_version="0")
    )
    assert response.error_code == 0, response
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def metadata_request(
    topics: Iterable[str] | None, *, allow_auto_topic_creation: bool = False
) -> metadata_v12.MetadataRequest:
    return metadata_v12.MetadataRequest(
        topics=None
        if topics is None
        else tuple(metadata_v12.MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_topic_authorized_operations=False,
    )


def metadata(
    client: WireClient, topics: Iterable[str] | None, *, allow_auto_topic_creation: bool = False
) -> MetadataResponse:
    """Metadata v12 for ``topics`` (None: all topics)."""
    return client.request(
        metadata_request(topics, allow_auto_topic_creation=allow_auto_topic_creation)
    )


def produce_request(
    partitions: Mapping[tuple[str, int], bytes], *, acks: int = -1, timeout_ms: int = 10000
) -> produce_v9.ProduceRequest:
    by_topic: dict[str, list[produce_v9.PartitionProduceData]] = {}
    for (topic, partition), records in partitions.items():
        by_topic.setdefault(topic, []).append(
            produce_v9.PartitionProduceData(index=partition, records=bytes(records))
        )
    return produce_v9.ProduceRequest(
        acks=acks,
        timeout=_ms(timeout_ms),
        topic_data=tuple(
            produce_v9.TopicProduceData(name=topic, partition_data=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


def produce(
    client: WireClient, topic: str, partition: int, records: bytes, *, acks: int = -1
) -> PartitionProduceResponse:
    """Produce v9 of one record set to one partition; the partition's response."""
    response = client.request(produce_request({(topic, partition): records}, acks=acks))
    [topic_response] = response.responses
    assert topic_response.name == topic, response
    [partition_response] = topic_response.partition_responses
    assert partition_response.index == partition, response
    return partition_response


def fetch_request(
    partitions: Mapping[tuple[str, int], int],
    *,
    max_wait_ms: int = 100,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
) -> fetch_v12.FetchRequest:
    by_topic: dict[str, list[fetch_v12.FetchPartition]] = {}
    for (topic, partition), offset in partitions.items():
        by_topic.setdefault(topic, []).append(
            fetch_v12.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
            )
        )
    return fetch_v12.FetchRequest(
        max_wait=_ms(max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=tuple(
            fetch_v12.FetchTopic(topic=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
        forgotten_topics_data=(),
    )


def fetch(
    client: WireClient,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait_ms: int = 100,
    timeout: float | None = None,
) -> PartitionData:
    """Fetch v12 (no session) from one partition at ``offset``; the partition's data."""
    response = client.request(
        fetch_request({(topic, partition): offset}, max_wait_ms=max_wait_ms), timeout
    )
    assert response.error_code == 0, response
    [topic_response] = response.responses
    assert topic_response.topic == topic, response
    [partition_data] = topic_response.partitions
    assert partition_data.partition_index == partition, response
    return partition_data


def list_offsets(
    client: WireClient, topic: str, partition: int, timestamp: int
) -> ListOffsetsPartitionResponse:
    """ListOffsets v7 (read_uncommitted) for one partition."""
    response = client.request(
        list_offsets_v7.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                list_offsets_v7.ListOffsetsTopic(
                    name=topic,
                    partitions=(
                        list_offsets_v7.ListOffsetsPartition(
                            partition_index=partition, timestamp=timestamp
                        ),
                    ),
                ),
            ),
        )
    )
    [topic_response] = response.topics
    assert topic_response.name == topic, response
    [partition_response] = topic_response.partitions
    assert partition_response.partition_index == partition, response
    return partition_response


def create_topics(
    client: WireClient,
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    configs: Mapping[str, str] | None = None,
    validate_only: bool = False,
    timeout_ms: int = 30000,
) -> CreateTopicsResponse:
    """CreateTopics v5: ``topics`` maps names to partition counts."""
    return client.request(
        create_topics_v5.CreateTopicsRequest(
            topics=tuple(
                create_topics_v5.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    assignments=(),
                    configs=tuple(
                        create_topics_v5.CreatableTopicConfig(name=k, value=v)
                        for k, v in (configs or {}).items()
                    ),
                )
                for name, partitions in topics.items()
            ),
            timeout=_ms(timeout_ms),
            validate_only=validate_only,
        ),
        timeout=timeout_ms / 1000 + 10,
    )


def fetch_all(client: WireClient, topic: str, partition: int = 0, start: int = 0) -> list[Record]:
    """Every record of a partition from ``start`` up to its high watermark (several fetches
    if need be); fails on a partition error."""
    records: list[Record] = []
    offset = start
    while True:
        data = fetch(client, topic, partition, offset, max_wait_ms=0)
        assert data.error_code == 0, data
        got = [r for r in decode_records(data.records) if r.offset >= offset]
        records += got
        if got:
            offset = got[-1].offset + 1
        if offset >= data.high_watermark or not got:
            assert offset >= data.high_watermark, (
                f"fetch at {offset} returned no records below the high watermark "
                f"{data.high_watermark}: {data}"
            )
            return records


def wait_for_leaders(client: WireClient, topic: str, partitions: int, timeout: float = 15) -> None:
    """Poll Metadata until ``topic`` has ``partitions`` partitions, each led by broker 0."""
    deadline = time.monotonic() + timeout
    while True:
        response = metadata(client, [topic])
        [described] = response.topics
        if (
            described.error_code == 0
            and len(described.partitions) == partitions
            and all(p.leader_id == 0 and p.error_code == 0 for p in described.partitions)
        ):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} has no leaders after {timeout} s: {response}")
        time.sleep(0.1)


# -- consumer-group requests (tests/integration/test_group_bad_input.py) -----------------------
#
# Requests are built at any version from mappings of Kafka's field names
# (``franz.protocol.messages.build`` fills the fields a version lacks with their defaults), so a
# test states only what it means. Error codes come back as plain ints.


def request_at(client: WireClient, api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    """Send the ``api_key`` request at ``version`` built from ``data`` (Kafka's field names;
    ``franz.protocol.messages.build`` fills what the version lacks); the decoded response."""
    from franz.protocol.messages import build, request_type

    return client.request(build(request_type(api_key, version), data))


def accepted_versions(api_key: int) -> list[int]:
    """Every version of ``api_key`` the broker accepts with kio's classes (``SUPPORTED_APIS``;
    the hand-written pre-0.11 versions below ``min_accepted`` are not included)."""
    from franz.protocol.api_keys import SUPPORTED_APIS

    support = SUPPORTED_APIS[api_key]  # type: ignore[index]
    return list(range(support.min_accepted, support.max_version + 1))


def consumer_subscription(topics: Iterable[str]) -> bytes:
    """A ``consumer`` protocol JoinGroup metadata (ConsumerProtocolSubscription) for ``topics``."""
    from franz.coordinator.group.consumer_protocol import Subscription, encode_subscription

    return encode_subscription(Subscription(topics=tuple(topics)))


def consumer_assignment(partitions: Mapping[str, Iterable[int]]) -> bytes:
    """A ``consumer`` protocol SyncGroup assignment (ConsumerProtocolAssignment)."""
    from franz.coordinator.group.consumer_protocol import Assignment, encode_assignment

    return encode_assignment(
        Assignment(assigned_partitions=tuple((t, tuple(ps)) for t, ps in partitions.items()))
    )


def join_group(
    client: WireClient,
    group_id: str,
    member_id: str = "",
    *,
    protocols: Iterable[tuple[str, bytes]] = (),
    protocol_type: str = "consumer",
    session_timeout_ms: int = 30_000,
    rebalance_timeout_ms: int = 30_000,
    group_instance_id: str | None = None,
    version: int = 5,
    timeout: float | None = None,
) -> Any:
    """One JoinGroup (v5 by default); the response as sent (MEMBER_ID_REQUIRED included)."""
    return client.request(
        _join_request(
            group_id,
            member_id,
            protocols=protocols,
            protocol_type=protocol_type,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            group_instance_id=group_instance_id,
            version=version,
        ),
        timeout,
    )


def _join_request(
    group_id: str,
    member_id: str,
    *,
    protocols: Iterable[tuple[str, bytes]],
    protocol_type: str,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    group_instance_id: str | None,
    version: int,
) -> Any:
    from franz.protocol.messages import build, request_type

    return build(
        request_type(11, version),
        {
            "group_id": group_id,
            "session_timeout": session_timeout_ms,
            "rebalance_timeout": rebalance_timeout_ms,
            "member_id": member_id,
            "group_instance_id": group_instance_id,
            "protocol_type": protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols],
        },
    )


def send_join_group(client: WireClient, group_id: str, member_id: str = "", **kwargs: Any) -> int:
    """Send a JoinGroup without waiting (it may be parked until the rebalance completes);
    read its answer with ``recv_join_group``. Keyword arguments as ``join_group``."""
    kwargs.setdefault("protocols", ())
    kwargs.setdefault("protocol_type", "consumer")
    kwargs.setdefault("session_timeout_ms", 30_000)
    kwargs.setdefault("rebalance_timeout_ms", 30_000)
    kwargs.setdefault("group_instance_id", None)
    kwargs.setdefault("version", 5)
    return client.send(_join_request(group_id, member_id, **kwargs))


def recv_join_group(
    client: WireClient, correlation_id: int, *, version: int = 5, timeout: float | None = None
) -> Any:
    from franz.protocol.messages import response_type

    return client.recv(response_type(11, version), correlation_id, timeout)


def join_group_member(client: WireClient, group_id: str, **kwargs: Any) -> Any:
    """Join as a new dynamic member the KIP-394 way: a first JoinGroup answered
    MEMBER_ID_REQUIRED (79) with a member id, then the join with it. Returns the second
    response; fails if the first is anything else."""
    first = join_group(client, group_id, "", **kwargs)
    assert int(first.error_code) == 79 and first.member_id, first
    return join_group(client, group_id, first.member_id, **kwargs)


def sync_group(
    client: WireClient,
    group_id: str,
    generation_id: int,
    member_id: str,
    assignments: Mapping[str, bytes] | None = None,
    *,
    group_instance_id: str | None = None,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    version: int = 3,
    timeout: float | None = None,
) -> Any:
    """One SyncGroup (v3 by default); ``assignments`` maps member ids to assignment bytes."""
    from franz.protocol.messages import build, request_type

    return client.request(
        build(
            request_type(14, version),
            {
                "group_id": group_id,
                "generation_id": generation_id,
                "member_id": member_id,
                "group_instance_id": group_instance_id,
                "protocol_type": protocol_type,
                "protocol_name": protocol_name,
                "assignments": [
                    {"member_id": m, "assignment": a} for m, a in (assignments or {}).items()
                ],
            },
        ),
        timeout,
    )


def heartbeat(
    client: WireClient,
    group_id: str,
    generation_id: int,
    member_id: str,
    *,
    group_instance_id: str | None = None,
    version: int = 3,
) -> int:
    """One Heartbeat (v3 by default); its error code."""
    response = request_at(
        client,
        12,
        version,
        {
            "group_id": group_id,
            "generation_id": generation_id,
            "member_id": member_id,
            "group_instance_id": group_instance_id,
        },
    )
    return int(response.error_code)


def leave_group(client: WireClient, group_id: str, member_id: str, *, version: int = 3) -> Any:
    """One LeaveGroup for one member (v3+: in the members array)."""
    data: dict[str, Any] = {"group_id": group_id, "member_id": member_id}
    if version >= 3:
        data = {"group_id": group_id, "members": [{"member_id": member_id}]}
    return request_at(client, 13, version, data)


def offset_commit(
    client: WireClient,
    group_id: str,
    offsets: Mapping[tuple[str, int], int | tuple[int, str | None]],
    *,
    generation_id: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
    version: int = 8,
) -> dict[tuple[str, int], int]:
    """One OffsetCommit (v8 by default) of ``{(topic, partition): offset or (offset,
    metadata)}``; ``{(topic, partition): error code}`` as answered (every partition asked
    must be answered exactly once)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), value in offsets.items():
        offset, metadata = value if isinstance(value, tuple) else (value, "")
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_metadata": metadata,
            }
        )
    response = request_at(
        client,
        8,
        version,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": generation_id,
            "member_id": member_id,
            "group_instance_id": group_instance_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
    )
    answered: dict[tuple[str, int], int] = {}
    for topic in response.topics:
        for partition in topic.partitions:
            key = (topic.name, int(partition.partition_index))
            assert key not in answered, f"{key} answered twice: {response}"
            answered[key] = int(partition.error_code)
    assert set(answered) == set(offsets), f"asked {sorted(offsets)}, answered {response}"
    return answered


def offset_fetch(
    client: WireClient,
    group_id: str,
    partitions: Iterable[tuple[str, int]] | None = None,
    *,
    version: int = 8,
) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    """One OffsetFetch of one group (v8+: the groups array); ``{(topic, partition):
    (committed offset, metadata, error code)}``. ``partitions`` None asks for every committed
    offset. Fails on a group- or response-level error."""
    topics: list[dict[str, Any]] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    if version >= 8:
        response = request_at(
            client, 9, version, {"groups": [{"group_id": group_id, "topics": topics}]}
        )
        [group] = response.groups
        assert group.group_id == group_id and int(group.error_code) == 0, response
        answer_topics = group.topics
    else:
        response = request_at(client, 9, version, {"group_id": group_id, "topics": topics})
        assert int(getattr(response, "error_code", 0)) == 0, response
        answer_topics = response.topics
    return {
        (t.name, int(p.partition_index)): (int(p.committed_offset), p.metadata, int(p.error_code))
        for t in answer_topics
        for p in t.partitions
    }
