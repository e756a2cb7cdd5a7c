"""Issue 15, item 2: differential protocol tests against Apache Kafka 3.9.

Each scenario of ``tests/support/differential_scenarios.py`` runs at each version both
brokers serve, once against the session's Kafka and once against this module's Franz broker
(one connection each); the decoded answers must be equal field by field except for
``MAY_DIFFER`` (by construction) and ``JUSTIFIED_DIFFERENCES`` (deliberate, with reasons).
The README's table is generated from the same definitions (``tools/gen_differential_table.py``)
and checked here.

The controller's requests (LeaderAndIsr v0-7, UpdateMetadata v0-8, StopReplica v0-4), which a
Franz broker serves in cluster mode only, are compared where that is harmless to the session's
Kafka: sent with a controller epoch older than each broker's, both must refuse them, with the
same answer (``test_stale_controller_requests``, against one cluster-mode Franz broker on a
chroot of the session's ZooKeeper).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from franz.errors import ErrorCode
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiKey
from tests.support.broker import BrokerProcess
from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.differential import (
    KAFKA_ONLY_APIS,
    KAFKA_RANGES,
    Scenario,
    Session,
    Step,
    compare,
)
from tests.support.differential_scenarios import scenario_cases, warm_up
from tests.support.kafka_ref import KafkaBroker
from tools.gen_differential_table import README, render_table, replace_table

#: The session Kafka's ``server.properties`` settings (``KafkaBroker``), so that configs
#: described on both brokers come from the same layer.
SAME_AS_KAFKA = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


#: The module's Franz broker (``franz`` in conftest) runs with Kafka's test settings.
FRANZ_SETTINGS = SAME_AS_KAFKA


@pytest.fixture(scope="module")
def warm(kafka: KafkaBroker, franz: BrokerProcess) -> None:
    """Both brokers with their internal topics loaded (Kafka creates ``__consumer_offsets``
    and ``__transaction_state`` on first use and answers COORDINATOR_NOT_AVAILABLE /
    COORDINATOR_LOAD_IN_PROGRESS meanwhile): scenarios then start from the same state."""
    for broker in (kafka, franz):
        with Session(broker.bootstrap, "warm-up", 0) as session:
            warm_up(session)


def test_kafka_advertises_the_recorded_ranges(kafka: KafkaBroker) -> None:
    with Session(kafka.bootstrap, "ranges", 0) as session:
        response = session.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "franz-differential", "client_software_version": "1.0"},
        )
    served = {int(k.api_key): (k.min_version, k.max_version) for k in response.api_keys}
    assert {api: served.get(int(api)) for api in SUPPORTED_APIS} == KAFKA_RANGES
    assert served.keys() - set(map(int, SUPPORTED_APIS)) == KAFKA_ONLY_APIS.keys()


@pytest.mark.parametrize(
    ("scenario", "version"),
    scenario_cases(),
    ids=[f"{sc.name}-v{v}" for sc, v in scenario_cases()],
)
def test_same_answers(
    scenario: Scenario, version: int, kafka: KafkaBroker, franz: BrokerProcess, warm: None
) -> None:
    def run(bootstrap: str) -> list[Step]:
        with Session(bootstrap, scenario.name, version) as session:
            scenario.run(session, version)
        return session.transcript

    # Both brokers at once: they share nothing, and the case takes the slower one's time.
    with ThreadPoolExecutor(2) as pool:
        on_kafka, on_franz = pool.map(run, (kafka.bootstrap, franz.bootstrap))
    problems = compare(scenario.name, on_kafka, on_franz)
    assert not problems, "\n".join(problems)


# -- the controller's requests, refused for a stale controller epoch ---------------------------

CONTROLLER_APIS = (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA)
#: A topic neither broker has: a refused request names it, and nothing is applied anyway.
STALE_TOPIC = "d-stale-controller"
STALE_TOPIC_ID = uuid.UUID("5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f")


@pytest.fixture(scope="module")
def franz_cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster-mode Franz broker (id 1, its own controller) on a chroot of its own."""
    base = Path(tmp_path_factory.mktemp("franz-cluster"))
    with start_cluster(new_chroot(zookeeper, "franz-differential"), base, ids=[1]) as cluster:
        yield cluster


def _controller_epoch(zookeeper_connect: str) -> int:
    """``/controller_epoch`` of the cluster at ``zookeeper_connect`` (chroot included)."""
    client = KazooClient(hosts=zookeeper_connect)
    client.start(timeout=15)
    try:
        return int(client.get("/controller_epoch")[0])
    finally:
        client.stop()
        client.close()


def stale_request(api: ApiKey, controller_epoch: int) -> dict[str, Any]:
    """A request of ``api`` (every version's fields, ``build`` keeps the version's) from a
    controller one epoch behind, without a broker epoch (-1: never stale, so the controller
    epoch decides): one partition of a topic neither broker has."""
    epoch = controller_epoch - 1
    leader = {
        "partition_index": 0,
        "controller_epoch": epoch,
        "leader": 0,
        "leader_epoch": 3,
        "isr": [0],
        "partition_epoch": 0,
        "zk_version": 0,
        "replicas": [0],
        "offline_replicas": [],
        "adding_replicas": [],
        "removing_replicas": [],
        "is_new": False,
    }
    common: dict[str, Any] = {"controller_id": 0, "controller_epoch": epoch, "broker_epoch": -1}
    if api == ApiKey.STOP_REPLICA:
        return {
            **common,
            "delete_partitions": True,
            "ungrouped_partitions": [{"topic_name": STALE_TOPIC, "partition_index": 0}],
            "topics": [{"name": STALE_TOPIC, "partition_indexes": [0]}],
            "topic_states": [
                {
                    "topic_name": STALE_TOPIC,
                    "partition_states": [
                        {"partition_index": 0, "leader_epoch": 3, "delete_partition": True}
                    ],
                }
            ],
        }
    endpoint = {"port": 9, "host": "127.0.0.1", "listener": "PLAINTEXT", "security_protocol": 0}
    return {
        **common,
        "type": 0,
        "ungrouped_partition_states": [{"topic_name": STALE_TOPIC, **leader}],
        "topic_states": [
            {"topic_name": STALE_TOPIC, "topic_id": STALE_TOPIC_ID, "partition_states": [leader]}
        ],
        "live_leaders": [{"broker_id": 0, "host_name": "127.0.0.1", "port": 9}],
        "live_brokers": [
            {"id": 0, "v0_host": "127.0.0.1", "v0_port": 9, "endpoints": [endpoint], "rack": None}
        ],
    }


@pytest.mark.parametrize(
    ("api", "version"),
    [(api, v) for api in CONTROLLER_APIS for v in range(INTER_BROKER_APIS[api].max_version + 1)],
    ids=[
        f"{api.name.lower()}-v{v}"
        for api in CONTROLLER_APIS
        for v in range(INTER_BROKER_APIS[api].max_version + 1)
    ],
)
def test_stale_controller_requests(
    api: ApiKey, version: int, kafka: KafkaBroker, franz_cluster: Cluster
) -> None:
    franz = franz_cluster.brokers[1]
    transcripts = []
    for bootstrap, zookeeper_connect in (
        (kafka.bootstrap, kafka.properties["zookeeper.connect"]),
        (franz.bootstrap, franz_cluster.zk_connect),
    ):
        request = stale_request(api, _controller_epoch(zookeeper_connect))
        with Session(bootstrap, "stale-controller", version) as session:
            response = session.send(api, request, label="stale controller epoch")
        assert int(response.error_code) == ErrorCode.STALE_CONTROLLER_EPOCH, response
        transcripts.append(session.transcript)
    problems = compare("stale-controller", *transcripts)
    assert not problems, "\n".join(problems)


def test_readme_table_is_current() -> None:
    assert replace_table(README.read_text(), render_table()) == README.read_text(), (
        "README.md's differential table is stale: run python -m tools.gen_differential_table"
    )
