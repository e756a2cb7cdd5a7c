"""A small synchronous Kafka client for the requests confluent-kafka does not offer.

confluent-kafka 2.16 has no OffsetDelete (``kafka-consumer-groups.sh --delete-offsets``), so
the tools speak it here: one blocking TCP connection per broker, one request at a time
(``franz.admin.cluster_wire`` sends the reassignment and log-dir APIs the same way).
Messages are kio's dataclasses built with ``franz.protocol.messages.build``; versions are
negotiated with ApiVersions v0 (which every broker answers) before any other request.

Wire format (Kafka protocol guide)::

    frame            size int32 (bytes after this field), payload
    request header   v1: api_key int16, api_version int16, correlation_id int32,
                         client_id nullable string (int16 length)
                     v2: v1 + tagged fields (one 0 byte: none); flexible versions
    response header  v0: correlation_id int32;  v1: v0 + tagged fields (flexible versions,
                     except ApiVersions, always v0: KIP-511)

``delete_offsets`` finds the group's coordinator (FindCoordinator, key type 0 = group; v4+
batches keys in ``coordinator_keys``) and sends it OffsetDelete v0, retrying while the
coordinator moves or loads (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) until the deadline.
"""

from __future__ import annotations

import io
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final

from kio.serial import entity_reader, entity_writer

from franz.admin.options import ToolError
from franz.admin.wire_security import WireSecurity
from franz.errors import ErrorCode
from franz.protocol.headers import skip_tagged_fields
from franz.protocol.messages import build, request_type, response_type

__all__ = ["BrokerConnection", "OffsetDeleteResult", "connect", "delete_offsets"]

_INT32: Final = struct.Struct(">i")
_HEADER: Final = struct.Struct(">hhi")

API_VERSIONS: Final = 18
FIND_COORDINATOR: Final = 10
OFFSET_DELETE: Final = 47

_RETRY_COORDINATOR: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


class BrokerConnection:
    """One blocking connection to a broker. ``request(api_key, data)`` sends the request at
    the highest version both sides know (at most ``max_version``) and returns kio's decoded
    response. Socket errors and timeouts raise ``OSError``/``TimeoutError``. ``security``
    (``franz.admin.wire_security``) puts it under TLS and authenticates it with SASL after
    ApiVersions, as Kafka's clients do."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        client_id: str,
        security: WireSecurity | None = None,
    ) -> None:
        self.address = f"{host}:{port}"
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = (security or WireSecurity()).wrap(sock, host)
        except OSError:
            sock.close()
            raise
        self.client_id = client_id
        self._correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        response = self._send(API_VERSIONS, 0, {})
        if int(response.error_code) != 0:
            raise ToolError(f"{self.address} refused ApiVersions: error {int(response.error_code)}")
        self.versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
        }
        if security is not None:
            try:
                security.authenticate(
                    lambda key, data, top: self.request(key, data, max_version=top),
                    self.address,
                )
            except BaseException:
                self.sock.close()
                raise

    def version(self, api_key: int, max_version: int) -> int:
        """The version to use: the broker's highest, capped at ``max_version``."""
        low, high = self.versions.get(api_key, (0, -1))
        chosen = min(high, max_version)
        if chosen < low:
            raise ToolError(
                f"the broker at {self.address} does not support API {api_key} "
                f"at versions up to {max_version} (it offers {low}-{high})"
            )
        return chosen

    def request(self, api_key: int, data: Mapping[str, Any], *, max_version: int) -> Any:
        return self._send(api_key, self.version(api_key, max_version), data)

    def _send(self, api_key: int, version: int, data: Mapping[str, Any]) -> Any:
        cls: Any = request_type(api_key, version)
        self._correlation_id += 1
        correlation_id = self._correlation_id
        client_id = self.client_id.encode()
        header = _HEADER.pack(api_key, version, correlation_id)
        header += struct.pack(">h", len(client_id)) + client_id
        if _header_version(cls) == 2:
            header += b"\x00"
        body = io.BytesIO()
        entity_writer(cls)(body, build(cls, data))
        payload = header + body.getvalue()
        self.sock.sendall(_INT32.pack(len(payload)) + payload)
        frame = self._recv_frame()
        (got,) = _INT32.unpack_from(frame, 0)
        if got != correlation_id:
            raise ToolError(
                f"{self.address} answered correlation id {got} to request {correlation_id}"
            )
        response_cls: Any = response_type(api_key, version)
        offset = 4
        if _header_version(response_cls) == 1:
            offset = skip_tagged_fields(frame, offset)
        response, _size = entity_reader(response_cls)(frame, offset)
        return response

    def _recv_exactly(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            chunks += chunk
        return bytes(chunks)

    def _recv_frame(self) -> bytes:
        (size,) = _INT32.unpack(self._recv_exactly(4))
        return self._recv_exactly(size)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _header_version(cls: Any) -> int:
    """The header version a kio message class names (``kio.schema.<header>.v<N>.header``):
    the request header v1/v2 or response header v0/v1 rules above, from Kafka's schemas."""
    module: str = cls.__header_schema__.__module__
    return int(module.rsplit(".", 2)[-2].removeprefix("v"))


class OffsetDeleteResult:
    """OffsetDelete's answer: the group-level ``error`` and one code per partition."""

    def __init__(self, error: ErrorCode, partitions: dict[tuple[str, int], ErrorCode]) -> None:
        self.error = error
        self.partitions = partitions


def connect(
    address: str, timeout: float, client_id: str, security: WireSecurity | None = None
) -> BrokerConnection:
    """A ``BrokerConnection`` to ``address`` (``host:port``, ``[v6]:port`` too), secured by
    ``security`` when given."""
    host, _, port = address.strip().rpartition(":")
    return BrokerConnection(
        host.strip("[]"), int(port), timeout=timeout, client_id=client_id, security=security
    )


def _find_coordinator(conn: BrokerConnection, group: str) -> tuple[ErrorCode, str]:
    """``(error, "host:port")`` of ``group``'s coordinator, as ``conn``'s broker says."""
    version = conn.version(FIND_COORDINATOR, 4)
    if version >= 4:
        response = conn.request(
            FIND_COORDINATOR,
            {"key_type": 0, "coordinator_keys": [group]},
            max_version=4,
        )
        [answer] = response.coordinators
        return ErrorCode(int(answer.error_code)), f"{answer.host}:{int(answer.port)}"
    response = conn.request(FIND_COORDINATOR, {"key": group, "key_type": 0}, max_version=3)
    return ErrorCode(int(response.error_code)), f"{response.host}:{int(response.port)}"


def delete_offsets(
    bootstrap: str,
    group: str,
    partitions: Sequence[tuple[str, int]],
    *,
    timeout_ms: int,
    client_id: str = "franz-consumer-groups",
    security: WireSecurity | None = None,
) -> OffsetDeleteResult:
    """Delete ``group``'s committed offsets of ``partitions`` (OffsetDelete v0 to the group's
    coordinator). Raises ``ToolError`` naming ``bootstrap`` when no broker answers within
    ``timeout_ms``."""
    deadline = time.monotonic() + timeout_ms / 1000
    servers = [s for s in bootstrap.split(",") if s.strip()]
    last_problem = "no broker answered"
    while True:
        for server in servers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                with connect(server, remaining, client_id, security) as conn:
                    error, coordinator = _find_coordinator(conn, group)
                if error in _RETRY_COORDINATOR:
                    last_problem = f"the coordinator of group {group!r}: {error.name}"
                    continue
                if error != ErrorCode.NONE:
                    return OffsetDeleteResult(error, {})
                left = max(0.1, deadline - time.monotonic())
                with connect(coordinator, left, client_id, security) as c:
                    result = _offset_delete(c, group, partitions)
                if result.error in _RETRY_COORDINATOR:
                    last_problem = f"OffsetDelete at {coordinator}: {result.error.name}"
                    continue
                return result
            except (OSError, ConnectionError) as exc:
                last_problem = f"{server}: {exc}"
        if time.monotonic() >= deadline:
            raise ToolError(
                f"could not delete offsets of group {group!r} through {bootstrap} within "
                f"{timeout_ms} ms ({last_problem}); check that a broker is running there"
            )
        time.sleep(0.1)


def _offset_delete(
    conn: BrokerConnection, group: str, partitions: Sequence[tuple[str, int]]
) -> OffsetDeleteResult:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    response = conn.request(
        OFFSET_DELETE,
        {
            "group_id": group,
            "topics": [
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in by_topic.items()
            ],
        },
        max_version=0,
    )
    answered = {
        (t.name, int(p.partition_index)): ErrorCode(int(p.error_code))
        for t in response.topics
        for p in t.partitions
    }
    return OffsetDeleteResult(ErrorCode(int(response.error_code)), answered)
