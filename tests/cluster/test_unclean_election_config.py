"""Turning ``unclean.leader.election.enable`` on elects the offline partitions it now allows at
once (Kafka 3.9's controller events ``TopicUncleanLeaderElectionEnable`` and
``UncleanLeaderElectionEnable``), not at the next broker change.

Three ``franz broker`` processes. Two topics on brokers [1, 2], both with the default (no
unclean election): 1 leads, 2 falls out of the ISR (killed), 1 acknowledges more records
alone, 1 dies, 2 comes back. Both partitions stay offline, since their whole ISR ([1]) is
dead. Then:

* ``by-topic`` gets the topic override ``unclean.leader.election.enable=true``
  (IncrementalAlterConfigs, then the ``/config/changes`` notification every broker reads):
  the controller elects broker 2 at once, with its data-loss WARN, and ``by-default``
  stays offline;
* the cluster-wide dynamic default ``unclean.leader.election.enable=true`` (``franz configs
  --entity-type brokers --entity-default``) then elects ``by-default`` the same way.

No broker starts or stops after the partitions went offline, so nothing but the config
change can have triggered the elections. Each took 0.1-0.3 s here; the bound is 15 s
(a loaded machine), far below any other trigger, of which there is none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from franz.errors import ErrorCode
from tests.support.cluster import Cluster, eventually, new_chroot, produce_acked, start_cluster
from tests.support.kafka_ref import run_franz_tool
from tests.support.wire import WireClient, decode_records, fetch, metadata
from tests.support.zookeeper import ZooKeeperServer

LAG_MS = 3000
TOPICS = ("by-topic", "by-default")
#: Seconds from the config change to the new leader that still count as "at once".
ELECTED_WITHIN_S = 15.0


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("unclean-config"))
    props = {"replica.lag.time.max.ms": str(LAG_MS)}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def state(cluster: Cluster, topic: str) -> dict[str, Any]:
    return cluster.json(f"/brokers/topics/{topic}/partitions/0/state")


def read_all(cluster: Cluster, broker_id: int, topic: str) -> list[int]:
    """Partition 0's values below the high watermark, fetched from ``broker_id`` (no group:
    ``__consumer_offsets`` may have lost its leaders with broker 1)."""
    with WireClient.connect(cluster.brokers[broker_id].bootstrap) as client:
        data = fetch(client, topic, 0, 0)
    assert data.error_code == 0, data
    values = [int(r.value) for r in decode_records(data.records)]
    assert len(values) == data.high_watermark, (values, data.high_watermark)
    return values


def offline_on(cluster: Cluster, broker_id: int, topic: str) -> bool:
    """Broker ``broker_id``'s Metadata: ``topic``'s partition has no leader."""
    with WireClient.connect(cluster.brokers[broker_id].bootstrap) as client:
        [entry] = metadata(client, [topic]).topics
    if not entry.partitions:
        return False  # a broker just restarted may not have the topic's metadata yet
    partition = entry.partitions[0]
    return partition.leader_id == -1 and partition.error_code == ErrorCode.LEADER_NOT_AVAILABLE


def outputs(cluster: Cluster) -> str:
    return "".join(b.output() for b in cluster.brokers.values())


def test_turning_unclean_election_on_elects_an_offline_partition_at_once(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for topic in TOPICS:
        new = NewTopic(topic, 1, replica_assignment=[[1, 2]])
        admin.create_topics([new], operation_timeout=30)[topic].result(60)
        eventually(lambda t=topic: state(cluster, t)["isr"] == [1, 2], 60, f"{topic}: ISR [1, 2]")
        produce_acked(cluster.bootstrap(), topic, range(10))

    # 2 falls out of the ISRs; 1 acknowledges 10 more records alone; then 1 dies.
    cluster.brokers[2].kill()
    for topic in TOPICS:
        eventually(lambda t=topic: state(cluster, t)["isr"] == [1], 60, f"{topic}: ISR [1]")
        produce_acked(cluster.brokers[1].bootstrap, topic, range(10, 20))
    cluster.brokers[1].kill()
    for topic in TOPICS:
        eventually(lambda t=topic: state(cluster, t)["leader"] == -1, 60, f"{topic}: offline")

    # 2 comes back: the controller sees it (its Metadata lists it) and leaves both offline.
    cluster.brokers[2].start()
    eventually(
        lambda: (
            all(offline_on(cluster, 2, t) for t in TOPICS)
            and 2 in {b["id"] for b in cluster.kcat_metadata(cluster.brokers[2])["brokers"]}
        ),
        60,
        "broker 2 registered, both partitions offline",
    )
    time.sleep(1.0)
    assert [state(cluster, t)["leader"] for t in TOPICS] == [-1, -1]
    assert [state(cluster, t)["isr"] for t in TOPICS] == [[1], [1]]

    # The topic override: ``by-topic`` is elected at once, uncleanly, and says so. (A new
    # admin client: librdkafka's keeps the controller it first learned, maybe broker 1.)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        "by-topic",
        incremental_configs=[
            ConfigEntry(
                "unclean.leader.election.enable",
                "true",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    altered = time.monotonic()
    admin.incremental_alter_configs([change], request_timeout=30)[change].result(30)
    eventually(
        lambda: state(cluster, "by-topic")["leader"] == 2, ELECTED_WITHIN_S, "by-topic: 2 leads"
    )
    print(f"by-topic elected {time.monotonic() - altered:.2f} s after the AlterConfigs was sent")
    assert state(cluster, "by-topic")["isr"] == [2]
    logs = outputs(cluster)
    assert "Unclean leader election has been enabled for topic by-topic" in logs
    assert "unclean leader election for partition by-topic-0: broker 2, not in the ISR" in logs
    assert read_all(cluster, 2, "by-topic") == list(range(10))
    # Only that topic: ``by-default`` keeps waiting for its ISR.
    time.sleep(1.0)
    assert state(cluster, "by-default")["leader"] == -1

    # The cluster-wide default, with Kafka's tool's syntax: ``by-default`` follows at once.
    done = run_franz_tool(
        "configs",
        "--bootstrap-server",
        cluster.brokers[2].bootstrap,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "unclean.leader.election.enable=true",
    )
    assert done.returncode == 0, done.stderr
    took = eventually(
        lambda: state(cluster, "by-default")["leader"] == 2,
        ELECTED_WITHIN_S,
        "by-default: 2 leads",
    )
    print(f"by-default elected {took:.2f} s after franz configs returned")
    logs = outputs(cluster)
    assert "Unclean leader election has been enabled by default" in logs
    assert "unclean leader election for partition by-default-0: broker 2, not in the ISR" in logs
    assert read_all(cluster, 2, "by-default") == list(range(10))
    produce_acked(cluster.brokers[2].bootstrap, "by-default", range(100, 105))
