"""DescribeAcls, CreateAcls and DeleteAcls v0 (``franz.protocol.acls_v0``): v0 requests are
v1 requests without the pattern type after each name (LITERAL), and v0 responses are v1
responses without it; checked against bytes written by hand from Kafka's v0 schemas."""

from __future__ import annotations

import datetime
import struct

from kio.schema.create_acls.v1 import request as create_v1
from kio.schema.delete_acls.v1 import response as delete_v1_response
from kio.schema.describe_acls.v1 import request as describe_v1
from kio.schema.describe_acls.v1 import response as describe_v1_response
from kio.schema.errors import ErrorCode

from franz.protocol.acls_v0 import (
    create_acls_v0_request,
    delete_acls_v0_request,
    describe_acls_v0_request,
    encode_delete_acls_v0_response,
    encode_describe_acls_v0_response,
)
from franz.protocol.messages import decode_request

HEADER = b"\x00\x1e\x00\x00\x00\x00\x00\x07\x00\x01c"  # any prefix: the body starts after it


def s(text: str | None) -> bytes:
    if text is None:
        return b"\xff\xff"
    return struct.pack(">h", len(text)) + text.encode()


def test_create_acls_v0_request_reads_as_v1_with_literal_patterns() -> None:
    body = struct.pack(">i", 2)
    body += b"\x02" + s("orders") + s("User:alice") + s("*") + b"\x04\x03"
    body += b"\x03" + s("billing") + s("User:bob") + s("10.0.0.1") + b"\x03\x02"
    frame = HEADER + body
    request = decode_request(30, 1, create_acls_v0_request(frame, len(HEADER)), len(HEADER))
    assert request == create_v1.CreateAclsRequest(
        creations=(
            create_v1.AclCreation(
                resource_type=2,
                resource_name="orders",
                resource_pattern_type=3,
                principal="User:alice",
                host="*",
                operation=4,
                permission_type=3,
            ),
            create_v1.AclCreation(
                resource_type=3,
                resource_name="billing",
                resource_pattern_type=3,
                principal="User:bob",
                host="10.0.0.1",
                operation=3,
                permission_type=2,
            ),
        )
    )


def test_describe_and_delete_acls_v0_filters_read_as_literal_v1_filters() -> None:
    one = b"\x01" + s(None) + s("User:alice") + s(None) + b"\x01\x01"
    request = decode_request(
        29, 1, describe_acls_v0_request(HEADER + one, len(HEADER)), len(HEADER)
    )
    assert request == describe_v1.DescribeAclsRequest(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=3,
        principal_filter="User:alice",
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    frame = HEADER + struct.pack(">i", 1) + one
    deleted = decode_request(31, 1, delete_acls_v0_request(frame, len(HEADER)), len(HEADER))
    assert [f.pattern_type_filter for f in deleted.filters] == [3]
    assert deleted.filters[0].principal_filter == "User:alice"


def test_a_truncated_v0_request_is_left_for_the_decoder_to_refuse() -> None:
    frame = HEADER + struct.pack(">i", 1) + b"\x02" + s("orders")[:3]
    assert create_acls_v0_request(frame, len(HEADER)) == frame


def test_v0_responses_drop_the_pattern_types() -> None:
    described = describe_v1_response.DescribeAclsResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        error_message=None,
        resources=(
            describe_v1_response.DescribeAclsResource(
                resource_type=2,
                resource_name="orders",
                pattern_type=3,
                acls=(
                    describe_v1_response.AclDescription(
                        principal="User:alice", host="*", operation=4, permission_type=3
                    ),
                ),
            ),
        ),
    )
    assert encode_describe_acls_v0_response(described) == (
        struct.pack(">ihh", 0, 0, -1)
        + struct.pack(">i", 1)
        + b"\x02"
        + s("orders")
        + struct.pack(">i", 1)
        + s("User:alice")
        + s("*")
        + b"\x04\x03"
    )
    deleted = delete_v1_response.DeleteAclsResponse(
        throttle_time=datetime.timedelta(milliseconds=5),
        filter_results=(
            delete_v1_response.DeleteAclsFilterResult(
                error_code=ErrorCode.none,
                error_message=None,
                matching_acls=(
                    delete_v1_response.DeleteAclsMatchingAcl(
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=2,
                        resource_name="orders",
                        pattern_type=3,
                        principal="User:alice",
                        host="*",
                        operation=4,
                        permission_type=3,
                    ),
                ),
            ),
        ),
    )
    assert encode_delete_acls_v0_response(deleted) == (
        struct.pack(">i", 5)
        + struct.pack(">i", 1)
        + struct.pack(">h", 0)
        + s(None)
        + struct.pack(">i", 1)
        + struct.pack(">h", 0)
        + s(None)
        + b"\x02"
        + s("orders")
        + s("User:alice")
        + s("*")
        + b"\x04\x03"
    )
