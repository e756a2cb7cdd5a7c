"""Metadata's auto-creation answers, Apache Kafka 3.9 (ZooKeeper mode) beside a Franz broker in
cluster mode (a one-broker cluster in a chroot of the session's ZooKeeper), over raw Metadata
v12: the first answer for a fresh topic is LEADER_NOT_AVAILABLE at the topic level with no
partitions, a name asked without auto-creation is UNKNOWN_TOPIC_OR_PARTITION, and once the
leaders exist the topic is described with no error.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster, eventually, start_cluster
from tests.support.kafka_ref import HasBootstrap, KafkaBroker
from tests.support.wire import WireClient, metadata


@pytest.fixture(scope="module")
def franz_cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("franz-auto-create"))
    chroot = f"{zookeeper}/franz-auto-create-{uuid.uuid4().hex[:8]}"
    with start_cluster(chroot, base, ids=(1,)) as cluster:
        yield cluster


def _answer(broker: HasBootstrap, topic: str, *, auto_create: bool) -> tuple[int, list[Any]]:
    with WireClient.connect(broker.bootstrap, timeout=15) as client:
        response = metadata(client, [topic], allow_auto_topic_creation=auto_create)
    (found,) = response.topics
    assert found.name == topic
    return int(found.error_code), list(found.partitions)


@pytest.mark.parametrize("which", ["kafka", "franz"])
def test_metadata_auto_creation_answers_as_kafka(
    which: str, kafka: KafkaBroker, franz_cluster: Cluster
) -> None:
    broker: HasBootstrap = kafka if which == "kafka" else franz_cluster.brokers[1]
    topic = f"auto-create-{which}-{uuid.uuid4().hex[:6]}"
    assert _answer(broker, topic, auto_create=False) == (3, [])  # UNKNOWN_TOPIC_OR_PARTITION
    assert _answer(broker, topic, auto_create=True) == (5, [])  # LEADER_NOT_AVAILABLE

    def described() -> bool:
        code, partitions = _answer(broker, topic, auto_create=True)
        return (
            code == 0
            and len(partitions) == 1
            and partitions[0].error_code == 0
            and partitions[0].leader_id >= 0
        )

    eventually(described, 30, f"{which} describes {topic} with its leader")
