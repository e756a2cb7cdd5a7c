"""DescribeAcls, CreateAcls and DeleteAcls v0 (Kafka 3.9 serves them; kio starts at v1, Kafka
4.0's floor, KIP-896): served with the v1 classes (``franz.protocol.stand_ins``).

v1 (KIP-290) added one ``int8`` pattern type right after each resource name; v0 means
LITERAL (3). From Kafka 3.9's message schemas::

    CreateAcls v0 request    creations [resource_type int8, resource_name string,
                                        principal string, host string, operation int8,
                                        permission_type int8]
    CreateAcls v0 response   = v1
    DescribeAcls v0 request  resource_type_filter int8, resource_name_filter nullable string,
                             principal_filter nullable string, host_filter nullable string,
                             operation int8, permission_type int8
    DescribeAcls v0 response throttle_time_ms int32, error_code int16, error_message nullable
                             string, resources [resource_type int8, resource_name string,
                             acls [principal string, host string, operation int8,
                             permission_type int8]]
    DeleteAcls v0 request    filters [the DescribeAcls v0 request's fields]
    DeleteAcls v0 response   throttle_time_ms int32, filter_results [error_code int16,
                             error_message nullable string, matching_acls [error_code int16,
                             error_message nullable string, resource_type int8, resource_name
                             string, principal string, host string, operation int8,
                             permission_type int8]]

A request is rewritten to v1 bytes (LITERAL inserted after each name) before kio decodes
it; a truncated one is left as it is, and kio's decoder refuses it (the connection is
closed, as for any unparsable request).
"""

from __future__ import annotations

import struct
from typing import Any, Final

__all__ = [
    "create_acls_v0_request",
    "delete_acls_v0_request",
    "describe_acls_v0_request",
    "encode_delete_acls_v0_response",
    "encode_describe_acls_v0_response",
]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
#: ``PatternType.LITERAL``: what a v0 binding or filter means.
_LITERAL: Final = b"\x03"


class _Truncated(Exception):
    pass


def _skip_string(data: bytes | bytearray, pos: int) -> int:
    if pos + 2 > len(data):
        raise _Truncated
    length: int = _I16.unpack_from(data, pos)[0]
    end = pos + 2 + max(length, 0)
    if end > len(data):
        raise _Truncated
    return end


def _filter(data: bytes | bytearray, pos: int, out: bytearray) -> int:
    """Copy one v0 binding or filter as v1 (type, name, LITERAL, principal, host, op, perm)."""
    name_end = _skip_string(data, pos + 1)
    out += data[pos:name_end]
    out += _LITERAL
    end = _skip_string(data, _skip_string(data, name_end)) + 2
    if end > len(data):
        raise _Truncated
    out += data[name_end:end]
    return end


def _rewrite(frame: bytes | bytearray, offset: int, counted: bool) -> bytes:
    out = bytearray(frame[:offset])
    try:
        if not counted:
            end = _filter(frame, offset, out)
        else:
            (count,) = _I32.unpack_from(frame, offset)
            out += frame[offset : offset + 4]
            end = offset + 4
            for _ in range(max(count, 0)):
                end = _filter(frame, end, out)
    except (_Truncated, struct.error):
        return bytes(frame)
    out += frame[end:]
    return bytes(out)


def create_acls_v0_request(frame: bytes | bytearray, offset: int) -> bytes:
    return _rewrite(frame, offset, counted=True)


def describe_acls_v0_request(frame: bytes | bytearray, offset: int) -> bytes:
    return _rewrite(frame, offset, counted=False)


def delete_acls_v0_request(frame: bytes | bytearray, offset: int) -> bytes:
    return _rewrite(frame, offset, counted=True)


def _string(out: bytearray, text: str | None) -> None:
    if text is None:
        out += _I16.pack(-1)
        return
    data = text.encode()
    out += _I16.pack(len(data))
    out += data


def _throttle_ms(response: Any) -> int:
    return int(response.throttle_time.total_seconds() * 1000)


def encode_describe_acls_v0_response(response: Any) -> bytes:
    out = bytearray(_I32.pack(_throttle_ms(response)))
    out += _I16.pack(int(response.error_code))
    _string(out, response.error_message)
    out += _I32.pack(len(response.resources))
    for resource in response.resources:
        out += bytes([int(resource.resource_type) & 0xFF])
        _string(out, resource.resource_name)
        out += _I32.pack(len(resource.acls))
        for acl in resource.acls:
            _string(out, acl.principal)
            _string(out, acl.host)
            out += bytes([int(acl.operation) & 0xFF, int(acl.permission_type) & 0xFF])
    return bytes(out)


def encode_delete_acls_v0_response(response: Any) -> bytes:
    out = bytearray(_I32.pack(_throttle_ms(response)))
    out += _I32.pack(len(response.filter_results))
    for result in response.filter_results:
        out += _I16.pack(int(result.error_code))
        _string(out, result.error_message)
        out += _I32.pack(len(result.matching_acls))
        for acl in result.matching_acls:
            out += _I16.pack(int(acl.error_code))
            _string(out, acl.error_message)
            out += bytes([int(acl.resource_type) & 0xFF])
            _string(out, acl.resource_name)
            _string(out, acl.principal)
            _string(out, acl.host)
            out += bytes([int(acl.operation) & 0xFF, int(acl.permission_type) & 0xFF])
    return bytes(out)
