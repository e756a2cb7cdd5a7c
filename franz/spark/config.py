"""Client settings shared by the connector's readers and writers.

Spark's Kafka connector passes every option named ``kafka.<key>`` to its Kafka client with the
prefix removed; so does this one, to librdkafka (confluent-kafka). librdkafka reads the Java
client's common keys under the same names (``bootstrap.servers``, ``client.id``,
``security.protocol``, ``sasl.*``, ...). Keys that only make sense to the JVM client are
dropped, and the keys Spark refuses because the connector manages them itself are refused here
too, with Spark's reasons.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "JVM_ONLY_KEYS",
    "MANAGED_KEYS",
    "OptionError",
    "client_config",
    "parse_bool",
    "parse_int",
]


class OptionError(ValueError):
    """An option the connector can't accept; the message says which and why."""


#: Keys Spark's Kafka source refuses (``KafkaSourceProvider.validateGeneralOptions``), with
#: the reason the user is shown.
MANAGED_KEYS: dict[str, str] = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes; use DataFrame operations to decode",
    "value.deserializer": "values are always read as bytes; use DataFrame operations to decode",
    "key.serializer": "keys are always written as bytes; cast them to binary or string",
    "value.serializer": "values are always written as bytes; cast them to binary or string",
    "enable.auto.commit": "the connector does not commit offsets; progress lives in the checkpoint",
    "interceptor.classes": "interceptors are a JVM client feature",
}

#: Java client keys with no librdkafka meaning, dropped silently as the JVM connector's
#: users set them routinely.
JVM_ONLY_KEYS = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.keystore.type",
        "max.poll.records",
        "request.timeout.ms.config",
    }
)


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka settings in ``options`` (``kafka.*`` with the prefix removed).

    ``options`` has lowercased keys (:meth:`FranzDataSource._options`). Raises
    :class:`OptionError` without ``kafka.bootstrap.servers`` or with a managed key.
    """
    conf: dict[str, str] = {}
    for key, value in options.items():
        if not key.startswith("kafka."):
            continue
        name = key[len("kafka.") :]
        if name in MANAGED_KEYS:
            raise OptionError(f"Kafka option 'kafka.{name}' is not supported: {MANAGED_KEYS[name]}")
        if name in JVM_ONLY_KEYS:
            continue
        conf[name] = value
    if not conf.get("bootstrap.servers", "").strip():
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    return conf


def parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    """A ``true``/``false`` option (Spark passes every option as a string)."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise OptionError(f"Option '{name}' must be 'true' or 'false', got {raw!r}")


def parse_int(options: Mapping[str, str], name: str, *, minimum: int = 1) -> int | None:
    """A positive integer option, or None when it is not set."""
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(f"Option '{name}' must be an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"Option '{name}' must be >= {minimum}, got {value}")
    return value
