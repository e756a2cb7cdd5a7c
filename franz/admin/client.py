"""The confluent-kafka (librdkafka) client helpers every ``franz`` operations tool shares:
quiet clients, the one-line "unreachable" error, KafkaError texts and waiting on futures.

Every call waits at most ``--timeout`` ms (``args.timeout_ms``). A cluster that does not
answer within it is a ``ToolError`` naming the bootstrap server: librdkafka's ``_TRANSPORT``,
``_TIMED_OUT`` and ``_ALL_BROKERS_DOWN`` (``UNREACHABLE_CODES``) mean no broker was reachable
there. librdkafka logs every failed connection attempt on stderr; the tools silence it
(``quiet``: ``log_level`` 2, critical only, unless the client config sets one) and report
what failed in one line.

Kafka's texts: ``TopicPartition.toString`` is ``<topic>-<partition>`` (``tp_name``); a Java
admin client's ``ExecutionException.getMessage()`` shows a broker error as
``org.apache.kafka.common.errors.<Exception>: <Kafka's description>`` (``java_error_text``).
Internal topics are Kafka's ``Topic.isInternal``: ``__consumer_offsets`` and
``__transaction_state`` (confluent-kafka's Metadata result does not carry the flag).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from franz.admin.java_order import hash_order, topic_partition_hash
from franz.admin.options import ToolError, client_config
from franz.errors import ErrorCode

__all__ = [
    "INTERNAL_TOPICS",
    "UNREACHABLE_CODES",
    "check_reachable",
    "is_unreachable",
    "java_error_text",
    "java_exception_class",
    "java_hash_set_order",
    "kafka_error",
    "kafka_error_of",
    "kafka_error_text",
    "make_admin",
    "quiet",
    "result",
    "tp_name",
    "unreachable",
    "wait",
]

INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})

#: librdkafka's codes for "no broker reachable at the bootstrap address".
UNREACHABLE_CODES: Final = frozenset(
    {KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}
)


def tp_name(topic: str, partition: int) -> str:
    """Kafka's ``TopicPartition.toString``."""
    return f"{topic}-{partition}"


def java_hash_set_order(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a ``java.util.HashSet<TopicPartition>`` (or a ``HashMap`` keyed
    by them) filled with ``partitions`` in this order, which is the order Kafka's tools print
    such sets in (``franz.admin.java_order``)."""
    return hash_order(partitions, topic_partition_hash)


# -- clients -----------------------------------------------------------------------------------


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (changed in place and returned) with librdkafka's own log lines limited to
    critical ones (``log_level`` 2), unless it sets ``log_level`` itself."""
    config.setdefault("log_level", 2)
    return config


def make_admin(args: argparse.Namespace, extra: Mapping[str, Any] | None = None) -> AdminClient:
    """A quiet ``AdminClient`` for the tool's connection options (``--command-config``,
    then ``extra``, then ``--bootstrap-server``); a config librdkafka refuses is a
    ``ToolError``."""
    config = quiet(client_config(args, extra))
    try:
        return AdminClient(config)
    except KafkaException as exc:
        raise ToolError(f"invalid client configuration: {kafka_error_text(exc)}") from None


# -- errors ------------------------------------------------------------------------------------


def unreachable(args: argparse.Namespace) -> ToolError:
    """The one-line error for a cluster that did not answer within ``--timeout``."""
    return ToolError(
        f"no broker answered at {args.bootstrap_server} within {args.timeout_ms} ms: check "
        "that the cluster is running and --bootstrap-server is right"
    )


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` a confluent-kafka ``KafkaException`` carries, else None."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` is librdkafka saying no broker was reachable (``UNREACHABLE_CODES``)."""
    err = kafka_error_of(exc)
    return err is not None and err.code() in UNREACHABLE_CODES


def kafka_error_text(exc: BaseException) -> str:
    """The message of a confluent-kafka error (``KafkaException(KafkaError)``)."""
    err = kafka_error_of(exc)
    return str(err.str()) if err is not None else str(exc)


def kafka_error(exc: BaseException, args: argparse.Namespace) -> ToolError:
    """A one-line ``ToolError`` for a client failure: ``unreachable`` for no broker, else the
    broker's (or librdkafka's) message."""
    if is_unreachable(exc):
        return unreachable(args)
    return ToolError(kafka_error_text(exc))


#: Kafka's exception class where it is not the error name in CamelCase + "Exception".
_JAVA_EXCEPTIONS: Final = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "CORRUPT_MESSAGE": "CorruptRecordException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "NETWORK_EXCEPTION": "NetworkException",
    "KAFKA_STORAGE_ERROR": "KafkaStorageException",
    "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
    "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException",
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
    return f"{java_exception_class(code)}: {code.message}"


def java_exception_class(code: ErrorCode) -> str:
    """The class name of the exception Kafka's ``Errors`` maps ``code`` to
    (``org.apache.kafka.common.errors.KafkaStorageException`` for KAFKA_STORAGE_ERROR)."""
    name = _JAVA_EXCEPTIONS.get(code.name) or (
        "".join(part.capitalize() for part in code.name.split("_")) + "Exception"
    )
    return f"org.apache.kafka.common.errors.{name}"


# -- waiting -----------------------------------------------------------------------------------


def result(future: Any, args: argparse.Namespace) -> Any:
    """``future.result()`` within ``--timeout``; every failure is a one-line ``ToolError``
    (``kafka_error``; a future still pending at the timeout is ``unreachable``)."""
    try:
        return future.result(timeout=args.timeout_ms / 1000)
    except KafkaException as exc:
        raise kafka_error(exc, args) from exc
    except TimeoutError as exc:
        raise unreachable(args) from exc


def wait(future: Future[Any], args: argparse.Namespace) -> Any:
    """A future's result, waiting ``--timeout`` plus 5 s (librdkafka's own request timeout
    fails it first); an unreachable cluster becomes ``unreachable``, other ``KafkaException``s
    propagate for the caller to report per item."""
    try:
        return future.result(timeout=args.timeout_ms / 1000 + 5)
    except KafkaException as exc:
        if is_unreachable(exc):
            raise unreachable(args) from None
        raise


def check_reachable(admin: AdminClient, args: argparse.Namespace) -> Any:
    """Cluster metadata (``ClusterMetadata``, all topics: never a Metadata request naming a
    topic, which a broker with ``auto.create.topics.enable`` would answer by creating it), or
    the one-line ``kafka_error``."""
    try:
        return admin.list_topics(timeout=args.timeout_ms / 1000)
    except KafkaException as exc:
        raise kafka_error(exc, args) from exc
