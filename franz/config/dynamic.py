"""Dynamic broker configs (KIP-226): which keys may change at runtime, and at which level.

Kafka 3.9's ``DynamicBrokerConfig.AllDynamicConfigs``, written out: the topic-default
synonyms (``DynamicLogConfig``: ``log.retention.ms``, ``log.segment.bytes``,
``message.max.bytes``, ...; the unit variants ``log.retention.hours`` / ``.minutes`` and
``log.roll.hours`` are *not* dynamic), the log cleaner's, the thread pools', the listener
and socket server's (connection limits, SSL and SASL settings), ``metric.reporters``, the
producer state manager's and ``config.providers``. A dynamic config is set on one broker
(resource name ``"<id>"``, Kafka's ``/config/brokers/<id>``) or as the cluster-wide default
(resource name ``""``, ``/config/brokers/<default>``). Effective value, highest first:
per-broker dynamic, default dynamic, ``server.properties`` / ``--override``, built-in default.

Checks, in Kafka's order (``DynamicBrokerConfig.validateConfigs``), each naming every
offending key as a Scala ``Set``:

1. a Kafka config that is not dynamic: "Cannot update these configs dynamically: Set(k)";
   Franz also refuses names it does not know as Kafka configs (Kafka stores them as
   "custom configs" for plugins, which Franz has none of). The replication throttle rates
   (``franz.config.quota``: ``DynamicConfig.Broker``, not ``AllDynamicConfigs``, so Kafka
   3.9 describes them read-only) are accepted, at either level;
2. an SSL keystore/truststore config without a listener prefix: "These security configs can
   be dynamically updated only per-listener using the listener prefix: Set(k)";
3. at the cluster-wide default, a per-broker config (listener, SSL and SASL settings):
   "Cannot update these configs at default cluster level, broker id must be specified: Set(k)".

Listener-prefixed names ``listener.name.<listener>.<config>`` are dynamic when ``<config>``
is one of the listener's reconfigurable configs (``DynamicListenerConfig``); they are
per-broker unless ``<config>`` is a cluster-level one (``max.connections``,
``max.connection.creation.rate``, ``num.network.threads``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from franz.config.quota import BROKER_QUOTA_CONFIG_KEYS
from franz.config.topic import TOPIC_CONFIG_KEYS

__all__ = [
    "DYNAMIC_BROKER_CONFIGS",
    "dynamic_config_errors",
    "is_dynamic",
    "scala_set",
]

#: ``SslConfigs.RECONFIGURABLE_CONFIGS``: only with a listener prefix.
DYNAMIC_SECURITY_CONFIGS: Final = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
})
#: ``LogCleaner.ReconfigurableConfigs``.
_LOG_CLEANER: Final = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
})
#: ``DynamicLogConfig.ReconfigurableConfigs``: the primary broker synonym of each topic
#: config (``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``); the throttled-replica lists
#: and the tiered-storage switches have no broker synonym in Kafka.
_NO_BROKER_SYNONYM: Final = frozenset({
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "remote.storage.enable", "remote.log.copy.disable", "remote.log.delete.on.disable",
})
_LOG: Final = frozenset(
    key.broker_synonym
    for key in TOPIC_CONFIG_KEYS.values()
    if key.broker_synonym is not None and key.name not in _NO_BROKER_SYNONYM
)
#: ``DynamicThreadPool.ReconfigurableConfigs``.
_THREAD_POOLS: Final = frozenset({
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
    "background.threads",
})
#: ``DynamicListenerConfig.ReconfigurableConfigs``.
LISTENER_CONFIGS: Final = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class", "ssl.protocol",
    "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
})
#: ``SocketServer.ReconfigurableConfigs``.
_SOCKET_SERVER: Final = frozenset({
    "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections",
    "max.connection.creation.rate",
})
#: ``DynamicProducerStateManagerConfig`` and the rest of ``AllDynamicConfigs``.
_OTHERS: Final = frozenset({
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "metric.reporters", "config.providers",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
})

#: Kafka 3.9's ``DynamicBrokerConfig.AllDynamicConfigs``.
DYNAMIC_BROKER_CONFIGS: Final = (
    DYNAMIC_SECURITY_CONFIGS | _LOG_CLEANER | _LOG | _THREAD_POOLS | LISTENER_CONFIGS
    | _SOCKET_SERVER | _OTHERS
)
#: ``ClusterLevelListenerConfigs``: listener configs that may also be cluster-wide defaults.
_CLUSTER_LEVEL_LISTENER: Final = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
#: ``PerBrokerConfigs``: only on a named broker.
PER_BROKER_CONFIGS: Final = (DYNAMIC_SECURITY_CONFIGS | LISTENER_CONFIGS) - _CLUSTER_LEVEL_LISTENER
#: ``ListenerMechanismConfigs``: set as ``listener.name.<l>.<mechanism>.<config>``.
_MECHANISM_CONFIGS: Final = (
    "sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.server.callback.handler.class", "connections.max.reauth.ms",
)
_LISTENER_PREFIXED: Final = re.compile(r"listener\.name\.[^.]*\.(.*)")


def _listener_base(name: str) -> str | None:
    """The ``<config>`` of ``listener.name.<listener>.[<mechanism>.]<config>``, else None."""
    match = _LISTENER_PREFIXED.fullmatch(name)
    if match is None:
        return None
    base = match.group(1)
    for mechanism_config in _MECHANISM_CONFIGS:
        if base.endswith("." + mechanism_config):
            return mechanism_config
    return base


def is_dynamic(name: str) -> bool:
    """Whether Kafka lets ``name`` change at runtime (read_only=false in DescribeConfigs)."""
    base = _listener_base(name)
    if base is not None:
        return base in LISTENER_CONFIGS or base in _MECHANISM_CONFIGS
    return name in DYNAMIC_BROKER_CONFIGS


def _per_broker(name: str) -> bool:
    base = _listener_base(name)
    if base is not None:
        return base not in _CLUSTER_LEVEL_LISTENER
    return name in PER_BROKER_CONFIGS


def scala_set(names: Iterable[str]) -> str:
    """How Kafka's messages print a set of names: ``Set(a, b)`` (sorted here, for stable
    messages; Scala's order is its hash order)."""
    return f"Set({', '.join(sorted(set(names)))})"


def dynamic_config_errors(names: Iterable[str], *, per_broker: bool) -> str | None:
    """Kafka's ``DynamicBrokerConfig.validateConfigs`` on the names alone: the first failed
    check's message (see the module docstring), or None when all may be set."""
    names = set(names)
    refused = {
        name for name in names if not is_dynamic(name) and name not in BROKER_QUOTA_CONFIG_KEYS
    }
    if refused:
        return f"Cannot update these configs dynamically: {scala_set(refused)}"
    unprefixed = names & DYNAMIC_SECURITY_CONFIGS
    if unprefixed:
        return (
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {scala_set(unprefixed)}"
        )
    if not per_broker:
        broker_only = {name for name in names if _per_broker(name)}
        if broker_only:
            return (
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {scala_set(broker_only)}"
            )
    return None
