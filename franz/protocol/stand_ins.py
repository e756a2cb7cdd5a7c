"""Old versions served with the next version's kio classes (kio has no class below Kafka 4.0's
floors, KIP-896; Kafka 3.9 serves them).

Each entry is a version whose request is the stand-in version's request minus fields at the
*end* of the body (``request_suffix`` supplies them, with the defaults Kafka's schemas give
older versions), and whose response is the stand-in response re-encoded by ``encode``
(None: byte-identical). From Kafka 3.9's message schemas::

    OffsetFetch v0       = v1 (request and response; v0 read ZooKeeper in Kafka, see the handler)
    DescribeLogDirs v0   = v1
    AlterReplicaLogDirs v0 = v1
    DeleteTopics v0      = v1 request; v1 response = throttle_time_ms int32 + v0 response
    CreateTopics v1      = v2 request; v2 response = throttle_time_ms int32 + v1 response
    CreateTopics v0      = v1 request without the trailing validate_only bool (false);
                           response topics [name string, error_code int16]
    DescribeAcls, CreateAcls, DeleteAcls v0 = v1 without the pattern types
                           (``franz.protocol.acls_v0``)
    DescribeConfigs v0   = v1 request without the trailing include_synonyms bool (false);
                           response throttle_time_ms int32, results [error_code int16,
                           error_message nullable string, resource_type int8, resource_name
                           string, configs [name string, value nullable string, read_only
                           bool, is_default bool, is_sensitive bool]]
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from franz.protocol.acls_v0 import (
    create_acls_v0_request,
    delete_acls_v0_request,
    describe_acls_v0_request,
    encode_delete_acls_v0_response,
    encode_describe_acls_v0_response,
)
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import encode_response

__all__ = ["STAND_INS", "StandIn", "stand_in_for"]

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
#: ``ConfigSource.DEFAULT_CONFIG`` (DescribeConfigsResponse.json): v0's ``is_default``.
_DEFAULT_CONFIG: Final = 5


@dataclass(frozen=True, slots=True)
class StandIn:
    kio_version: int
    request_suffix: bytes = b""
    encode: Callable[[Any], bytes] | None = None
    #: Rewrites the whole frame (body at the given offset) into the stand-in version's
    #: bytes, where the old version lacks fields in the middle (``franz.protocol.acls_v0``).
    rewrite: Callable[[bytes | bytearray, int], bytes] | None = None

    def request_bytes(self, frame: bytes | bytearray, offset: int) -> bytes | bytearray:
        """The frame as the stand-in version's request."""
        if self.rewrite is not None:
            return self.rewrite(frame, offset)
        return frame + self.request_suffix if self.request_suffix else frame


def _string(out: bytearray, text: str | None) -> None:
    if text is None:
        out += _I16.pack(-1)
        return
    data = text.encode()
    out += _I16.pack(len(data))
    out += data


def _without_throttle_time(response: Any) -> bytes:
    return encode_response(response)[_I32.size :]


def _create_topics_v0(response: Any) -> bytes:
    out = bytearray(_I32.pack(len(response.topics)))
    for topic in response.topics:
        _string(out, topic.name)
        out += _I16.pack(int(topic.error_code))
    return bytes(out)


def _describe_configs_v0(response: Any) -> bytes:
    out = bytearray(_I32.pack(int(response.throttle_time.total_seconds() * 1000)))
    out += _I32.pack(len(response.results))
    for result in response.results:
        out += _I16.pack(int(result.error_code))
        _string(out, result.error_message)
        out += _I8.pack(int(result.resource_type))
        _string(out, result.resource_name)
        out += _I32.pack(len(result.configs))
        for config in result.configs:
            _string(out, config.name)
            _string(out, config.value)
            out += _I8.pack(bool(config.read_only))
            out += _I8.pack(int(config.config_source) == _DEFAULT_CONFIG)
            out += _I8.pack(bool(config.is_sensitive))
    return bytes(out)


STAND_INS: Final[dict[tuple[int, int], StandIn]] = {
    (ApiKey.OFFSET_FETCH, 0): StandIn(1),
    (ApiKey.DESCRIBE_LOG_DIRS, 0): StandIn(1),
    (ApiKey.ALTER_REPLICA_LOG_DIRS, 0): StandIn(1),
    (ApiKey.DELETE_TOPICS, 0): StandIn(1, encode=_without_throttle_time),
    (ApiKey.CREATE_TOPICS, 1): StandIn(2, encode=_without_throttle_time),
    (ApiKey.CREATE_TOPICS, 0): StandIn(2, b"\x00", _create_topics_v0),
    (ApiKey.DESCRIBE_CONFIGS, 0): StandIn(1, b"\x00", _describe_configs_v0),
    # Authorization (issue 20): v0 lacks v1's pattern type after each resource name.
    (ApiKey.DESCRIBE_ACLS, 0): StandIn(
        1, encode=encode_describe_acls_v0_response, rewrite=describe_acls_v0_request
    ),
    (ApiKey.CREATE_ACLS, 0): StandIn(1, rewrite=create_acls_v0_request),
    (ApiKey.DELETE_ACLS, 0): StandIn(
        1, encode=encode_delete_acls_v0_response, rewrite=delete_acls_v0_request
    ),
}


def stand_in_for(api_key: int, version: int) -> StandIn | None:
    return STAND_INS.get((api_key, version))
