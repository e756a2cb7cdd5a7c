"""Kafka 3.9's znode JSON: golden bytes, decoding of what older Kafkas wrote, round trips."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.metadata.znodes import (
    BrokerIdZNode,
    BrokerInfo,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerRegistration,
    ControllerZNode,
    FeatureZNode,
    IsrChangeNotificationSequenceZNode,
    LogDirEventNotificationSequenceZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicZNode,
    ZNodeDecodeError,
    jackson_bytes,
    scala_immutable_order,
    scala_mutable_order,
)
from franz.protocol.kafka_uuid import uuid_from_str

# --------------------------------------------------------------------------- golden bytes


def test_partition_state_matches_a_real_kafka_znode():
    # As zookeeper-shell shows it on real clusters (a Scala immutable HashMap's order).
    state = PartitionState(leader=102, leader_epoch=8, isr=(102, 103), controller_epoch=33)
    assert TopicPartitionStateZNode.encode(state) == (
        b'{"controller_epoch":33,"leader":102,"version":1,"leader_epoch":8,"isr":[102,103]}'
    )
    assert TopicPartitionStateZNode.path("t", 3) == "/brokers/topics/t/partitions/3/state"


def test_partition_state_adds_leader_recovery_state_only_when_recovering():
    state = PartitionState(0, 1, (0,), 2, leader_recovery_state=1)
    assert TopicPartitionStateZNode.encode(state) == (
        b'{"controller_epoch":2,"leader":0,"version":1,"leader_recovery_state":1,'
        b'"leader_epoch":1,"isr":[0]}'
    )
    back = TopicPartitionStateZNode.decode("t", 0, TopicPartitionStateZNode.encode(state), 7)
    assert back == PartitionState(0, 1, (0,), 2, 1, zk_version=7)


def test_cluster_id_matches_a_real_kafka_znode():
    data = b'{"version":"1","id":"IOejp_IKSbWbySJc0sRrKw"}'
    assert ClusterIdZNode.encode("IOejp_IKSbWbySJc0sRrKw") == data
    assert ClusterIdZNode.decode(data) == "IOejp_IKSbWbySJc0sRrKw"


def test_controller_is_version_2_with_kraft_epoch_and_reads_version_1():
    assert ControllerZNode.encode(0, 1700000000000) == (
        b'{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    )
    old = b'{"version":1,"brokerid":1001,"timestamp":"1571666282268"}'
    assert ControllerZNode.decode(old) == ControllerRegistration(1001, 1571666282268, None)


def test_controller_epoch_is_a_bare_decimal():
    assert ControllerEpochZNode.encode(12) == b"12"
    assert ControllerEpochZNode.decode(b"12") == 12
    with pytest.raises(ZNodeDecodeError, match="/controller_epoch"):
        ControllerEpochZNode.decode(b"x")


def test_broker_registration_v5_order_and_fields():
    info = BrokerInfo(
        broker_id=1,
        endpoints=("INTERNAL://10.0.0.1:9093", "PLAINTEXT://h1:9092"),
        security_protocols={"INTERNAL": "SSL", "PLAINTEXT": "PLAINTEXT"},
        rack="dc1",
        timestamp_ms=1700000000000,
    )
    assert BrokerIdZNode.encode(info) == (
        b'{"features":{},"listener_security_protocol_map":{"INTERNAL":"SSL",'
        b'"PLAINTEXT":"PLAINTEXT"},"endpoints":["INTERNAL://10.0.0.1:9093",'
        b'"PLAINTEXT://h1:9092"],"rack":"dc1","jmx_port":-1,"port":9092,"host":"h1",'
        b'"version":5,"timestamp":"1700000000000"}'
    )
    assert BrokerIdZNode.decode(1, BrokerIdZNode.encode(info)) == info


def test_broker_without_plaintext_listener_has_null_host():
    info = BrokerInfo(2, ("SSL://h:9093",), {"SSL": "SSL"}, timestamp_ms=5)
    body = json.loads(BrokerIdZNode.encode(info))
    assert (body["host"], body["port"]) == (None, -1)


def test_broker_registration_written_by_kafka_2_decodes():
    v4 = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://zjj101:9092"],"jmx_port":-1,"host":"zjj101",'
        b'"timestamp":"1614570663881","port":9092,"version":4}'
    )
    info = BrokerIdZNode.decode(101, v4)
    assert info.endpoint("PLAINTEXT") == ("zjj101", 9092)
    assert (info.version, info.timestamp_ms, info.rack) == (4, 1614570663881, None)
    v3 = (
        b'{"jmx_port":-1,"timestamp":"1571666399659","endpoints":["PLAINTEXT://n4:6667"],'
        b'"host":"n4","version":3,"port":6667,"rack":"/default-rack"}'
    )
    assert BrokerIdZNode.decode(1003, v3).rack == "/default-rack"


def test_topic_znode_version_3():
    topic_id = uuid_from_str("ib1ZrxD4TdqxqaJQJbYW6g")
    data = TopicZNode.encode(TopicAssignment(topic_id, {0: [0, 1], 1: [1, 0]}, {1: [2]}))
    assert data == (
        b'{"partitions":{"0":[0,1],"1":[1,0]},"topic_id":"ib1ZrxD4TdqxqaJQJbYW6g",'
        b'"adding_replicas":{"1":[2]},"removing_replicas":{},"version":3}'
    )


def test_topic_znode_without_id_decodes_as_pre_2_8():
    old = b'{"version":1,"partitions":{"1":[101,103],"0":[103,102]}}'
    assert TopicZNode.decode("t", old) == TopicAssignment(None, {1: [101, 103], 0: [103, 102]})


def test_topic_partitions_keep_scala_mutable_hash_order_past_ten():
    data = TopicZNode.encode(TopicAssignment(None, {p: [0] for p in range(14)}))
    keys = list(json.loads(data)["partitions"])
    assert keys == ["11", "12", "13", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]


def test_configs_and_change_notifications():
    assert ConfigEntityZNode.encode({}) == b'{"version":1,"config":{}}'
    assert ConfigEntityZNode.path("brokers", "<default>") == "/config/brokers/<default>"
    assert ConfigEntityChangeNotificationSequenceZNode.encode("topics/t") == (
        b'{"version":2,"entity_path":"topics/t"}'
    )
    assert ConfigEntityChangeNotificationSequenceZNode.create_path == (
        "/config/changes/config_change_"
    )
    with pytest.raises(ZNodeDecodeError, match="/config/topics/t"):
        ConfigEntityZNode.decode("/config/topics/t", b'{"version":1,"config":{"a":1}}')


def test_notifications_and_admin_znodes():
    parts = [("t", 0), ("u", 2)]
    expected = (
        b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":2}]}'
    )
    assert IsrChangeNotificationSequenceZNode.encode(parts) == expected
    assert PreferredReplicaElectionZNode.encode(parts) == expected
    assert PreferredReplicaElectionZNode.decode(expected) == parts
    reassign = {("t", 0): [1, 2]}
    data = ReassignPartitionsZNode.encode(reassign)
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert ReassignPartitionsZNode.decode(data) == reassign


def test_log_dir_event_notification_znode():
    # Kafka's LogDirEventNotificationSequenceZNode.encode: Map(version, broker, event).
    data = LogDirEventNotificationSequenceZNode.encode(7)
    assert data == b'{"version":1,"broker":7,"event":1}'
    path = "/log_dir_event_notification/log_dir_event_0000000000"
    assert LogDirEventNotificationSequenceZNode.decode(path, data) == 7
    assert LogDirEventNotificationSequenceZNode.create_path == (
        "/log_dir_event_notification/log_dir_event_"
    )
    with pytest.raises(ZNodeDecodeError):
        LogDirEventNotificationSequenceZNode.decode(path, b'{"version":1}')


def test_producer_id_block_bounds_are_strings():
    block = ProducerIdBlock(broker_id=0, first=1000, size=1000)
    data = ProducerIdBlockZNode.encode(block)
    assert data == b'{"version":1,"broker":0,"block_start":"1000","block_end":"1999"}'
    assert ProducerIdBlockZNode.decode(data) == block


def test_feature_znode_v2():
    data = FeatureZNode.encode({"metadata.version": 7})
    assert (
        data == b'{"features":{"metadata.version":{"max_version_level":7}},"version":2,"status":1}'
    )
    assert FeatureZNode.decode(data) == (1, {"metadata.version": 7})


def test_jackson_escapes_controls_upper_case_and_keeps_unicode():
    assert jackson_bytes({"k": "\x1f\u00e9\n"}) == '{"k":"\\u001F\u00e9\\n"}'.encode()


def test_scala_orders():
    assert scala_immutable_order(["a", "b"]) == ["a", "b"]  # Map1..Map4 keep insertion order
    assert scala_mutable_order(["version", "status", "features"], initial=3) == [
        "features",
        "version",
        "status",
    ]


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    "data", [b"", b"{", b"[]", b'{"partitions":{"x":[1]}}', b'{"partitions":{"0":"a"}}', None]
)
def test_malformed_topic_znode_names_its_path(data):
    with pytest.raises(ZNodeDecodeError) as err:
        TopicZNode.decode("orders", data)
    assert err.value.path == "/brokers/topics/orders"
    assert "/brokers/topics/orders" in str(err.value)


def test_malformed_partition_state_and_broker_name_their_paths():
    with pytest.raises(ZNodeDecodeError, match="/brokers/topics/t/partitions/1/state"):
        TopicPartitionStateZNode.decode("t", 1, b'{"leader":"x"}')
    with pytest.raises(ZNodeDecodeError, match="/brokers/ids/4"):
        BrokerIdZNode.decode(4, b'{"version":5}')


# --------------------------------------------------------------------------- round trips
ids = st.integers(min_value=-1, max_value=2**31 - 1)
replicas = st.lists(st.integers(min_value=0, max_value=1000), max_size=5)
names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(ids, st.integers(0, 2**31 - 1), replicas, st.integers(0, 2**31 - 1), st.sampled_from([0, 1]))
def test_partition_state_round_trip(leader, epoch, isr, controller_epoch, recovery):
    state = PartitionState(leader, epoch, tuple(isr), controller_epoch, recovery, zk_version=3)
    data = TopicPartitionStateZNode.encode(state)
    assert TopicPartitionStateZNode.decode("t", 0, data, 3) == state


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(
    st.one_of(st.none(), st.uuids()),
    st.dictionaries(st.integers(0, 5000), replicas, max_size=40),
    st.dictionaries(st.integers(0, 5000), replicas.filter(bool), max_size=3),
)
def test_topic_round_trip(topic_id, partitions, adding):
    assignment = TopicAssignment(topic_id, partitions, adding, {})
    data = TopicZNode.encode(assignment)
    assert b" " not in data
    assert TopicZNode.decode("t", data) == assignment


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(
    ids.filter(lambda i: i >= 0),
    st.lists(
        st.tuples(st.sampled_from(["PLAINTEXT", "SSL", "EXT"]), st.integers(1, 65535)),
        min_size=1,
        max_size=3,
        unique_by=lambda e: e[0],
    ),
    st.one_of(st.none(), names),
    st.integers(0, 2**41),
)
def test_broker_round_trip(broker_id, listeners, rack, timestamp):
    info = BrokerInfo(
        broker_id,
        tuple(f"{n}://h:{p}" for n, p in listeners),
        {n: ("SSL" if n == "SSL" else "PLAINTEXT") for n, _ in listeners},
        rack=rack,
        timestamp_ms=timestamp,
    )
    assert BrokerIdZNode.decode(broker_id, BrokerIdZNode.encode(info)) == info


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(st.dictionaries(names, names, max_size=20))
def test_config_round_trip(config):
    data = ConfigEntityZNode.encode(config)
    assert ConfigEntityZNode.decode("/config/topics/t", data) == config
    assert json.loads(data)["version"] == 1


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(ids.filter(lambda i: i >= 0), st.integers(0, 2**62), st.integers(1, 2**20))
def test_producer_id_block_round_trip(broker, first, size):
    block = ProducerIdBlock(broker, first, size)
    assert ProducerIdBlockZNode.decode(ProducerIdBlockZNode.encode(block)) == block


@settings(deadline=None)  # a loaded CI box must not turn slowness into failures
@given(names)
def test_cluster_id_round_trip(cluster_id):
    assert ClusterIdZNode.decode(ClusterIdZNode.encode(cluster_id)) == cluster_id


def test_uuid_in_topic_znode_is_kafkas_base64():
    topic_id = uuid.UUID(int=2**127 + 5)
    body = json.loads(TopicZNode.encode(TopicAssignment(topic_id, {0: [0]})))
    assert len(body["topic_id"]) == 22 and "=" not in body["topic_id"]


def test_broker_info_from_kafka_keys():
    from franz.metadata.znodes import broker_info_from_properties

    info = broker_info_from_properties(
        {
            "broker.id": "3",
            "listeners": "PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners": "PLAINTEXT://h3:9092,CLIENT://h3:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SSL",
            "broker.rack": "r1",
        },
        timestamp_ms=9,
    )
    assert info == BrokerInfo(
        3,
        ("PLAINTEXT://h3:9092", "CLIENT://h3:9093"),
        {"PLAINTEXT": "PLAINTEXT", "CLIENT": "SSL"},
        rack="r1",
        timestamp_ms=9,
    )
    with pytest.raises(ValueError, match=r"inter\.broker\.listener\.name"):
        broker_info_from_properties({"inter.broker.listener.name": "X"}, 0)
