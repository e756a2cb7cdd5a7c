"""Broker configuration: ``server.properties`` keys and defaults, as Kafka's ``KafkaConfig``.

Only the keys Franz implements are defined; an unknown key is kept (Kafka logs it as unused)
so a Kafka ``server.properties`` loads unchanged. Topic defaults come from the broker-level
synonyms of the topic configs (``log.segment.bytes`` -> ``segment.bytes``), with Kafka's
precedence for the unit variants: ``log.retention.ms`` > ``.minutes`` > ``.hours``, and
``log.roll.ms`` > ``log.roll.hours``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from franz.config.defs import INT_MAX, LONG_MAX, ConfigKey, ConfigType, at_least, parse_config
from franz.config.topic import TOPIC_CONFIG_KEYS, LogConfig

__all__ = ["BROKER_CONFIG_KEYS", "BrokerConfig"]

_I, _L, _S, _LIST, _B = (
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.STRING,
    ConfigType.LIST,
    ConfigType.BOOLEAN,
)

_OWN_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("broker.id", _I, 0, "This broker's id.", at_least(-1)),
    ConfigKey("log.dirs", _LIST, None, "Directories holding the partition logs."),
    ConfigKey("log.dir", _S, "./franz-data", "The log directory when log.dirs is not set."),
    ConfigKey("log.retention.hours", _I, 168, "Retention in hours.", at_least(-1)),
    ConfigKey("log.retention.minutes", _I, None, "Retention in minutes (overrides hours)."),
    ConfigKey("log.roll.hours", _I, 168, "Segment age before a roll, in hours.", at_least(1)),
    ConfigKey("log.roll.jitter.hours", _I, 0, "Roll jitter in hours.", at_least(0)),
    ConfigKey(
        "log.retention.check.interval.ms",
        _L,
        300000,
        "How often retention is checked.",
        at_least(1),
    ),
    ConfigKey(
        "log.flush.scheduler.interval.ms",
        _L,
        LONG_MAX,
        "How often logs are checked for a flush due by flush.ms.",
        at_least(1),
    ),
    ConfigKey(
        "log.flush.offset.checkpoint.interval.ms",
        _I,
        60000,
        "How often recovery points are checkpointed.",
        at_least(0),
    ),
    ConfigKey(
        "log.flush.start.offset.checkpoint.interval.ms",
        _I,
        60000,
        "How often log start offsets are checkpointed.",
        at_least(0),
    ),
    ConfigKey(
        "replica.high.watermark.checkpoint.interval.ms",
        _L,
        5000,
        "How often high watermarks are checkpointed.",
        at_least(1),
    ),
    ConfigKey(
        "log.recovery.verify.all",
        _B,
        False,
        "Franz's own key (Kafka has none): CRC-check every batch of every segment at startup; "
        "corrupt batches are logged at ERROR and kept, never cut (see franz.storage.log_loader).",
    ),
    ConfigKey(
        "metrics.listener",
        _S,
        None,
        "Franz's own key (Kafka exports its metrics to JMX): [http://]host:port of an HTTP "
        "endpoint serving GET /metrics in Prometheus' text format, Kafka's metrics named as "
        "the Prometheus JMX exporter's Kafka rules name them (see franz.metrics). Unset: off. "
        "A bare port or an empty host binds 127.0.0.1; port 0 takes any free port (the "
        "broker's start-up line gives the URL).",
    ),
    ConfigKey("num.partitions", _I, 1, "Default partitions of auto-created topics.", at_least(1)),
    ConfigKey("default.replication.factor", _I, 1, "Default replication factor.", at_least(1)),
    ConfigKey("auto.create.topics.enable", _B, True, "Create topics on first use."),
    ConfigKey("zookeeper.connect", _S, None, "ZooKeeper connection string; unset = embedded."),
    ConfigKey(
        "zookeeper.session.timeout.ms",
        _I,
        18000,
        "ZooKeeper session timeout: a broker silent this long loses its registration.",
        at_least(1),
    ),
    ConfigKey(
        "zookeeper.connection.timeout.ms",
        _I,
        None,
        "How long to wait for a ZooKeeper connection (default: the session timeout).",
    ),
    ConfigKey(
        "controller.socket.timeout.ms",
        _I,
        30000,
        "Timeout of the controller's requests to brokers.",
        at_least(1),
    ),
    ConfigKey(
        "controlled.shutdown.enable",
        _B,
        True,
        "Enable controlled shutdown of the server (cluster mode: the controller moves this "
        "broker's leaderships away before it stops).",
    ),
    ConfigKey(
        "controlled.shutdown.max.retries",
        _I,
        3,
        "Controlled shutdown can fail for multiple reasons. This determines the number of "
        "retries when such failure happens",
    ),
    ConfigKey(
        "controlled.shutdown.retry.backoff.ms",
        _L,
        5000,
        "Before each retry, the system needs time to recover from the state that caused the "
        "previous failure (Controller fail over, replica lag etc). This config determines the "
        "amount of time to wait before retrying.",
    ),
    ConfigKey(
        "auto.leader.rebalance.enable",
        _B,
        True,
        "Enables auto leader balancing. A background thread checks the distribution of "
        "partition leaders at regular intervals, configurable by "
        "leader.imbalance.check.interval.seconds. If the leader imbalance exceeds "
        "leader.imbalance.per.broker.percentage, leader rebalance to the preferred leader for "
        "partitions is triggered.",
    ),
    ConfigKey(
        "leader.imbalance.check.interval.seconds",
        _L,
        300,
        "The frequency with which the partition rebalance check is triggered by the controller",
        at_least(1),
    ),
    ConfigKey(
        "leader.imbalance.per.broker.percentage",
        _I,
        10,
        "The ratio of leader imbalance allowed per broker. The controller would trigger a "
        "leader balance if it goes above this value per broker. The value is specified in "
        "percentage.",
    ),
    ConfigKey(
        "inter.broker.listener.name",
        _S,
        None,
        "The listener brokers and the controller use between them (default: PLAINTEXT).",
    ),
    ConfigKey("listeners", _LIST, ["PLAINTEXT://127.0.0.1:9092"], "Listener URIs."),
    # SASL (issue 20), Kafka's keys and defaults.
    ConfigKey(
        "listener.security.protocol.map",
        _S,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "Listener names to security protocols.",
    ),
    ConfigKey(
        "sasl.enabled.mechanisms",
        _LIST,
        ["GSSAPI"],
        "The SASL mechanisms a SASL listener accepts (Franz: PLAIN, SCRAM-SHA-256, "
        "SCRAM-SHA-512).",
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        _S,
        "GSSAPI",
        "The SASL mechanism brokers use between them.",
    ),
    ConfigKey(
        "connections.max.reauth.ms",
        _L,
        0,
        "SASL session lifetime before re-authentication is required (KIP-368; 0: none).",
        at_least(0),
    ),
    ConfigKey(
        "sasl.server.max.receive.size",
        _I,
        524288,
        "The largest SASL request a connection may send before it authenticated.",
        at_least(1),
    ),
    ConfigKey(
        "connection.failed.authentication.delay.ms",
        _I,
        100,
        "How long a failed authentication's response and close are delayed.",
        at_least(0),
    ),
    ConfigKey(
        "advertised.listeners",
        _LIST,
        None,
        "Listener URIs given to clients in Metadata (default: listeners, with the bound port).",
    ),
    ConfigKey("broker.rack", _S, None, "This broker's rack."),
    ConfigKey(
        "socket.request.max.bytes",
        _I,
        104857600,
        "The largest request frame the broker reads.",
        at_least(1),
    ),
    ConfigKey(
        "connections.max.idle.ms",
        _L,
        600000,
        "Idle connections are closed after this many milliseconds.",
        at_least(1),
    ),
    ConfigKey(
        "socket.request.receive.timeout.ms",
        _I,
        60000,
        "Franz's bound (Kafka has none): a connection whose request has been arriving for "
        "longer than this is closed, however it trickles bytes. Between requests "
        "connections.max.idle.ms applies. The default is librdkafka's socket.timeout.ms: "
        "a client gives up on a request it could not send in that time anyway (Java "
        "clients' request.timeout.ms is 30000).",
        at_least(1),
    ),
    ConfigKey(
        "queued.max.request.bytes",
        _L,
        -1,
        "Bytes of requests being received over all connections (the request memory pool); "
        "connections that need more are muted until memory is released. -1 or 0: unbounded. "
        "Must be at least socket.request.max.bytes when set.",
    ),
    ConfigKey(
        "max.connections",
        _I,
        2147483647,
        "Connections the broker accepts at once; at the limit it stops accepting until one "
        "closes.",
        at_least(0),
    ),
    ConfigKey(
        "max.connections.per.ip",
        _I,
        2147483647,
        "Connections allowed from one address; a connection over the limit is closed.",
        at_least(0),
    ),
    ConfigKey(
        "max.connections.per.ip.overrides",
        _S,
        "",
        "Per-address limits overriding max.connections.per.ip: host:count pairs, comma "
        "separated (e.g. hostName:100,127.0.0.1:200).",
    ),
    ConfigKey(
        "queued.max.requests",
        _I,
        500,
        "Requests read ahead of their responses on one connection before reading pauses.",
        at_least(1),
    ),
    ConfigKey(
        "socket.listen.backlog.size", _I, 50, "Backlog of the listening socket.", at_least(1)
    ),
    ConfigKey(
        "fetch.max.bytes",
        _I,
        57671680,
        "The most bytes one Fetch response returns, whatever the request asks.",
        at_least(1024),
    ),
    ConfigKey(
        "max.incremental.fetch.session.cache.slots",
        _I,
        1000,
        "The most incremental fetch sessions the broker keeps.",
        at_least(0),
    ),
    ConfigKey(
        "producer.id.expiration.ms",
        _I,
        86400000,
        "Producer state is dropped after this long without a write from the producer.",
        at_least(1),
    ),
    ConfigKey(
        "producer.id.expiration.check.interval.ms",
        _I,
        600000,
        "How often expired producer ids are removed.",
        at_least(1),
    ),
    ConfigKey(
        "delete.topic.enable", _B, True, "Whether DeleteTopics is allowed."
    ),
    ConfigKey(
        "controlled.shutdown.enable", _B, True, "Move leadership away before shutting down."
    ),
    ConfigKey(
        "replica.lag.time.max.ms",
        _L,
        30000,
        "A follower that has not caught up to the leader's log end offset for this long is "
        "removed from the ISR (checked every half of it).",
        at_least(1),
    ),
    # --- the follower's replica fetchers (franz.cluster.replica_fetcher), Kafka's defaults ---
    ConfigKey(
        "num.replica.fetchers",
        _I,
        1,
        "Fetcher tasks per source broker (Kafka's fetcher threads); a partition's fetcher is "
        "abs(31 * topic.hashCode + partition) % num.replica.fetchers.",
        at_least(1),
    ),
    ConfigKey(
        "num.replica.alter.log.dirs.threads",
        _I,
        None,
        "Copier tasks moving replicas between this broker's log dirs (Kafka's "
        "ReplicaAlterLogDirsThreads); unset: one per log dir. A partition's copier is "
        "abs(31 * topic.hashCode + partition) % this; each copies one partition at a time.",
        at_least(1),
    ),
    ConfigKey(
        "replica.fetch.max.bytes",
        _I,
        1048576,
        "Bytes fetched per partition (a larger first batch still comes whole).",
        at_least(0),
    ),
    ConfigKey(
        "replica.fetch.response.max.bytes",
        _I,
        10485760,
        "Bytes expected for a whole fetch response.",
        at_least(0),
    ),
    ConfigKey(
        "replica.fetch.wait.max.ms", _I, 500, "Max wait of a follower's fetch.", at_least(0)
    ),
    ConfigKey(
        "replica.fetch.min.bytes", _I, 1, "Min bytes a follower's fetch waits for.", at_least(1)
    ),
    ConfigKey(
        "replica.fetch.backoff.ms",
        _I,
        1000,
        "Sleep after a fetch partition error or a failed connection.",
        at_least(0),
    ),
    ConfigKey(
        "replica.socket.timeout.ms", _I, 30000, "Socket timeout of follower fetches."
    ),
    ConfigKey(
        "replica.socket.receive.buffer.bytes",
        _I,
        65536,
        "Socket receive buffer of follower fetches: accepted, not applied (Franz leaves the "
        "OS's buffer autotuning on, as with -1).",
    ),
    ConfigKey(
        "quota.window.num",
        _I,
        11,
        "The number of samples to retain in memory for client quotas",
        at_least(1),
    ),
    ConfigKey(
        "quota.window.size.seconds",
        _I,
        1,
        "The time span of each sample for client quotas",
        at_least(1),
    ),
    ConfigKey(
        "replication.quota.window.num",
        _I,
        11,
        "The number of samples to retain in memory for replication quotas",
        at_least(1),
    ),
    ConfigKey(
        "replication.quota.window.size.seconds",
        _I,
        1,
        "The time span of each sample for replication quotas",
        at_least(1),
    ),
    # --- dynamic in Kafka, not used by Franz (one asyncio loop, no connection rate quota):
    # accepted, stored and described so tools that tune them work (franz.config.dynamic) ---
    ConfigKey("num.io.threads", _I, 8, "Request handler threads (not used by Franz).", at_least(1)),
    ConfigKey(
        "num.network.threads", _I, 3, "Network threads (not used by Franz).", at_least(1)
    ),
    ConfigKey(
        "num.recovery.threads.per.data.dir",
        _I,
        1,
        "Log recovery threads per log dir (not used by Franz).",
        at_least(1),
    ),
    ConfigKey(
        "background.threads", _I, 10, "Background task threads (not used by Franz).", at_least(1)
    ),
    ConfigKey(
        "max.connection.creation.rate",
        _I,
        INT_MAX,
        "Most new connections per second (not enforced by Franz).",
        at_least(0),
    ),
    ConfigKey("metric.reporters", _LIST, [], "Metrics reporter classes (not used by Franz)."),
    # --- log cleaner (compaction) ---
    ConfigKey("log.cleaner.enable", _B, True, "Run the log cleaner (compaction)."),
    ConfigKey("log.cleaner.threads", _I, 1, "Threads cleaning logs.", at_least(0)),
    ConfigKey(
        "log.cleaner.backoff.ms",
        _L,
        15000,
        "How long the cleaner sleeps when no log is cleanable.",
        at_least(0),
    ),
    ConfigKey(
        "log.cleaner.dedupe.buffer.size",
        _L,
        134217728,
        "Memory for the cleaner's key -> offset map, across all cleaner threads.",
        at_least(1),
    ),
    ConfigKey(
        "log.cleaner.io.buffer.size",
        _I,
        524288,
        "I/O buffer memory of the cleaner, across all cleaner threads.",
        at_least(0),
    ),
    ConfigKey(
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        0.9,
        "Load factor of the cleaner's dedupe buffer.",
    ),
    ConfigKey(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        1.7976931348623157e308,
        "Cleaner I/O throttle, read plus write.",
    ),
    # --- group coordinator and __consumer_offsets ---
    ConfigKey(
        "group.min.session.timeout.ms",
        _I,
        6000,
        "The smallest session timeout a group member may ask for.",
    ),
    ConfigKey(
        "group.max.session.timeout.ms",
        _I,
        1800000,
        "The largest session timeout a group member may ask for.",
    ),
    ConfigKey(
        "group.initial.rebalance.delay.ms",
        _I,
        3000,
        "How long the first rebalance of an empty group waits for more members.",
        at_least(0),
    ),
    ConfigKey("group.max.size", _I, 2147483647, "The most members a group may have.", at_least(1)),
    ConfigKey(
        "offsets.topic.num.partitions",
        _I,
        50,
        "Partitions of __consumer_offsets (fixed once the topic exists).",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.replication.factor",
        _I,
        3,
        "Replication factor of __consumer_offsets (capped at the number of live brokers).",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.segment.bytes",
        _I,
        104857600,
        "Segment size of __consumer_offsets.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.compression.codec",
        _I,
        0,
        "Compression of the coordinator's writes to __consumer_offsets (0 none, 1 gzip, "
        "2 snappy, 3 lz4, 4 zstd).",
        at_least(0),
    ),
    ConfigKey(
        "offsets.load.buffer.size",
        _I,
        5242880,
        "Batch size for reading __consumer_offsets into the cache.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.retention.minutes",
        _I,
        10080,
        "Committed offsets of an empty group are dropped after this many minutes.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.retention.check.interval.ms",
        _L,
        600000,
        "How often expired offsets are removed.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.commit.timeout.ms",
        _I,
        5000,
        "How long an offset commit waits for __consumer_offsets replicas.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.commit.required.acks",
        _I,
        -1,
        "acks of the coordinator's writes to __consumer_offsets.",
    ),
    ConfigKey(
        "offset.metadata.max.bytes",
        _I,
        4096,
        "The largest metadata string an offset commit may carry.",
    ),
    # The transaction coordinator (Kafka's TransactionStateManagerConfigs and
    # TransactionLogConfigs, 3.9 defaults).
    ConfigKey(
        "transaction.state.log.num.partitions",
        _I,
        50,
        "Partitions of __transaction_state (fixed once the topic exists).",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.replication.factor",
        _I,
        3,
        "Replication factor of __transaction_state (1 in the embedded single-node mode).",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.min.isr",
        _I,
        2,
        "min.insync.replicas of __transaction_state (1 in the embedded single-node mode).",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.segment.bytes",
        _I,
        104857600,
        "Segment size of __transaction_state.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.load.buffer.size",
        _I,
        5242880,
        "Batch size for reading __transaction_state into the cache.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.max.timeout.ms",
        _I,
        900000,
        "The largest transaction.timeout.ms a producer may ask for.",
        at_least(1),
    ),
    ConfigKey(
        "transactional.id.expiration.ms",
        _I,
        604800000,
        "An idle transactional id with no transaction in progress expires after this.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _I,
        10000,
        "How often transactions open past their timeout are aborted.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        _I,
        3600000,
        "How often expired transactional ids are removed.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.partition.verification.enable",
        _B,
        True,
        "Verify with the transaction coordinator that a partition is in the transaction "
        "before appending a transaction's first batch to it (KIP-890 part 1).",
    ),
    # Authorization (issue 20 part 4, franz.security.authorizer).
    ConfigKey(
        "authorizer.class.name",
        _S,
        "",
        "The authorizer: kafka.security.authorizer.AclAuthorizer; empty: none (all allowed).",
    ),
    ConfigKey("super.users", _S, None, "Principals allowed everything: User:admin;User:bob."),
    ConfigKey(
        "allow.everyone.if.no.acl.found",
        _B,
        False,
        "Allow a resource with no ACL to everyone (AclAuthorizer).",
    ),
)

_SYNONYMS: tuple[ConfigKey, ...] = tuple(
    ConfigKey(key.broker_synonym, key.type, None, key.doc, key.validator)
    for key in TOPIC_CONFIG_KEYS.values()
    if key.broker_synonym is not None and key.broker_synonym != key.name
) + tuple(key for key in TOPIC_CONFIG_KEYS.values() if key.broker_synonym == key.name)

#: Broker config name -> definition.
BROKER_CONFIG_KEYS: Mapping[str, ConfigKey] = {key.name: key for key in (*_OWN_KEYS, *_SYNONYMS)}


class BrokerConfig:
    """Parsed broker configuration; ``get`` returns the effective value or the default.

    Three layers, highest precedence first (Kafka's ``DynamicBrokerConfig``): the dynamic
    per-broker configs, the dynamic cluster-wide defaults, the static configs
    (``server.properties`` and ``--override``, kept in ``original``). The dynamic layers
    hold the stored strings (``dynamic_broker``, ``dynamic_default``); ``with_dynamic``
    makes the config with other dynamic layers, leaving this one unchanged. Values are
    parsed against ``BROKER_CONFIG_KEYS`` (``InvalidConfigurationError`` on a bad value);
    names Franz does not define are kept as given.
    """

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        dynamic_default: Mapping[str, str] | None = None,
        dynamic_broker: Mapping[str, str] | None = None,
    ) -> None:
        self.original = dict(values or {})
        self.dynamic_default = dict(dynamic_default or {})
        self.dynamic_broker = dict(dynamic_broker or {})
        self.static = parse_config(BROKER_CONFIG_KEYS, self.original, allow_unknown=True)
        self._values = {
            **self.static,
            **parse_config(BROKER_CONFIG_KEYS, self.dynamic_default, allow_unknown=True),
            **parse_config(BROKER_CONFIG_KEYS, self.dynamic_broker, allow_unknown=True),
        }

    def with_dynamic(
        self, dynamic_default: Mapping[str, str], dynamic_broker: Mapping[str, str]
    ) -> BrokerConfig:
        """This static config under other dynamic layers (validated as they are parsed)."""
        return BrokerConfig(
            self.original, dynamic_default=dynamic_default, dynamic_broker=dynamic_broker
        )

    def get(self, name: str) -> Any:
        if name in self._values and self._values[name] is not None:
            return self._values[name]
        key = BROKER_CONFIG_KEYS.get(name)
        return None if key is None else key.default

    def is_set(self, name: str) -> bool:
        """Set at any layer (not only defaulted)."""
        return self._values.get(name) is not None

    def is_static(self, name: str) -> bool:
        """Set in ``server.properties`` or by ``--override``."""
        return self.static.get(name) is not None

    @property
    def broker_id(self) -> int:
        return int(self.get("broker.id"))

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self.get("log.dirs") if self.is_set("log.dirs") else [self.get("log.dir")]
        return [Path(d) for d in dirs]

    def log_config(self) -> LogConfig:
        """Topic defaults from the broker-level synonyms (Kafka's precedence rules)."""
        overrides: dict[str, Any] = {}
        for key in TOPIC_CONFIG_KEYS.values():
            if key.broker_synonym and self.is_set(key.broker_synonym):
                overrides[key.name] = self.get(key.broker_synonym)
        if "retention.ms" not in overrides:
            if self.is_set("log.retention.minutes"):
                overrides["retention.ms"] = self.get("log.retention.minutes") * 60_000
            else:
                hours = self.get("log.retention.hours")
                overrides["retention.ms"] = -1 if hours < 0 else hours * 3_600_000
        if "segment.ms" not in overrides:
            overrides["segment.ms"] = self.get("log.roll.hours") * 3_600_000
        if "segment.jitter.ms" not in overrides:
            overrides["segment.jitter.ms"] = self.get("log.roll.jitter.hours") * 3_600_000
        if "flush.ms" not in overrides:
            overrides["flush.ms"] = self.get("log.flush.scheduler.interval.ms")
        return LogConfig().with_overrides(overrides)
