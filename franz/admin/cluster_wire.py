"""Kafka's cluster-administration APIs that librdkafka does not offer, over ``franz.admin.wire``.

``franz reassign-partitions`` and ``franz log-dirs`` need requests that confluent-kafka 2.16
cannot send: AlterPartitionReassignments (45, v0, KIP-455) and ListPartitionReassignments
(46, v0), which go to the active controller; DescribeLogDirs (35, v1-4, KIP-113) and
AlterReplicaLogDirs (34, v1-2), which go to each broker. ``ClusterClient`` sends them as
Kafka's ``KafkaAdminClient`` does:

* the brokers and the controller come from a Metadata request (v1+ carries
  ``controller_id``; no topics asked for) to a ``--bootstrap-server`` broker, as the Java
  client's ``ControllerNodeProvider`` finds a ZooKeeper-mode controller;
* a top-level NOT_CONTROLLER (the controller moved) or a failed connection is retried, with
  fresh metadata and 100 ms between attempts (``retry.backoff.ms``), until ``--timeout``;
* a broker that does not list the API in its ApiVersions gets nothing: ``NotServed`` names
  the API and the broker (Kafka's client fails with UnsupportedVersionException).

The answers are plain values: per-partition ``ErrorCode`` and message, ``Ongoing``
reassignments, ``LogDirInfo`` per log dir.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from franz.admin.options import ToolError, client_config
from franz.admin.reassignment import Ongoing
from franz.admin.wire import BrokerConnection, connect
from franz.admin.wire_security import WireSecurity
from franz.errors import ErrorCode

__all__ = [
    "ALTER_PARTITION_REASSIGNMENTS",
    "ALTER_REPLICA_LOG_DIRS",
    "DESCRIBE_LOG_DIRS",
    "LIST_PARTITION_REASSIGNMENTS",
    "ClusterClient",
    "LogDirInfo",
    "NotServed",
    "PartitionError",
    "ReplicaInfo",
    "cluster_client",
]

METADATA: Final = 3
ALTER_REPLICA_LOG_DIRS: Final = 34
DESCRIBE_LOG_DIRS: Final = 35
ALTER_PARTITION_REASSIGNMENTS: Final = 45
LIST_PARTITION_REASSIGNMENTS: Final = 46
API_NAMES: Final = {
    ALTER_REPLICA_LOG_DIRS: "AlterReplicaLogDirs",
    DESCRIBE_LOG_DIRS: "DescribeLogDirs",
    ALTER_PARTITION_REASSIGNMENTS: "AlterPartitionReassignments",
    LIST_PARTITION_REASSIGNMENTS: "ListPartitionReassignments",
}
#: Kafka's admin client ``retry.backoff.ms`` (100 ms) between attempts. The requests' own
#: ``timeout`` fields carry ``--timeout``, as the Java client puts its call's time left there.
RETRY_BACKOFF_S: Final = 0.1

TopicPartition = tuple[str, int]
Replica = tuple[str, int, int]
R = TypeVar("R")


class NotServed(ToolError):
    """The broker does not offer the API (it is not in its ApiVersions answer)."""

    def __init__(self, api_key: int, where: str) -> None:
        self.api_key = api_key
        self.api_name = API_NAMES.get(api_key, str(api_key))
        self.where = where
        super().__init__(f"{where} does not serve {self.api_name} (API {api_key})")


@dataclass(frozen=True)
class PartitionError:
    """A partition's failure: Kafka's ``ApiError(error, message).exception().getMessage()``
    is ``message`` when the broker sent one, else the error's default description."""

    code: ErrorCode
    message: str | None

    @property
    def text(self) -> str:
        return self.message if self.message is not None else self.code.message


@dataclass(frozen=True)
class ReplicaInfo:
    """One partition in a log dir (DescribeLogDirs): bytes, lag behind the current replica
    (a future replica's) and whether it is the future replica of a log-dir move."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirInfo:
    """One log dir of a broker: its error and its replicas in the order the broker listed
    them (``franz.admin.java_order`` reorders them as Kafka's maps would)."""

    error: ErrorCode
    replicas: list[tuple[TopicPartition, ReplicaInfo]]


@dataclass(frozen=True)
class Nodes:
    brokers: dict[int, str]  # id -> host:port
    controller: int  # -1: none known


class ClusterClient:
    """Requests to the controller or to one broker of the cluster at ``bootstrap``."""

    def __init__(
        self,
        bootstrap: str,
        *,
        timeout_ms: int,
        client_id: str,
        security: WireSecurity | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        #: TLS and SASL of every connection (``--command-config``; None: PLAINTEXT).
        self.security = security
        self.servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
        self.timeout_ms = timeout_ms
        self.client_id = client_id
        self.deadline = 0.0  # of the call being made: each call may take --timeout

    # -- plumbing --------------------------------------------------------------------------

    def _remaining(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def _connect(self, address: str) -> BrokerConnection:
        return connect(address, self._remaining(), self.client_id, self.security)

    def _unreachable(self, problem: str) -> ToolError:
        return ToolError(
            f"no answer from the cluster at {self.bootstrap} within {self.timeout_ms} ms "
            f"({problem}): check that it is running and --bootstrap-server is right"
        )

    def _retrying(self, attempt: Callable[[], R | None], what: str) -> R:
        """``attempt()`` until it returns a value; ``None``, ``OSError`` and ``_Retry`` mean
        try again after the backoff, for at most ``timeout_ms`` (a call made inside
        ``attempt`` starts its own)."""
        problem = "no broker answered"
        deadline = time.monotonic() + self.timeout_ms / 1000
        self.deadline = deadline
        while True:
            try:
                value = attempt()
                if value is not None:
                    return value
            except _Retry as retry:
                problem = str(retry)
            except OSError as exc:
                problem = f"{what}: {exc}"
            if time.monotonic() + RETRY_BACKOFF_S >= deadline:
                raise self._unreachable(problem)
            time.sleep(RETRY_BACKOFF_S)

    def nodes(self) -> Nodes:
        """Brokers and controller from a Metadata request to a bootstrap broker."""

        def attempt() -> Nodes | None:
            last: OSError | None = None
            for server in self.servers:
                try:
                    with self._connect(server) as conn:
                        response = conn.request(
                            METADATA, {"topics": [], "allow_auto_topic_creation": False},
                            max_version=12,
                        )  # fmt: skip
                except OSError as exc:
                    last = exc
                    continue
                brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in response.brokers}
                return Nodes(brokers, int(getattr(response, "controller_id", -1)))
            raise last or OSError("no bootstrap server")

        return self._retrying(attempt, "Metadata")

    def _to_controller(self, api_key: int, data: Mapping[str, Any], max_version: int) -> Any:
        """Send to the active controller; a top-level NOT_CONTROLLER is retried."""

        def attempt() -> Any:
            nodes = self.nodes()
            address = nodes.brokers.get(nodes.controller)
            if address is None:
                raise _Retry("no active controller is known")
            with self._connect(address) as conn:
                if api_key not in conn.versions:
                    where = f"the controller (broker {nodes.controller} at {address})"
                    raise NotServed(api_key, where)
                response = conn.request(api_key, data, max_version=max_version)
            if int(response.error_code) == ErrorCode.NOT_CONTROLLER:
                raise _Retry(f"broker {nodes.controller} is no longer the controller")
            return response

        return self._retrying(attempt, API_NAMES.get(api_key, str(api_key)))

    def to_broker(
        self, broker: int, api_key: int, data: Mapping[str, Any], max_version: int
    ) -> Any:
        """Send to broker ``broker`` (by id, from the metadata)."""

        def attempt() -> Any:
            address = self.nodes().brokers.get(broker)
            if address is None:
                raise _Retry(f"broker {broker} is not in the cluster's metadata")
            with self._connect(address) as conn:
                if api_key not in conn.versions:
                    raise NotServed(api_key, f"broker {broker} at {address}")
                return conn.request(api_key, data, max_version=max_version)

        return self._retrying(attempt, f"{API_NAMES.get(api_key, api_key)} to broker {broker}")

    def serves(self, broker: int, api_key: int) -> bool:
        """Whether broker ``broker`` lists ``api_key`` in its ApiVersions."""

        def attempt() -> bool:
            address = self.nodes().brokers.get(broker)
            if address is None:
                raise _Retry(f"broker {broker} is not in the cluster's metadata")
            with self._connect(address) as conn:
                return api_key in conn.versions

        return self._retrying(attempt, f"ApiVersions of broker {broker}")

    # -- the APIs --------------------------------------------------------------------------

    def list_reassignments(
        self, partitions: list[TopicPartition] | None = None
    ) -> dict[TopicPartition, Ongoing]:
        """ListPartitionReassignments: all ongoing reassignments, or those of ``partitions``."""
        topics: list[dict[str, Any]] | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        response = self._to_controller(
            LIST_PARTITION_REASSIGNMENTS, {"timeout": self.timeout_ms, "topics": topics}, 0
        )
        error = ErrorCode(int(response.error_code))
        if error != ErrorCode.NONE:
            message = response.error_message
            raise ToolError(f"ListPartitionReassignments failed: {message or error.message}")
        return {
            (t.name, int(p.partition_index)): Ongoing(
                tuple(map(int, p.replicas)),
                tuple(map(int, p.adding_replicas)),
                tuple(map(int, p.removing_replicas)),
            )
            for t in response.topics
            for p in t.partitions
        }

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, PartitionError]:
        """AlterPartitionReassignments: start (replicas) or cancel (None) a reassignment per
        partition; the partitions that failed, with their errors. A top-level error fails
        every partition with it, as Kafka's client does."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "replicas": replicas}
            )
        response = self._to_controller(
            ALTER_PARTITION_REASSIGNMENTS,
            {
                "timeout": self.timeout_ms,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            },
            0,
        )
        top = ErrorCode(int(response.error_code))
        errors: dict[TopicPartition, PartitionError] = {}
        for topic in response.responses:
            for p in topic.partitions:
                key = (topic.name, int(p.partition_index))
                if top != ErrorCode.NONE:
                    errors[key] = PartitionError(top, response.error_message)
                elif int(p.error_code) != ErrorCode.NONE:
                    errors[key] = PartitionError(ErrorCode(int(p.error_code)), p.error_message)
        answered = {
            (t.name, int(p.partition_index)) for t in response.responses for p in t.partitions
        }
        if not errors and answered != set(targets):
            raise ToolError(
                f"the controller answered for {len(answered)} partitions, not the "
                f"{len(targets)} asked for"
            )
        return errors

    def describe_log_dirs(
        self, broker: int, topics: Mapping[str, list[int]] | None = None
    ) -> dict[str, LogDirInfo]:
        """DescribeLogDirs to ``broker``: every log dir (in the broker's order) with the
        replicas of ``topics`` (all partitions of every topic when None)."""
        request_topics = (
            None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()]
        )
        response = self.to_broker(broker, DESCRIBE_LOG_DIRS, {"topics": request_topics}, 4)
        dirs: dict[str, LogDirInfo] = {}
        for result in response.results:
            replicas = [
                (
                    (topic.name, int(p.partition_index)),
                    ReplicaInfo(int(p.partition_size), int(p.offset_lag), bool(p.is_future_key)),
                )
                for topic in result.topics
                for p in topic.partitions
            ]
            dirs[result.log_dir] = LogDirInfo(ErrorCode(int(result.error_code)), replicas)
        if not dirs:
            # Kafka's client: no log dir at all is an error (CLUSTER_AUTHORIZATION_FAILED
            # when the broker, before v3, could not say which).
            code = ErrorCode(int(getattr(response, "error_code", 0)))
            if code == ErrorCode.NONE:
                code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            raise ToolError(f"DescribeLogDirs of broker {broker} failed: {code.message}")
        return dirs

    def alter_replica_log_dirs(
        self, broker: int, moves: Mapping[tuple[str, int], str]
    ) -> dict[tuple[str, int], ErrorCode]:
        """AlterReplicaLogDirs to ``broker``: move its replica of each partition to the log
        dir given; the error code per partition."""
        by_dir: dict[str, dict[str, list[int]]] = {}
        for (topic, partition), path in moves.items():
            by_dir.setdefault(path, {}).setdefault(topic, []).append(partition)
        data = {
            "dirs": [
                {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in ts.items()]}
                for path, ts in by_dir.items()
            ]
        }
        response = self.to_broker(broker, ALTER_REPLICA_LOG_DIRS, data, 2)
        return {
            (t.topic_name, int(p.partition_index)): ErrorCode(int(p.error_code))
            for t in response.results
            for p in t.partitions
        }


class _Retry(Exception):
    """Try the request again (the reason is the message)."""


def cluster_client(args: argparse.Namespace, client_id: str) -> ClusterClient:
    """A ``ClusterClient`` for a tool's connection options: ``--bootstrap-server``,
    ``--timeout`` and, from ``--command-config``, ``client.id`` (``client_id`` otherwise)
    and the TLS and SASL settings (``franz.admin.wire_security``: ``security.protocol``,
    ``ssl.*``, ``sasl.*``, as librdkafka's)."""
    config = client_config(args)
    return ClusterClient(
        args.bootstrap_server,
        timeout_ms=args.timeout_ms,
        client_id=str(config.get("client.id", client_id)),
        security=WireSecurity.from_config(config),
    )
