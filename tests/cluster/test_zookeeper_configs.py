"""Cluster state shared through ZooKeeper: producer id blocks and dynamic broker configs.

One cluster of 3 ``franz broker`` processes (ids 1-3) for the module, started here because
the tests restart brokers. Everything is checked with real clients over TCP (raw
InitProducerId requests, confluent-kafka, kafka-python, ``franz configs``) and with kazoo on
the znodes, whose bytes are compared with what Kafka 3.9 writes.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kio.schema.incremental_alter_configs.v1 import request as iac
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.init_producer_id.v4.response import InitProducerIdResponse

from franz.broker.cluster_topics import ClusterTopicAdmin
from franz.errors import ErrorCode
from franz.metadata.cache import MetadataCache
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.local import LocalMetadataStore
from franz.metadata.mirror import TopicMirrorStore
from franz.metadata.zk_store import ZooKeeperMetadataStore
from franz.metadata.zookeeper import ZooKeeperClient, ZooKeeperConfig
from tests.support.broker import BrokerProcess
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.kafka_ref import ReferenceUnavailable, run_franz_tool, run_kafka_tool
from tests.support.wire import WireClient
from tests.support.zookeeper import ZooKeeperServer

BLOCK = 1000
CLAIMED = re.compile(r"claimed producer id block \[(\d+), (\d+)\]")


@pytest.fixture(scope="module")
def zk_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("zk-state"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base) as c:
        yield c


def restart(c: Cluster, broker: BrokerProcess) -> None:
    """Stop and start ``broker`` (its port changes), then wait until every broker's metadata
    has its new address."""
    assert broker.stop() == 0, broker.output()
    restart_stopped(c, broker)


def restart_stopped(c: Cluster, broker: BrokerProcess) -> None:
    broker.start()
    addresses = {f"{b.host}:{b.port}" for b in c.brokers.values()}

    def converged() -> bool:
        for b in c.brokers.values():
            listed = c.kcat_metadata(b)["brokers"]
            if {entry["name"].rsplit("/", 1)[0] for entry in listed} != addresses:
                return False
        return True

    eventually(converged, 30, f"every broker sees broker {broker.overrides['broker.id']} back")


# -- producer id blocks ----------------------------------------------------------------------


def init_producer_ids(broker: BrokerProcess, count: int, in_flight: int = 100) -> list[int]:
    """``count`` InitProducerId requests (idempotent producer: no transactional id),
    pipelined ``in_flight`` at a time; the ids answered."""
    ids: list[int] = []
    request = InitProducerIdRequest(
        transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60)
    )
    with WireClient.connect(broker.bootstrap, timeout=30) as client:
        while len(ids) < count:
            batch = min(in_flight, count - len(ids))
            sent = [client.send(request) for _ in range(batch)]
            for correlation_id in sent:
                response = client.recv(InitProducerIdResponse, correlation_id)
                assert response.error_code == ErrorCode.NONE, response
                assert response.producer_epoch == 0, response
                ids.append(response.producer_id)
    return ids


def claimed_blocks(c: Cluster) -> list[tuple[int, int]]:
    """Every block the brokers logged claiming (over all their runs)."""
    blocks: list[tuple[int, int]] = []
    for broker in c.brokers.values():
        text = (broker.data_dir / "broker.out").read_text(errors="replace")
        blocks += [(int(a), int(b)) for a, b in CLAIMED.findall(text)]
    return sorted(blocks)


def test_producer_ids_come_from_shared_blocks_and_are_never_reused(zk_cluster: Cluster) -> None:
    c = zk_cluster
    issued: list[int] = []
    # Interleave the brokers so their blocks alternate in /latest_producer_id_block.
    for _ in range(3):
        for broker in c.brokers.values():
            issued += init_producer_ids(broker, 450)
    assert len(issued) == len(set(issued)), "a producer id was handed out twice"
    assert min(issued) >= 0

    data, _ = c.kazoo.get("/latest_producer_id_block")
    latest = json.loads(data)
    # Kafka 3.9's ProducerIdBlockZNode JSON, field order and string-typed bounds included.
    assert (
        data
        == (
            f'{{"version":1,"broker":{latest["broker"]},"block_start":"{latest["block_start"]}",'
            f'"block_end":"{latest["block_end"]}"}}'
        ).encode()
    )
    assert latest["broker"] in c.brokers
    start, end = int(latest["block_start"]), int(latest["block_end"])
    assert end - start == BLOCK - 1 and start % BLOCK == 0
    assert max(issued) <= end

    # Every claim took the next 1000 ids: the blocks are contiguous from 0, disjoint, and
    # each id lies in a block claimed by the broker that handed it out.
    blocks = claimed_blocks(c)
    assert [b[0] for b in blocks] == [i * BLOCK for i in range(len(blocks))], blocks
    assert all(b[1] - b[0] == BLOCK - 1 for b in blocks), blocks
    assert blocks[-1] == (start, end)
    assert len(blocks) >= 3  # each broker claimed at least one (1350 ids each)

    # A restarted broker claims a fresh block: none of its ids was handed out before.
    restart(c, c.brokers[2])
    after = init_producer_ids(c.brokers[2], 20)
    assert not set(after) & set(issued)
    assert min(after) > end

    # An idempotent producer of a real client gets its id the same way.
    producer = Producer({"bootstrap.servers": c.bootstrap(), "enable.idempotence": True})
    delivered: list[Any] = []
    producer.produce("pid-check", b"x", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0 and delivered == [None]


# -- dynamic broker configs ------------------------------------------------------------------


def describe(admin: AdminClient, broker: str, key: str) -> ConfigEntry:
    resource = ConfigResource(ConfigResource.Type.BROKER, broker)
    entries = admin.describe_configs([resource], request_timeout=30)[resource].result(30)
    entry: ConfigEntry = entries[key]
    return entry


def source_name(entry: ConfigEntry) -> str:
    return ConfigSource(entry.source).name


def produce_one(c: Cluster, topic: str, partition: int, size: int) -> str | None:
    """Produce one ``size``-byte record; the delivery error's name, or None. Retriable
    errors (a leader still moving after a restart) are retried; MSG_SIZE_TOO_LARGE is not."""
    producer = Producer(
        {
            "bootstrap.servers": c.bootstrap(),
            "message.max.bytes": 1_000_000,
            "message.timeout.ms": 30_000,
        }
    )
    errors: list[Any] = []
    producer.produce(
        topic, b"v" * size, partition=partition, on_delivery=lambda e, m: errors.append(e)
    )
    assert producer.flush(45) == 0
    err = errors[0]
    return None if err is None else str(err.name())


def test_dynamic_broker_configs_live_in_zookeeper(zk_cluster: Cluster) -> None:
    c = zk_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap()})
    topic = "sizes"
    # One partition led by each broker, so each broker's limit is observable.
    created = admin.create_topics(
        [NewTopic(topic, 3, replica_assignment=[[1], [2], [3]])], request_timeout=30
    )
    created[topic].result(30)
    eventually(
        lambda: all(
            p["leader"] >= 0
            for p in c.kcat_metadata(c.brokers[1], topic)["topics"][0]["partitions"]
        ),
        30,
        "leaders of sizes",
    )

    # The cluster-wide default, with Kafka's tool's syntax (any broker may take it).
    done = run_franz_tool(
        "configs",
        "--bootstrap-server",
        c.brokers[3].bootstrap,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "message.max.bytes=3000",
    )
    assert done.returncode == 0, done.stderr
    # A per-broker override with confluent-kafka (librdkafka sends it to broker 2).
    resource = ConfigResource(
        ConfigResource.Type.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry("message.max.bytes", "50000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    # Another with kafka-python (it sends BROKER resources to the broker they name).
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap(), request_timeout_ms=30000)
    try:
        kp.alter_configs(
            [KpConfigResource(KpConfigResourceType.BROKER, "3", {"log.retention.ms": "7200000"})]
        )
    finally:
        kp.close()

    # The znodes hold Kafka's JSON, and one change notification per change names the entity.
    assert c.kazoo.get("/config/brokers/<default>")[0] == (
        b'{"version":1,"config":{"message.max.bytes":"3000"}}'
    )
    assert c.kazoo.get("/config/brokers/2")[0] == (
        b'{"version":1,"config":{"message.max.bytes":"50000"}}'
    )
    assert c.kazoo.get("/config/brokers/3")[0] == (
        b'{"version":1,"config":{"log.retention.ms":"7200000"}}'
    )
    notified = [
        c.kazoo.get(f"/config/changes/{child}")[0]
        for child in sorted(c.kazoo.get_children("/config/changes"))
    ]
    for entity in ("<default>", "2", "3"):
        assert f'{{"version":2,"entity_path":"brokers/{entity}"}}'.encode() in notified, notified

    check_described(c)
    check_limits(c, topic)

    # A restarted broker reads them back from ZooKeeper.
    restart(c, c.brokers[2])
    restart(c, c.brokers[1])
    check_described(c)
    check_limits(c, topic)


def check_described(c: Cluster) -> None:
    """Every broker answers its own value and source (Kafka's precedence: per broker, then
    the cluster default, then server.properties, then Kafka's default), with synonyms."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap()})
    expected = {
        1: ("3000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        2: ("50000", "DYNAMIC_BROKER_CONFIG"),
        3: ("3000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    }

    def described() -> dict[int, tuple[str, str]]:
        out = {}
        for broker_id in expected:
            entry = describe(admin, str(broker_id), "message.max.bytes")
            out[broker_id] = (entry.value, source_name(entry))
        return out

    eventually(lambda: described() == expected, 30, "every broker describes message.max.bytes")
    retention = describe(admin, "3", "log.retention.ms")
    assert (retention.value, source_name(retention)) == ("7200000", "DYNAMIC_BROKER_CONFIG")
    retention_1 = describe(admin, "1", "log.retention.ms")
    assert source_name(retention_1) != "DYNAMIC_BROKER_CONFIG", retention_1

    # kafka-python sees the same through DescribeConfigs sent to each broker, with the
    # synonyms in precedence order (confluent-kafka keys them by name, keeping one).
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap(), request_timeout_ms=30000)
    try:
        for broker_id, (value, source) in expected.items():
            answer = kp.describe_configs(
                [KpConfigResource(KpConfigResourceType.BROKER, str(broker_id))],
                include_synonyms=True,
                config_filter="all",
            )
            entry = answer["broker"][str(broker_id)]["message.max.bytes"]
            assert (entry["value"], entry["config_source"]) == (value, source), entry
            layers = [(s["value"], s["source"]) for s in entry["synonyms"]]
            dynamic = [("3000", "DYNAMIC_DEFAULT_BROKER_CONFIG")]
            if broker_id == 2:
                dynamic.insert(0, ("50000", "DYNAMIC_BROKER_CONFIG"))
            assert layers == [*dynamic, ("1048588", "DEFAULT_CONFIG")], entry
    finally:
        kp.close()

    # The default entity (any broker answers it) lists only the cluster-wide dynamic configs.
    done = run_franz_tool(
        "configs",
        "--bootstrap-server",
        c.brokers[1].bootstrap,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--describe",
    )
    assert done.returncode == 0, done.stderr
    assert "message.max.bytes=3000" in done.stdout, done.stdout


def check_limits(c: Cluster, topic: str) -> None:
    """The limits are live: partition p is led by broker p + 1 (its own message.max.bytes)."""
    eventually(
        lambda: produce_one(c, topic, 0, 10_000) == "MSG_SIZE_TOO_LARGE",
        30,
        "broker 1 refuses a 10 kB record (cluster default 3000)",
    )
    assert produce_one(c, topic, 2, 10_000) == "MSG_SIZE_TOO_LARGE"
    assert produce_one(c, topic, 1, 10_000) is None  # broker 2: its own 50000
    assert produce_one(c, topic, 0, 1_000) is None


def incremental_alter(broker: BrokerProcess, name: str, *ops: tuple[str, int, str | None]) -> Any:
    """One IncrementalAlterConfigs of the BROKER resource ``name``, sent to ``broker``."""
    request = iac.IncrementalAlterConfigsRequest(
        resources=(
            iac.AlterConfigsResource(
                resource_type=4,
                resource_name=name,
                configs=tuple(
                    iac.AlterableConfig(name=key, config_operation=op, value=value)
                    for key, op, value in ops
                ),
            ),
        ),
        validate_only=False,
    )
    with WireClient.connect(broker.bootstrap, timeout=30) as client:
        (result,) = client.request(request).responses
    return result


def test_default_changes_through_different_brokers_merge(zk_cluster: Cluster) -> None:
    """An incremental change of the cluster default starts from the znode, not from the
    receiving broker's copy: two changes sent one right after the other to two brokers
    both survive."""
    c = zk_cluster
    first = incremental_alter(c.brokers[1], "", ("log.cleaner.backoff.ms", 0, "16000"))
    second = incremental_alter(c.brokers[2], "", ("log.cleaner.io.buffer.size", 0, "600000"))
    assert (first.error_code, second.error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    stored = json.loads(c.kazoo.get("/config/brokers/<default>")[0])["config"]
    assert stored["log.cleaner.backoff.ms"] == "16000", stored
    assert stored["log.cleaner.io.buffer.size"] == "600000", stored
    done = incremental_alter(
        c.brokers[3],
        "",
        ("log.cleaner.backoff.ms", 1, None),
        ("log.cleaner.io.buffer.size", 1, None),
    )
    assert done.error_code == ErrorCode.NONE, done
    stored = json.loads(c.kazoo.get("/config/brokers/<default>")[0])["config"]
    assert not {"log.cleaner.backoff.ms", "log.cleaner.io.buffer.size"} & set(stored), stored


def test_per_broker_alter_must_reach_that_broker(zk_cluster: Cluster) -> None:
    """Kafka's ZooKeeper mode answers a BROKER resource naming another broker with
    INVALID_REQUEST; nothing is written."""
    c = zk_cluster
    result = incremental_alter(c.brokers[1], "2", ("log.cleaner.threads", 0, "2"))
    assert result.error_code == ErrorCode.INVALID_REQUEST, result
    assert result.error_message == ("Unexpected broker id, expected 1, but received 2")
    found = c.kazoo.exists("/config/brokers/2")
    if found is not None:
        assert b"log.cleaner.threads" not in c.kazoo.get("/config/brokers/2")[0]


def test_bad_value_is_refused_and_not_written(zk_cluster: Cluster) -> None:
    c = zk_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap()})
    resource = ConfigResource(
        ConfigResource.Type.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry("message.max.bytes", "lots", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([resource])[resource].result(30)
    assert "INVALID_REQUEST" in str(refused.value) or "Invalid" in str(refused.value)
    found = c.kazoo.exists("/config/brokers/1")
    if found is not None:
        assert b"lots" not in c.kazoo.get("/config/brokers/1")[0]


def test_kafkas_config_command_reads_and_writes_them(zk_cluster: Cluster) -> None:
    """Kafka 3.9's own ``kafka-configs``: ``--bootstrap-server --describe`` of a broker
    shows the per-broker value over the cluster default; ``--zookeeper`` (allowed for a
    broker that is not running) writes a per-broker config that the broker applies when
    it starts."""
    c = zk_cluster
    try:
        added = run_kafka_tool(
            "kafka.admin.ConfigCommand",
            "--bootstrap-server",
            c.brokers[1].bootstrap,
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--add-config",
            "log.cleaner.threads=3",
        )
    except ReferenceUnavailable as exc:
        pytest.skip(str(exc))
    assert added.returncode == 0, added.stderr
    assert "Completed updating config for broker 1." in added.stdout, added.stdout
    described = run_kafka_tool(
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        c.brokers[1].bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--describe",
    )
    assert described.returncode == 0, described.stderr
    assert (
        "log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.cleaner.threads=3, DEFAULT_CONFIG:log.cleaner.threads=1}" in described.stdout
    ), described.stdout
    assert c.kazoo.get("/config/brokers/1")[0] == (
        b'{"version":1,"config":{"log.cleaner.threads":"3"}}'
    )

    # Written into ZooKeeper by Kafka's tool while broker 1 is down, applied at its start
    # (Kafka's ZooKeeper alter merges into the znode, keeping log.cleaner.threads's peers).
    broker = c.brokers[1]
    assert broker.stop() == 0, broker.output()
    eventually(lambda: c.kazoo.exists("/brokers/ids/1") is None, 30, "broker 1 unregistered")
    written = run_kafka_tool(
        "kafka.admin.ConfigCommand",
        "--zookeeper",
        c.zk_connect,
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--alter",
        "--add-config",
        "log.cleaner.threads=4",
    )
    assert written.returncode == 0, written.stderr + written.stdout
    restart_stopped(c, broker)
    admin = AdminClient({"bootstrap.servers": c.bootstrap()})
    entry = describe(admin, "1", "log.cleaner.threads")
    assert (entry.value, source_name(entry)) == ("4", "DYNAMIC_BROKER_CONFIG")


# -- the block claim itself, against ZooKeeper from this process ------------------------------


async def zk_store(zk_connect: str, broker_id: int) -> ZooKeeperMetadataStore:
    client = KafkaZkClient(ZooKeeperClient(ZooKeeperConfig(zk_connect)))
    await client.zk.start()
    await client.ensure_persistent_paths()
    return ZooKeeperMetadataStore(client, broker_id)


def test_racing_block_claims_retry_on_badversion_and_never_overlap(zk_connect: str) -> None:
    """Three sessions claim blocks at once: the conditional set makes the losers read again
    (BADVERSION), so every block is claimed once and the znode ends at the last one."""

    async def main() -> None:
        stores = [await zk_store(zk_connect, b) for b in (1, 2, 3)]
        try:
            firsts = await asyncio.gather(
                *(s.allocate_producer_ids(BLOCK) for _ in range(10) for s in stores)
            )
            assert sorted(firsts) == [i * BLOCK for i in range(30)]
            data, _ = await stores[0].client.zk.get("/latest_producer_id_block")
            latest = json.loads(data)
            assert (latest["block_start"], latest["block_end"]) == ("29000", "29999")

            # Kafka refuses a block past the int64 range ("Have exhausted all producerIds.").
            near_end = (2**63 - 1) - 500
            await stores[0].client.zk.set(
                "/latest_producer_id_block",
                f'{{"version":1,"broker":1,"block_start":"{near_end - 999}",'
                f'"block_end":"{near_end}"}}'.encode(),
            )
            with pytest.raises(RuntimeError, match="exhausted"):
                await stores[1].allocate_producer_ids(BLOCK)
        finally:
            for s in stores:
                await s.client.zk.close()

    asyncio.run(main())


def test_change_notifications_are_applied_then_purged_when_old(
    zk_connect: str, tmp_path: Path
) -> None:
    """``/config/changes`` as one broker's watcher sees it: each broker-entity notification
    hands the entity's configs over; a notification older than the expiration (15 minutes
    in Kafka, shortened here) is deleted after the next pass, a young one is kept."""

    async def main() -> None:
        store = await zk_store(zk_connect, 1)
        zk = store.client.zk
        admin = ClusterTopicAdmin(
            store.client, 1, TopicMirrorStore(LocalMetadataStore(tmp_path), 1), MetadataCache(1)
        )
        applied: list[tuple[str, dict[str, str]]] = []
        admin.on_broker_configs = lambda entity, configs: applied.append((entity, configs))

        async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
            for _ in range(300):
                if await check():
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(what)

        async def applied_count(n: int) -> bool:
            return len(applied) == n

        try:
            await admin.watch_config_changes()
            await store.set_broker_configs("<default>", {"message.max.bytes": "5000"})
            await until(lambda: applied_count(1), "the default's change applied")
            first = await zk.get_children("/config/changes")
            assert len(first) == 1
            await store.set_broker_configs("2", {"message.max.bytes": "1"})  # not broker 1's
            await asyncio.sleep(0.3)
            assert len(applied) == 1
            assert len(await zk.get_children("/config/changes")) == 2  # young: kept

            admin.change_expiration_ms = 100
            await asyncio.sleep(0.2)
            await store.set_broker_configs("1", {"log.cleaner.threads": "2"})
            await until(lambda: applied_count(2), "broker 1's change applied")

            async def purged() -> bool:
                return first[0] not in await zk.get_children("/config/changes")

            await until(purged, "the old notification purged")
            assert applied == [
                ("<default>", {"message.max.bytes": "5000"}),
                ("1", {"log.cleaner.threads": "2"}),
            ]
        finally:
            await zk.close()

    asyncio.run(main())
