"""The consumer protocol's Subscription/Assignment codec, byte-exact with kafka-python's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from franz.coordinator.group.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscription_topics,
)

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
partitions = st.lists(
    st.tuples(names, st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)), max_size=3
).map(tuple)
user_data = st.one_of(st.none(), st.binary(max_size=8))


@given(
    version=st.integers(0, 3),
    topics=st.lists(names, max_size=4).map(tuple),
    data=user_data,
    owned=partitions,
    generation=st.integers(-1, 2**31 - 1),
    rack=st.one_of(st.none(), names),
)
def test_subscription_matches_kafka_python(
    version: int,
    topics: tuple[str, ...],
    data: bytes | None,
    owned: tuple[tuple[str, tuple[int, ...]], ...],
    generation: int,
    rack: str | None,
) -> None:
    ours = Subscription(topics, data, owned, generation, rack, version)
    fields: dict[str, object] = {"topics": list(topics), "user_data": data}
    if version >= 1:
        fields["owned_partitions"] = [(t, list(p)) for t, p in owned]
    if version >= 2:
        fields["generation_id"] = generation
    if version >= 3:
        fields["rack_id"] = rack
    theirs = ConsumerProtocolSubscription(version=version, **fields).encode(version=version)
    assert encode_subscription(ours) == theirs
    decoded = decode_subscription(theirs)
    assert decoded.topics == topics and decoded.user_data == data and decoded.version == version
    if version >= 1:
        assert decoded.owned_partitions == owned
    if version >= 2:
        assert decoded.generation_id == generation
    if version >= 3:
        assert decoded.rack_id == rack
    assert subscription_topics(theirs) == topics


@given(version=st.integers(0, 3), assigned=partitions, data=user_data)
def test_assignment_matches_kafka_python(
    version: int, assigned: tuple[tuple[str, tuple[int, ...]], ...], data: bytes | None
) -> None:
    theirs = ConsumerProtocolAssignment(
        version=version, assigned_partitions=[(t, list(p)) for t, p in assigned], user_data=data
    ).encode(version=version)
    assert encode_assignment(Assignment(assigned, data, version)) == theirs
    assert decode_assignment(theirs) == Assignment(assigned, data, version)


def test_kafka_python_decodes_ours() -> None:
    data = encode_subscription(Subscription(("a", "b"), b"u", (("a", (0, 1)),), 7, "r1"))
    decoded = ConsumerProtocolSubscription.decode(data)
    assert list(decoded.topics) == ["a", "b"] and decoded.generation_id == 7
    assignment = ConsumerProtocolAssignment.decode(
        encode_assignment(Assignment((("t", (3, 4)),), None, 0))
    )
    assert [(tp.topic, tp.partition) for tp in assignment.partitions()] == [("t", 3), ("t", 4)]


def test_newer_versions_read_as_v3_and_ignore_trailing_fields() -> None:
    v3 = encode_subscription(Subscription(("a",), None, (), 5, "rack"))
    v4 = b"\x00\x04" + v3[2:] + b"\x00\x00\x00\x09"
    decoded = decode_subscription(v4)
    assert decoded.version == 4 and decoded.rack_id == "rack" and decoded.topics == ("a",)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\xff\xff\x00\x00\x00\x00",
        b"\x00\x00\x00\x00\x00\x02\x00\x01a",
        b"\x00\x00\x7f\xff\xff\xff",
    ],
)
def test_malformed_payloads_raise(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)
    with pytest.raises(ConsumerProtocolError):
        subscription_topics(data)


def test_encode_refuses_unknown_versions() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(Subscription((), version=4))
    with pytest.raises(ConsumerProtocolError):
        encode_assignment(Assignment((), version=-1))
