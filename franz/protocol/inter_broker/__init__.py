"""Kafka 3.9's ZooKeeper-era inter-broker APIs, as kio-style entities for kio's codec.

kio 0.6 is generated from Kafka 4's schemas, which removed these APIs (KIP-500): so their
classes are generated here, by ``tools/gen_inter_broker.py``, from Kafka 3.9's JSON schemas,
one module per API and version (``leader_and_isr/v7.py`` holds ``LeaderAndIsrRequest`` and
``LeaderAndIsrResponse`` with their nested structs). kio's generic ``entity_reader`` /
``entity_writer`` encode and decode them byte for byte as Kafka's generated code does.

=====================  ===  ========  ========  ==========================================
API                    key  versions  flexible  version changes (request)
=====================  ===  ========  ========  ==========================================
LeaderAndIsr           4    0-7       4+        v1 is_new; v2 broker_epoch, partitions
                                                grouped in ``topic_states`` (v0-1:
                                                ``ungrouped_partition_states`` carrying
                                                ``topic_name``); v3 adding/removing
                                                replicas; v5 ``type``, ``topic_id``;
                                                v6 leader_recovery_state (KIP-704);
                                                v7 is_k_raft_controller (KIP-866)
StopReplica            5    0-4       2+        v1 broker_epoch, ``topics`` (name,
                                                partition_indexes); v0
                                                ``ungrouped_partitions``; v0-2
                                                ``delete_partitions`` for all; v3
                                                ``topic_states`` with per-partition
                                                leader_epoch and delete_partition
                                                (KIP-570); v4 is_k_raft_controller
UpdateMetadata         6    0-8       6+        v0 v0_host/v0_port, v1+ endpoints; v2
                                                rack; v3 listener; v4 offline_replicas;
                                                v5 broker_epoch, ``topic_states`` (v0-4
                                                ``ungrouped_partition_states``); v7
                                                topic_id; v8 is_k_raft_controller
ControlledShutdown     7    0-3       3+        v2 broker_epoch; v0 uses request header
                                                v0 (no client id)
AlterPartition         56   0-3       0+        v1 leader_recovery_state (KIP-704); v2
                                                ``topic_id`` instead of ``topic_name``
                                                (KIP-841); v3 ``new_isr_with_epochs``
                                                instead of ``new_isr`` (KIP-903)
=====================  ===  ========  ========  ==========================================

Responses: LeaderAndIsr v0-4 list ``partition_errors`` with topic names, v5+ ``topics`` by
topic id; StopReplica lists ``partition_errors``; UpdateMetadata has only ``error_code``;
ControlledShutdown lists ``remaining_partitions``; AlterPartition lists ``topics`` by name
(v0-1) or id (v2+), their nested classes named ``ResponseTopicData`` /
``ResponsePartitionData`` (the request's share the names ``TopicData`` / ``PartitionData``).

AlterPartition is in Kafka 4 (and kio) too, from v2; all four versions are generated here
from Kafka 3.9's schemas, so that one family of classes serves them.

Representation (kio's): a ``uuid`` field is ``uuid.UUID | None`` and the zero UUID (Kafka's
``Uuid.ZERO_UUID``, "no topic id") decodes as ``None``; error codes are kio's ``ErrorCode``.
Request classes carry kio's request header v1/v2 as ``__header_schema__`` (kio has no v0);
``franz.protocol.headers`` special-cases ControlledShutdown v0, as Kafka's
``ApiKeys.requestHeaderVersion`` does.

A broker in cluster mode serves and advertises every version of these APIs
(``franz.broker.handlers``; the older LeaderAndIsr, StopReplica and UpdateMetadata versions
are read as the newest by ``franz.controller.old_versions``). The classes are reachable
through ``franz.protocol.messages.request_type`` / ``response_type`` like kio's own.
"""

from __future__ import annotations

from typing import Any

from franz.protocol.inter_broker._index import REQUESTS, RESPONSES, VERSIONS

__all__ = ["REQUESTS", "RESPONSES", "VERSIONS", "request_class", "response_class"]


def request_class(api_key: int, version: int) -> type[Any] | None:
    """The generated request class, or ``None`` for an API/version not generated here."""
    return REQUESTS.get((api_key, version))


def response_class(api_key: int, version: int) -> type[Any] | None:
    return RESPONSES.get((api_key, version))
