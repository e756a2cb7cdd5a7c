"""The hand-written OffsetCommit response encoder is byte-identical with kio's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.messages import build_response, encode_response
from franz.protocol.offset_commit import encode_offset_commit_response

SUPPORT = SUPPORTED_APIS[ApiKey.OFFSET_COMMIT]
VERSIONS = list(range(SUPPORT.min_accepted, SUPPORT.max_version + 1))

topics_strategy = st.lists(
    st.tuples(
        st.text(max_size=20),
        st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(-1, 120)), max_size=5),
    ),
    max_size=4,
)


def kio_bytes(
    version: int, topics: list[tuple[str, list[tuple[int, int]]]], throttle: int
) -> bytes:
    data = {
        "throttle_time": throttle,
        "topics": [
            {
                "name": name,
                "partitions": [{"partition_index": p, "error_code": e} for p, e in parts],
            }
            for name, parts in topics
        ],
    }
    return encode_response(build_response(ApiKey.OFFSET_COMMIT, version, data))


@pytest.mark.parametrize("version", VERSIONS)
@given(topics=topics_strategy, throttle=st.integers(0, 10_000))
def test_matches_kio(
    version: int, topics: list[tuple[str, list[tuple[int, int]]]], throttle: int
) -> None:
    assert encode_offset_commit_response(version, topics, throttle) == kio_bytes(
        version, topics, throttle
    )


def test_refuses_versions_it_does_not_encode() -> None:
    for version in (-1, 10):
        with pytest.raises(ValueError, match=f"v{version}"):
            encode_offset_commit_response(version, [])


@pytest.mark.parametrize("version", [0, 1])
def test_v0_and_v1_responses_are_v2s(version: int) -> None:
    # OffsetCommitResponse.json: "Versions 1 and 2 are the same as version 0."
    topics = [("orders", [(0, 0), (3, 22)]), ("", [])]
    assert encode_offset_commit_response(version, topics, 7) == kio_bytes(2, topics, 7)
