"""The dispatcher's quota helpers: throttle times written into responses, followers'
fetches exempt from the request quota (franz.broker.dispatcher)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

from franz.broker.context import RawBody
from franz.broker.dispatcher import _fetch_replica_id, _with_throttle
from franz.protocol.api_keys import ApiKey
from franz.protocol.headers import RequestHeader


def _header(api_key: int, version: int) -> RequestHeader:
    return RequestHeader(
        api_key=api_key,
        api_version=version,
        correlation_id=1,
        client_id="c",
        size=0,
        flexible=False,
    )


def test_mapping_response_gets_throttle_time() -> None:
    body = {"responses": [], "throttle_time": 0}
    out = _with_throttle(_header(ApiKey.PRODUCE, 9), body, 250)
    assert out["throttle_time"] == 250


def test_fetch_body_throttle_is_patched_to_the_larger() -> None:
    first = struct.pack(">i", 100) + b"rest"
    out = _with_throttle(_header(ApiKey.FETCH, 12), RawBody([first, b"tail"]), 250)
    assert isinstance(out, RawBody)
    assert out.chunks == [struct.pack(">i", 250) + b"rest", b"tail"]
    kept = _with_throttle(_header(ApiKey.FETCH, 12), RawBody([first]), 50)
    assert kept.chunks == [first]


def test_fetch_v0_has_no_throttle_field() -> None:
    body = RawBody([b"\x00\x00\x00\x01data"])
    assert _with_throttle(_header(ApiKey.FETCH, 0), body, 250) is body


def test_fetch_replica_id_across_versions() -> None:
    assert _fetch_replica_id(SimpleNamespace(replica_id=2)) == 2
    assert _fetch_replica_id(SimpleNamespace(replica_state=SimpleNamespace(replica_id=3))) == 3
    assert _fetch_replica_id(SimpleNamespace(replica_id=-1)) == -1
    assert _fetch_replica_id(SimpleNamespace()) == -1
