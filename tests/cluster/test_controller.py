"""The controller's I/O shell against a real ZooKeeper and real TCP peers on loopback.

Brokers are ``ControlPeer``s (``tests/support/control_peer.py``): servers that register in
``/brokers/ids`` as brokers do and decode the controller's requests with ``franz.protocol``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")

from franz.controller.requests import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.znodes import (
    BrokerIdZNode,
    ControllerEpochZNode,
    IsrChangeNotificationSequenceZNode,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicZNode,
)
from franz.metadata.zookeeper import NoNodeZkError, ZooKeeperClient, ZooKeeperConfig
from tests.support.control_peer import SESSION_MS, ControlPeer


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout_s: float = 10.0) -> None:
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


class Cluster:
    """Peers and an admin ZooKeeper client, stopped in reverse order."""

    def __init__(self, zk_connect: str) -> None:
        self.zk_connect = zk_connect
        self.peers: dict[int, ControlPeer] = {}
        self.admin: KafkaZkClient | None = None

    async def __aenter__(self) -> Cluster:
        zk = ZooKeeperClient(ZooKeeperConfig(self.zk_connect, session_timeout_ms=SESSION_MS))
        await zk.start()
        self.admin = KafkaZkClient(zk)
        await self.admin.ensure_persistent_paths()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for peer in reversed(list(self.peers.values())):
            await peer.stop()
        if self.admin is not None:
            await self.admin.zk.close()

    async def broker(self, broker_id: int, *, controller: bool = False) -> ControlPeer:
        peer = await ControlPeer(broker_id, self.zk_connect, with_controller=controller).start()
        self.peers[broker_id] = peer
        return peer

    @property
    def zk(self) -> KafkaZkClient:
        assert self.admin is not None
        return self.admin

    async def create_topic(self, topic: str, partitions: dict[int, list[int]]) -> uuid.UUID:
        topic_id = uuid.uuid4()
        await self.zk.create_topic_znode(topic, TopicAssignment(topic_id, partitions), {})
        return topic_id

    async def state_json(self, topic: str, partition: int) -> dict[str, Any] | None:
        found = await self.zk.zk.get_or_none(TopicPartitionStateZNode.path(topic, partition))
        return None if found is None else dict(json.loads(found[0]))

    async def czxid(self, broker_id: int) -> int:
        stat = await self.zk.zk.exists(BrokerIdZNode.path(broker_id))
        assert stat is not None
        return stat.czxid


def _active(peer: ControlPeer) -> bool:
    return peer.controller is not None and peer.controller.is_active


def test_failover_sends_update_metadata_and_leader_and_isr_and_elects_offline_partitions(
    zk_connect: str,
) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            for b in (1, 2, 3):
                await c.broker(b)
            topic_id = await c.create_topic("t", {0: [1, 2], 1: [4, 3]})
            # States as a previous controller (epoch 0) left them; broker 4 is gone.
            await c.zk.zk.ensure_path(f"{TopicZNode.partitions_path('t')}/0")
            await c.zk.zk.ensure_path(f"{TopicZNode.partitions_path('t')}/1")
            await c.zk.zk.create(
                TopicPartitionStateZNode.path("t", 0),
                TopicPartitionStateZNode.encode(PartitionState(1, 3, (1, 2), 0)),
            )
            await c.zk.zk.create(
                TopicPartitionStateZNode.path("t", 1),
                TopicPartitionStateZNode.encode(PartitionState(4, 5, (4, 3), 0)),
            )
            ctl = await c.broker(0, controller=True)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None and ctl.controller.epoch is not None
            epoch = ctl.controller.epoch.epoch

            # Broker 4's replica goes offline (leader -1, ISR [3], leader epoch 6), then the
            # offline partition gets broker 3 as leader (epoch 7), written with this epoch.
            async def elected() -> bool:
                return await c.state_json("t", 1) == {
                    "controller_epoch": epoch,
                    "leader": 3,
                    "version": 1,
                    "leader_epoch": 7,
                    "isr": [3],
                }

            await eventually(elected)
            await eventually(
                lambda: any(p.leader == 3 for _, p in c.peers[3].leader_and_isr_states("t"))
            )
            for b in (0, 1, 2, 3):
                peer = c.peers[b]
                await eventually(lambda peer=peer: bool(peer.requests(UpdateMetadataRequest)))
                first = peer.received[0].request
                assert isinstance(first, UpdateMetadataRequest)  # before any LeaderAndIsr
                assert (first.controller_id, first.controller_epoch) == (0, epoch)
                assert first.broker_epoch == await c.czxid(b)
                assert {br.id for br in first.live_brokers} == {0, 1, 2, 3}
                assert peer.received[0].api_version == 8
            lai = c.peers[1].leader_and_isr_states("t")
            request, state = lai[0]
            assert (request.controller_id, request.controller_epoch) == (0, epoch)
            assert request.broker_epoch == await c.czxid(1)
            assert c.peers[1].received[1].api_version == 7
            assert (state.partition_index, state.leader, state.isr, state.replicas) == (
                0,
                1,
                (1, 2),
                (1, 2),
            )
            assert (state.leader_epoch, state.is_new, state.controller_epoch) == (3, False, 0)
            assert request.topic_states[0].topic_id == topic_id
            new_leader = [p for _, p in c.peers[3].leader_and_isr_states("t") if p.leader == 3]
            assert (new_leader[-1].leader_epoch, new_leader[-1].isr) == (7, (3,))
            assert new_leader[-1].partition_epoch == 2  # the state znode's version

    run(main())


def test_new_topic_gets_kafka_state_znodes_and_leader_and_isr_is_new(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            ctl = await c.broker(0, controller=True)
            for b in (1, 2, 3):
                await c.broker(b)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None
            await eventually(
                lambda: ctl.controller is not None and len(ctl.controller.ctx.live_brokers) == 4
            )
            epoch = ctl.controller.ctx.epoch
            topic_id = await c.create_topic("orders", {0: [1, 2], 1: [2, 3]})

            async def states_written() -> bool:
                return await c.state_json("orders", 1) is not None

            await eventually(states_written)
            raw = await c.zk.zk.get(TopicPartitionStateZNode.path("orders", 0))
            assert raw[0] == (
                b'{"controller_epoch":%d,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
                % epoch
            )
            assert raw[1].version == 0
            await eventually(lambda: bool(c.peers[3].leader_and_isr_states("orders")))
            for b, partitions in ((1, {0}), (2, {0, 1}), (3, {1})):
                states = c.peers[b].leader_and_isr_states("orders")
                assert {p.partition_index for _, p in states} == partitions
                for request, p in states:
                    assert request.topic_states[0].topic_id == topic_id
                    assert p.is_new and p.leader_epoch == 0 and p.partition_epoch == 0
                    assert p.controller_epoch == epoch
                    assert p.leader == (1 if p.partition_index == 0 else 2)
            # Every broker learns the new leaders through UpdateMetadata.
            await eventually(
                lambda: any(
                    t.topic_name == "orders"
                    for r in c.peers[0].requests(UpdateMetadataRequest)
                    for t in r.topic_states  # type: ignore[union-attr]
                )
            )

    run(main())


def test_broker_failure_moves_leadership_to_the_isr_and_shrinks_isrs(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            ctl = await c.broker(0, controller=True)
            for b in (1, 2, 3):
                await c.broker(b)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None
            await eventually(
                lambda: ctl.controller is not None and len(ctl.controller.ctx.live_brokers) == 4
            )
            await c.create_topic("t", {0: [1, 2, 3], 1: [2, 1]})

            async def created() -> bool:
                return await c.state_json("t", 1) is not None

            await eventually(created)
            before = len(c.peers[2].received)
            peer1 = c.peers.pop(1)
            await peer1.stop()  # its session closes: /brokers/ids/1 disappears

            async def moved() -> bool:
                s0, s1 = await c.state_json("t", 0), await c.state_json("t", 1)
                return (
                    s0 is not None
                    and s0["leader"] == 2
                    and s0["isr"] == [2, 3]
                    and s1 is not None
                    and s1["isr"] == [2]
                )

            await eventually(moved)
            s0, s1 = await c.state_json("t", 0), await c.state_json("t", 1)
            assert s0 is not None and s1 is not None
            assert s0["leader_epoch"] == 1 and s1["leader_epoch"] == 1 and s1["leader"] == 2

            def new_leader_told() -> bool:
                return any(
                    p.partition_index == 0 and p.leader == 2 and p.leader_epoch == 1
                    for r in c.peers[2].received[before:]
                    if isinstance(r.request, LeaderAndIsrRequest)
                    for t in r.request.topic_states
                    for p in t.partition_states
                )

            await eventually(new_leader_told)
            live = c.peers[3].requests(UpdateMetadataRequest)[-1]
            assert isinstance(live, UpdateMetadataRequest)
            assert {b.id for b in live.live_brokers} == {0, 2, 3}

    run(main())


def test_topic_marked_for_deletion_gets_stop_replica_and_its_znodes_removed(
    zk_connect: str,
) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            ctl = await c.broker(0, controller=True)
            for b in (1, 2):
                await c.broker(b)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None
            await eventually(
                lambda: ctl.controller is not None and len(ctl.controller.ctx.live_brokers) == 3
            )
            await c.create_topic("doomed", {0: [1, 2]})

            async def created() -> bool:
                return await c.state_json("doomed", 0) is not None

            await eventually(created)
            await c.zk.mark_topic_for_deletion("doomed")

            async def gone() -> bool:
                return (
                    await c.zk.zk.exists(TopicZNode.path("doomed")) is None
                    and await c.zk.zk.exists("/config/topics/doomed") is None
                    and await c.zk.zk.exists("/admin/delete_topics/doomed") is None
                )

            await eventually(gone)
            for b in (1, 2):
                deletes = [
                    (r.controller_epoch, p)
                    for r in c.peers[b].requests(StopReplicaRequest)
                    for t in r.topic_states  # type: ignore[union-attr]
                    if t.topic_name == "doomed"
                    for p in t.partition_states
                ]
                assert any(p.delete_partition and p.leader_epoch == -2 for _, p in deletes)
            # Brokers were told the partition has leader -2 (LeaderAndIsr.duringDelete).
            assert any(
                p.leader == -2
                for r in c.peers[1].requests(UpdateMetadataRequest)
                for t in r.topic_states  # type: ignore[union-attr]
                if t.topic_name == "doomed"
                for p in t.partition_states
            )
            assert "doomed" not in ctl.controller.ctx.all_topics
            with pytest.raises(NoNodeZkError):
                await c.zk.zk.get(TopicZNode.path("doomed"))

    run(main())


def test_expired_controller_stops_and_the_other_takes_over_with_the_next_epoch(
    zk_connect: str,
) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            a = await c.broker(0, controller=True)
            await eventually(lambda: _active(a))
            b = await c.broker(1, controller=True)
            await c.broker(2)
            await c.create_topic("t", {0: [1, 2]})

            async def created() -> bool:
                return await c.state_json("t", 0) is not None

            await eventually(created)
            assert a.controller is not None and b.controller is not None
            assert not b.controller.is_active
            old = a.controller.ctx.epoch
            # A is idle: broker 2 has A's LeaderAndIsr for t-0, nothing is in flight.
            await eventually(lambda: bool(c.peers[2].leader_and_isr_states("t")))
            await asyncio.sleep(0.2)
            await asyncio.to_thread(a.expire_session)
            await eventually(lambda: not a.controller.is_active)  # type: ignore[union-attr]
            expired_at = time.monotonic()
            await eventually(lambda: _active(b))
            assert b.controller.epoch is not None and b.controller.epoch.epoch == old + 1

            def resent() -> bool:
                return any(
                    isinstance(r.request, LeaderAndIsrRequest)
                    and r.request.controller_epoch == old + 1
                    and r.request.controller_id == 1
                    for r in c.peers[2].received
                )

            await eventually(resent)
            await asyncio.sleep(0.3)
            for peer in c.peers.values():
                late = [r.request for r in peer.received if r.at > expired_at]
                assert all((x.controller_id, x.controller_epoch) == (1, old + 1) for x in late), (
                    late
                )
            found = await c.zk.get_controller_epoch()
            assert found is not None and found.epoch == old + 1

    run(main())


def test_a_controller_whose_epoch_moved_is_fenced_and_resigns(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            ctl = await c.broker(0, controller=True)
            await c.broker(1)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None
            await eventually(
                lambda: ctl.controller is not None and len(ctl.controller.ctx.live_brokers) == 2
            )
            epoch = ctl.controller.ctx.epoch
            # Another controller bumped the epoch (what its election multi-op does).
            await c.zk.zk.set(ControllerEpochZNode.path, ControllerEpochZNode.encode(epoch + 1))
            await c.create_topic("late", {0: [1]})
            await eventually(lambda: not ctl.controller.is_active)  # type: ignore[union-attr]
            assert await c.zk.zk.exists(TopicPartitionStateZNode.path("late", 0)) is None
            await asyncio.sleep(0.2)
            assert not c.peers[1].leader_and_isr_states("late")

    run(main())


def test_partitions_added_to_a_topic_and_isr_change_notifications(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect) as c:
            ctl = await c.broker(0, controller=True)
            for b in (1, 2):
                await c.broker(b)
            await eventually(lambda: _active(ctl))
            assert ctl.controller is not None
            await eventually(
                lambda: ctl.controller is not None and len(ctl.controller.ctx.live_brokers) == 3
            )
            topic_id = await c.create_topic("grow", {0: [1, 2]})

            async def has_state(p: int) -> bool:
                return await c.state_json("grow", p) is not None

            await eventually(lambda: has_state(0))
            # CreatePartitions in ZooKeeper mode rewrites the topic znode.
            await c.zk.set_topic_assignment(
                "grow", TopicAssignment(topic_id, {0: [1, 2], 1: [2, 1]})
            )
            await eventually(lambda: has_state(1))
            assert await c.state_json("grow", 1) == {
                "controller_epoch": ctl.controller.ctx.epoch,
                "leader": 2,
                "version": 1,
                "leader_epoch": 0,
                "isr": [2, 1],
            }
            await eventually(
                lambda: any(
                    p.partition_index == 1 and p.is_new
                    for _, p in c.peers[1].leader_and_isr_states("grow")
                )
            )
            # A leader shrank the ISR itself and left a notification (pre-AlterPartition).
            state = await c.zk.zk.get(TopicPartitionStateZNode.path("grow", 0))
            await c.zk.zk.set(
                TopicPartitionStateZNode.path("grow", 0),
                TopicPartitionStateZNode.encode(PartitionState(1, 0, (1,), 1)),
                state[1].version,
            )
            before = len(c.peers[2].received)
            await c.zk.zk.create(
                IsrChangeNotificationSequenceZNode.create_path,
                IsrChangeNotificationSequenceZNode.encode([("grow", 0)]),
                sequence=True,
            )

            def told() -> bool:
                return any(
                    p.partition_index == 0 and p.isr == (1,)
                    for r in c.peers[2].received[before:]
                    if isinstance(r.request, UpdateMetadataRequest)
                    for t in r.request.topic_states
                    for p in t.partition_states
                )

            await eventually(told)

            async def consumed() -> bool:
                return not await c.zk.zk.get_children("/isr_change_notification")

            await eventually(consumed)

    run(main())
