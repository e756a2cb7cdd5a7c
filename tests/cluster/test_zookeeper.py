"""franz.metadata's ZooKeeper side against a real ZooKeeper (Debian's 3.8 server).

Every test has its own chroot; ``raw`` reads back with plain kazoo, as a Kafka tool would.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")

from kazoo.client import KazooClient

from franz.errors import TopicAlreadyExistsError
from franz.metadata.kafka_zk_client import (
    BrokerRegistrationError,
    ControllerMovedError,
    KafkaZkClient,
)
from franz.metadata.store import TopicRecord
from franz.metadata.zk_session import ZkBrokerSession
from franz.metadata.zk_store import ZooKeeperMetadataStore
from franz.metadata.znodes import BrokerInfo, PartitionState, TopicAssignment, TopicZNode
from franz.metadata.zookeeper import (
    SessionState,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperConfig,
    ZooKeeperConnectionError,
    ZooKeeperError,
)
from franz.protocol.kafka_uuid import uuid_to_str
from tests.support.zookeeper import ZooKeeperEnsemble, server_mode

SESSION_MS = 2000


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 20))


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout_s: float = 8.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def broker_info(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(
        broker_id=broker_id,
        endpoints=(f"PLAINTEXT://localhost:{port}",),
        security_protocols={"PLAINTEXT": "PLAINTEXT"},
        timestamp_ms=1700000000000,
    )


async def connect(zk_connect: str) -> KafkaZkClient:
    zk = ZooKeeperClient(ZooKeeperConfig(zk_connect, session_timeout_ms=SESSION_MS))
    await zk.start()
    client = KafkaZkClient(zk)
    await client.ensure_persistent_paths()
    return client


@pytest.fixture
def raw(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect.partition("/")[0])
    client.start(timeout=10)
    client.chroot = "/" + zk_connect.partition("/")[2]
    try:
        yield client
    finally:
        client.stop()
        client.close()


def expire_session(hosts: str, credentials: tuple[int, bytes]) -> None:
    """The server expires a session when a twin client (same id and password) closes it."""
    twin = KazooClient(hosts=hosts, client_id=credentials)
    twin.start(timeout=10)
    twin.stop()
    twin.close()


def test_broker_registration_has_kafka_json_and_creates_the_chroot(zk_connect, raw):
    async def main() -> None:
        client = await connect(zk_connect)
        try:
            await client.register_broker(broker_info(0))
            data, stat = raw.get("/brokers/ids/0")
            assert stat.ephemeralOwner == client.zk.session_id
            body = json.loads(data)
            body_ts = body["timestamp"]
            assert data == (
                b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
                b'"host":"localhost","version":5,"timestamp":"' + body_ts.encode() + b'"}'
            )
            assert raw.get_children("/") and raw.exists("/brokers/topics")
            assert set(await client.get_all_brokers()) == {0}
        finally:
            await client.zk.close()

    run(main())


def test_duplicate_broker_id_is_refused_with_kafkas_message(zk_connect):
    async def main() -> None:
        first, second = await connect(zk_connect), await connect(zk_connect)
        try:
            await first.register_broker(broker_info(0))
            with pytest.raises(BrokerRegistrationError) as err:
                await second.register_broker(broker_info(0, 9093))
            assert str(err.value) == (
                "Error while creating ephemeral at /brokers/ids/0, node already exists and "
                f"owner '{first.zk.session_id}' does not match current session "
                f"'{second.zk.session_id}'"
            )
            await first.register_broker(broker_info(0))  # its own node: accepted
        finally:
            await first.zk.close()
            await second.zk.close()

    run(main())


def test_second_broker_becomes_controller_when_the_first_session_closes(zk_connect, raw):
    async def main() -> None:
        elected: list[tuple[int, int]] = []
        a, b = await connect(zk_connect), await connect(zk_connect)
        sa = ZkBrokerSession(a, broker_info(0), on_elected=lambda e: elected.append((0, e.epoch)))
        sb = ZkBrokerSession(b, broker_info(1), on_elected=lambda e: elected.append((1, e.epoch)))
        try:
            await sa.start()
            await sb.start()
            assert sa.is_controller and not sb.is_controller
            assert elected == [(0, 1)]
            data, _ = raw.get("/controller")
            body = json.loads(data)
            assert list(body) == ["version", "brokerid", "timestamp", "kraftControllerEpoch"]
            assert (body["version"], body["brokerid"], body["kraftControllerEpoch"]) == (2, 0, -1)
            assert raw.get("/controller_epoch")[0] == b"1"
            await sa.stop()
            started = time.monotonic()
            await a.zk.close()
            await eventually(lambda: sb.is_controller, 5.0)
            assert time.monotonic() - started < 5.0
            assert elected == [(0, 1), (1, 2)]
            assert raw.get("/controller_epoch")[0] == b"2"
        finally:
            await sb.stop()
            await b.zk.close()

    run(main())


def test_a_stale_controller_is_fenced(zk_connect, raw):
    async def main() -> None:
        a, b = await connect(zk_connect), await connect(zk_connect)
        try:
            old = await a.register_controller_and_increment_epoch(0, 1)
            raw.create("/brokers/topics/t/partitions/0/state", b"{}", makepath=True)
            raw.delete("/controller")  # as if a's session had ended
            new = await b.register_controller_and_increment_epoch(1, 2)
            assert (old.epoch, new.epoch) == (1, 2)
            path = "/brokers/topics/t/partitions/0/state"
            with pytest.raises(ControllerMovedError):
                await a.fenced_multi(old, [SetDataOp(path, b"stale")])
            assert raw.get(path)[0] == b"{}"
            with pytest.raises(ControllerMovedError):
                await a.register_controller_and_increment_epoch(0, 3)
            state = PartitionState(1, 5, (1,), new.epoch, zk_version=0)
            written = await b.update_partition_state(new, "t", 0, state)
            assert written.zk_version == 1
            assert json.loads(raw.get(path)[0]) == {
                "controller_epoch": 2,
                "leader": 1,
                "version": 1,
                "leader_epoch": 5,
                "isr": [1],
            }
        finally:
            await a.zk.close()
            await b.zk.close()

    run(main())


def test_session_expiry_resigns_at_once_then_reregisters_and_reelects(zk_connect, raw):
    async def main() -> None:
        events: list[str] = []
        a, b = await connect(zk_connect), await connect(zk_connect)
        sa = ZkBrokerSession(
            a,
            broker_info(0),
            on_elected=lambda e: events.append(f"a elected {e.epoch}"),
            on_resign=lambda: events.append("a resigned"),
        )
        sb = ZkBrokerSession(b, broker_info(1), on_elected=lambda e: events.append("b elected"))
        states: list[SessionState] = []
        a.zk.add_state_listener(states.append)
        try:
            await sa.start()
            await sb.start()
            old_session = a.zk.session_id
            hosts = zk_connect.partition("/")[0]
            await asyncio.to_thread(expire_session, hosts, a.zk.session_credentials)
            await eventually(lambda: "a resigned" in events)
            assert not sa.is_controller
            await eventually(lambda: raw.exists("/brokers/ids/0") is not None)
            await eventually(lambda: sa.is_controller or sb.is_controller)
            assert a.zk.session_id != old_session
            assert raw.get("/brokers/ids/0")[1].ephemeralOwner == a.zk.session_id
            assert SessionState.EXPIRED in states
            # b may see /controller vanish before a hears of its expiry: the epoch fences a.
            assert events[0] == "a elected 1" and "a resigned" in events
            assert sa.is_controller != sb.is_controller
            assert raw.get("/controller_epoch")[0] == b"2"
        finally:
            await sa.stop()
            await sb.stop()
            await a.zk.close()
            await b.zk.close()

    run(main())


def test_watches_deliver_on_the_loop(zk_connect, raw):
    async def main() -> None:
        client = await connect(zk_connect)
        seen: list[tuple[list[str], int]] = []
        loop_thread = threading.get_ident()
        try:
            client.watch_children("/brokers/ids", lambda c: seen.append((c, threading.get_ident())))
            for i in range(5):
                raw.create(f"/brokers/ids/{i}", b"x")
            await eventually(lambda: bool(seen) and seen[-1][0] == ["0", "1", "2", "3", "4"])
            assert seen[0][0] == []
            assert {thread for _, thread in seen} == {loop_thread}
        finally:
            await client.zk.close()

    run(main())


def test_unreachable_zookeeper_is_a_clear_error_after_the_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = ZooKeeperConfig(
        f"127.0.0.1:{port}", session_timeout_ms=2000, connection_timeout_ms=700
    )

    async def main() -> None:
        started = time.monotonic()
        with pytest.raises(
            ZooKeeperConnectionError, match=r"zookeeper\.connection\.timeout\.ms=700"
        ):
            await ZooKeeperClient(config).start()
        assert 0.6 < time.monotonic() - started < 5

    run(main())


def test_a_malformed_topic_is_skipped_and_logged(zk_connect, raw, caplog):
    async def main() -> None:
        client = await connect(zk_connect)
        store = ZooKeeperMetadataStore(client, broker_id=0)
        try:
            good = TopicRecord("good", uuid.uuid4(), {0: [0], 1: [0]}, {"retention.ms": "5"})
            await store.create_topic(good)
            raw.create("/brokers/topics/bad", b'{"partitions":')
            with caplog.at_level(logging.ERROR):
                topics = await store.topics()
            assert list(topics) == ["good"]
            assert topics["good"] == good
            assert "/brokers/topics/bad" in caplog.text
        finally:
            await client.zk.close()

    run(main())


def test_metadata_store_writes_kafkas_znodes(zk_connect, raw):
    async def main() -> None:
        client = await connect(zk_connect)
        store = ZooKeeperMetadataStore(client, broker_id=3)
        try:
            topic_id = uuid.uuid4()
            await store.create_topic(TopicRecord("t", topic_id, {0: [0, 1]}, {}))
            with pytest.raises(TopicAlreadyExistsError):
                await store.create_topic(TopicRecord("t", topic_id, {0: [0]}, {}))
            assert raw.get("/brokers/topics/t")[0] == (
                b'{"partitions":{"0":[0,1]},"topic_id":"'
                + uuid_to_str(topic_id).encode()
                + b'","adding_replicas":{},"removing_replicas":{},"version":3}'
            )
            await store.add_partitions("t", {1: [1, 0]})
            assert (await store.topics())["t"].assignment == {0: [0, 1], 1: [1, 0]}
            await store.set_topic_configs("t", {"retention.ms": "1000"})
            assert raw.get("/config/topics/t")[0] == (
                b'{"version":1,"config":{"retention.ms":"1000"}}'
            )
            await store.set_broker_configs("<default>", {"log.retention.ms": "7"})
            assert await store.broker_configs("<default>") == {"log.retention.ms": "7"}
            changes = sorted(raw.get_children("/config/changes"))
            assert changes == ["config_change_0000000000", "config_change_0000000001"]
            assert [raw.get(f"/config/changes/{c}")[0] for c in changes] == [
                b'{"version":2,"entity_path":"topics/t"}',
                b'{"version":2,"entity_path":"brokers/<default>"}',
            ]
            assert await store.allocate_producer_ids(1000) == 0
            assert await store.allocate_producer_ids(1000) == 1000
            assert raw.get("/latest_producer_id_block")[0] == (
                b'{"version":1,"broker":3,"block_start":"1000","block_end":"1999"}'
            )
            await client.mark_topic_for_deletion("t")
            assert raw.get_children("/admin/delete_topics") == ["t"]
            await store.delete_topic("t")
            assert await store.topics() == {}
            assert raw.exists("/config/topics/t") is None
            assert raw.get_children("/admin/delete_topics") == []
            assert await client.get_or_create_cluster_id("abc") == "abc"
            assert await client.get_or_create_cluster_id("other") == "abc"
            assert raw.get("/cluster/id")[0] == b'{"version":"1","id":"abc"}'
            assignment = await client.get_topic_assignments(["missing"])
            assert assignment == {}
            raw.create("/brokers/topics/old", b'{"version":1,"partitions":{"0":[0]}}')
            first = (await store.topics())["old"].topic_id
            assert (await store.topics())["old"].topic_id == first
            assert TopicZNode.decode("old", raw.get("/brokers/topics/old")[0]) == TopicAssignment(
                first, {0: [0]}
            )
        finally:
            await client.zk.close()

    run(main())


def test_config_reads_kafkas_keys_and_the_chroot():
    config = ZooKeeperConfig.from_properties(
        {"zookeeper.connect": "a:2181,b:2181/kafka/prod/", "zookeeper.session.timeout.ms": "6000"}
    )
    assert (config.hosts, config.chroot) == ("a:2181,b:2181", "/kafka/prod")
    assert config.effective_connection_timeout_ms == 6000  # Kafka's fallback
    assert ZooKeeperConfig("h:1").chroot == ""


def test_the_session_survives_the_ensemble_leaders_death(tmp_path, zookeeper_server):
    ensemble = ZooKeeperEnsemble(tmp_path, 3).start()
    try:
        ensemble.wait_ready(60)

        async def main() -> None:
            client = await connect(ensemble.connect_string + "/franz")
            states: list[SessionState] = []
            client.zk.add_state_listener(states.append)
            try:
                await client.register_broker(broker_info(0))
                session = client.zk.session_id
                leader = next(m for m in ensemble.members if server_mode(m.port) == "leader")
                leader.stop(kill=True)

                async def registered() -> bool:
                    try:  # a request in flight to the dead leader fails with ConnectionLoss
                        return set(await client.get_all_brokers()) == {0}
                    except ZooKeeperError:
                        return False

                await eventually(registered, 10.0)
                assert client.zk.session_id == session
                assert SessionState.EXPIRED not in states
            finally:
                await client.zk.close()

        run(main())
    finally:
        ensemble.stop()
