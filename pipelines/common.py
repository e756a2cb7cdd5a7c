"""What the pipeline's pieces share: topic names, the watermark, a local SparkSession, topics.

The watermark delay lives here because three parties must agree on it: the streaming job
(``withWatermark``), the generator (which makes some events late *beyond* it, on purpose)
and the oracle (which predicts exactly which events Spark drops).

``build_session`` makes a local session that stays on loopback (``SPARK_LOCAL_IP`` and the
driver's host and bind address) and runs its Python workers on this interpreter
(``PYSPARK_PYTHON``), which has ``franz[spark]`` installed: without it the workers would run
whatever ``python3`` is on PATH, without pyarrow (see ``shared/notes/pyspark.md``).

Every job reads and writes topics through one of :data:`CONNECTORS`, with the same options
(Spark's Kafka connector's): ``franz``, Franz's Python data source (the default), or
``kafka``, Spark's own ``spark-sql-kafka-0-10``, whose jars :func:`spark_kafka_jars` takes from
the reference cache (``scripts/fetch-kafka-reference.sh tests/reference/spark-kafka-pom.xml``
copies them from Maven Central on first use). A session's jars are fixed when it starts:
``build_session(connector="kafka")`` passes them as ``spark.jars``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CONNECTORS",
    "DLQ_TOPIC",
    "EVENTS_TOPIC",
    "STATS_TOPIC",
    "WATERMARK_DELAY_MS",
    "WINDOW_MS",
    "build_session",
    "ensure_topics",
    "read_topic",
    "spark_kafka_jars",
    "topic_end_offsets",
    "watermark_delay",
]

#: The generator writes here; the jobs read from here.
EVENTS_TOPIC = "user-activity"
#: Malformed events, their original bytes and why they were refused.
DLQ_TOPIC = "user-activity-dlq"
#: The finalised per-minute counts, one JSON record per (window, page, event type).
STATS_TOPIC = "page-stats"

#: ``withWatermark("event_time", "2 minutes")``: how late an event may be and still count.
WATERMARK_DELAY_MS = 120_000
#: ``window(event_time, "1 minute")``: tumbling windows aligned on the epoch.
WINDOW_MS = 60_000


#: ``format(...)`` names of the connectors the jobs can use: Franz's data source, Spark's own.
CONNECTORS = ("franz", "kafka")

_REPO = Path(__file__).resolve().parents[1]
_FETCH_SCRIPT = _REPO / "scripts" / "fetch-kafka-reference.sh"
_SPARK_KAFKA_POM = _REPO / "tests" / "reference" / "spark-kafka-pom.xml"


def spark_kafka_jars(*, timeout: float = 900.0) -> list[str]:
    """Spark's Kafka connector and what it needs beyond PySpark's jars (its token provider,
    ``kafka-clients``, ``commons-pool2``), as paths: fetched into the reference cache by the
    project's fetch script on first use, a no-op afterwards. Raises ``RuntimeError`` with mvn's
    output if they cannot be fetched."""
    result = subprocess.run(
        ["bash", str(_FETCH_SCRIPT), str(_SPARK_KAFKA_POM)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{_FETCH_SCRIPT.name} failed:\n{result.stderr}")
    libs = Path(result.stdout.strip().splitlines()[-1])
    jars = sorted(str(jar) for jar in libs.glob("*.jar"))
    if not any("spark-sql-kafka" in Path(jar).name for jar in jars):
        raise RuntimeError(f"no spark-sql-kafka jar in {libs}")
    return jars


def watermark_delay() -> str:
    """:data:`WATERMARK_DELAY_MS` as Spark's interval string."""
    return f"{WATERMARK_DELAY_MS // 1000} seconds"


def spark_environment() -> dict[str, str]:
    """The variables a local driver needs to keep its Python workers on this interpreter and
    every socket on loopback."""
    return {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


def build_session(
    app_name: str = "franz-pipelines", master: str = "local[2]", *, connector: str = "franz"
) -> SparkSession:
    """A quiet local SparkSession on loopback, UTC, two shuffle partitions (small data); with
    ``connector="kafka"``, Spark's Kafka connector on its class path."""
    if connector not in CONNECTORS:
        raise ValueError(f"connector: one of {', '.join(CONNECTORS)}, not {connector!r}")
    os.environ.update(spark_environment())
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if connector == "kafka":
        builder = builder.config("spark.jars", ",".join(spark_kafka_jars()))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def ensure_topics(
    bootstrap: str, partitions: Mapping[str, int], *, timeout: float = 30.0
) -> list[str]:
    """Create the topics that do not exist yet (replication factor 1); returns those created.

    An existing topic is left as it is, whatever its partition count."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    existing = set(admin.list_topics(timeout=timeout).topics)
    wanted = [
        NewTopic(name, num_partitions=count, replication_factor=1)
        for name, count in partitions.items()
        if name not in existing
    ]
    if not wanted:
        return []
    created: list[str] = []
    for name, future in admin.create_topics(wanted, operation_timeout=timeout).items():
        try:
            future.result(timeout)
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (
                isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
            ):
                raise
    return created


def _consumer(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "franz-pipelines-reader",  # required by the API; never joined
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )


def _end_offsets(consumer: Any, topic: str, timeout: float) -> dict[int, int]:
    from confluent_kafka import TopicPartition

    metadata = consumer.list_topics(topic, timeout=timeout)
    return {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
        for p in sorted(metadata.topics[topic].partitions)
    }


def topic_end_offsets(bootstrap: str, topic: str, *, timeout: float = 30.0) -> dict[int, int]:
    """``{partition: log end offset}`` of ``topic`` (ListOffsets, latest)."""
    consumer = _consumer(bootstrap)
    try:
        return _end_offsets(consumer, topic, timeout)
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, *, timeout: float = 60.0) -> list[Any]:
    """Every record ``topic`` holds now (up to its end offsets, read first), with a plain
    confluent-kafka consumer (no group), as ``confluent_kafka.Message`` objects in partition
    and offset order. Raises ``TimeoutError`` if they do not all arrive within ``timeout``."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

    consumer = _consumer(bootstrap)
    try:
        wanted = {p: end for p, end in _end_offsets(consumer, topic, timeout).items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in wanted])
        records: list[Any] = []
        positions = dict.fromkeys(wanted, -1)
        deadline = time.monotonic() + timeout
        while any(positions[p] + 1 < end for p, end in wanted.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: read {len(records)} records, not all, in {timeout} s")
            for message in consumer.consume(1000, 0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"{topic}: {error}")
                if message.offset() < wanted[message.partition()]:
                    records.append(message)
                positions[message.partition()] = message.offset()
    finally:
        consumer.close()
    records.sort(key=lambda m: (m.partition(), m.offset()))
    return records
