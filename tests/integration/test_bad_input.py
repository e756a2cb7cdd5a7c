"""Bad input at the wire level: a misbehaving client hurts only its own connection.

Every case checks three things (DESIGN.md principle 6, "garbage from a peer closes that
connection only"):

1. the misbehaving connection gets Kafka's answer, or is closed where Kafka closes it;
2. a second, healthy connection still works: ApiVersions, Metadata, and a produce/fetch round
   trip (``Sentinel.check``);
3. records acknowledged before the bad input are intact, at their offsets, and nothing the
   broker refused was stored.

The broker's output must not contain a Python traceback: bad input is an expected event, to
be handled (answered or refused with a log line), never an unhandled exception.

Kafka's behaviour these tests follow (SocketServer, NetworkReceive, KafkaApis at 3.9):

* a frame size < 0 or > ``socket.request.max.bytes`` closes the connection at once
  (``InvalidReceiveException``), without reading the body;
* a header or body that does not parse, an unknown API key, or an unsupported version of any
  API but ApiVersions closes the connection (``InvalidRequestException``);
* ApiVersions at an unsupported version is answered with UNSUPPORTED_VERSION (35) in a v0 body
  that lists the broker's ranges (KIP-511), and the connection stays usable;
* requests on one connection are processed and answered one at a time, in order (the channel
  is muted while a request is in flight), so pipelined produces append in request order;
* a Produce with ``acks=0`` that fails closes the connection (the only way to tell such a
  producer), one that succeeds gets no response at all;
* a connection idle for ``connections.max.idle.ms`` is closed by the broker.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from kio.index import load_response_from_request
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.metadata.v4 import request as metadata_v4
from kio.schema.metadata.v12.response import MetadataResponse

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.wire import (
    LATEST_TIMESTAMP,
    WireClient,
    api_versions,
    batch,
    create_topics,
    decode_records,
    decode_response,
    encode_header,
    encode_request,
    fetch,
    fetch_all,
    fetch_request,
    frame,
    list_offsets,
    metadata,
    metadata_request,
    produce,
    produce_request,
    wait_for_leaders,
)

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_API_VERSIONS = 18
API_CREATE_TOPICS = 19

DEFAULT_SOCKET_REQUEST_MAX_BYTES = 104857600
SENTINEL_TOPIC = "sentinel"
CLOSE_TIMEOUT = 10.0

# -- the healthy side: records acknowledged before the bad input ------------------------------


def ensure_topic(client: WireClient, topic: str, partitions: int = 1) -> None:
    """Create ``topic`` with CreateTopics, or by Metadata auto-creation where the broker does
    not offer CreateTopics yet (then ``partitions`` must be ``num.partitions``, 1)."""
    if API_CREATE_TOPICS in api_versions(client):
        response = create_topics(client, {topic: partitions})
        [result] = response.topics
        assert result.error_code == ErrorCode.NONE, response
    else:
        assert partitions == 1, "auto-created topics get num.partitions (1) partitions"
        metadata(client, [topic], allow_auto_topic_creation=True)
    wait_for_leaders(client, topic, partitions)


@dataclass
class Sentinel:
    """A topic whose acknowledged records must survive whatever the bad input did."""

    broker: BrokerProcess
    topic: str = SENTINEL_TOPIC
    #: ``(offset, key, value)`` of every record the broker acknowledged.
    acked: list[tuple[int, bytes | None, bytes | None]] = field(default_factory=list)
    checks: int = 0

    @classmethod
    def create(cls, broker: BrokerProcess, topic: str = SENTINEL_TOPIC) -> Sentinel:
        sentinel = cls(broker, topic)
        with WireClient.connect(broker.bootstrap) as client:
            ensure_topic(client, topic)
            sentinel.produce(client, [(b"k0", b"v0"), (None, b"v1"), (b"k2", None)])
            sentinel.produce(client, [(b"k3", b"v3" * 100)])
        return sentinel

    def produce(self, client: WireClient, records: list[tuple[bytes | None, bytes | None]]) -> None:
        response = produce(client, self.topic, 0, batch(*records))
        assert response.error_code == ErrorCode.NONE, response
        assert response.base_offset == self.next_offset, (
            f"acknowledged at {response.base_offset}, expected {self.next_offset}: {response}"
        )
        for index, (key, value) in enumerate(records):
            self.acked.append((response.base_offset + index, key, value))

    @property
    def next_offset(self) -> int:
        return self.acked[-1][0] + 1 if self.acked else 0

    def check(self, *, maybe: Sequence[bytes] = ()) -> None:
        """A fresh connection is fully served and the acknowledged records are intact.

        ``maybe``: keys of records sent without reading the acknowledgement (the client
        closed first). Each may appear at most once, after the acknowledged records; the
        ones that do are acknowledged from then on.
        """
        assert self.broker.proc is not None and self.broker.proc.poll() is None, (
            f"the broker process died:\n{self.broker.output()}"
        )
        self.checks += 1
        key = f"check-{self.checks}".encode()
        with WireClient.connect(self.broker.bootstrap) as client:
            versions = api_versions(client)
            for api_key in (API_PRODUCE, API_FETCH, API_LIST_OFFSETS, API_METADATA, 18):
                assert api_key in versions, f"API {api_key} missing from {versions}"
            response = metadata(client, [self.topic])
            assert [b.node_id for b in response.brokers] == [0], response
            assert response.brokers[0].port == self.broker.port, response
            [described] = response.topics
            assert described.error_code == ErrorCode.NONE, response
            assert [(p.partition_index, p.leader_id) for p in described.partitions] == [(0, 0)]

            produced = produce(client, self.topic, 0, batch((key, b"alive")))
            assert produced.error_code == ErrorCode.NONE, produced
            assert produced.base_offset >= self.next_offset, produced

            stored = [(r.offset, r.key, r.value) for r in fetch_all(client, self.topic)]
            assert stored[: len(self.acked)] == self.acked, (
                "acknowledged records changed:\n"
                f"  acknowledged: {self.acked}\n  stored: {stored[: len(self.acked)]}"
            )
            extra = stored[len(self.acked) :]
            assert extra and extra[-1] == (produced.base_offset, key, b"alive"), stored
            unacked = [k for _, k, _ in extra[:-1]]
            assert all(k in maybe for k in unacked) and len(set(unacked)) == len(unacked), (
                f"records nobody sent, or sent once and stored twice: {extra[:-1]} "
                f"(unacknowledged candidates: {list(maybe)})"
            )
            self.acked = stored
        assert "Traceback" not in self.broker.output(), (
            f"the broker logged a traceback:\n{self.broker.output()}"
        )


@pytest.fixture
def sentinel(broker: BrokerProcess) -> Sentinel:
    return Sentinel.create(broker)


def assert_closed(client: WireClient, what: str) -> None:
    assert client.wait_closed(CLOSE_TIMEOUT), (
        f"the broker kept the connection open after {what}; it sent {client.pending.hex()}"
    )


StartBroker = Callable[..., BrokerProcess]


@pytest.fixture
def broker_with(broker_factory, tmp_path) -> Iterator[StartBroker]:
    """``broker_with(message_max_bytes="1000")``: a broker with overrides (``_`` for ``.``),
    which must shut down cleanly when the test ends, like the ``broker`` fixture's."""
    made: list[BrokerProcess] = []

    def start(**overrides: str) -> BrokerProcess:
        config = {k.replace("_", "."): v for k, v in overrides.items()}
        proc = broker_factory(tmp_path / f"b{len(made)}", config).start()
        made.append(proc)
        return proc

    yield start
    for proc in made:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.output()}"


# -- framing --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [-1, -(2**31), -100])
def test_negative_frame_size_closes_the_connection(broker, sentinel, size):
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_bytes(struct.pack(">i", size) + b"\x00" * 16)
        assert_closed(bad, f"a frame of size {size}")
    sentinel.check()


@pytest.mark.parametrize("size", [DEFAULT_SOCKET_REQUEST_MAX_BYTES + 1, 2**31 - 1])
def test_frame_larger_than_socket_request_max_bytes_closes_at_once(broker, sentinel, size):
    """Closed after the 4-byte size alone: the broker must not wait for (or buffer) the body."""
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_bytes(struct.pack(">i", size) + encode_header(API_METADATA, 12, 1, flexible=True))
        assert_closed(bad, f"a frame of size {size}")
    sentinel.check()


def _api_versions_payload_of_size(size: int, correlation_id: int) -> bytes:
    """An ApiVersions v3 request exactly ``size`` bytes long (padded through client_id)."""
    request = ApiVersionsRequestV3(client_software_name="franz-tests", client_software_version="0")
    base = len(encode_request(request, correlation_id, ""))
    payload = encode_request(request, correlation_id, "x" * (size - base))
    assert len(payload) == size
    return payload


def test_small_socket_request_max_bytes_is_enforced_at_its_boundary(broker_with):
    """A frame of exactly ``socket.request.max.bytes`` is served; one byte more is refused."""
    broker = broker_with(socket_request_max_bytes="1000")
    sentinel = Sentinel.create(broker)
    with WireClient.connect(broker.bootstrap) as client:
        client.send_frame(_api_versions_payload_of_size(1000, 7))
        response = client.recv(ApiVersionsResponseV3, correlation_id=7)
        assert response.error_code == ErrorCode.NONE, response
        client.send_frame(_api_versions_payload_of_size(1001, 8))
        assert_closed(client, "a 1001-byte frame with socket.request.max.bytes=1000")
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_bytes(struct.pack(">i", 5000))  # the size alone, no body
        assert_closed(bad, "a 5000-byte frame size with socket.request.max.bytes=1000")
    # A produce bigger than the limit is refused the same way, and nothing is stored.
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send(produce_request({(SENTINEL_TOPIC, 0): batch((b"big", b"x" * 2000))}))
        assert_closed(bad, "a 2 KB produce with socket.request.max.bytes=1000")
    sentinel.check()


@pytest.mark.parametrize("close", ["fin", "rst"])
def test_truncated_frame_then_disconnect(broker, sentinel, close):
    """The size says 100, 10 bytes follow, then the client goes away."""
    bad = WireClient.connect(broker.bootstrap)
    bad.send_bytes(struct.pack(">i", 100) + encode_header(API_METADATA, 12, 1, flexible=True)[:10])
    time.sleep(0.2)
    bad.abort() if close == "rst" else bad.close()
    sentinel.check()


def test_truncated_frame_left_open_does_not_block_other_clients(broker, sentinel):
    with WireClient.connect(broker.bootstrap) as stuck:
        stuck.send_bytes(struct.pack(">i", 100) + b"\x00" * 10)
        sentinel.check()
        assert not stuck.wait_closed(0.5), "a partial frame closed the connection early"


GARBAGE = {
    # "GET " read as a frame size is 1195725856 bytes, above socket.request.max.bytes.
    "http-request": b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    # A frame too short to hold a request header.
    "empty-frame": frame(b""),
    "three-byte-frame": frame(b"\x00\x03\x00"),
    # A client_id length that runs past the end of the frame.
    "client-id-past-end": frame(struct.pack(">hhih", API_METADATA, 4, 1, 500) + b"abc"),
    # Produce v9 whose body starts with an overlong unsigned varint (transactional_id).
    "produce-v9-bad-varint": frame(encode_header(API_PRODUCE, 9, 1, flexible=True) + b"\xff" * 64),
    # Metadata v4 whose topics array claims 1000 entries and has none.
    "metadata-v4-array-past-end": frame(
        encode_header(API_METADATA, 4, 1) + struct.pack(">i", 1000)
    ),
    # Array counts far beyond the bytes that follow: Kafka checks a count against the bytes
    # remaining before allocating; a decoder that allocates first can be killed by 9 bytes.
    "metadata-v12-huge-compact-array": frame(
        encode_header(API_METADATA, 12, 1, flexible=True) + b"\xff\xff\xff\xff\x0f"
    ),
    "metadata-v1-huge-array": frame(encode_header(API_METADATA, 1, 1) + b"\x7f\xff\xff\xff"),
    "produce-v9-huge-topic-array": frame(
        encode_header(API_PRODUCE, 9, 1, flexible=True)
        + b"\x00\xff\xff\x00\x00\x27\x10\xff\xff\xff\xff\x0f"
    ),
    # Metadata v12 whose topic name length runs past the end of the frame.
    "metadata-v12-string-past-end": frame(
        encode_header(API_METADATA, 12, 1, flexible=True) + b"\x02" + b"\x00" * 16 + b"\x7f"
    ),
}


@pytest.mark.parametrize("payload", GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_closes_the_connection(broker, sentinel, payload):
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_bytes(payload)
        assert_closed(bad, f"garbage {payload[:40]!r}")
    sentinel.check()


def test_null_client_id_is_legal(broker, sentinel):
    """``client_id`` is a nullable string: length -1 is a valid header, not garbage."""
    with WireClient.connect(broker.bootstrap) as client:
        request = ApiVersionsRequestV3(
            client_software_name="franz-tests", client_software_version="0"
        )
        client.send_frame(encode_request(request, 11, client_id=None))
        assert client.recv(ApiVersionsResponseV3, correlation_id=11).error_code == ErrorCode.NONE
    sentinel.check()


# -- API keys and versions ------------------------------------------------------------------


@pytest.mark.parametrize("api_key", [999, 32767, -1, 10000])
def test_unknown_api_key_closes_the_connection(broker, sentinel, api_key):
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_frame(encode_header(api_key, 0, 1) + b"\x00" * 8)
        assert_closed(bad, f"a request with API key {api_key}")
    sentinel.check()


def _broker_api_versions(broker: BrokerProcess) -> dict[int, tuple[int, int]]:
    with WireClient.connect(broker.bootstrap) as client:
        return api_versions(client)


@pytest.mark.parametrize("version", ["max+1", 127, 32767])
def test_api_versions_at_unsupported_version_answers_35_in_a_v0_body(broker, sentinel, version):
    """KIP-511: the client sent its newest ApiVersions; the broker answers in v0, with its
    ranges, and the client retries on the same connection with a version from them."""
    ranges = _broker_api_versions(broker)
    if version == "max+1":
        version = ranges[API_API_VERSIONS][1] + 1
    with WireClient.connect(broker.bootstrap) as client:
        # What a newer client sends: header v2, then a body the broker cannot know.
        body = b"\x0cfranz-tests\x021\x00" + b"\x00" * 7
        client.send_frame(encode_header(API_API_VERSIONS, version, 42, flexible=True) + body)
        payload = client.recv_frame()
        correlation_id, response = decode_response(ApiVersionsResponseV0, payload)
        assert correlation_id == 42
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION, response
        listed = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
        }
        assert listed[API_API_VERSIONS][0] == 0 and listed[API_API_VERSIONS][1] >= 3, listed
        assert listed == ranges, "the error body must list the same ranges as a v3 answer"
        # The connection stays open and usable.
        assert api_versions(client) == ranges
    sentinel.check()


def test_api_versions_v0_and_v3_agree(broker):
    with WireClient.connect(broker.bootstrap) as client:
        v0 = client.request(ApiVersionsRequestV0())
        v3 = client.request(
            ApiVersionsRequestV3(client_software_name="franz-tests", client_software_version="0")
        )
    assert v0.error_code == v3.error_code == ErrorCode.NONE
    assert [(k.api_key, k.min_version, k.max_version) for k in v0.api_keys] == [
        (k.api_key, k.min_version, k.max_version) for k in v3.api_keys
    ]
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in v3.api_keys}
    # Kafka 3.9 advertises all of these from v0.
    for api_key in (API_PRODUCE, API_FETCH, API_LIST_OFFSETS, API_METADATA, API_API_VERSIONS):
        assert ranges[api_key][0] == 0, ranges


@pytest.mark.parametrize(
    ("software_name", "software_version"),
    [("franz tests!", "1.0"), ("franz-tests", "1.0 beta"), ("-leading-dash", "1"), ("", "1")],
)
def test_api_versions_with_invalid_client_software_is_invalid_request(
    broker, sentinel, software_name, software_version
):
    """KIP-511: client_software_name/version must match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*
    [a-zA-Z0-9])?``; Kafka answers INVALID_REQUEST (42) and keeps the connection."""
    with WireClient.connect(broker.bootstrap) as client:
        response = client.request(
            ApiVersionsRequestV3(
                client_software_name=software_name, client_software_version=software_version
            )
        )
        assert response.error_code == ErrorCode.INVALID_REQUEST, response
        assert API_METADATA in api_versions(client)
    sentinel.check()


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(API_METADATA, 127), (API_PRODUCE, 127), (API_FETCH, 32767), (API_METADATA, -1)],
)
def test_unsupported_version_of_another_api_closes_the_connection(
    broker, sentinel, api_key, version
):
    """No body can be encoded for a version the broker does not know: Kafka closes."""
    with WireClient.connect(broker.bootstrap) as bad:
        bad.send_frame(encode_header(api_key, version, 1, flexible=True) + b"\x00" * 16)
        assert_closed(bad, f"API {api_key} v{version}")
    sentinel.check()


def _legacy_message_set(key: bytes, value: bytes) -> bytes:
    """One magic v1 message in a message set (what Produce v0-v2 carry)."""
    body = struct.pack(">bbq", 1, 0, int(time.time() * 1000))
    body += struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


def _legacy_produce_body(topic: str, records: bytes) -> bytes:
    """Produce v0-v2 body: acks, timeout, [topic, [partition, message_set]]."""
    return (
        struct.pack(">hi", -1, 5000)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">ii", 1, 0)
        + struct.pack(">i", len(records))
        + records
    )


def _legacy_fetch_body(topic: str, version: int, offset: int) -> bytes:
    """Fetch v0-v3 body: replica_id, max_wait, min_bytes, [max_bytes v3+], topics."""
    out = struct.pack(">iii", -1, 100, 1)
    if version >= 3:
        out += struct.pack(">i", 1 << 20)
    return out + struct.pack(">i", 1) + _string(topic) + struct.pack(">iiqi", 1, 0, offset, 1 << 20)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (length,) = self.read(">h")
        value = self.data[self.pos : self.pos + length].decode()
        self.pos += length
        return value

    def skip_bytes(self) -> None:
        (length,) = self.read(">i")
        self.pos += max(length, 0)

    def done(self) -> bool:
        return self.pos == len(self.data)


def _legacy_partition_errors(api_key: int, version: int, payload: bytes) -> list[int]:
    """The partition error codes of a Produce v0-v2 or Fetch v0-v3 response (header v0)."""
    reader = _Reader(payload)
    reader.read(">i")  # correlation id
    if api_key == API_FETCH and version >= 1:
        reader.read(">i")  # throttle_time_ms comes first in Fetch
    errors = []
    for _ in range(reader.read(">i")[0]):
        reader.string()
        for _ in range(reader.read(">i")[0]):
            _, error = reader.read(">ih")
            errors.append(error)
            if api_key == API_PRODUCE:
                reader.read(">q")  # base_offset
                if version >= 2:
                    reader.read(">q")  # log_append_time
            else:
                reader.read(">q")  # high_watermark
                reader.skip_bytes()
    if api_key == API_PRODUCE and version >= 1:
        reader.read(">i")  # throttle_time_ms comes last in Produce
    assert reader.done(), f"{len(payload) - reader.pos} bytes left over: {payload.hex()}"
    return errors


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(API_PRODUCE, 0), (API_PRODUCE, 1), (API_PRODUCE, 2)] + [(API_FETCH, v) for v in range(4)],
)
def test_pre_0_11_versions_are_served_in_their_own_body(broker, sentinel, api_key, version):
    """Produce v0-v2 and Fetch v0-v3 are advertised (ranges start at v0, as Kafka 3.9 and
    KAFKA-18659 do) and served as Kafka 3.9 serves them: the answer comes in that version's
    body with NONE per partition (message sets are up-converted on produce and down-converted
    on fetch: tests/integration/test_old_formats.py), and other clients are served.

    Observed (Franz at 49b8f28, before the pre-0.11 data path was served): the connection was
    closed, for all seven versions.
    """
    ranges = _broker_api_versions(broker)
    assert ranges[api_key][0] == 0, f"API {api_key} range does not start at v0: {ranges}"
    topic = "pre-0-11"
    with WireClient.connect(broker.bootstrap) as client:
        ensure_topic(client, topic)
    if api_key == API_PRODUCE:
        body = _legacy_produce_body(topic, _legacy_message_set(b"old", b"client"))
    else:
        body = _legacy_fetch_body(topic, version, 0)
    with WireClient.connect(broker.bootstrap) as client:
        client.send_frame(encode_header(api_key, version, 5) + body)
        payload = client.recv_frame()
        (correlation_id,) = struct.unpack_from(">i", payload)
        assert correlation_id == 5, payload.hex()
        errors = _legacy_partition_errors(api_key, version, payload)
        assert errors == [ErrorCode.NONE], (
            f"API {api_key} v{version}: partition errors {errors}, response {payload.hex()}"
        )
    sentinel.check()


# -- Produce validation ---------------------------------------------------------------------


def _corrupt(data: bytearray, position: int, mask: int = 0xFF) -> bytearray:
    out = bytearray(data)
    out[position] ^= mask
    return out


CORRUPTIONS = {
    "record-byte": lambda b: _corrupt(b, len(b) - 1),
    "crc-field": lambda b: _corrupt(b, 17),
    # The timestamp-type bit of the attributes: flipping all 8 low bits would also set the
    # transactional bit, and a request with a transactional batch but no transactional id is
    # refused whole with TRANSACTIONAL_ID_AUTHORIZATION_FAILED before any CRC is checked
    # (Kafka's KafkaApis.handleProduceRequest reads the batch headers first).
    "attributes": lambda b: _corrupt(b, 22, 0x08),
    "records-count": lambda b: _corrupt(b, 60),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_batch_with_wrong_crc_is_corrupt_message_and_not_stored(broker, sentinel, corrupt):
    bad_batch = corrupt(batch((b"bad", b"crc"), (b"bad2", b"crc2")))
    with WireClient.connect(broker.bootstrap) as client:
        response = produce(client, SENTINEL_TOPIC, 0, bad_batch)
        assert response.error_code == ErrorCode.CORRUPT_MESSAGE, response
        end = list_offsets(client, SENTINEL_TOPIC, 0, LATEST_TIMESTAMP)
        assert end.error_code == ErrorCode.NONE and end.offset == sentinel.next_offset, end
    sentinel.check()


def test_corrupt_partition_does_not_fail_its_neighbour(broker, sentinel):
    with WireClient.connect(broker.bootstrap) as client:
        ensure_topic(client, "two", 2)
        request = produce_request(
            {("two", 0): _corrupt(batch((b"bad", b"crc")), -1), ("two", 1): batch((b"ok", b"1"))}
        )
        response = client.request(request)
        errors = {
            p.index: (p.error_code, p.base_offset)
            for t in response.responses
            for p in t.partition_responses
        }
        assert errors == {0: (ErrorCode.CORRUPT_MESSAGE, -1), 1: (ErrorCode.NONE, 0)}, response
        assert fetch_all(client, "two", 0) == []
        assert [(r.key, r.value) for r in fetch_all(client, "two", 1)] == [(b"ok", b"1")]
    sentinel.check()


def test_failed_produce_with_acks_0_closes_the_connection(broker, sentinel):
    """With acks=0 there is no response to carry the error: Kafka closes the connection."""
    with WireClient.connect(broker.bootstrap) as client:
        client.send(
            produce_request({(SENTINEL_TOPIC, 0): _corrupt(batch((b"a", b"0")), -1)}, acks=0)
        )
        assert_closed(client, "a corrupt produce with acks=0")
    sentinel.check()


def test_successful_produce_with_acks_0_gets_no_response(broker, sentinel):
    with WireClient.connect(broker.bootstrap) as client:
        client.send(produce_request({(SENTINEL_TOPIC, 0): batch((b"acks0", b"x"))}, acks=0))
        # The next answer on the connection is the next request's.
        correlation_id = client.send(metadata_request([SENTINEL_TOPIC]))
        response = client.recv(MetadataResponse, correlation_id)
        assert response.topics[0].error_code == ErrorCode.NONE
    sentinel.check(maybe=[b"acks0"])
    assert sentinel.acked[-2][1] == b"acks0", "an acks=0 record that was sent was not stored"


def test_invalid_required_acks(broker, sentinel):
    with WireClient.connect(broker.bootstrap) as client:
        response = produce(client, SENTINEL_TOPIC, 0, batch((b"acks", b"2")), acks=2)
        assert response.error_code == ErrorCode.INVALID_REQUIRED_ACKS, response
    sentinel.check()


def _batch_of_size(size: int) -> bytearray:
    """A one-record batch of exactly ``size`` bytes."""
    for value_length in range(size - 80, size):
        built = batch((b"k", b"x" * value_length))
        if len(built) == size:
            return built
    raise AssertionError(f"no one-record batch of {size} bytes")


def test_batch_over_message_max_bytes_is_message_too_large(broker_with):
    """Kafka compares a batch's whole size (header included) with ``max.message.bytes``,
    whose default is the broker's ``message.max.bytes``; equal is allowed."""
    broker = broker_with(message_max_bytes="1000")
    sentinel = Sentinel.create(broker)
    with WireClient.connect(broker.bootstrap) as client:
        too_large = produce(client, SENTINEL_TOPIC, 0, batch((b"big", b"x" * 2000)))
        assert too_large.error_code == ErrorCode.MESSAGE_TOO_LARGE, too_large
        one_over = produce(client, SENTINEL_TOPIC, 0, _batch_of_size(1001))
        assert one_over.error_code == ErrorCode.MESSAGE_TOO_LARGE, one_over
        end = list_offsets(client, SENTINEL_TOPIC, 0, LATEST_TIMESTAMP)
        assert end.offset == sentinel.next_offset, end
        response = produce(client, SENTINEL_TOPIC, 0, _batch_of_size(1000))
        assert response.error_code == ErrorCode.NONE, response
        assert response.base_offset == sentinel.next_offset
        [stored] = fetch_all(client, SENTINEL_TOPIC, 0, response.base_offset)
        assert stored.key == b"k" and set(stored.value) == {ord("x")}
        sentinel.acked.append((stored.offset, stored.key, stored.value))
    sentinel.check()


# -- topic names ----------------------------------------------------------------------------

INVALID_TOPIC_NAMES = {
    "slash": "bad/name",
    "dotdot": "..",
    "dot": ".",
    "250-chars": "a" * 250,
    "empty": "",
    "space": "has space",
    "asterisk": "wild*card",
    "non-ascii": "caf\u00e9",
}


def _log_dir_names(broker: BrokerProcess) -> set[str]:
    return {p.name for p in (broker.data_dir / "logs").iterdir()}


@pytest.mark.parametrize("name", INVALID_TOPIC_NAMES.values(), ids=INVALID_TOPIC_NAMES.keys())
def test_invalid_topic_name_in_create_topics(broker, sentinel, name):
    before = _log_dir_names(broker)
    with WireClient.connect(broker.bootstrap) as client:
        response = create_topics(client, {name: 1})
        [result] = response.topics
        assert result.name == name
        assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION, response
        listed = {t.name for t in metadata(client, None).topics}
        assert name not in listed
    assert _log_dir_names(broker) == before
    sentinel.check()


def test_topic_name_of_249_chars_is_valid(broker, sentinel):
    name = "b" * 249
    with WireClient.connect(broker.bootstrap) as client:
        [result] = create_topics(client, {name: 1}).topics
        assert result.error_code == ErrorCode.NONE, result
        wait_for_leaders(client, name, 1)
        assert produce(client, name, 0, batch((b"k", b"v"))).error_code == ErrorCode.NONE
        assert [r.value for r in fetch_all(client, name)] == [b"v"]
    sentinel.check()


@pytest.mark.parametrize("auto_create", [True, False])
@pytest.mark.parametrize("name", INVALID_TOPIC_NAMES.values(), ids=INVALID_TOPIC_NAMES.keys())
def test_invalid_topic_name_in_metadata(broker, sentinel, name, auto_create):
    before = _log_dir_names(broker)
    with WireClient.connect(broker.bootstrap) as client:
        response = metadata(client, [name, SENTINEL_TOPIC], allow_auto_topic_creation=auto_create)
        errors = {t.name: t.error_code for t in response.topics}
        assert errors == {
            name: ErrorCode.INVALID_TOPIC_EXCEPTION,
            SENTINEL_TOPIC: ErrorCode.NONE,
        }, response
    assert _log_dir_names(broker) == before
    sentinel.check()


@pytest.mark.parametrize("name", INVALID_TOPIC_NAMES.values(), ids=INVALID_TOPIC_NAMES.keys())
def test_invalid_topic_name_in_produce(broker, sentinel, name):
    """Kafka 3.9's Produce answers UNKNOWN_TOPIC_OR_PARTITION here (its metadata-cache check
    comes before any name check); INVALID_TOPIC_EXCEPTION is the more precise answer. Either
    is accepted; what matters is that nothing is created or stored."""
    before = _log_dir_names(broker)
    with WireClient.connect(broker.bootstrap) as client:
        response = produce(client, name, 0, batch((b"k", b"v")))
        assert response.error_code in (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ), response
        assert name not in {t.name for t in metadata(client, None).topics}
    assert _log_dir_names(broker) == before
    sentinel.check()


# -- unknown topics and partitions, offsets out of range ------------------------------------


@pytest.fixture
def no_auto_create(broker_with) -> tuple[BrokerProcess, Sentinel]:
    broker = broker_with(auto_create_topics_enable="false")
    return broker, Sentinel.create(broker)


UNKNOWN = {"unknown-topic": ("no-such-topic", 0), "unknown-partition": (SENTINEL_TOPIC, 7)}


@pytest.mark.parametrize(("topic", "partition"), UNKNOWN.values(), ids=UNKNOWN.keys())
def test_unknown_topic_or_partition(no_auto_create, topic, partition):
    broker, sentinel = no_auto_create
    with WireClient.connect(broker.bootstrap) as client:
        produced = produce(client, topic, partition, batch((b"k", b"v")))
        assert produced.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, produced
        fetched = fetch(client, topic, partition, 0)
        assert fetched.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, fetched
        assert not fetched.records
        for timestamp in (LATEST_TIMESTAMP, -2):
            listed = list_offsets(client, topic, partition, timestamp)
            assert listed.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, listed
        response = metadata(client, [topic], allow_auto_topic_creation=True)
        [described] = response.topics
        if topic == SENTINEL_TOPIC:
            assert len(described.partitions) == 1, response
        else:
            assert described.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, response
            assert topic not in {t.name for t in metadata(client, None).topics}
    assert not any(name.startswith("no-such-topic") for name in _log_dir_names(broker))
    sentinel.check()


def test_metadata_auto_creates_only_when_enabled(broker, sentinel):
    """The default broker (auto.create.topics.enable=true) creates on Metadata with
    allow_auto_topic_creation, never without it."""
    with WireClient.connect(broker.bootstrap) as client:
        [described] = metadata(client, ["not-created"]).topics
        assert described.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, described
        metadata(client, ["auto-created"], allow_auto_topic_creation=True)
        wait_for_leaders(client, "auto-created", 1)
        names = {t.name for t in metadata(client, None).topics}
        assert "auto-created" in names and "not-created" not in names
    sentinel.check()


@pytest.mark.parametrize("past_end", [1, 1000, None])
def test_fetch_beyond_the_log_end_is_offset_out_of_range(broker, sentinel, past_end):
    """``None``: a negative fetch offset (-1), below the log start offset."""
    offset = -1 if past_end is None else sentinel.next_offset + past_end
    with WireClient.connect(broker.bootstrap) as client:
        data = fetch(client, SENTINEL_TOPIC, 0, offset)
        assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE, data
        assert not data.records
        at_end = fetch(client, SENTINEL_TOPIC, 0, sentinel.next_offset)
        assert at_end.error_code == ErrorCode.NONE, at_end
        assert at_end.high_watermark == sentinel.next_offset and not at_end.records, at_end
    sentinel.check()


# -- slow, silent and vanishing clients -----------------------------------------------------


def test_silent_clients_do_not_block_others(broker, sentinel):
    silent = [WireClient.connect(broker.bootstrap) for _ in range(5)]
    half = WireClient.connect(broker.bootstrap)
    half.send_bytes(struct.pack(">i", 200) + b"\x00\x03")
    try:
        sentinel.check()
        sentinel.check()
        for client in [*silent, half]:
            assert not client.wait_closed(0.1), "a silent connection was closed early"
    finally:
        for client in [*silent, half]:
            client.close()
    sentinel.check()


def test_idle_connections_are_closed_after_connections_max_idle_ms(broker_with):
    broker = broker_with(connections_max_idle_ms="1000")
    sentinel = Sentinel.create(broker)
    idle = WireClient.connect(broker.bootstrap)
    half = WireClient.connect(broker.bootstrap)
    busy = WireClient.connect(broker.bootstrap)
    served = WireClient.connect(broker.bootstrap)
    try:
        opened = time.monotonic()
        half.send_bytes(struct.pack(">i", 200) + b"\x00\x03")
        api_versions(served)
        last_active = time.monotonic()
        assert not idle.wait_closed(0.5), "closed after 0.5 s, connections.max.idle.ms=1000"
        # A connection in use is never idle: a request every 250 ms for 3 s.
        while time.monotonic() - opened < 3:
            api_versions(busy)
            time.sleep(0.25)
        for name, client, since in (
            ("silent", idle, opened),
            ("half-a-frame", half, opened),
            ("served-then-idle", served, last_active),
        ):
            assert client.wait_closed(CLOSE_TIMEOUT), f"the idle {name} connection stayed open"
            assert time.monotonic() - since >= 0.9
        assert api_versions(busy)
        # Closed connections are not held against new ones.
        sentinel.check()
    finally:
        for client in (idle, half, busy, served):
            client.close()


@pytest.mark.parametrize("close", ["fin", "rst"])
def test_client_that_sends_half_a_frame_and_disconnects(broker, sentinel, close):
    payload = encode_request(metadata_request([SENTINEL_TOPIC]), 1)
    bad = WireClient.connect(broker.bootstrap)
    bad.send_bytes(frame(payload)[: len(payload) // 2])
    bad.abort() if close == "rst" else bad.close()
    sentinel.check()


@pytest.mark.parametrize("close", ["fin", "rst"])
def test_client_that_closes_before_reading_the_answer(broker, sentinel, close):
    bad = WireClient.connect(broker.bootstrap)
    bad.send(metadata_request([SENTINEL_TOPIC]))
    bad.send(produce_request({(SENTINEL_TOPIC, 0): batch((b"unread", b"ack"))}))
    bad.send(fetch_request({(SENTINEL_TOPIC, 0): 0}, max_wait_ms=0))
    bad.abort() if close == "rst" else bad.close()
    time.sleep(0.3)
    sentinel.check(maybe=[b"unread"])


def test_long_poll_fetch_from_a_client_that_went_away(broker, sentinel):
    """A fetch waiting at the log end (purgatory) whose client disconnects, then completed by
    a produce: the broker must drop the answer, not fail on it."""
    for close in ("fin", "rst"):
        waiting = WireClient.connect(broker.bootstrap)
        waiting.send(fetch_request({(SENTINEL_TOPIC, 0): sentinel.next_offset}, max_wait_ms=5000))
        time.sleep(0.3)
        waiting.abort() if close == "rst" else waiting.close()
        sentinel.check()  # its produce satisfies the parked fetch
    time.sleep(0.5)
    sentinel.check()


def test_flood_then_reset(broker, sentinel):
    """50 pipelined requests, then a reset before reading anything."""
    bad = WireClient.connect(broker.bootstrap)
    request = encode_request(metadata_request(None), 1)
    bad.send_bytes(frame(request) * 50)
    bad.abort()
    time.sleep(0.3)
    sentinel.check()


# -- pipelining -----------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order(broker, sentinel):
    """Ten requests of five APIs, both header versions, odd correlation ids, in one write."""
    start_offset = sentinel.next_offset
    requests = [
        ApiVersionsRequestV0(),
        metadata_request([SENTINEL_TOPIC]),
        produce_request({(SENTINEL_TOPIC, 0): batch((b"p1", b"1"))}),
        metadata_v4.MetadataRequest(
            topics=(metadata_v4.MetadataRequestTopic(name=SENTINEL_TOPIC),),
            allow_auto_topic_creation=False,
        ),
        fetch_request({(SENTINEL_TOPIC, 0): start_offset}, max_wait_ms=0),
        ApiVersionsRequestV3(client_software_name="franz-tests", client_software_version="0"),
        produce_request({(SENTINEL_TOPIC, 0): batch((b"p2", b"2"))}),
        fetch_request({(SENTINEL_TOPIC, 0): start_offset}, max_wait_ms=0),
        metadata_request(None),
        ApiVersionsRequestV0(),
    ]
    correlation_ids = [17, 3, 99, 2**31 - 1, -5, 0, 1000, 4, -(2**31), 8]
    with WireClient.connect(broker.bootstrap) as client:
        client.send_bytes(
            b"".join(
                frame(encode_request(r, c)) for r, c in zip(requests, correlation_ids, strict=True)
            )
        )
        responses = []
        for request, expected in zip(requests, correlation_ids, strict=True):
            got, response = decode_response(
                load_response_from_request(request), client.recv_frame()
            )
            assert got == expected, f"answers out of order: got {got}, expected {expected}"
            responses.append(response)
    assert responses[2].responses[0].partition_responses[0].base_offset == start_offset
    assert responses[6].responses[0].partition_responses[0].base_offset == start_offset + 1
    # Each request saw the effects of the ones before it on the connection.
    first_fetch = decode_records(responses[4].responses[0].partitions[0].records)
    second_fetch = decode_records(responses[7].responses[0].partitions[0].records)
    assert [r.key for r in first_fetch] == [b"p1"]
    assert [r.key for r in second_fetch] == [b"p1", b"p2"]
    sentinel.acked += [(start_offset, b"p1", b"1"), (start_offset + 1, b"p2", b"2")]
    sentinel.check()


def test_pipelined_produces_append_in_request_order(broker, sentinel):
    """What an idempotent producer with max.in.flight=5 relies on: the log order is the
    request order on one connection."""
    start_offset = sentinel.next_offset
    keys = [f"ordered-{i}".encode() for i in range(20)]
    with WireClient.connect(broker.bootstrap) as client:
        ids = list(range(100, 120))
        client.send_bytes(
            b"".join(
                frame(encode_request(produce_request({(SENTINEL_TOPIC, 0): batch((k, k))}), c))
                for k, c in zip(keys, ids, strict=True)
            )
        )
        offsets = []
        for correlation_id in ids:
            got, response = decode_response(
                load_response_from_request(produce_request({})), client.recv_frame()
            )
            assert got == correlation_id
            partition = response.responses[0].partition_responses[0]
            assert partition.error_code == ErrorCode.NONE, response
            offsets.append(partition.base_offset)
        assert offsets == list(range(start_offset, start_offset + 20))
        stored = fetch_all(client, SENTINEL_TOPIC, 0, start_offset)
        assert [r.key for r in stored] == keys
    sentinel.acked += [(o, k, k) for o, k in zip(offsets, keys, strict=True)]
    sentinel.check()


def test_slow_request_holds_back_the_answers_behind_it(broker, sentinel):
    """A long-poll fetch first, then an ApiVersions: the answers come in request order."""
    with WireClient.connect(broker.bootstrap) as client:
        wait = fetch_request({(SENTINEL_TOPIC, 0): sentinel.next_offset}, max_wait_ms=1000)
        quick = ApiVersionsRequestV0()
        client.send_bytes(frame(encode_request(wait, 1)) + frame(encode_request(quick, 2)))
        began = time.monotonic()
        first, fetched = decode_response(load_response_from_request(wait), client.recv_frame())
        second, _ = decode_response(load_response_from_request(quick), client.recv_frame())
        assert (first, second) == (1, 2)
        assert time.monotonic() - began >= 0.9, "the fetch did not wait for max_wait_ms"
        assert not fetched.responses[0].partitions[0].records
    sentinel.check()


def test_many_connections_at_once(broker, sentinel):
    clients = [WireClient.connect(broker.bootstrap) for _ in range(50)]
    try:
        for correlation_id, client in enumerate(clients):
            client.send(ApiVersionsRequestV0(), correlation_id=correlation_id)
        for correlation_id, client in enumerate(clients):
            response = client.recv(ApiVersionsResponseV0, correlation_id)
            assert response.error_code == ErrorCode.NONE
    finally:
        for client in clients:
            client.close()
    sentinel.check()
