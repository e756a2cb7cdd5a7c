"""What ``franz get-offsets``, ``delete-records``, ``leader-election`` and
``reassign-partitions`` share: a confluent-kafka ``AdminClient`` that fails in one line,
cluster metadata (topics, partitions, replicas, brokers) and Kafka's topic-partition text.

Every call waits at most ``--timeout`` ms. A cluster that does not answer within it is a
``ToolError`` naming the bootstrap server (librdkafka's ``_TRANSPORT`` / ``_TIMED_OUT``:
no broker reachable there). ``TopicPartition.toString`` in Kafka is ``<topic>-<partition>``.

Internal topics are Kafka's ``Topic.isInternal``: ``__consumer_offsets`` and
``__transaction_state`` (confluent-kafka's Metadata result does not carry the flag).
"""

from __future__ import annotations

import argparse
import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from franz.admin.options import ToolError, client_config
from franz.errors import ErrorCode

__all__ = [
    "INTERNAL_TOPICS",
    "ClusterView",
    "PartitionView",
    "java_error_text",
    "kafka_error_of",
    "kafka_error_text",
    "make_admin",
    "read_cluster",
    "tp_name",
    "unreachable",
    "wait",
]

INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
_UNREACHABLE: Final = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT})


def tp_name(topic: str, partition: int) -> str:
    """Kafka's ``TopicPartition.toString``."""
    return f"{topic}-{partition}"


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterView:
    """Brokers and partitions as one Metadata response showed them."""

    brokers: frozenset[int]
    partitions: dict[str, dict[int, PartitionView]]

    def topics(self, *, include_internal: bool = True) -> list[str]:
        return sorted(t for t in self.partitions if include_internal or t not in INTERNAL_TOPICS)


#: librdkafka logs every failed connection attempt on stderr; the tools report in one line.
_SILENT = logging.getLogger("franz.admin.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def make_admin(args: argparse.Namespace, extra: dict[str, Any] | None = None) -> AdminClient:
    config = client_config(args, {"logger": _SILENT, **(extra or {})})
    try:
        return AdminClient(config)
    except KafkaException as exc:
        raise ToolError(f"invalid client configuration: {kafka_error_text(exc)}") from None


def unreachable(args: argparse.Namespace) -> ToolError:
    return ToolError(
        f"no broker answered at {args.bootstrap_server} within {args.timeout_ms} ms: check "
        "that the cluster is running and --bootstrap-server is right"
    )


def kafka_error_text(exc: BaseException) -> str:
    """The message of a confluent-kafka error (``KafkaException(KafkaError)``)."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err: KafkaError = exc.args[0]
        return str(err.str())
    return str(exc)


#: Kafka's exception class where it is not the error name in CamelCase + "Exception".
_JAVA_EXCEPTIONS: Final = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "CORRUPT_MESSAGE": "CorruptRecordException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "NETWORK_EXCEPTION": "NetworkException",
}


def java_error_text(exc: BaseException) -> str:
    """How a Java admin client's ``ExecutionException.getMessage()`` shows a broker error:
    ``org.apache.kafka.common.errors.<Exception>: <Kafka's description>``. librdkafka's own
    (negative) codes keep librdkafka's text."""
    err = kafka_error_of(exc)
    if err is None or err.code() < 0:
        return kafka_error_text(exc)
    try:
        code = ErrorCode(err.code())
    except ValueError:
        return kafka_error_text(exc)
    name = _JAVA_EXCEPTIONS.get(code.name) or (
        "".join(part.capitalize() for part in code.name.split("_")) + "Exception"
    )
    return f"org.apache.kafka.common.errors.{name}: {code.message}"


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def wait(future: Future[Any], args: argparse.Namespace) -> Any:
    """A future's result; an unreachable cluster becomes a one-line ``ToolError``."""
    try:
        return future.result(timeout=args.timeout_ms / 1000 + 5)
    except KafkaException as exc:
        err = kafka_error_of(exc)
        if err is not None and err.code() in _UNREACHABLE:
            raise unreachable(args) from None
        raise


def read_cluster(admin: AdminClient, args: argparse.Namespace) -> ClusterView:
    """One Metadata request for all topics (never one naming a topic, which a broker with
    ``auto.create.topics.enable`` would answer by creating it) as a ``ClusterView``."""
    try:
        metadata = admin.list_topics(timeout=args.timeout_ms / 1000)
    except KafkaException as exc:
        err = kafka_error_of(exc)
        if err is not None and err.code() in _UNREACHABLE:
            raise unreachable(args) from None
        raise ToolError(f"Metadata failed: {kafka_error_text(exc)}") from None
    partitions: dict[str, dict[int, PartitionView]] = {}
    for name, topic in metadata.topics.items():
        if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
            continue
        partitions[name] = {
            p.id: PartitionView(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in topic.partitions.values()
        }
    return ClusterView(frozenset(metadata.brokers), partitions)
