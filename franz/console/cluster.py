"""The console's one connection to the cluster: ``ConsoleCluster``.

It holds the client configuration (``--bootstrap-server`` and ``--command-config``'s
``security.protocol``, ``ssl.*``, ``sasl.*``, as librdkafka reads them) and hands out:

* ``admin``: one confluent-kafka ``AdminClient`` for the console's lifetime (Metadata,
  DescribeCluster, ListOffsets, configs, groups, topics, records, ACLs, SCRAM users);
* ``wire``: ``franz.admin``'s ``ClusterClient`` for the requests librdkafka cannot send
  (DescribeLogDirs, ApiVersions per broker), over the same TLS and SASL settings;
* ``consumer()`` / ``producer()``: short-lived clients for the message browser and produce,
  built from the same settings.

Every librdkafka call is blocking or returns a ``concurrent.futures.Future``: ``run`` moves a
blocking call to a worker thread and ``result`` awaits an admin future, each bounded by
``timeout_s``, so one slow page never blocks another. A cluster that does not answer is a
``ClusterUnavailable`` the pages render as an error banner (HTTP 503), never a traceback.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from franz.admin.cluster_wire import ClusterClient
from franz.admin.options import ToolError
from franz.admin.wire import connect
from franz.admin.wire_security import WireSecurity
from franz.errors import FranzError

__all__ = [
    "BrokerInfo",
    "ClusterOverview",
    "ClusterUnavailable",
    "ConsoleCluster",
    "LogDirUsage",
    "kafka_version_guess",
]

T = TypeVar("T")

CLIENT_ID: Final = "franz-console"
#: Fetch's highest version -> the Apache Kafka releases that introduced it (the guess UIs
#: make from ApiVersions; Kafka's ``ApiKeys`` history).
_FETCH_VERSION_RELEASE: Final = {
    17: "3.9",
    16: "3.7+",
    15: "3.5+",
    13: "3.1+",
    12: "2.7+",
    11: "2.3+",
}


class ClusterUnavailable(FranzError):
    """The cluster did not answer (or refused) within the console's timeout."""


def kafka_version_guess(versions: Mapping[int, tuple[int, int]]) -> str:
    """The Apache Kafka release a broker's ApiVersions look like (its highest Fetch
    version), e.g. ``"3.9"``; ``"?"`` for older or unknown brokers."""
    fetch = versions.get(1)
    if fetch is None:
        return "?"
    for version, release in sorted(_FETCH_VERSION_RELEASE.items(), reverse=True):
        if fetch[1] >= version:
            return release
    return "<2.3"


@dataclass(frozen=True)
class LogDirUsage:
    """One log dir of a broker: its path, the bytes of the replicas in it, how many, and its
    error (``None`` when healthy)."""

    path: str
    size: int
    replicas: int
    error: str | None


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None
    is_controller: bool
    version: str  # kafka_version_guess of its ApiVersions, "?" when unknown
    log_dirs: list[LogDirUsage]


@dataclass(frozen=True)
class ClusterOverview:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerInfo]
    topic_count: int
    partition_count: int


class ConsoleCluster:
    """The cluster at ``config["bootstrap.servers"]`` as the console sees it (module
    docstring). ``config`` is a librdkafka configuration."""

    def __init__(self, config: Mapping[str, Any], *, timeout_s: float = 15.0) -> None:
        self.config: dict[str, Any] = {
            "client.id": CLIENT_ID,
            "log_level": 2,  # librdkafka logs every failed connection otherwise
            **config,
        }
        self.bootstrap = str(self.config["bootstrap.servers"])
        self.timeout_s = timeout_s
        try:
            self.admin = AdminClient(self.config)
        except KafkaException as exc:
            raise ToolError(f"invalid client configuration: {exc}") from None
        self.wire = ClusterClient(
            self.bootstrap,
            timeout_ms=int(timeout_s * 1000),
            client_id=str(self.config["client.id"]),
            security=WireSecurity.from_config(self.config),
        )

    # -- running librdkafka's calls off the event loop ----------------------------------------

    async def run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call(*args, **kwargs)`` on a worker thread; a ``KafkaException`` or a
        ``ToolError`` (the wire client's "no answer") becomes ``ClusterUnavailable``."""
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(call, *args, **kwargs), self.timeout_s + 5
            )
        except (KafkaException, ToolError, TimeoutError) as exc:
            raise ClusterUnavailable(_text(exc)) from None

    async def result(self, future: concurrent.futures.Future[T]) -> T:
        """An admin call's future, awaited; failures as in ``run``."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise ClusterUnavailable(_text(exc)) from None

    def consumer(self, **extra: Any) -> Consumer:
        """A new consumer with the console's settings (no group unless ``extra`` sets
        ``group.id``; never commits). The caller closes it."""
        return Consumer(
            {
                **self.config,
                "group.id": extra.pop("group.id", f"{CLIENT_ID}-browser"),
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                **extra,
            }
        )

    def producer(self, **extra: Any) -> Producer:
        """A new producer with the console's settings. The caller flushes it."""
        return Producer({**self.config, **extra})

    # -- the cluster overview -----------------------------------------------------------------

    async def overview(self) -> ClusterOverview:
        """Brokers (rack, controller, version guess, disk use per log dir), controller and
        counts: DescribeCluster and Metadata through librdkafka, ApiVersions and
        DescribeLogDirs to each broker through the wire client."""
        described = await self.result(self.admin.describe_cluster(request_timeout=self.timeout_s))
        metadata = await self.run(self.admin.list_topics, timeout=self.timeout_s)
        controller = described.controller.id if described.controller is not None else -1
        brokers = await asyncio.gather(
            *(self._broker(node, controller) for node in sorted(described.nodes, key=_id))
        )
        return ClusterOverview(
            cluster_id=described.cluster_id,
            controller_id=controller,
            brokers=list(brokers),
            topic_count=len(metadata.topics),
            partition_count=sum(len(t.partitions) for t in metadata.topics.values()),
        )

    async def _broker(self, node: Any, controller: int) -> BrokerInfo:
        versions, dirs = await self.run(self._broker_details, int(node.id))
        return BrokerInfo(
            id=int(node.id),
            host=str(node.host),
            port=int(node.port),
            rack=node.rack or None,
            is_controller=int(node.id) == controller,
            version=kafka_version_guess(versions),
            log_dirs=dirs,
        )

    def _broker_details(self, broker: int) -> tuple[dict[int, tuple[int, int]], list[LogDirUsage]]:
        """(ApiVersions, log dirs) of one broker; a broker that does not answer or does
        not serve DescribeLogDirs gets no log dirs rather than failing the page."""
        try:
            address = self.wire.nodes().brokers[broker]
            with connect(address, self.timeout_s, self.wire.client_id, self.wire.security) as c:
                versions = dict(c.versions)
        except (OSError, KeyError, ToolError):
            return {}, []
        if 35 not in versions:
            return versions, []
        try:
            described = self.wire.describe_log_dirs(broker)
        except (OSError, ToolError):
            return versions, []
        return versions, [
            LogDirUsage(
                path=path,
                size=sum(info.size for _, info in d.replicas),
                replicas=len(d.replicas),
                error=None if d.error == 0 else d.error.name,
            )
            for path, d in described.items()
        ]


def _id(node: Any) -> int:
    return int(node.id)


def _text(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].str())
    if isinstance(exc, TimeoutError):
        return "the cluster did not answer in time"
    return str(exc)
