"""Metadata for topics whose leaders are not elected yet, as Kafka 3.9's ZooKeeper-mode broker.

A topic auto-created by a Metadata request answers LEADER_NOT_AVAILABLE (5) at the topic level
with no partitions (``AutoTopicCreationManager.createTopicsInZk``: the creation is written,
the leaders come later), until the controller's UpdateMetadata has its leaders; a name
requested without auto-creation is UNKNOWN_TOPIC_OR_PARTITION (3). Real clients retry on
LEADER_NOT_AVAILABLE, so producing to a fresh topic just works.
"""

from __future__ import annotations

from typing import Any

from tests.support.clients import consume_with
from tests.support.cluster import Cluster, eventually, produce_all
from tests.support.wire import WireClient, metadata

LEADER_NOT_AVAILABLE = 5
UNKNOWN_TOPIC_OR_PARTITION = 3


def _topic(bootstrap: str, topic: str, *, auto_create: bool) -> Any:
    with WireClient.connect(bootstrap, timeout=10) as client:
        response = metadata(client, [topic], allow_auto_topic_creation=auto_create)
    (found,) = response.topics
    assert found.name == topic
    return found


def test_metadata_auto_creation_answers_leader_not_available_until_leaders_exist(
    cluster: Cluster,
) -> None:
    broker = cluster.brokers[2]
    first = _topic(broker.bootstrap, "lna-auto", auto_create=True)
    assert first.error_code == LEADER_NOT_AVAILABLE
    assert list(first.partitions) == []
    # Another broker, meanwhile: being created (LEADER_NOT_AVAILABLE) or already led.
    other = _topic(cluster.brokers[3].bootstrap, "lna-auto", auto_create=True)
    assert other.error_code in (LEADER_NOT_AVAILABLE, 0)

    def led() -> bool:
        found = _topic(broker.bootstrap, "lna-auto", auto_create=True)
        return (
            found.error_code == 0
            and len(found.partitions) > 0
            and all(p.error_code == 0 and p.leader_id in (1, 2, 3) for p in found.partitions)
        )

    eventually(led, 30, "lna-auto has leaders")
    # Exactly one creation, whoever answered: the znode holds the one topic.
    assert cluster.kazoo.exists("/brokers/topics/lna-auto") is not None


def test_metadata_without_auto_creation_is_unknown_topic(cluster: Cluster) -> None:
    found = _topic(cluster.brokers[1].bootstrap, "lna-never", auto_create=False)
    assert found.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert list(found.partitions) == []
    assert cluster.kazoo.exists("/brokers/topics/lna-never") is None


def test_a_client_produces_to_a_fresh_auto_created_topic(cluster: Cluster) -> None:
    records = [("lna-fresh", 0, b"v%d" % i) for i in range(5)]
    produce_all(cluster.bootstrap(), records)
    got = consume_with("confluent-kafka", cluster.bootstrap(), "lna-fresh", [0], 5)
    assert [r.value for r in got] == [v for _, _, v in records]
