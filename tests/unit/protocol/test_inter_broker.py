"""``franz.protocol.inter_broker``: Kafka 3.9's LeaderAndIsr, StopReplica, UpdateMetadata and
ControlledShutdown through kio's codec.

Golden frames are written out by hand from the schemas (``*Request.json`` at Kafka 3.9, field
order and types per version; KIP-482 compact encodings for flexible versions), header
included, and compared with what ``encode_request`` / ``encode_response`` produce, then
decoded back through the broker's path (``parse_request_header`` + ``decode_request``).
"""

from __future__ import annotations

import dataclasses
import io
import types
import typing
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer

from franz.errors import InvalidRequestError
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiKey
from franz.protocol.headers import parse_request_header, response_header_version
from franz.protocol.inter_broker import REQUESTS, RESPONSES, VERSIONS
from franz.protocol.inter_broker.controlled_shutdown import v0 as cs0
from franz.protocol.inter_broker.controlled_shutdown import v3 as cs3
from franz.protocol.inter_broker.leader_and_isr import v1 as lai1
from franz.protocol.inter_broker.leader_and_isr import v4 as lai4
from franz.protocol.inter_broker.leader_and_isr import v7 as lai7
from franz.protocol.inter_broker.stop_replica import v4 as sr4
from franz.protocol.inter_broker.update_metadata import v8 as um8
from franz.protocol.messages import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_type,
    response_type,
)

FAST = settings(max_examples=40, deadline=None)
ALL = sorted(REQUESTS)
TOPIC_ID = uuid.UUID(int=1)
UUID_1 = "00000000000000000000000000000001"


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts).replace(" ", ""))


# -- the tables ----------------------------------------------------------------------------------


def test_kafka_39_version_ranges() -> None:
    assert VERSIONS == {4: (0, 7, 4), 5: (0, 4, 2), 6: (0, 8, 6), 7: (0, 3, 3), 56: (0, 3, 0)}
    for key, (low, high, flexible) in VERSIONS.items():
        support = INTER_BROKER_APIS[ApiKey(key)]
        assert (support.min_advertised, support.max_version, support.first_flexible) == (
            low,
            high,
            flexible,
        )
        for version in range(low, high + 1):
            assert (key, version) in REQUESTS
            assert (key, version) in RESPONSES
            assert REQUESTS[key, version].__flexible__ is (version >= flexible)
            assert RESPONSES[key, version].__flexible__ is (version >= flexible)


def test_not_advertised_in_api_versions() -> None:
    assert not set(INTER_BROKER_APIS) & set(SUPPORTED_APIS)


@pytest.mark.parametrize(("api_key", "version"), ALL)
def test_messages_resolve_the_generated_classes(api_key: int, version: int) -> None:
    assert request_type(api_key, version) is REQUESTS[api_key, version]
    assert response_type(api_key, version) is RESPONSES[api_key, version]
    assert request_type(api_key, version).__api_key__ == api_key
    assert response_type(api_key, version).__version__ == version


# -- round trips over every version -------------------------------------------------------------

_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def entities(cls: Any) -> st.SearchStrategy[Any]:
    """Any instance of a generated class, from its fields' ``kafka_type`` metadata."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: value_strategy(hints[f.name], f) for f in dataclasses.fields(cls)}
    return st.builds(cls, **fields)


def value_strategy(hint: Any, field: dataclasses.Field[Any]) -> st.SearchStrategy[Any]:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    nullable = typing.get_origin(hint) in (typing.Union, types.UnionType)
    if nullable:
        inner = value_strategy(args[0], field)
        # kio reads the zero UUID as None: generate None, never UUID(0), for uuids.
        return st.none() | inner
    if typing.get_origin(hint) is tuple:
        item = value_strategy(typing.get_args(hint)[0], field)
        return st.lists(item, max_size=3).map(tuple)
    if dataclasses.is_dataclass(hint):
        return entities(hint)
    kafka_type = field.metadata["kafka_type"]
    if kafka_type in _INTS:
        bits = _INTS[kafka_type]
        return st.integers(-(2**bits), 2**bits - 1)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "string":
        return st.text(max_size=12)
    if kafka_type == "uuid":
        return st.uuids().filter(lambda u: u.int != 0)
    if kafka_type == "error_code":
        return st.sampled_from(list(KioErrorCode))
    raise AssertionError(f"no strategy for {field.name}: {kafka_type}")


@pytest.mark.parametrize(("api_key", "version"), ALL)
@FAST
@given(data=st.data())
def test_request_round_trip(api_key: int, version: int, data: st.DataObject) -> None:
    request = data.draw(entities(REQUESTS[api_key, version]))
    payload = encode_request(request, correlation_id=42, client_id="franz")
    header = parse_request_header(payload)
    assert (header.api_key, header.api_version, header.correlation_id) == (api_key, version, 42)
    assert header.client_id == (None if (api_key, version) == (7, 0) else "franz")
    assert decode_request(api_key, version, bytearray(payload), header.size) == request


@pytest.mark.parametrize(("api_key", "version"), ALL)
@FAST
@given(data=st.data())
def test_response_round_trip(api_key: int, version: int, data: st.DataObject) -> None:
    response = data.draw(entities(RESPONSES[api_key, version]))
    body = encode_response(response)
    decoded, size = entity_reader(RESPONSES[api_key, version])(body, 0)
    assert (decoded, size) == (response, len(body))
    head = b"\x00\x00\x00\x07" + (b"\x00" if response_header_version(api_key, version) else b"")
    assert decode_response(api_key, version, head + body) == (7, response)


# -- fields per version, as the schemas say -----------------------------------------------------


def names(cls: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def nested(module: Any, name: str) -> list[str]:
    return names(getattr(module, name))


def module(api: str, version: int) -> Any:
    return __import__(f"franz.protocol.inter_broker.{api}.v{version}", fromlist=["_"])


def test_leader_and_isr_fields_per_version() -> None:
    lai = [module("leader_and_isr", v) for v in range(8)]
    for v in (0, 1):
        assert names(lai[v].LeaderAndIsrRequest) == [
            "controller_id",
            "controller_epoch",
            "ungrouped_partition_states",
            "live_leaders",
        ]
        assert nested(lai[v], "LeaderAndIsrPartitionState")[0] == "topic_name"
    assert "is_new" not in nested(lai[0], "LeaderAndIsrPartitionState")
    assert "is_new" in nested(lai[1], "LeaderAndIsrPartitionState")
    assert names(lai[2].LeaderAndIsrRequest) == [
        "controller_id",
        "controller_epoch",
        "broker_epoch",
        "topic_states",
        "live_leaders",
    ]
    assert "topic_name" not in nested(lai[2], "LeaderAndIsrPartitionState")
    assert "adding_replicas" not in nested(lai[2], "LeaderAndIsrPartitionState")
    assert "adding_replicas" in nested(lai[3], "LeaderAndIsrPartitionState")
    assert [m.LeaderAndIsrRequest.__flexible__ for m in lai] == [False] * 4 + [True] * 4
    assert "type" not in names(lai[4].LeaderAndIsrRequest)
    assert "topic_id" not in nested(lai[4], "LeaderAndIsrTopicState")
    assert names(lai[5].LeaderAndIsrRequest)[3] == "type"
    assert nested(lai[5], "LeaderAndIsrTopicState") == [
        "topic_name",
        "topic_id",
        "partition_states",
    ]
    assert "leader_recovery_state" not in nested(lai[5], "LeaderAndIsrPartitionState")
    assert nested(lai[6], "LeaderAndIsrPartitionState")[-1] == "leader_recovery_state"
    assert "is_k_raft_controller" not in names(lai[6].LeaderAndIsrRequest)
    assert names(lai[7].LeaderAndIsrRequest)[:2] == ["controller_id", "is_k_raft_controller"]
    # Responses: partition errors with topic names up to v4, grouped by topic id from v5.
    assert names(lai[4].LeaderAndIsrResponse) == ["error_code", "partition_errors"]
    assert nested(lai[4], "LeaderAndIsrPartitionError")[0] == "topic_name"
    assert names(lai[5].LeaderAndIsrResponse) == ["error_code", "topics"]
    assert nested(lai[5], "LeaderAndIsrPartitionError") == ["partition_index", "error_code"]


def test_stop_replica_fields_per_version() -> None:
    sr = [module("stop_replica", v) for v in range(5)]
    assert names(sr[0].StopReplicaRequest) == [
        "controller_id",
        "controller_epoch",
        "delete_partitions",
        "ungrouped_partitions",
    ]
    for v in (1, 2):
        assert names(sr[v].StopReplicaRequest) == [
            "controller_id",
            "controller_epoch",
            "broker_epoch",
            "delete_partitions",
            "topics",
        ]
        assert nested(sr[v], "StopReplicaTopicV1") == ["name", "partition_indexes"]
    assert names(sr[3].StopReplicaRequest) == [
        "controller_id",
        "controller_epoch",
        "broker_epoch",
        "topic_states",
    ]
    assert nested(sr[3], "StopReplicaPartitionState") == [
        "partition_index",
        "leader_epoch",
        "delete_partition",
    ]
    assert names(sr[4].StopReplicaRequest)[1] == "is_k_raft_controller"
    assert [m.StopReplicaRequest.__flexible__ for m in sr] == [False, False, True, True, True]
    assert (
        sr[3].StopReplicaPartitionState(partition_index=0, delete_partition=True).leader_epoch == -1
    )


def test_update_metadata_fields_per_version() -> None:
    um = [module("update_metadata", v) for v in range(9)]
    assert nested(um[0], "UpdateMetadataBroker") == ["id", "v0_host", "v0_port"]
    assert nested(um[1], "UpdateMetadataBroker") == ["id", "endpoints"]
    assert nested(um[1], "UpdateMetadataEndpoint") == ["port", "host", "security_protocol"]
    assert nested(um[2], "UpdateMetadataBroker") == ["id", "endpoints", "rack"]
    assert nested(um[3], "UpdateMetadataEndpoint") == [
        "port",
        "host",
        "listener",
        "security_protocol",
    ]
    assert "offline_replicas" not in nested(um[3], "UpdateMetadataPartitionState")
    assert nested(um[4], "UpdateMetadataPartitionState")[0] == "topic_name"
    assert nested(um[4], "UpdateMetadataPartitionState")[-1] == "offline_replicas"
    assert "ungrouped_partition_states" in names(um[4].UpdateMetadataRequest)
    assert names(um[5].UpdateMetadataRequest) == [
        "controller_id",
        "controller_epoch",
        "broker_epoch",
        "topic_states",
        "live_brokers",
    ]
    assert "topic_name" not in nested(um[5], "UpdateMetadataPartitionState")
    assert nested(um[6], "UpdateMetadataTopicState") == ["topic_name", "partition_states"]
    assert nested(um[7], "UpdateMetadataTopicState") == [
        "topic_name",
        "topic_id",
        "partition_states",
    ]
    assert names(um[8].UpdateMetadataRequest)[1] == "is_k_raft_controller"
    assert [m.UpdateMetadataRequest.__flexible__ for m in um] == [False] * 6 + [True] * 3
    assert all(names(m.UpdateMetadataResponse) == ["error_code"] for m in um)


def test_controlled_shutdown_fields_per_version() -> None:
    cs = [module("controlled_shutdown", v) for v in range(4)]
    assert names(cs[1].ControlledShutdownRequest) == ["broker_id"]
    assert names(cs[2].ControlledShutdownRequest) == ["broker_id", "broker_epoch"]
    assert cs[2].ControlledShutdownRequest(broker_id=1).broker_epoch == -1
    assert names(cs[3].ControlledShutdownResponse) == ["error_code", "remaining_partitions"]


def test_alter_partition_fields_per_version() -> None:
    ap = [module("alter_partition", v) for v in range(4)]
    assert names(ap[0].TopicData) == ["topic_name", "partitions"]
    assert names(ap[2].TopicData) == ["topic_id", "partitions"]
    assert "leader_recovery_state" not in names(ap[0].PartitionData)
    assert names(ap[1].PartitionData) == [
        "partition_index",
        "leader_epoch",
        "new_isr",
        "leader_recovery_state",
        "partition_epoch",
    ]
    assert "new_isr_with_epochs" in names(ap[3].PartitionData)
    assert "new_isr" not in names(ap[3].PartitionData)
    assert ap[3].BrokerState(broker_id=1).broker_epoch == -1
    assert names(ap[3].ResponseTopicData) == ["topic_id", "partitions"]
    assert names(ap[0].ResponsePartitionData) == [
        "partition_index",
        "error_code",
        "leader_id",
        "leader_epoch",
        "isr",
        "partition_epoch",
    ]


def test_alter_partition_v3_is_byte_identical_to_kio() -> None:
    """kio (Kafka 4's schemas) has v2-v3 as well: the same bytes either way."""
    from kio.schema.alter_partition.v3 import request as kio_request

    topic_id = uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF)
    ap = module("alter_partition", 3)
    ours = ap.AlterPartitionRequest(
        broker_id=1,
        broker_epoch=5,
        topics=(
            ap.TopicData(
                topic_id=topic_id,
                partitions=(
                    ap.PartitionData(
                        partition_index=0,
                        leader_epoch=2,
                        new_isr_with_epochs=(ap.BrokerState(broker_id=1),),
                        partition_epoch=3,
                    ),
                ),
            ),
        ),
    )
    theirs = kio_request.AlterPartitionRequest(
        broker_id=1,  # type: ignore[arg-type]
        broker_epoch=5,  # type: ignore[arg-type]
        topics=(
            kio_request.TopicData(
                topic_id=topic_id,
                partitions=(
                    kio_request.PartitionData(
                        partition_index=0,  # type: ignore[arg-type]
                        leader_epoch=2,  # type: ignore[arg-type]
                        new_isr_with_epochs=(kio_request.BrokerState(broker_id=1),),  # type: ignore[arg-type]
                        partition_epoch=3,  # type: ignore[arg-type]
                    ),
                ),
            ),
        ),
    )
    assert encode_request(ours, 42, "c") == encode_request(theirs, 42, "c")


# -- golden bytes, written from the schemas -----------------------------------------------------

HEADER_V2 = "{key} {version} 0000002a 0001 63 00"  # correlation id 42, client id "c", no tags


def header_v2(key: int, version: int) -> str:
    return HEADER_V2.format(key=f"{key:04x}", version=f"{version:04x}")


def assert_golden_request(request: Any, expected: bytes) -> None:
    payload = encode_request(request, correlation_id=42, client_id="c")
    assert payload.hex() == expected.hex()
    header = parse_request_header(expected)
    assert header.correlation_id == 42
    cls = type(request)
    assert decode_request(cls.__api_key__, cls.__version__, bytearray(expected), header.size) == (
        request
    )


def test_leader_and_isr_v7_golden() -> None:
    request = lai7.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        type=0,
        topic_states=(
            lai7.LeaderAndIsrTopicState(
                topic_name="t",
                topic_id=TOPIC_ID,
                partition_states=(
                    lai7.LeaderAndIsrPartitionState(
                        partition_index=0,
                        controller_epoch=2,
                        leader=1,
                        leader_epoch=4,
                        isr=(1, 2),
                        partition_epoch=5,
                        replicas=(1, 2),
                        adding_replicas=(),
                        removing_replicas=(),
                        is_new=True,
                    ),
                ),
            ),
        ),
        live_leaders=(lai7.LeaderAndIsrLiveLeader(broker_id=1, host_name="h", port=9092),),
    )
    expected = h(
        header_v2(4, 7),
        "00000001",  # controller_id
        "00",  # is_k_raft_controller (v7+)
        "00000002",  # controller_epoch
        "0000000000000003",  # broker_epoch
        "00",  # type (v5+)
        "02",  # topic_states: compact array of 1
        "02 74",  # topic_name "t"
        UUID_1,  # topic_id (v5+)
        "02",  # partition_states: 1
        "00000000 00000002 00000001 00000004",  # index, controller epoch, leader, epoch
        "03 00000001 00000002",  # isr
        "00000005",  # partition_epoch
        "03 00000001 00000002",  # replicas
        "01 01",  # adding_replicas, removing_replicas: empty
        "01",  # is_new
        "00",  # leader_recovery_state (v6+)
        "00 00",  # partition state tags, topic state tags
        "02 00000001 02 68 00002384 00",  # live_leaders: 1, "h", 9092, tags
        "00",  # request tags
    )
    assert_golden_request(request, expected)


def test_leader_and_isr_v1_golden_is_ungrouped_and_not_flexible() -> None:
    request = lai1.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(
            lai1.LeaderAndIsrPartitionState(
                topic_name="t",
                partition_index=0,
                controller_epoch=2,
                leader=1,
                leader_epoch=4,
                isr=(1,),
                partition_epoch=5,
                replicas=(1,),
            ),
        ),
        live_leaders=(),
    )
    expected = h(
        "0004 0001 0000002a 0001 63",  # header v1: no tags
        "00000001 00000002",
        "00000001",  # ungrouped_partition_states: int32 count
        "0001 74",  # topic_name, int16 length
        "00000000 00000002 00000001 00000004",
        "00000001 00000001",  # isr
        "00000005",
        "00000001 00000001",  # replicas
        "00",  # is_new (v1+)
        "00000000",  # live_leaders: none
    )
    assert_golden_request(request, expected)


def test_stop_replica_v4_golden() -> None:
    request = sr4.StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=(
            sr4.StopReplicaTopicState(
                topic_name="t",
                partition_states=(
                    sr4.StopReplicaPartitionState(
                        partition_index=0, leader_epoch=-2, delete_partition=True
                    ),
                ),
            ),
        ),
    )
    expected = h(
        header_v2(5, 4),
        "00000001 00 00000002 0000000000000003",
        "02 02 74",  # topic_states: 1, "t"
        "02 00000000 fffffffe 01 00",  # partition 0, epoch -2 (deleting), delete, tags
        "00 00",  # topic tags, request tags
    )
    assert_golden_request(request, expected)


def test_update_metadata_v8_golden() -> None:
    request = um8.UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=(
            um8.UpdateMetadataTopicState(
                topic_name="t",
                topic_id=TOPIC_ID,
                partition_states=(
                    um8.UpdateMetadataPartitionState(
                        partition_index=0,
                        controller_epoch=2,
                        leader=1,
                        leader_epoch=4,
                        isr=(1,),
                        zk_version=5,
                        replicas=(1,),
                        offline_replicas=(),
                    ),
                ),
            ),
        ),
        live_brokers=(
            um8.UpdateMetadataBroker(
                id=1,
                endpoints=(
                    um8.UpdateMetadataEndpoint(
                        port=9092, host="h", listener="PLAINTEXT", security_protocol=0
                    ),
                ),
                rack=None,
            ),
        ),
    )
    expected = h(
        header_v2(6, 8),
        "00000001 00 00000002 0000000000000003",
        "02 02 74",  # topic_states: 1, "t"
        UUID_1,
        "02 00000000 00000002 00000001 00000004",
        "02 00000001 00000005 02 00000001 01 00",  # isr, zk_version, replicas, offline, tags
        "00",  # topic tags
        "02 00000001",  # live_brokers: 1, id 1
        "02 00002384 02 68 0a 504c41494e54455854 0000 00",  # endpoint 9092 "h" PLAINTEXT 0
        "00 00",  # rack null (compact nullable string), broker tags
        "00",  # request tags
    )
    assert_golden_request(request, expected)


def test_controlled_shutdown_v3_golden() -> None:
    request = cs3.ControlledShutdownRequest(broker_id=1, broker_epoch=3)
    assert_golden_request(request, h(header_v2(7, 3), "00000001 0000000000000003 00"))


def test_controlled_shutdown_v0_uses_request_header_v0() -> None:
    request = cs0.ControlledShutdownRequest(broker_id=1)
    expected = h("0007 0000 0000002a", "00000001")  # no client id at all
    assert_golden_request(request, expected)
    assert parse_request_header(expected).client_id is None
    assert parse_request_header(h("0007 0000 0000002a")).size == 8


def test_leader_and_isr_responses_golden() -> None:
    v7 = lai7.LeaderAndIsrResponse(
        error_code=KioErrorCode.none,
        topics=(
            lai7.LeaderAndIsrTopicError(
                topic_id=TOPIC_ID,
                partition_errors=(
                    lai7.LeaderAndIsrPartitionError(
                        partition_index=0, error_code=KioErrorCode.not_leader_or_follower
                    ),
                ),
            ),
        ),
    )
    body = h("0000 02", UUID_1, "02 00000000 0006 00 00 00")
    assert encode_response(v7) == body
    assert decode_response(4, 7, h("0000002a 00") + body) == (42, v7)
    v4 = lai4.LeaderAndIsrResponse(
        error_code=KioErrorCode.none,
        partition_errors=(
            lai4.LeaderAndIsrPartitionError(
                topic_name="t", partition_index=0, error_code=KioErrorCode.not_leader_or_follower
            ),
        ),
    )
    body = h("0000 02 02 74 00000000 0006 00 00")
    assert encode_response(v4) == body
    assert decode_response(4, 4, h("0000002a 00") + body) == (42, v4)


# -- malformed input ----------------------------------------------------------------------------


def test_truncated_request_is_invalid() -> None:
    payload = encode_request(cs3.ControlledShutdownRequest(broker_id=1), 1, "c")
    header = parse_request_header(payload)
    with pytest.raises(InvalidRequestError):
        decode_request(7, 3, bytearray(payload[:-3]), header.size)


def test_lying_array_length_is_refused_before_decoding() -> None:
    # StopReplica v4 claiming 2**31 topics in a few bytes: the length guard refuses it.
    payload = h(header_v2(5, 4), "00000001 00 00000002 0000000000000003", "ffffffff07")
    header = parse_request_header(payload)
    with pytest.raises(InvalidRequestError):
        decode_request(5, 4, bytearray(payload), header.size)


def test_response_with_bytes_left_over_is_invalid() -> None:
    body = encode_response(um8.UpdateMetadataResponse(error_code=KioErrorCode.none))
    with pytest.raises(InvalidRequestError):
        decode_response(6, 8, h("0000002a 00") + body + b"\x00")


def kio_encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_encode_response_is_kios_writer() -> None:
    response = cs3.ControlledShutdownResponse(error_code=KioErrorCode.none, remaining_partitions=())
    assert encode_response(response) == kio_encode(response) == h("0000 01 00")
