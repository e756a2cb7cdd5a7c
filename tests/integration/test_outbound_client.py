"""The outbound client against a real Franz broker subprocess.

Version negotiation, pipelined Metadata, Produce then Fetch with the records coming back as
opaque bytes, and a ``BrokerSender`` that keeps retrying across a SIGKILL and a restart on a
new port. Each test runs under ``asyncio.run(debug=True)`` and checks no task is left.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

from franz.network.client import KafkaClientConnection
from franz.network.sender import BrokerSender, SenderConfig
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.client import decode_body, encode_body
from franz.protocol.messages import build, request_type
from franz.protocol.records import iter_batches
from tests.support.broker import BrokerProcess
from tests.support.wire import batch, fetch_request, produce_request
from tests.unit.network.test_client import run


async def open_connection(broker: BrokerProcess, **options: Any) -> KafkaClientConnection:
    return await KafkaClientConnection.connect(broker.host, broker.port, **options)


def metadata_request(topics: list[str] | None = None) -> Any:
    return build(
        request_type(ApiKey.METADATA, 12),
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": True,
        },
    )


def create_topic_request(name: str, partitions: int) -> Any:
    return build(
        request_type(ApiKey.CREATE_TOPICS, 7),
        {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
            "timeout": 30000,
        },
    )


def test_api_versions_negotiation(broker: BrokerProcess) -> None:
    async def test() -> None:
        conn = await open_connection(broker)
        assert conn.api_versions is not None
        for api_key, support in SUPPORTED_APIS.items():
            assert conn.api_versions[api_key] == (support.min_advertised, support.max_version)
        assert conn.version_for(ApiKey.FETCH, 17) == 17
        assert conn.version_for(ApiKey.FETCH, 12) == 12
        assert conn.version_for(ApiKey.METADATA, 99) == 12
        conn.close()
        await conn.wait_closed()

    run(test)


def test_pipelined_metadata_requests(broker: BrokerProcess) -> None:
    async def test() -> None:
        conn = await open_connection(broker, max_in_flight=5)
        responses = await asyncio.gather(*(conn.send(metadata_request()) for _ in range(20)))
        assert {r.controller_id for r in responses} == {0}
        assert all([b.node_id for b in r.brokers] == [0] for r in responses)
        conn.close()
        await conn.wait_closed()

    run(test)


def test_produce_then_fetch_returns_the_batches_as_produced(broker: BrokerProcess) -> None:
    first = bytes(batch((b"k1", b"v1"), (None, b"v2")))
    second = bytes(batch((b"k3", b"x" * 1000)))

    async def test() -> None:
        conn = await open_connection(broker)
        created = await conn.send(create_topic_request("opaque", 1))
        assert created.topics[0].error_code == 0, created
        for records in (first, second):
            produced = await conn.send(produce_request({("opaque", 0): records}, acks=-1))
            assert produced.responses[0].partition_responses[0].error_code == 0, produced
        assert await conn.send(produce_request({("opaque", 0): batch((None, b"z"))}, acks=0)) is (
            None
        )
        fetched = await conn.fetch(fetch_request({("opaque", 0): 0}, max_wait_ms=0))
        (topic,) = fetched.responses
        (partition,) = topic.partitions
        assert topic.name == "opaque"
        assert partition.error_code == 0
        assert isinstance(partition.records, memoryview)
        records = partition.records
        batches = [
            bytes(records[b.position : b.position + 12 + b.batch_length])
            for b in iter_batches(records)
        ]
        assert len(batches) == 3
        # The broker patched baseOffset and partitionLeaderEpoch (outside the CRC); every
        # byte from the magic on, CRC included, is what was produced.
        for got, sent, base_offset in zip(batches, (first, second), (0, 2), strict=False):
            assert got[17:] == sent[17:]
            assert struct.unpack_from(">q", got)[0] == base_offset
        # The version a Kafka 3.9 follower sends (v17, topics by id) returns the same bytes.
        metadata = await conn.send(metadata_request(["opaque"]))
        topic_id = metadata.topics[0].topic_id
        version = conn.version_for(ApiKey.FETCH, 17)
        by_id = await conn.fetch(fetch_by_id_request(version, topic_id))
        (topic17,) = by_id.responses
        assert (version, topic17.topic_id, topic17.name) == (17, topic_id, "")
        assert bytes(topic17.partitions[0].records) == bytes(records)
        conn.close()
        await conn.wait_closed()

    run(test)


def fetch_by_id_request(version: int, topic_id: Any) -> Any:
    return build(
        request_type(ApiKey.FETCH, version),
        {
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
        },
    )


def test_sender_retries_across_a_killed_broker_restarted_on_a_new_port(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "b").start()
    body = encode_body(metadata_request())
    config = SenderConfig(
        request_timeout=2.0, connect_timeout=2.0, reconnect_backoff=0.05, reconnect_backoff_max=0.2
    )

    async def test() -> None:
        sender = BrokerSender(0, broker.host, broker.port, config)
        sender.start()
        answer = await asyncio.wait_for(sender.enqueue(ApiKey.METADATA, 12, body), 30)
        assert decode_body(ApiKey.METADATA, 12, answer.body).controller_id == 0
        broker.kill()
        pending = sender.enqueue(ApiKey.METADATA, 12, body)
        await asyncio.sleep(0.5)
        assert not pending.done()
        assert sender.failed_attempts >= 1
        await asyncio.to_thread(broker.start)
        sender.update_address(broker.host, broker.port)
        answer = await asyncio.wait_for(pending, 30)
        assert decode_body(ApiKey.METADATA, 12, answer.body).brokers[0].port == broker.port
        await sender.close()

    try:
        run(test)
    finally:
        assert broker.stop() == 0, broker.output()
