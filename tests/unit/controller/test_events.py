"""The controller's events (franz.controller.events): Kafka's ControllerEvent list as values."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from franz.controller import events
from franz.controller.events import ControlledShutdown, ControllerEvent, ReplicaLeaderElection
from franz.controller.model import TopicPartition

# KafkaController.scala (3.9): the ControllerEvent case objects/classes, minus UpdateFeatures,
# MockEvent and ShutdownEventThread (see the module docstring).
KAFKA_EVENTS = {
    "Startup", "ControllerChange", "Reelect", "RegisterBrokerAndReelect", "Expire",
    "BrokerChange", "BrokerModifications", "ControlledShutdown", "LogDirEventNotification",
    "TopicChange", "PartitionModifications", "TopicDeletion",
    "TopicDeletionStopReplicaResponseReceived", "UncleanLeaderElectionEnable",
    "TopicUncleanLeaderElectionEnable", "IsrChangeNotification", "AlterPartitionReceived",
    "ReplicaLeaderElection", "AutoPreferredReplicaLeaderElection",
    "LeaderAndIsrResponseReceived", "UpdateMetadataResponseReceived", "ZkPartitionReassignment",
    "ApiPartitionReassignment", "PartitionReassignmentIsrChange", "ListPartitionReassignments",
    "AllocateProducerIds",
}  # fmt: skip

EVENT_TYPES = typing.get_args(ControllerEvent)


def test_the_union_is_kafkas_event_list():
    assert {t.__name__ for t in EVENT_TYPES} == KAFKA_EVENTS


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
def test_each_event_is_frozen_and_names_its_kafka_event(event_type):
    params = dataclasses.fields(event_type)
    assert event_type.__dataclass_params__.frozen
    assert f"``{event_type.__name__}``" in (event_type.__doc__ or "")
    assert all(f.name != "reply" or not f.compare for f in params)


def test_reply_handle_is_not_part_of_the_value():
    assert ControlledShutdown(1, 7, reply=object()) == ControlledShutdown(1, 7)
    election = ReplicaLeaderElection(frozenset({TopicPartition("t", 0)}))
    assert election.election_type is events.ElectionType.PREFERRED
    assert election.election_trigger is events.ElectionTrigger.ZK_TRIGGERED
    assert hash(election) == hash(ReplicaLeaderElection(frozenset({TopicPartition("t", 0)})))
