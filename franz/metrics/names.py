"""Kafka's metric names as Prometheus sees them: a Kafka MBean (``kafka.server:type=
ReplicaManager,name=UnderReplicatedPartitions``) and one of its JMX attributes (``Value`` of a
gauge, ``Count`` of a meter or timer) turned into a sample name, labels and a type by the
Prometheus JMX exporter's standard Kafka rules (``example_configs/kafka-2_0_0.yml`` of
prometheus/jmx_exporter, with ``lowercaseOutputName: true``), so Grafana dashboards built on
those rules query Franz unchanged.

How the exporter applies them, and so ``exported_sample``: the bean is written
``<domain><key=value, key=value...><>Attribute`` with its key properties in the order Kafka
created them (``type``, ``name``, then the tags); the first rule whose pattern matches the
whole string gives the name and labels (``$n``: the n-th group); the name's characters
outside ``[a-zA-Z0-9:_]`` become ``_`` (runs collapsed), then it is lower-cased; label names
are kept as written (``clientId``), values as matched. Examples:

* ``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` ``Value`` ->
  ``kafka_server_replicamanager_underreplicatedpartitions`` (gauge);
* ``kafka.server:type=ReplicaManager,name=IsrShrinksPerSec`` ``Count`` ->
  ``kafka_server_replicamanager_isrshrinks_total`` (counter: the meter's count; the
  ``...PerSec`` rates are not exported by these rules);
* ``kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-1,
  topic=t,partition=0`` ``Value`` -> ``kafka_server_fetcherlagmetrics_consumerlag``
  ``{clientId="ReplicaFetcherThread-0-1",topic="t",partition="0"}``;
* ``kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs`` ``Count`` ->
  ``kafka_controller_controllerstats_leaderelectionrateandtimems_count`` (the rules'
  emulated summary of a timer: its count; the percentiles would be the base name with a
  ``quantile`` label).

The rules matching attributes named like ``byte-rate`` (client quotas) are left out: no
metric Franz exports reaches them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "JMX_EXPORTER_KAFKA_RULES",
    "ExportedSample",
    "MBean",
    "exported_sample",
    "safe_name",
]

PrometheusType = Literal["gauge", "counter"]


@dataclass(frozen=True, slots=True)
class MBean:
    """A Kafka metric's JMX name: ``domain:type=...,name=...`` plus tag keys in Kafka's order
    (``KafkaMetricsGroup.explicitMetricName``); the tags' values come with each sample."""

    domain: str
    type: str
    name: str
    tag_keys: tuple[str, ...] = ()

    def object_name(self, tag_values: Sequence[str] = ()) -> str:
        """``kafka.server:type=ReplicaManager,name=LeaderCount`` (tags without a value: ``*``)."""
        values = [*tag_values, *["*"] * (len(self.tag_keys) - len(tag_values))]
        props = [("type", self.type), ("name", self.name), *zip(self.tag_keys, values, strict=True)]
        return f"{self.domain}:" + ",".join(f"{k}={v}" for k, v in props)


@dataclass(frozen=True, slots=True)
class ExportedSample:
    """One sample as the JMX exporter names it."""

    name: str
    labels: tuple[tuple[str, str], ...]
    type: PrometheusType


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    name: str
    type: PrometheusType
    labels: tuple[tuple[str, str], ...] = ()


def _rule(pattern: str, name: str, type_: PrometheusType, *labels: tuple[str, str]) -> _Rule:
    return _Rule(re.compile(pattern), name, type_, labels)


_KV2: Final = ("$4", "$5"), ("$6", "$7")

#: kafka-2_0_0.yml's rules, in its order (first match wins), without the quota rules.
JMX_EXPORTER_KAFKA_RULES: Final[tuple[_Rule, ...]] = (
    # Special cases and very specific rules
    _rule(
        r"kafka.server<type=(.+), name=(.+), clientId=(.+), topic=(.+), partition=(.*)><>Value",
        "kafka_server_$1_$2",
        "gauge",
        ("clientId", "$3"),
        ("topic", "$4"),
        ("partition", "$5"),
    ),
    _rule(
        r"kafka.server<type=(.+), name=(.+), clientId=(.+), brokerHost=(.+), brokerPort=(.+)>"
        r"<>Value",
        "kafka_server_$1_$2",
        "gauge",
        ("clientId", "$3"),
        ("broker", "$4:$5"),
    ),
    _rule(
        r"kafka.coordinator.(\w+)<type=(.+), name=(.+)><>Value",
        "kafka_coordinator_$1_$2_$3",
        "gauge",
    ),
    # Generic per-second counters with 0-2 key/value pairs
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+)PerSec\w*, (.+)=(.+), (.+)=(.+)><>Count",
        "kafka_$1_$2_$3_total",
        "counter",
        *_KV2,
    ),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+)PerSec\w*, (.+)=(.+)><>Count",
        "kafka_$1_$2_$3_total",
        "counter",
        ("$4", "$5"),
    ),
    _rule(r"kafka.(\w+)<type=(.+), name=(.+)PerSec\w*><>Count", "kafka_$1_$2_$3_total", "counter"),
    # Generic gauges with 0-2 key/value pairs
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Value",
        "kafka_$1_$2_$3",
        "gauge",
        *_KV2,
    ),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+)><>Value",
        "kafka_$1_$2_$3",
        "gauge",
        ("$4", "$5"),
    ),
    _rule(r"kafka.(\w+)<type=(.+), name=(.+)><>Value", "kafka_$1_$2_$3", "gauge"),
    # Emulated summaries of Kafka's histograms and timers (no _sum; the percentiles are
    # gauges of the base name with a quantile label)
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Count",
        "kafka_$1_$2_$3_count",
        "counter",
        *_KV2,
    ),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*), (.+)=(.+)><>(\d+)thPercentile",
        "kafka_$1_$2_$3",
        "gauge",
        *_KV2,
        ("quantile", "0.$8"),
    ),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+)><>Count",
        "kafka_$1_$2_$3_count",
        "counter",
        ("$4", "$5"),
    ),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*)><>(\d+)thPercentile",
        "kafka_$1_$2_$3",
        "gauge",
        ("$4", "$5"),
        ("quantile", "0.$6"),
    ),
    _rule(r"kafka.(\w+)<type=(.+), name=(.+)><>Count", "kafka_$1_$2_$3_count", "counter"),
    _rule(
        r"kafka.(\w+)<type=(.+), name=(.+)><>(\d+)thPercentile",
        "kafka_$1_$2_$3",
        "gauge",
        ("quantile", "0.$4"),
    ),
)

_GROUP: Final = re.compile(r"\$(\d+)")
_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9:_]")
_UNDERSCORES: Final = re.compile(r"__+")


def safe_name(name: str) -> str:
    """The exporter's ``safeName``: characters a Prometheus name cannot hold become ``_``,
    runs of ``_`` one."""
    return _UNDERSCORES.sub("_", _UNSAFE.sub("_", name))


def _expand(template: str, match: re.Match[str]) -> str:
    return _GROUP.sub(lambda m: match.group(int(m.group(1))) or "", template)


@functools.lru_cache(maxsize=1 << 16)
def exported_sample(
    bean: MBean, attribute: str, tag_values: tuple[str, ...] = ()
) -> ExportedSample | None:
    """The JMX exporter's sample for ``attribute`` of ``bean`` (module docstring); None when
    no rule matches (the exporter's default naming is not used by these rules)."""
    props = [
        ("type", bean.type),
        ("name", bean.name),
        *zip(bean.tag_keys, tag_values, strict=False),
    ]
    text = f"{bean.domain}<{', '.join(f'{k}={v}' for k, v in props)}><>{attribute}"
    for rule in JMX_EXPORTER_KAFKA_RULES:
        match = rule.pattern.fullmatch(text)
        if match is None:
            continue
        labels = tuple(
            (safe_name(_expand(key, match)), _expand(value, match)) for key, value in rule.labels
        )
        name = safe_name(_expand(rule.name, match)).lower()
        return ExportedSample(name, tuple((k, v) for k, v in labels if k), rule.type)
    return None
