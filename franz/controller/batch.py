"""The controller's request batch: LeaderAndIsr, UpdateMetadata and StopReplica accumulated per
destination broker, then built into one request of each kind per broker (Kafka 3.9's
``AbstractControllerBrokerRequestBatch`` in ``ControllerChannelManager.scala``).

Rules (Kafka's):

* ``new_batch`` refuses to start while a previous batch is unsent (Kafka's
  ``IllegalStateException``: "... batch is not empty while creating a new one").
* Broker ids < 0 are ignored. A partition added twice for one broker keeps the latest state,
  but ``isNew`` (LeaderAndIsr) and ``deletePartition`` (StopReplica) stick once set.
* Every LeaderAndIsr addition also adds an UpdateMetadata for that partition to every live or
  shutting-down broker: all brokers learn of every leader change.
* UpdateMetadata partition states are read from the context when added: a topic queued for
  deletion is announced with leader -2 (``LeaderAndIsr.duringDelete``), offline replicas are
  the assigned replicas not online, a partition with no leader yet is skipped. Every broker in
  the set gets the same partition states and the full list of live-or-shutting-down brokers.
* StopReplica's leader epoch is the context's ``leader_epoch`` (-2 for a topic being deleted).
* ``send_requests_to_brokers`` builds LeaderAndIsr first, then UpdateMetadata, then
  StopReplica (Kafka's order), only for brokers still live or shutting down, each stamped with
  that broker's epoch; it empties the batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from franz.controller.context import ControllerContext
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from franz.controller.states import AddLeaderAndIsr, AddStopReplica, AddUpdateMetadata, Output

__all__ = ["ControlRequest", "ControllerBrokerRequestBatch"]

ControlRequestBody = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclass(frozen=True, slots=True)
class ControlRequest:
    """One request for the channel to send to ``broker_id``."""

    broker_id: int
    request: ControlRequestBody


class ControllerBrokerRequestBatch:
    """Kafka's ``ControllerBrokerRequestBatch`` without the sending: it returns requests.

    Owned by the controller's event task, like the context it reads.
    """

    def __init__(self, controller_id: int, *, inter_broker_listener: str = "PLAINTEXT") -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self.leader_and_isr_request_map: dict[
            int, dict[TopicPartition, LeaderAndIsrPartitionState]
        ] = {}
        self.stop_replica_request_map: dict[
            int, dict[TopicPartition, StopReplicaPartitionState]
        ] = {}
        self.update_metadata_request_broker_set: set[int] = set()
        self.update_metadata_request_partition_info_map: dict[
            TopicPartition, UpdateMetadataPartitionState
        ] = {}
        self._ctx: ControllerContext | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def new_batch(self, ctx: ControllerContext) -> None:
        if self.leader_and_isr_request_map:
            raise RuntimeError(
                "Controller to broker state change requests batch is not empty while creating "
                f"a new one. Some LeaderAndIsr state changes {self.leader_and_isr_request_map} "
                "might be lost "
            )
        if self.stop_replica_request_map:
            raise RuntimeError(
                "Controller to broker state change requests batch is not empty while creating "
                f"a new one. Some StopReplica state changes {self.stop_replica_request_map} "
                "might be lost "
            )
        if self.update_metadata_request_broker_set:
            raise RuntimeError(
                "Controller to broker state change requests batch is not empty while creating "
                "a new one. Some UpdateMetadata state changes to brokers "
                f"{self.update_metadata_request_broker_set} might be lost "
            )
        self._ctx = ctx

    def clear(self) -> None:
        self.leader_and_isr_request_map.clear()
        self.stop_replica_request_map.clear()
        self.update_metadata_request_broker_set.clear()
        self.update_metadata_request_partition_info_map.clear()
        self._ctx = None

    @property
    def ctx(self) -> ControllerContext:
        if self._ctx is None:
            raise RuntimeError("new_batch(ctx) first")
        return self._ctx

    # -- accumulating -----------------------------------------------------------------------

    def add(self, outputs: Iterable[Output]) -> None:
        """Feed a ``StateChange``'s request outputs (znode writes are ignored)."""
        ctx = self.ctx
        for out in outputs:
            if isinstance(out, AddLeaderAndIsr):
                tp = out.topic_partition
                self.add_leader_and_isr_request_for_brokers(
                    out.broker_ids,
                    tp,
                    ctx.partition_leadership_info[tp],
                    ctx.partition_full_replica_assignment(tp),
                    is_new=out.is_new,
                )
            elif isinstance(out, AddStopReplica):
                self.add_stop_replica_request_for_brokers(
                    out.broker_ids, out.topic_partition, delete_partition=out.delete_partition
                )
            elif isinstance(out, AddUpdateMetadata):
                self.add_update_metadata_request_for_brokers(out.broker_ids, out.partitions)

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch,
        replica_assignment: ReplicaAssignment,
        *,
        is_new: bool,
    ) -> None:
        lai = leader_isr_and_controller_epoch.leader_and_isr
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.leader_and_isr_request_map.setdefault(broker_id, {})
            already_new = tp in per_broker and per_broker[tp].is_new
            per_broker[tp] = LeaderAndIsrPartitionState(
                partition_index=tp.partition,
                controller_epoch=leader_isr_and_controller_epoch.controller_epoch,
                leader=lai.leader,
                leader_epoch=lai.leader_epoch,
                isr=lai.isr,
                partition_epoch=lai.partition_epoch,
                replicas=replica_assignment.replicas,
                adding_replicas=replica_assignment.adding_replicas,
                removing_replicas=replica_assignment.removing_replicas,
                is_new=is_new or already_new,
                leader_recovery_state=int(lai.leader_recovery_state),
            )
        self.add_update_metadata_request_for_brokers(
            sorted(self.ctx.live_or_shutting_down_broker_ids), {tp}
        )

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], tp: TopicPartition, *, delete_partition: bool
    ) -> None:
        leader_epoch = self.ctx.leader_epoch(tp)
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.stop_replica_request_map.setdefault(broker_id, {})
            already_delete = tp in per_broker and per_broker[tp].delete_partition
            per_broker[tp] = StopReplicaPartitionState(
                partition_index=tp.partition,
                leader_epoch=leader_epoch,
                delete_partition=already_delete or delete_partition,
            )

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """UpdateMetadata for ``partitions`` to ``broker_ids`` (no partitions: the brokers
        still get an UpdateMetadata, with the live-broker list)."""
        ctx = self.ctx
        self.update_metadata_request_broker_set.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            info = ctx.partition_leadership_info.get(tp)
            if info is None:
                continue  # "Leader not yet assigned for partition ..."
            replicas = ctx.partition_replica_assignment(tp)
            lai = info.leader_and_isr
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                lai = LeaderAndIsr.during_delete(lai.isr)
            self.update_metadata_request_partition_info_map[tp] = UpdateMetadataPartitionState(
                partition_index=tp.partition,
                controller_epoch=info.controller_epoch,
                leader=lai.leader,
                leader_epoch=lai.leader_epoch,
                isr=lai.isr,
                zk_version=lai.partition_epoch,
                replicas=replicas,
                offline_replicas=tuple(r for r in replicas if not ctx.is_replica_online(r, tp)),
            )

    # -- building ---------------------------------------------------------------------------

    def send_requests_to_brokers(self, controller_epoch: int) -> list[ControlRequest]:
        """Kafka's ``sendRequestsToBrokers``: the requests to send, per broker; clears."""
        ctx = self.ctx
        out = [
            *self._leader_and_isr_requests(ctx, controller_epoch),
            *self._update_metadata_requests(ctx, controller_epoch),
            *self._stop_replica_requests(ctx, controller_epoch),
        ]
        self.clear()
        return out

    def _leader_and_isr_requests(
        self, ctx: ControllerContext, controller_epoch: int
    ) -> list[ControlRequest]:
        out: list[ControlRequest] = []
        live = ctx.live_brokers
        for broker_id, states in self.leader_and_isr_request_map.items():
            if broker_id not in live:
                continue
            leader_ids = {s.leader for s in states.values()}
            leaders = []
            for b in sorted(leader_ids):
                broker = live.get(b)
                if broker is None:
                    continue
                ep = next(
                    (e for e in broker.endpoints if e.listener == self.inter_broker_listener),
                    None,
                )
                if ep is not None:
                    leaders.append(
                        LeaderAndIsrLiveLeader(broker_id=b, host_name=ep.host, port=ep.port)
                    )
            by_topic: dict[str, list[LeaderAndIsrPartitionState]] = {}
            for tp, state in states.items():
                by_topic.setdefault(tp.topic, []).append(state)
            topic_states = tuple(
                LeaderAndIsrTopicState(
                    topic_name=topic,
                    topic_id=ctx.topic_ids.get(topic, ZERO_UUID),
                    partition_states=tuple(ps),
                )
                for topic, ps in by_topic.items()
            )
            request = LeaderAndIsrRequest(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=live[broker_id].epoch,
                topic_states=topic_states,
                live_leaders=tuple(leaders),
            )
            out.append(ControlRequest(broker_id, request))
        return out

    def _update_metadata_requests(
        self, ctx: ControllerContext, controller_epoch: int
    ) -> list[ControlRequest]:
        live_brokers = tuple(
            UpdateMetadataBroker(
                id=b.id,
                endpoints=tuple(
                    UpdateMetadataEndpoint(
                        port=e.port,
                        host=e.host,
                        listener=e.listener,
                        security_protocol=e.security_protocol,
                    )
                    for e in b.endpoints
                ),
                rack=b.rack,
            )
            for b in ctx.live_brokers.values()
        )
        by_topic: dict[str, list[UpdateMetadataPartitionState]] = {}
        for tp, state in self.update_metadata_request_partition_info_map.items():
            by_topic.setdefault(tp.topic, []).append(state)
        topic_states = tuple(
            UpdateMetadataTopicState(
                topic_name=topic,
                topic_id=ctx.topic_ids.get(topic, ZERO_UUID),
                partition_states=tuple(ps),
            )
            for topic, ps in by_topic.items()
        )
        template = UpdateMetadataRequest(
            controller_id=self.controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=-1,
            topic_states=topic_states,
            live_brokers=live_brokers,
        )
        return [
            ControlRequest(b, replace(template, broker_epoch=ctx.live_brokers[b].epoch))
            for b in sorted(self.update_metadata_request_broker_set)
            if b in ctx.live_brokers
        ]

    def _stop_replica_requests(
        self, ctx: ControllerContext, controller_epoch: int
    ) -> list[ControlRequest]:
        out: list[ControlRequest] = []
        for broker_id, states in self.stop_replica_request_map.items():
            if broker_id not in ctx.live_brokers:
                continue
            by_topic: dict[str, list[StopReplicaPartitionState]] = {}
            for tp, state in states.items():
                by_topic.setdefault(tp.topic, []).append(state)
            request = StopReplicaRequest(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=ctx.live_brokers[broker_id].epoch,
                topic_states=tuple(
                    StopReplicaTopicState(topic_name=t, partition_states=tuple(ps))
                    for t, ps in by_topic.items()
                ),
            )
            out.append(ControlRequest(broker_id, request))
        return out
