"""Three Franz brokers as processes in ZooKeeper mode, seen by real clients.

One ZooKeeper (the session's ``zookeeper_server``), a chroot and three ``franz broker``
processes per module. The tests run in file order: the failover test kills the controller,
so it comes last. Replication is the next issue: followers hold empty logs, so every record
here is read back from the partition's leader.
"""

from __future__ import annotations

import base64
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kio.schema.describe_configs.v4.request import (  # noqa: E402
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.static.primitive import i8  # noqa: E402

from franz.controller.assignment import BrokerMetadata, assign_replicas_to_brokers  # noqa: E402
from franz.controller.requests import (  # noqa: E402
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
    UpdateMetadataRequest,
)
from franz.controller.wire import to_wire  # noqa: E402
from franz.coordinator.group.offsets_schema import partition_for  # noqa: E402
from franz.errors import ErrorCode  # noqa: E402
from franz.protocol.messages import response_type  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    BROKER_IDS,
    SESSION_MS,
    Cluster,
    broker_props,
    eventually,
    produce_all,
)
from tests.support.wire import WireClient, api_versions, offset_fetch, request_at  # noqa: E402
from tests.support.zookeeper import free_ports  # noqa: E402


def test_kcat_and_confluent_kafka_see_three_brokers_and_one_controller(cluster: Cluster) -> None:
    controller = cluster.controller_id()
    assert controller in BROKER_IDS
    for broker in cluster.brokers.values():
        metadata = cluster.kcat_metadata(broker)
        assert sorted(b["id"] for b in metadata["brokers"]) == list(BROKER_IDS)
        assert metadata["controllerid"] == controller
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    described = admin.describe_cluster(request_timeout=20).result(30)
    assert sorted(node.id for node in described.nodes) == list(BROKER_IDS)
    assert described.controller is not None and described.controller.id == controller
    assert cluster.json("/cluster/id")["id"] == described.cluster_id


def _kafka_assignments(partitions: int, factor: int) -> list[dict[int, list[int]]]:
    """Every assignment Kafka's ``assignReplicasToBrokers`` can draw for brokers 1-3."""
    brokers = [BrokerMetadata(b) for b in BROKER_IDS]
    out = []
    for start in range(len(brokers)):
        for shift in range(len(brokers)):
            draws = iter((start, shift)).__next__
            out.append(
                dict(
                    assign_replicas_to_brokers(
                        brokers, partitions, factor, rand=lambda bound, d=draws: d()
                    )
                )
            )
    return out


def test_rf3_topic_gets_kafkas_assignment_leaders_on_every_broker_and_serves_clients(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("orders", 6, 3)], operation_timeout=30)["orders"].result(60)
    topic = cluster.json("/brokers/topics/orders")
    assignment = {int(p): r for p, r in topic["partitions"].items()}
    assert assignment in _kafka_assignments(6, 3)

    def led_everywhere() -> bool:
        metadata = cluster.kcat_metadata(cluster.brokers[2], "orders")
        (entry,) = metadata["topics"]
        return len(entry["partitions"]) == 6 and all(
            p["leader"] == assignment[p["partition"]][0] for p in entry["partitions"]
        )

    eventually(led_everywhere, 30, "every partition led by its preferred replica")
    leaders = [assignment[p][0] for p in range(6)]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    state = cluster.json("/brokers/topics/orders/partitions/0/state")
    assert state == {
        "controller_epoch": state["controller_epoch"],
        "leader": assignment[0][0],
        "version": 1,
        "leader_epoch": 0,
        "isr": assignment[0],
    }

    produce_all(
        cluster.bootstrap(),
        [("orders", p, f"p{p}-{i}".encode()) for p in range(6) for i in range(5)],
    )
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "cluster-readers",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition("orders", p, 0) for p in range(6)])
        got: dict[int, list[bytes]] = {}
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            got.setdefault(message.partition(), []).append(message.value())
    finally:
        consumer.close()
    assert got == {p: [f"p{p}-{i}".encode() for i in range(5)] for p in range(6)}


def test_zookeeper_content_is_kafkas_znode_json(cluster: Cluster) -> None:
    registration = cluster.json("/brokers/ids/2")
    assert set(registration) == {
        "features",
        "listener_security_protocol_map",
        "endpoints",
        "jmx_port",
        "port",
        "host",
        "version",
        "timestamp",
    }
    assert registration["version"] == 5
    assert registration["endpoints"] == [f"PLAINTEXT://{cluster.brokers[2].bootstrap}"]
    assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    controller = cluster.json("/controller")
    assert set(controller) == {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
    assert controller["version"] == 2 and controller["kraftControllerEpoch"] == -1
    epoch, _ = cluster.kazoo.get("/controller_epoch")
    assert int(epoch) >= 1
    cluster_id = cluster.json("/cluster/id")
    assert set(cluster_id) == {"version", "id"} and cluster_id["version"] == "1"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("znodes", 2, 3)], operation_timeout=30)["znodes"].result(60)
    topic = cluster.json("/brokers/topics/znodes")
    assert set(topic) == {
        "partitions",
        "topic_id",
        "adding_replicas",
        "removing_replicas",
        "version",
    }
    assert topic["version"] == 3 and len(topic["topic_id"]) == 22
    config = cluster.json("/config/topics/znodes")
    assert config == {"version": 1, "config": {}}
    meta = (cluster.brokers[2].data_dir / "logs" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id['id']}" in meta


def test_a_duplicate_broker_id_refuses_to_start_with_kafkas_message(
    cluster: Cluster, tmp_path: Path
) -> None:
    twin = BrokerProcess(tmp_path / "twin", broker_props(2, cluster.zk_connect))
    with pytest.raises(RuntimeError, match="exited early") as failed:
        twin.start(timeout=60)
    assert "Error while creating ephemeral at /brokers/ids/2, node already exists" in str(
        failed.value
    )
    assert twin.stop() == 1


def test_a_broker_of_another_cluster_refuses_to_start_with_kafkas_message(
    cluster: Cluster, tmp_path: Path
) -> None:
    logs = tmp_path / "stranger" / "logs"
    logs.mkdir(parents=True)
    (logs / "meta.properties").write_text(
        "version=0\nbroker.id=7\ncluster.id=AnotherClusterIdxxxxxx\n"
    )
    stranger = BrokerProcess(tmp_path / "stranger", broker_props(7, cluster.zk_connect))
    with pytest.raises(RuntimeError, match="exited early") as failed:
        stranger.start(timeout=60)
    zk_cluster_id = cluster.json("/cluster/id")["id"]
    assert (
        f"The Cluster ID {zk_cluster_id} doesn't match stored clusterId AnotherClusterIdxxxxxx"
        in str(failed.value)
    )
    assert "The broker is trying to join the wrong cluster." in str(failed.value)
    assert stranger.stop() == 1


def test_zookeeper_unreachable_at_start_exits_after_the_connection_timeout(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    props = broker_props(5, f"127.0.0.1:{port}")
    props["zookeeper.connection.timeout.ms"] = "1500"
    broker = BrokerProcess(tmp_path / "lonely", props)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="exited early") as failed:
        broker.start(timeout=60)
    assert time.monotonic() - started >= 1.5
    assert "Timed out waiting for connection to ZooKeeper" in str(failed.value)
    assert broker.stop() == 1


def test_a_malformed_topic_znode_is_skipped_and_the_rest_served(cluster: Cluster) -> None:
    cluster.kazoo.create("/brokers/topics/garbled", b'{"version":3,"partitions":{"0":[1,')
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("sound", 3, 2)], operation_timeout=30)["sound"].result(60)
    metadata = cluster.kcat_metadata(cluster.brokers[1])
    names = {t["topic"] for t in metadata["topics"]}
    assert "sound" in names and "garbled" not in names
    cluster.kazoo.delete("/brokers/topics/garbled")


def _described(broker: BrokerProcess, topic: str, key: str) -> str | None:
    client = WireClient.connect(broker.bootstrap)
    try:
        response = client.request(
            DescribeConfigsRequest(
                resources=(
                    DescribeConfigsResource(
                        resource_type=i8(2), resource_name=topic, configuration_keys=(key,)
                    ),
                ),
                include_synonyms=False,
                include_documentation=False,
            )
        )
    finally:
        client.close()
    (result,) = response.results
    values = {c.name: c.value for c in result.configs}
    return values.get(key)


def test_a_topic_config_change_reaches_every_broker(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap})
    admin.create_topics([NewTopic("tuned", 2, 2)], operation_timeout=30)["tuned"].result(60)
    resource = ConfigResource(
        ResourceType.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    assert cluster.json("/config/topics/tuned") == {
        "version": 1,
        "config": {"retention.ms": "123456"},
    }
    for broker in cluster.brokers.values():
        eventually(
            lambda b=broker: _described(b, "tuned", "retention.ms") == "123456",
            10,
            f"broker {broker.bootstrap} describes the new retention.ms",
        )


def test_partitions_added_and_topics_auto_created_across_the_cluster(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("grown", 2, 2)], operation_timeout=30)["grown"].result(60)
    before = cluster.json("/brokers/topics/grown")["partitions"]
    admin.create_partitions([NewPartitions("grown", 5)], operation_timeout=30)["grown"].result(60)
    after = cluster.json("/brokers/topics/grown")["partitions"]
    assert {p: after[p] for p in before} == before and len(after) == 5
    assert all(len(r) == 2 for r in after.values())

    # As in Kafka, CreatePartitions is answered once the answering broker's metadata has the
    # new partitions; the others learn them from the controller's UpdateMetadata a moment
    # later (a producer that bootstrapped on one of them got _UNKNOWN_PARTITION, CI).
    def five_led(broker: BrokerProcess) -> bool:
        (entry,) = cluster.kcat_metadata(broker, "grown")["topics"]
        return len(entry["partitions"]) == 5 and all(p["leader"] >= 0 for p in entry["partitions"])

    for broker in cluster.brokers.values():
        eventually(lambda b=broker: five_led(b), 30, f"{broker.bootstrap} has 5 partitions")
    produce_all(
        cluster.bootstrap(),
        [("grown", p, b"g") for p in range(5)] + [("born-on-first-use", None, b"hello")],
    )
    topic = cluster.json("/brokers/topics/born-on-first-use")
    assert len(topic["partitions"]) == 1


# -- consumer groups with coordinators on every broker -----------------------------------------

GROUP_TOPIC = "groups-across"
GROUP_RECORDS = 30  # per partition, 3 partitions


def _group_on_offsets_partition(prefix: str, partition: int, partitions: int) -> str:
    """A group id whose ``__consumer_offsets`` partition is ``partition`` (Kafka's
    ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``)."""
    for n in range(1000):
        group = f"{prefix}-{n}"
        if partition_for(group, partitions) == partition:
            return group
    raise AssertionError(f"no group id for offsets partition {partition}")


def _consume_in_group(client: str, bootstrap: str, group: str, count: int) -> list[bytes]:
    """Subscribe to GROUP_TOPIC in ``group`` with ``client``, read ``count`` records, commit
    synchronously and leave: JoinGroup, SyncGroup, Heartbeat, OffsetCommit and LeaveGroup all
    go to the group's coordinator."""
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    if client == "confluent-kafka":
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe([GROUP_TOPIC])
            while len(got) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    got.append(message.value())
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer

        kp = KafkaConsumer(
            GROUP_TOPIC,
            group_id=group,
            bootstrap_servers=bootstrap.split(","),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            while len(got) < count and time.monotonic() < deadline:
                for records in kp.poll(timeout_ms=500).values():
                    got.extend(r.value for r in records)
            kp.commit()
        finally:
            kp.close()
    else:
        import asyncio

        from aiokafka import AIOKafkaConsumer

        async def run() -> None:
            ak = AIOKafkaConsumer(
                GROUP_TOPIC,
                group_id=group,
                bootstrap_servers=bootstrap,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
            await ak.start()
            try:
                while len(got) < count and time.monotonic() < deadline:
                    batches = await ak.getmany(timeout_ms=500)
                    for records in batches.values():
                        got.extend(r.value for r in records if r.value is not None)
                await ak.commit()
            finally:
                await ak.stop()

        asyncio.run(run())
    return got


def test_consumer_groups_with_coordinators_on_every_broker_work_with_every_client(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(GROUP_TOPIC, 3, 3)], operation_timeout=30)[GROUP_TOPIC].result(60)
    values = {p: [f"g{p}-{i}".encode() for i in range(GROUP_RECORDS)] for p in range(3)}
    produce_all(cluster.bootstrap(), [(GROUP_TOPIC, p, v) for p, vs in values.items() for v in vs])
    expected = sorted(v for vs in values.values() for v in vs)

    offsets_partitions = int(broker_props(1, "")["offsets.topic.num.partitions"])
    coordinators: dict[str, int] = {}
    for index, client in enumerate(("confluent-kafka", "kafka-python", "aiokafka")):
        group = _group_on_offsets_partition(f"across-{client}", index, offsets_partitions)
        got = _consume_in_group(client, cluster.bootstrap(), group, len(expected))
        assert sorted(got) == expected, f"{client} in {group}"
        # The coordinator is the leader of the group's __consumer_offsets partition.
        state = cluster.json(f"/brokers/topics/__consumer_offsets/partitions/{index}/state")
        coordinator = state["leader"]
        description = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        described = description.describe_consumer_groups([group], request_timeout=15)[group]
        assert described.result(30).coordinator.id == coordinator
        with WireClient.connect(cluster.brokers[coordinator].bootstrap, timeout=15) as wire:
            committed = offset_fetch(wire, group)
        assert {tp: (offset, error) for tp, (offset, _, error) in committed.items()} == {
            (GROUP_TOPIC, p): (GROUP_RECORDS, 0) for p in range(3)
        }, f"{client}: {committed}"
        # Every other broker answers NOT_COORDINATOR for this group.
        for other in BROKER_IDS:
            if other != coordinator:
                with WireClient.connect(cluster.brokers[other].bootstrap, timeout=15) as wire:
                    response = request_at(wire, 9, 8, {"groups": [{"group_id": group}]})
                [answer] = response.groups
                assert int(answer.error_code) == ErrorCode.NOT_COORDINATOR, (other, answer)
        coordinators[client] = coordinator
    # __consumer_offsets' three partitions are led by the three brokers (Kafka's assignment
    # spreads leaders), so the three groups' coordinators are the three brokers.
    assert sorted(coordinators.values()) == list(BROKER_IDS), coordinators


def _ask(broker: BrokerProcess, request: Any) -> Any:
    client = WireClient.connect(broker.bootstrap)
    try:
        client.send(to_wire(request))
        return client.recv(response_type(request.API_KEY, request.VERSION))
    finally:
        client.close()


def test_controller_requests_are_fenced_by_controller_and_broker_epochs(
    cluster: Cluster,
) -> None:
    broker = cluster.brokers[3]
    client = WireClient.connect(broker.bootstrap)
    try:
        advertised = api_versions(client)
    finally:
        client.close()
    assert advertised[4] == (0, 7) and advertised[5] == (0, 4) and advertised[6] == (0, 8)
    epoch = int(cluster.kazoo.get("/controller_epoch")[0])
    broker_epoch = cluster.kazoo.exists("/brokers/ids/3").czxid
    controller = cluster.controller_id()
    assert controller is not None
    topic_id = uuid.UUID(
        bytes=base64.urlsafe_b64decode(cluster.json("/brokers/topics/orders")["topic_id"] + "==")
    )
    assignment = {
        int(p): r for p, r in cluster.json("/brokers/topics/orders")["partitions"].items()
    }
    mine = next(p for p, r in assignment.items() if 3 in r)

    def leader_and_isr(
        controller_epoch: int, broker_epoch_sent: int, leader_epoch: int, replicas: list[int]
    ) -> LeaderAndIsrRequest:
        return LeaderAndIsrRequest(
            controller_id=controller,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch_sent,
            topic_states=(
                LeaderAndIsrTopicState(
                    topic_name="orders",
                    topic_id=topic_id,
                    partition_states=(
                        LeaderAndIsrPartitionState(
                            partition_index=mine,
                            controller_epoch=controller_epoch,
                            leader=replicas[0],
                            leader_epoch=leader_epoch,
                            isr=tuple(replicas),
                            partition_epoch=0,
                            replicas=tuple(replicas),
                        ),
                    ),
                ),
            ),
            live_leaders=(),
        )

    def codes(response: Any) -> list[int]:
        return [p.error_code for t in response.topics for p in t.partition_errors]

    stale = _ask(broker, leader_and_isr(epoch - 1, broker_epoch, 5, assignment[mine]))
    assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert codes(stale) == [ErrorCode.STALE_CONTROLLER_EPOCH]
    old_broker = _ask(broker, leader_and_isr(epoch, broker_epoch - 1, 5, assignment[mine]))
    assert old_broker.error_code == ErrorCode.STALE_BROKER_EPOCH
    older_leader = _ask(broker, leader_and_isr(epoch, broker_epoch, -1, assignment[mine]))
    assert older_leader.error_code == ErrorCode.NONE
    assert codes(older_leader) == [ErrorCode.STALE_CONTROLLER_EPOCH]
    not_mine = _ask(broker, leader_and_isr(epoch, broker_epoch, 5, [1, 2]))
    assert codes(not_mine) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]

    update = _ask(
        broker,
        UpdateMetadataRequest(
            controller_id=controller,
            controller_epoch=epoch - 1,
            broker_epoch=broker_epoch,
            topic_states=(),
            live_brokers=(),
        ),
    )
    assert update.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    stop = _ask(
        broker,
        StopReplicaRequest(
            controller_id=controller,
            controller_epoch=epoch - 1,
            broker_epoch=broker_epoch,
            topic_states=(
                StopReplicaTopicState(
                    topic_name="orders",
                    partition_states=(
                        StopReplicaPartitionState(
                            partition_index=mine, leader_epoch=-2, delete_partition=True
                        ),
                    ),
                ),
            ),
        ),
    )
    assert stop.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert list(stop.partition_errors) == []  # Kafka lists no partitions (test_differential)
    # Nothing was applied: the partition is still hosted and the cluster still serves it.
    assert (broker.data_dir / "logs" / f"orders-{mine}").is_dir()
    metadata = cluster.kcat_metadata(broker, "orders")
    (entry,) = metadata["topics"]
    assert {p["partition"]: p["leader"] for p in entry["partitions"]} == {
        p: r[0] for p, r in assignment.items()
    }


def test_a_sigstopped_controller_learns_it_lost_and_rejoins_as_a_broker(cluster: Cluster) -> None:
    old = cluster.controller_id()
    assert old is not None
    zombie = cluster.brokers[old]
    epoch_before = int(cluster.kazoo.get("/controller_epoch")[0])
    os.kill(zombie.pid, signal.SIGSTOP)
    try:
        eventually(
            lambda: cluster.controller_id() not in (None, old),
            SESSION_MS / 1000 + 2,
            "a new controller while the old one is stopped",
        )
    finally:
        os.kill(zombie.pid, signal.SIGCONT)
    new = cluster.controller_id()
    assert int(cluster.kazoo.get("/controller_epoch")[0]) == epoch_before + 1
    eventually(
        lambda: f"broker {old} resigns as controller" in zombie.output(), 15, "the zombie resigns"
    )
    # It registers again with a new session (a new broker epoch) and follows the new controller.
    eventually(lambda: cluster.kazoo.exists(f"/brokers/ids/{old}") is not None, 15, "re-registered")

    def everyone_follows_the_new_controller() -> bool:
        return all(
            cluster.kcat_metadata(b)["controllerid"] == new
            and len(cluster.kcat_metadata(b)["brokers"]) == 3
            for b in cluster.brokers.values()
        )

    eventually(everyone_follows_the_new_controller, 20, "every broker names the new controller")
    assert cluster.controller_id() == new


def test_controller_sigkill_another_takes_over_and_topics_work_after_failover(
    cluster: Cluster,
) -> None:
    old = cluster.controller_id()
    assert old is not None
    cluster.brokers[old].kill()
    survivors = [b for b in BROKER_IDS if b != old]

    def new_controller() -> bool:
        current = cluster.controller_id()
        return current is not None and current != old

    took = eventually(new_controller, SESSION_MS / 1000 + 2, "a new controller")
    new = cluster.controller_id()
    assert new in survivors

    def converged() -> bool:
        for broker_id in survivors:
            metadata = cluster.kcat_metadata(cluster.brokers[broker_id], "orders")
            if sorted(b["id"] for b in metadata["brokers"]) != survivors:
                return False
            if metadata["controllerid"] != new:
                return False
            (entry,) = metadata["topics"]
            if any(p["leader"] not in survivors for p in entry["partitions"]):
                return False
        return True

    eventually(converged, 15, "metadata converged on the survivors")
    # Topics created and deleted by the new controller. (A topic with a replica on the dead
    # broker would wait for it: Kafka's TopicDeletionManager makes it ineligible.)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("after", 4, 2)], operation_timeout=30)["after"].result(60)
    assignment = cluster.json("/brokers/topics/after")["partitions"]
    assert all(sorted(r) == survivors for r in assignment.values())
    produce_all(cluster.bootstrap(), [("after", p, b"x") for p in range(4)])
    admin.delete_topics(["after"], operation_timeout=30)["after"].result(60)
    # The response comes once the brokers' metadata lost the topic (Kafka's
    # DelayedDeleteTopics); the controller removes the znodes after the StopReplica answers.
    eventually(lambda: cluster.kazoo.exists("/brokers/topics/after") is None, 10, "znodes removed")
    for broker_id in survivors:
        logs = cluster.brokers[broker_id].data_dir / "logs"
        assert not [d for d in logs.iterdir() if d.name.startswith("after-") and d.is_dir()]
    admin.create_topics([NewTopic("after", 2, 1)], operation_timeout=30)["after"].result(60)
    assert len(cluster.json("/brokers/topics/after")["partitions"]) == 2
    print(f"failover: new controller after {took:.2f} s (session timeout {SESSION_MS} ms)")
