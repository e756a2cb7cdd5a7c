"""Differential protocol tests: the same request sequence sent to Apache Kafka and to Franz.

A *scenario* (``tests/support/differential_scenarios.py``) is a function ``(session,
version)`` that sends requests through a ``Session``, each written once as a mapping with
Kafka's field names and adapted to the version by ``franz.protocol.messages.build``. It runs
once against each broker (one TCP connection each, Franz's own codec), and may read the
answers it gets (a generated member id, a producer id) to write the next request, so both
brokers see the same sequence while each gets back its own ids. Every compared answer is
recorded in the session's transcript as a plain value (``plain``: dataclasses to dicts,
tuples to lists, error codes, durations and timestamps to ints); ``compare`` then walks the
two transcripts field by field.

Only the field paths in ``MAY_DIFFER`` are masked before comparing, each for a reason that
holds by construction; everything else must be equal, or be listed in
``JUSTIFIED_DIFFERENCES`` (a deliberate Franz behaviour, with its reason, shown as a footnote
in the README's table). Paths are dotted field names with ``*`` for a list index
(``brokers.*.port``), matched with ``fnmatch``.

Versions below kio's classes (the pre-KIP-896 versions, ``SUPPORTED_APIS[...].legacy_from``)
are run where Kafka 3.9's schemas make them a newer version's bytes (``OLD_VERSIONS``); the
others (Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, CreateTopics v0,
DescribeConfigs v0) with classes generated from Kafka 3.9's schemas
(``tests.support.old_versions``), whose field names are the schemas' (``timeout_ms`` where kio
says ``timeout``: a request mapping's ``timeout``, ``max_wait`` also fill ``timeout_ms``,
``max_wait_ms``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import fnmatch
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kio.serial import entity_reader

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.headers import encode_request_header
from franz.protocol.messages import (
    build,
    datetime_ms,
    decode_response,
    encode_request,
    request_type,
    timedelta_ms,
)
from tests.support import old_versions

__all__ = [
    "JUSTIFIED_DIFFERENCES",
    "KAFKA_ONLY_APIS",
    "KAFKA_RANGES",
    "MAY_DIFFER",
    "OLD_VERSIONS",
    "UNORDERED",
    "Justified",
    "Session",
    "Step",
    "common_versions",
    "compare",
    "plain",
]

#: The versions Apache Kafka 3.9.2 (ZooKeeper mode) advertises for the APIs Franz serves:
#: its ApiVersions answer, checked against the live broker by ``test_differential``.
KAFKA_RANGES: Final[dict[ApiKey, tuple[int, int]]] = {
    ApiKey.PRODUCE: (0, 11),
    ApiKey.FETCH: (0, 17),
    ApiKey.LIST_OFFSETS: (0, 9),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (0, 9),
    ApiKey.OFFSET_FETCH: (0, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 4),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}

#: The APIs the same Kafka broker serves and Franz does not (yet), by key (Kafka's ``ApiKeys``
#: names); also checked against its ApiVersions answer.
KAFKA_ONLY_APIS: Final[dict[int, str]] = {
    4: "LeaderAndIsr",
    5: "StopReplica",
    6: "UpdateMetadata",
    7: "ControlledShutdown",
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
    56: "AlterPartition",
    57: "UpdateFeatures",
    58: "Envelope",
    67: "AllocateProducerIds",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
}

#: Field paths whose values differ between two brokers by construction: masked on both sides
#: before comparing (``api``: None for every API). Nothing else is masked.
MAY_DIFFER: Final[tuple[tuple[ApiKey | None, str, str], ...]] = (
    (None, "throttle_time", "quota throttling is per broker and per moment"),
    (None, "throttle_time_ms", "the same, named as in tests.support.old_versions"),
    # Node ids, hosts and ports: two brokers, two listeners (each is broker 0 today, but the
    # port is always its own).
    (None, "brokers.*.port", "each broker listens on its own port"),
    (None, "node_endpoints.*.port", "Produce/Fetch v10+/v16+: each broker's own port"),
    (None, "port", "FindCoordinator v0-3: the coordinator's port"),
    (None, "coordinators.*.port", "FindCoordinator v4+: the coordinator's port"),
    (None, "cluster_id", "each cluster generates its id"),
    (None, "topics.*.topic_id", "topic ids are random per topic"),
    (None, "responses.*.topic_id", "topic ids are random per topic"),
    # Generated per connection, group or producer by each broker.
    (None, "member_id", "member ids embed a random UUID (JoinGroup)"),
    (None, "leader", "the leader is one of the generated member ids (JoinGroup)"),
    (None, "members.*.member_id", "member ids embed a random UUID"),
    (None, "groups.*.members.*.member_id", "member ids embed a random UUID"),
    (None, "groups.*.members.*.client_host", "the client's address as each broker saw it"),
    (None, "producer_id", "producer ids come from each cluster's id block"),
    (None, "session_id", "fetch session ids are random"),
    (None, "results.*.total_bytes", "DescribeLogDirs v4: size of each broker's disk"),
    (None, "results.*.usable_bytes", "DescribeLogDirs v4: free space of each broker's disk"),
    (None, "results.*.log_dir", "each broker has its own log dir"),
    (None, "results.*.topics.*.partitions.*.partition_size", "segment bytes on disk"),
)


#: Lists compared as sets, sorted by the named key first: their order carries no meaning
#: and Kafka's is the iteration order of its hash maps.
UNORDERED: Final[tuple[tuple[ApiKey, str, str, str], ...]] = (
    (ApiKey.DESCRIBE_CONFIGS, "results.*.configs", "name", "Kafka iterates a hash map"),
    (ApiKey.CREATE_TOPICS, "topics.*.configs", "name", "v5+: Kafka iterates a hash map"),
    (ApiKey.DELETE_GROUPS, "results", "group_id", "Kafka iterates a hash map of groups"),
    (ApiKey.DESCRIBE_LOG_DIRS, "results.*.topics", "name", "Kafka iterates a hash map of logs"),
    (ApiKey.ALTER_PARTITION_REASSIGNMENTS, "responses", "name", "Kafka groups a hash map"),
    (
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        "responses.*.partitions",
        "partition_index",
        "Kafka groups a hash map",
    ),
    (ApiKey.LIST_PARTITION_REASSIGNMENTS, "topics", "name", "Kafka groups a hash map"),
    (
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        "topics.*.partitions",
        "partition_index",
        "Kafka groups a hash map",
    ),
    (
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        "results",
        "topic_name",
        "Kafka groups a hash map of partitions by topic",
    ),
    (
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        "results.*.partitions",
        "partition_index",
        "Kafka groups a hash map of partitions by topic",
    ),
    (
        ApiKey.DESCRIBE_LOG_DIRS,
        "results.*.topics.*.partitions",
        "partition_index",
        "Kafka iterates a hash map of logs",
    ),
    (
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        "entries.*.entity",
        "entity_type",
        "Kafka iterates a ClientQuotaEntity's hash map",
    ),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, "entries.*.values", "key", "Kafka iterates Properties"),
    (
        ApiKey.ALTER_CLIENT_QUOTAS,
        "entries.*.entity",
        "entity_type",
        "Kafka iterates a ClientQuotaEntity's hash map",
    ),
)


@dataclass(frozen=True)
class Justified:
    """A field where Franz deliberately answers differently from Kafka 3.9, and why."""

    api: ApiKey
    versions: range
    path: str
    reason: str
    scenario: str = "*"

    def allows(self, scenario: str, api: int, version: int, path: str) -> bool:
        return (
            api == self.api
            and version in self.versions
            and fnmatch.fnmatchcase(scenario, self.scenario)
            and fnmatch.fnmatchcase(path, self.path)
        )


#: Differences found and kept, each with its reason (footnotes of the README's table).
JUSTIFIED_DIFFERENCES: Final[tuple[Justified, ...]] = (
    Justified(
        ApiKey.API_VERSIONS,
        range(5),
        "api_keys",
        "Franz advertises only the APIs it serves ("
        "delegation tokens are not served yet; an embedded Franz, as compared here, does not "
        "serve the ZooKeeper-era inter-broker APIs, which a Franz broker in cluster mode "
        "serves and lists as Kafka does); the ranges of the APIs both serve are compared "
        "and equal",
    ),
    Justified(
        ApiKey.DESCRIBE_CONFIGS,
        range(1, 5),
        "results.*.configs.*.synonyms*",
        "a topic config's synonyms list every broker key of its unit chain that sets it "
        "(retention.ms: log.retention.ms, .minutes, .hours, with their defaults); Kafka "
        "drops those before the chain's first key (dropWhile), hiding log.retention.hours, "
        "log.roll.hours, log.roll.jitter.hours and log.flush.scheduler.interval.ms "
        "(franz.broker.configs)",
    ),
    Justified(
        ApiKey.OFFSET_FETCH,
        range(1),
        "topics.*.partitions.*.*",
        "Kafka 3.9 in ZooKeeper mode serves OffsetCommit/OffsetFetch v0 from ZooKeeper "
        "(/consumers/<group>/offsets), apart from the coordinator's offsets; Franz has no "
        "such store and answers v0 from the coordinator (franz.broker.handlers.offset_commit)",
    ),
    Justified(
        ApiKey.OFFSET_COMMIT,
        range(1),
        "topics.*.partitions.*.error_code",
        "Kafka 3.9 in ZooKeeper mode writes OffsetCommit v0 to ZooKeeper without asking the "
        "group coordinator, so a group with live members takes it (NONE); Franz commits v0 "
        "through the coordinator as a standalone commit (generation -1, no member), which a "
        "group with members refuses with UNKNOWN_MEMBER_ID, as Kafka's coordinator does for "
        "v1+ (franz.broker.handlers.offset_commit)",
        scenario="offset-commit",
    ),
    Justified(
        ApiKey.DESCRIBE_CONFIGS,
        range(1),
        "results.*.configs.*.is_default",
        "Kafka 3.9 leaves v0's is_default false for every config (its generated "
        "DescribeConfigsResponseData sets only config_source, v1+); Franz sets it for the "
        "configs whose source is DEFAULT_CONFIG, as the schema describes the field and as "
        "Kafka did before the generated messages (DescribeConfigsResponse.toStruct), so "
        "that a v0 client can tell defaults from overrides (franz.protocol.stand_ins)",
    ),
)


#: Old versions written with a newer version's kio class, from Kafka 3.9's message schemas:
#: (api, version) -> (kio version, request bytes the old version lacks at the end, whether
#: the old response lacks the newer one's leading ``throttle_time_ms``).
OLD_VERSIONS: Final[dict[tuple[ApiKey, int], tuple[int, int, bool]]] = {
    (ApiKey.OFFSET_FETCH, 0): (1, 0, False),  # v0 = v1 (v0 read ZooKeeper in Kafka)
    (ApiKey.DESCRIBE_LOG_DIRS, 0): (1, 0, False),  # v0 = v1
    (ApiKey.ALTER_REPLICA_LOG_DIRS, 0): (1, 0, False),  # v0 = v1
    (ApiKey.DELETE_TOPICS, 0): (1, 0, True),  # v1 response = throttle_time_ms + v0's
    (ApiKey.CREATE_TOPICS, 1): (2, 0, True),  # v2 response = throttle_time_ms + v1's
}


def common_versions(api: ApiKey) -> range:
    """Versions both brokers serve and the harness can write (what scenarios are run at)."""
    support = SUPPORTED_APIS[api]
    kafka_low, kafka_high = KAFKA_RANGES[api]
    written = [*(v for a, v in OLD_VERSIONS if a == api)]
    written += [v for a, v in old_versions.REQUESTS if a == api]
    low = min([support.min_accepted, *written])
    return range(max(low, kafka_low), min(support.max_version, kafka_high) + 1)


def plain(value: Any) -> Any:
    """A decoded kio value as plain, comparable data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return f"{value.name}({value.value})"
    if isinstance(value, datetime.timedelta):
        return timedelta_ms(value)
    if isinstance(value, datetime.datetime):
        return datetime_ms(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


@dataclass
class Step:
    """One compared answer: what was asked and the plain response."""

    label: str
    api: int
    version: int
    response: Any


_INT32: Final = struct.Struct(">i")
_CLIENT: Final = "franz-differential"


class Session:
    """One scenario against one broker over one TCP connection; records its transcript."""

    def __init__(self, bootstrap: str, scenario: str, version: int, timeout: float = 30.0):
        host, port = bootstrap.rsplit(":", 1)
        self.scenario = scenario
        self.version = version
        self.transcript: list[Step] = []
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation_id = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def name(self, suffix: str = "") -> str:
        """A topic or group name of this scenario and version, the same on both brokers."""
        return f"d-{self.scenario}-v{self.version}" + (f"-{suffix}" if suffix else "")

    def call(self, api: ApiKey, version: int, request: Mapping[str, Any]) -> Any:
        """Send one request and return the decoded (kio) response, not recorded."""
        self._correlation_id += 1
        if (api, version) in old_versions.REQUESTS:
            return self._call_old(api, version, request)
        kio_version, strip, no_throttle = OLD_VERSIONS.get((api, version), (version, 0, False))
        entity = build(request_type(api, kio_version), request)
        payload = encode_request(entity, self._correlation_id, _CLIENT)
        if kio_version != version:  # an old version: its own header, the newer body's bytes
            header = encode_request_header(api, kio_version, self._correlation_id, _CLIENT)
            body = payload[len(header) : len(payload) - strip]
            payload = encode_request_header(api, version, self._correlation_id, _CLIENT) + body
        self._sock.sendall(_INT32.pack(len(payload)) + payload)
        (size,) = _INT32.unpack(self._recv_exactly(4))
        answer = self._recv_exactly(size)
        if no_throttle:
            answer = answer[:4] + bytes(4) + answer[4:]
        correlation_id, response = decode_response(api, kio_version, answer)
        assert correlation_id == self._correlation_id, (correlation_id, self._correlation_id)
        return response

    def _call_old(self, api: ApiKey, version: int, request: Mapping[str, Any]) -> Any:
        """A pre-KIP-896 version, with the classes generated from Kafka 3.9's schemas."""
        aliases = {f"{key}_ms": value for key, value in request.items()}
        entity = build(old_versions.REQUESTS[api, version], {**aliases, **request})
        payload = encode_request(entity, self._correlation_id, _CLIENT)
        self._sock.sendall(_INT32.pack(len(payload)) + payload)
        (size,) = _INT32.unpack(self._recv_exactly(4))
        answer = self._recv_exactly(size)
        (correlation_id,) = _INT32.unpack_from(answer)  # response header v0
        assert correlation_id == self._correlation_id, (correlation_id, self._correlation_id)
        reader = entity_reader(old_versions.RESPONSES[api, version])
        response, size = reader(answer, _INT32.size)
        left = len(answer) - _INT32.size - size
        assert left == 0, f"{left} bytes left after the {api.name} v{version} response"
        return response

    def send(
        self,
        api: ApiKey,
        request: Mapping[str, Any],
        *,
        version: int | None = None,
        label: str = "",
        select: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Send one request (at the scenario's version unless given) and record the answer;
        ``select`` narrows the plain answer to this scenario's part of a cluster-wide list."""
        version = self.version if version is None else version
        response = self.call(api, version, request)
        recorded = plain(response)
        if select is not None:
            recorded = select(recorded)
        self.transcript.append(Step(label or api.name, int(api), version, recorded))
        return response

    def wait_until(
        self,
        api: ApiKey,
        version: int,
        request: Mapping[str, Any],
        done: Callable[[Any], bool],
        timeout: float = 30.0,
    ) -> Any:
        """Poll a request (not recorded) until ``done(response)``: Kafka's controller elects
        leaders and loads coordinators asynchronously."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.call(api, version, request)
            if done(response):
                return response
            if time.monotonic() > deadline:
                raise AssertionError(f"{api.name} still not done after {timeout} s: {response}")
            time.sleep(0.05)

    def _recv_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed")
            chunks += chunk
        return bytes(chunks)


def _masked(api: int, path: str) -> bool:
    return any(
        (who is None or who == api) and fnmatch.fnmatchcase(path, pattern)
        for who, pattern, _ in MAY_DIFFER
    )


def _walk(kafka: Any, franz: Any, path: str, api: int, out: list[tuple[str, Any, Any]]) -> None:
    if path and _masked(api, path):
        return
    for who, pattern, key, _ in UNORDERED:
        if who == api and fnmatch.fnmatchcase(path, pattern) and isinstance(kafka, list):
            kafka = sorted(kafka, key=lambda item: str(item[key]))
            franz = sorted(franz, key=lambda item: str(item[key]))
    if isinstance(kafka, dict) and isinstance(franz, dict) and kafka.keys() == franz.keys():
        for key in kafka:
            _walk(kafka[key], franz[key], f"{path}.{key}" if path else key, api, out)
    elif isinstance(kafka, list) and isinstance(franz, list) and len(kafka) == len(franz):
        for k, f in zip(kafka, franz, strict=True):
            _walk(k, f, f"{path}.*" if path else "*", api, out)
    elif isinstance(kafka, list) and isinstance(franz, list):
        only_kafka = [k for k in kafka if k not in franz]
        only_franz = [f for f in franz if f not in kafka]
        out.append((f"{path} (lengths {len(kafka)}, {len(franz)})", only_kafka, only_franz))
    elif kafka != franz:
        out.append((path, kafka, franz))


def compare(scenario: str, kafka: Iterable[Step], franz: Iterable[Step]) -> list[str]:
    """The differences between two transcripts not allowed by ``MAY_DIFFER`` or
    ``JUSTIFIED_DIFFERENCES``, one line each (empty: the brokers answered the same)."""
    kafka, franz = list(kafka), list(franz)
    problems = []
    if [(s.label, s.api, s.version) for s in kafka] != [(s.label, s.api, s.version) for s in franz]:
        problems.append(
            f"different steps: kafka {[s.label for s in kafka]}, franz {[s.label for s in franz]}"
        )
    for k, f in zip(kafka, franz, strict=False):
        found: list[tuple[str, Any, Any]] = []
        _walk(k.response, f.response, "", k.api, found)
        for path, kafka_value, franz_value in found:
            if any(j.allows(scenario, k.api, k.version, path) for j in JUSTIFIED_DIFFERENCES):
                continue
            problems.append(
                f"{k.label} v{k.version} {path or '<response>'}: "
                f"kafka {kafka_value!r} franz {franz_value!r}"
            )
    return problems


@dataclass
class Scenario:
    """A named request sequence exercising ``api`` at each of ``versions``."""

    name: str
    api: ApiKey
    run: Callable[[Session, int], None]
    versions: range = field(default=range(0))
