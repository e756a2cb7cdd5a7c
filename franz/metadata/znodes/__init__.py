"""Kafka 3.9's ZooKeeper znodes: one class per znode, its path(s) and its JSON (sans-IO).

Mirrors ``core/src/main/scala/kafka/zk/ZkData.scala`` (Kafka 3.9). Kafka writes every JSON
znode with Jackson (``kafka.utils.Json.encodeAsBytes``): compact, no spaces, UTF-8, non-ASCII
not escaped, control characters as ``\\u00XX`` with upper-case hex. The *field order* is the
iteration order of the Scala/Java map Kafka hands to Jackson, so it is reproduced here:

* ``Map(a, b, c, d)`` (at most 4 entries) keeps insertion order (Scala's ``Map1``..``Map4``);
* ``Map(...)`` with 5+ entries is Scala 2.13's CHAMP ``immutable.HashMap``: keys ordered by
  the low 5 bits of ``Hashing.improve(key.hashCode)``;
* ``mutable.Map(...)`` is Scala 2.13's ``mutable.HashMap``: buckets ``h & (len - 1)`` with
  ``h = hashCode ^ (hashCode >>> 16)``, each bucket sorted by ``h``;
* ``java.util.HashMap`` (feature maps) and ``Properties`` (config maps): buckets as above, each
  bucket in insertion order.

Examples, byte for byte what a Kafka 3.9 ZooKeeper-mode cluster writes::

    /brokers/ids/0        {"features":{},
                           "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                           "endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,
                           "port":9092,"host":"localhost","version":5,
                           "timestamp":"1700000000000"}
    /brokers/topics/t     {"partitions":{"0":[0,1]},"topic_id":"<22 chars>",
                           "adding_replicas":{},"removing_replicas":{},"version":3}
    .../partitions/0/state {"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,
                           "isr":[0,1]}
    /controller           {"version":2,"brokerid":0,"timestamp":"1700000000000",
                           "kraftControllerEpoch":-1}
    /controller_epoch     1                       (a bare decimal, not JSON)
    /cluster/id           {"version":"1","id":"<22 chars>"}
    /config/topics/t      {"version":1,"config":{"retention.ms":"1000"}}
    /config/changes/config_change_0000000000
                          {"version":2,"entity_path":"topics/t"}
    /latest_producer_id_block
                          {"version":1,"broker":0,"block_start":"0","block_end":"999"}

(line breaks above are for reading; the znodes hold one line).

Every ``decode`` raises ``ZNodeDecodeError`` (carrying the znode path) on bytes that are not
the expected JSON shape, where Kafka would throw a ``KafkaException``.
"""

from __future__ import annotations

from typing import Final

from franz.metadata.znodes._json import (
    ZNodeDecodeError,
    jackson_bytes,
    java_hash_order,
    scala_immutable_order,
    scala_mutable_order,
)
from franz.metadata.znodes.admin import (
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationSequenceZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
)
from franz.metadata.znodes.brokers import (
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ControllerEpochZNode,
    ControllerRegistration,
    ControllerZNode,
    broker_info_from_properties,
)
from franz.metadata.znodes.topics import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicsZNode,
    TopicZNode,
)

__all__ = [
    "PERSISTENT_PATHS",
    "BrokerIdZNode",
    "BrokerIdsZNode",
    "BrokerInfo",
    "BrokerSequenceIdZNode",
    "ClusterIdZNode",
    "ConfigEntityChangeNotificationSequenceZNode",
    "ConfigEntityChangeNotificationZNode",
    "ConfigEntityZNode",
    "ControllerEpochZNode",
    "ControllerRegistration",
    "ControllerZNode",
    "DeleteTopicsTopicZNode",
    "DeleteTopicsZNode",
    "FeatureZNode",
    "IsrChangeNotificationSequenceZNode",
    "IsrChangeNotificationZNode",
    "LogDirEventNotificationSequenceZNode",
    "LogDirEventNotificationZNode",
    "PartitionState",
    "PreferredReplicaElectionZNode",
    "ProducerIdBlock",
    "ProducerIdBlockZNode",
    "ReassignPartitionsZNode",
    "TopicAssignment",
    "TopicPartitionStateZNode",
    "TopicZNode",
    "TopicsZNode",
    "ZNodeDecodeError",
    "broker_info_from_properties",
    "jackson_bytes",
    "java_hash_order",
    "scala_immutable_order",
    "scala_mutable_order",
]


PERSISTENT_PATHS: Final = (
    BrokerIdsZNode.path,
    TopicsZNode.path,
    ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path,
    BrokerSequenceIdZNode.path,
    IsrChangeNotificationZNode.path,
    ProducerIdBlockZNode.path,
    LogDirEventNotificationZNode.path,
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)
