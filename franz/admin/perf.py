"""The measuring and printing parts of the perf tools (``franz producer-perf-test``,
``franz consumer-perf-test``, ``franz end-to-end-latency``), as Kafka 3.9's tools do them.

Pure code (no client, no sleeping of its own) so that it is unit-tested on numbers:

* ``ThroughputThrottler``: Kafka's ``ThroughputThrottler``. ``should_throttle(n, now_ms)``
  is true when ``n`` sends since ``start_ms`` exceed ``target`` per second; ``throttle()``
  then adds ``1/target`` s to a sleep deficit and sleeps it off (through the injected
  ``sleep``, which the producer tool makes serve delivery callbacks) once it reaches 2 ms.
* ``ProducerStats``: Kafka's ``ProducerPerformance.Stats``. Every successful send is
  recorded with its latency (whole ms, as Kafka's ``int``); at most ~500,000 latencies are
  kept (every ``num_records // min(num_records, 500000)``-th one) for the percentiles.
  Window lines (every 5 s) and the total line use Kafka's printf formats::

      %d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.
      %d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency,
      %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.

  (the total is one line). MB is 1024 * 1024 bytes.
* ``percentiles``: Kafka's: sort, then the value at index ``int(p * n)`` (0 when empty).
* ConsumerPerformance's header, final CSV line and ``--show-detailed-stats`` lines
  (``%.4f`` numbers, times formatted with a ``java.text.SimpleDateFormat`` pattern, default
  ``yyyy-MM-dd HH:mm:ss:SSS``, local time).
* EndToEndLatency's progress line (``i<TAB>latency ms`` as Java prints a double) and its
  ``Avg latency: %.4f ms`` / ``Percentiles: 50th = %d, 99th = %d, 99.9th = %d`` lines.
* ``--print-metrics``: librdkafka's statistics JSON flattened to ``group:name:{tags}``
  names and printed as Kafka's ``ToolsUtils.printMetrics`` table (``Metric Name`` / ``Value``,
  names left-aligned to the longest, floats with ``%.3f``).

Java prints a double that is NaN or infinite (a division by an elapsed time of 0) as
``NaN`` / ``Infinity``; ``jfloat`` does the same, so lines keep Kafka's shape.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from franz.admin.options import DEFAULT_TIMEOUT_MS

__all__ = [
    "CLIENT_LOGGER_NAME",
    "CONSUMER_DETAILED_HEADER",
    "CONSUMER_HEADER",
    "DEFAULT_DATE_FORMAT",
    "JAVA_ONLY_CLIENT_KEYS",
    "MAX_SAMPLED_LATENCIES",
    "ProducerStats",
    "ThroughputThrottler",
    "add_timeout_option",
    "client_observers",
    "consumer_progress_line",
    "consumer_total_line",
    "drop_java_only_config",
    "e2e_average_line",
    "e2e_percentiles_line",
    "e2e_progress_line",
    "flatten_librdkafka_stats",
    "format_metrics",
    "java_date_formatter",
    "java_double",
    "jfloat",
    "percentiles",
    "require_topic",
    "split_java_client_config",
]

MB = 1024.0 * 1024.0
NS_PER_MS = 1_000_000
NS_PER_SEC = 1_000 * NS_PER_MS
#: Kafka's ``ThroughputThrottler.MIN_SLEEP_NS``: the deficit is slept off once it reaches this.
MIN_SLEEP_NS = 2 * NS_PER_MS
#: Kafka's ``Stats`` keeps at most this many latencies (sampled evenly) for the percentiles.
MAX_SAMPLED_LATENCIES = 500_000
#: ProducerPerformance's window length.
REPORTING_INTERVAL_MS = 5_000
DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"

_NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
    + _NEW_FIELDS
)
CONSUMER_DETAILED_HEADER = (
    "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + _NEW_FIELDS
)

#: Java client settings that librdkafka does not know (it refuses unknown keys); the tools
#: drop them with a note, so a Kafka command line or config file works as is.
JAVA_ONLY_CLIENT_KEYS = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "buffer.memory",
        "max.block.ms",
        "send.buffer.bytes",
        "receive.buffer.bytes",
        "interceptor.classes",
        "partitioner.class",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "default.api.timeout.ms",
        "exclude.internal.topics",
    }
)


def split_java_client_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(config without JAVA_ONLY_CLIENT_KEYS, the dropped keys, sorted)``."""
    kept = {k: v for k, v in config.items() if k not in JAVA_ONLY_CLIENT_KEYS}
    return kept, sorted(k for k in config if k in JAVA_ONLY_CLIENT_KEYS)


def drop_java_only_config(config: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """``config`` without JAVA_ONLY_CLIENT_KEYS; the dropped keys are noted on stderr as
    ``franz <tool>: ignoring Java-only client configs: <k1>, <k2>``."""
    kept, dropped = split_java_client_config(config)
    if dropped:
        print(
            f"franz {tool}: ignoring Java-only client configs: {', '.join(dropped)}",
            file=sys.stderr,
        )
    return kept


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """``--timeout MS`` (``args.timeout_ms``, default ``DEFAULT_TIMEOUT_MS``): how long
    producer-perf-test and end-to-end-latency wait for the cluster's first answer."""
    parser.add_argument(
        "--timeout",
        dest="timeout_ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"how long to wait for the cluster's first answer (default {DEFAULT_TIMEOUT_MS})",
    )


# -- Java number printing ---------------------------------------------------------------------


def jfloat(value: float, digits: int | None = None) -> str:
    """``value`` as Java's ``%.<digits>f`` (``%f`` when ``digits`` is None: 6 digits) prints it,
    including ``NaN``, ``Infinity`` and ``-Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.{6 if digits is None else digits}f}"


def java_double(value: float) -> str:
    """``Double.toString(value)`` for values between 1e-3 and 1e7 (latencies in ms): the
    shortest decimal that round-trips, with at least one digit after the point. Outside that
    range Java switches to ``1.0E7`` notation, which this renders too."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if value == 0 or 1e-3 <= magnitude < 1e7:
        text = repr(float(value))
        if "e" in text:  # repr switches to exponents below 1e-4 only; keep Java's plain form
            text = f"{value:.20f}".rstrip("0")
        return text if "." in text else text + ".0"
    mantissa, _, exponent = f"{value:e}".partition("e")
    digits = repr(float(value) / 10 ** int(exponent))
    if "e" in digits:  # pragma: no cover - mantissa always in [1, 10)
        digits = mantissa
    return f"{digits}E{int(exponent)}"


def _div(numerator: float, denominator: float) -> float:
    """Java's double division: x/0 is +-Infinity, 0/0 is NaN."""
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator)
    return numerator / denominator


# -- percentiles and the throttler -------------------------------------------------------------


def percentiles(latencies: Sequence[int], *fractions: float) -> list[int]:
    """Kafka's percentiles: sort, then ``sorted[int(p * n)]`` for each ``p``; 0 when empty
    (Kafka reads its zero-filled array then)."""
    ordered = sorted(latencies)
    if not ordered:
        return [0 for _ in fractions]
    return [ordered[min(int(p * len(ordered)), len(ordered) - 1)] for p in fractions]


class ThroughputThrottler:
    """Kafka's ``ThroughputThrottler`` (message throughput).

    ``target < 0``: never throttles. ``target > 0``: ``should_throttle(sent, now_ms)`` is true
    when ``sent / elapsed_s > target``; each ``throttle()`` then adds ``1e9 / target`` ns to a
    deficit and, once the deficit is at least 2 ms, sleeps it off through ``sleep(seconds)``
    (which may return early: it is called again until the deficit has passed, as Kafka's
    ``wait`` loop) and resets it. ``target == 0`` (Kafka blocks forever) is refused.
    """

    def __init__(
        self,
        target: float,
        start_ms: int,
        *,
        sleep: Callable[[float], object] = time.sleep,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if target == 0:
            raise ValueError("a target throughput of 0 would block forever")
        self.target = target
        self.start_ms = start_ms
        self.sleep_time_ns = int(NS_PER_SEC / target) if target > 0 else 0
        self.sleep_deficit_ns = 0
        self._sleep = sleep
        self._monotonic_ns = monotonic_ns

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed_s = (send_start_ms - self.start_ms) / 1000.0
        return elapsed_s > 0 and amount_so_far / elapsed_s > self.target

    def throttle(self) -> None:
        self.sleep_deficit_ns += self.sleep_time_ns
        if self.sleep_deficit_ns < MIN_SLEEP_NS:
            return
        start = self._monotonic_ns()
        remaining = self.sleep_deficit_ns
        while remaining > 0:
            self._sleep(remaining / NS_PER_SEC)
            remaining = self.sleep_deficit_ns - (self._monotonic_ns() - start)
        self.sleep_deficit_ns = 0


# -- producer ---------------------------------------------------------------------------------


class ProducerStats:
    """Kafka's ``ProducerPerformance.Stats``: totals, the current 5 s window and sampled
    latencies. Times are wall-clock ms (``now_ms``), latencies whole ms."""

    def __init__(
        self,
        num_records: int,
        start_ms: int,
        *,
        reporting_interval_ms: int = REPORTING_INTERVAL_MS,
    ) -> None:
        self.start_ms = start_ms
        self.sampling = max(1, num_records // max(1, min(num_records, MAX_SAMPLED_LATENCIES)))
        self.latencies: list[int] = []
        self.reporting_interval_ms = reporting_interval_ms
        self.iteration = 0
        self.count = 0
        self.bytes = 0
        self.max_latency = 0
        self.total_latency = 0
        self.window_start_ms = start_ms
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0

    def record(self, latency_ms: int, nbytes: int) -> None:
        """One successful send of ``nbytes`` value bytes."""
        self.record_many([latency_ms], nbytes)

    def record_many(self, latencies_ms: Sequence[int], nbytes: int) -> None:
        """Successful sends, in delivery order, carrying ``nbytes`` value bytes in all.

        The same as ``record`` for each, in C-speed steps: the tool collects delivery
        latencies in a list and folds them in here. Sampling keeps the phase across calls
        (every ``sampling``-th send overall, from the first)."""
        n = len(latencies_ms)
        if n == 0:
            return
        total = sum(latencies_ms)
        top = max(latencies_ms)
        self.count += n
        self.bytes += nbytes
        self.total_latency += total
        self.max_latency = max(self.max_latency, top)
        self.window_count += n
        self.window_bytes += nbytes
        self.window_total_latency += total
        self.window_max_latency = max(self.window_max_latency, top)
        first = (-self.iteration) % self.sampling
        self.latencies.extend(latencies_ms[first :: self.sampling])
        self.iteration += n

    def window_due(self, now_ms: int) -> bool:
        return self.window_count > 0 and now_ms - self.window_start_ms >= self.reporting_interval_ms

    def window_line(self, now_ms: int) -> str:
        """Kafka's ``printWindow`` line for the current window, then a new window starts."""
        elapsed = now_ms - self.window_start_ms
        recs_per_sec = _div(1000.0 * self.window_count, elapsed)
        mb_per_sec = _div(1000.0 * self.window_bytes, elapsed) / MB
        line = (
            f"{self.window_count} records sent, {jfloat(recs_per_sec, 1)} records/sec "
            f"({jfloat(mb_per_sec, 2)} MB/sec), "
            f"{jfloat(_div(self.window_total_latency, self.window_count), 1)} ms avg latency, "
            f"{jfloat(float(self.window_max_latency), 1)} ms max latency."
        )
        self.window_start_ms = now_ms
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0
        return line

    def total_line(self, now_ms: int) -> str:
        """Kafka's ``printTotal`` line."""
        elapsed = now_ms - self.start_ms
        recs_per_sec = _div(1000.0 * self.count, elapsed)
        mb_per_sec = _div(1000.0 * self.bytes, elapsed) / MB
        p50, p95, p99, p999 = percentiles(self.latencies, 0.5, 0.95, 0.99, 0.999)
        return (
            f"{self.count} records sent, {jfloat(recs_per_sec)} records/sec "
            f"({jfloat(mb_per_sec, 2)} MB/sec), "
            f"{jfloat(_div(self.total_latency, self.count), 2)} ms avg latency, "
            f"{jfloat(float(self.max_latency), 2)} ms max latency, {p50} ms 50th, "
            f"{p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th."
        )


# -- consumer ---------------------------------------------------------------------------------

_JAVA_DATE_TOKEN = re.compile(r"'[^']*'|([A-Za-z])\1*")


def java_date_formatter(pattern: str) -> Callable[[int], str]:
    """A formatter of epoch ms for a ``java.text.SimpleDateFormat`` pattern (local time).

    Letters handled: ``y M d H h m s S a E Z`` (``MMM``/``MMMM`` month names, ``E`` day
    names); quoted text ``'...'`` and other characters are literal. Other pattern letters
    raise ``ValueError`` (a bad ``--date-format``).
    """
    parts: list[Callable[[time.struct_time, int], str] | str] = []
    position = 0
    for match in _JAVA_DATE_TOKEN.finditer(pattern):
        parts.append(pattern[position : match.start()])
        token = match.group(0)
        if token.startswith("'"):
            parts.append(token[1:-1] if token != "''" else "'")
        else:
            parts.append(_date_field(token))
        position = match.end()
    parts.append(pattern[position:])
    frozen = [p for p in parts if p != ""]

    def format_ms(epoch_ms: int) -> str:
        tm = time.localtime(epoch_ms // 1000)
        ms = epoch_ms % 1000
        return "".join(p if isinstance(p, str) else p(tm, ms) for p in frozen)

    return format_ms


def _date_field(token: str) -> Callable[[time.struct_time, int], str]:
    letter, width = token[0], len(token)

    def padded(value: int) -> str:
        return str(value).zfill(width)

    if letter == "y":
        if width == 2:
            return lambda tm, ms: str(tm.tm_year % 100).zfill(2)
        return lambda tm, ms: padded(tm.tm_year)
    if letter == "M":
        if width >= 4:
            return lambda tm, ms: time.strftime("%B", tm)
        if width == 3:
            return lambda tm, ms: time.strftime("%b", tm)
        return lambda tm, ms: padded(tm.tm_mon)
    if letter == "d":
        return lambda tm, ms: padded(tm.tm_mday)
    if letter == "H":
        return lambda tm, ms: padded(tm.tm_hour)
    if letter == "h":
        return lambda tm, ms: padded(tm.tm_hour % 12 or 12)
    if letter == "m":
        return lambda tm, ms: padded(tm.tm_min)
    if letter == "s":
        return lambda tm, ms: padded(tm.tm_sec)
    if letter == "S":
        return lambda tm, ms: padded(ms)
    if letter == "a":
        return lambda tm, ms: "AM" if tm.tm_hour < 12 else "PM"
    if letter == "E":
        return lambda tm, ms: time.strftime("%A" if width >= 4 else "%a", tm)
    if letter == "Z":
        return lambda tm, ms: time.strftime("%z", tm)
    raise ValueError(f"unsupported date format letter {letter!r} in {token!r}")


def consumer_total_line(
    *,
    start_ms: int,
    end_ms: int,
    total_bytes: int,
    total_messages: int,
    join_time_ms: int,
    date_format: Callable[[int], str],
) -> str:
    """ConsumerPerformance's final CSV line (``%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f,
    %.4f``): start/end time, MB consumed, MB/s, messages, messages/s, rebalance time,
    fetch time (= elapsed - rebalance time), fetch MB/s, fetch messages/s."""
    elapsed_s = (end_ms - start_ms) / 1000.0
    fetch_ms = (end_ms - start_ms) - join_time_ms
    mb = total_bytes / MB
    return ", ".join(
        [
            date_format(start_ms),
            date_format(end_ms),
            jfloat(mb, 4),
            jfloat(_div(mb, elapsed_s), 4),
            str(total_messages),
            jfloat(_div(total_messages, elapsed_s), 4),
            str(join_time_ms),
            str(fetch_ms),
            jfloat(_div(mb, fetch_ms / 1000.0), 4),
            jfloat(_div(total_messages, fetch_ms / 1000.0), 4),
        ]
    )


def consumer_progress_line(
    *,
    bytes_read: int,
    last_bytes_read: int,
    messages_read: int,
    last_messages_read: int,
    start_ms: int,
    end_ms: int,
    join_time_ms: int,
    date_format: Callable[[int], str],
    thread_id: int = 0,
) -> str:
    """One ``--show-detailed-stats`` line (ConsumerPerformance's basic then extended
    progress): time, thread id 0, total MB, interval MB/s, total messages, interval msgs/s,
    rebalance ms of the interval, fetch ms, fetch MB/s, fetch msgs/s (0 when fetch ms <= 0)."""
    elapsed_ms = float(end_ms - start_ms)
    interval_mb = (bytes_read - last_bytes_read) / MB
    interval_messages = messages_read - last_messages_read
    fetch_ms = end_ms - start_ms - join_time_ms
    fetch_mb_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    fetch_msg_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_messages / fetch_ms
    return ", ".join(
        [
            date_format(end_ms),
            str(thread_id),
            jfloat(bytes_read / MB, 4),
            jfloat(_div(1000.0 * interval_mb, elapsed_ms), 4),
            str(messages_read),
            jfloat(_div(interval_messages, elapsed_ms) * 1000.0, 4),
            str(join_time_ms),
            str(fetch_ms),
            jfloat(fetch_mb_s, 4),
            jfloat(fetch_msg_s, 4),
        ]
    )


# -- end-to-end latency -----------------------------------------------------------------------


def e2e_progress_line(index: int, elapsed_ns: int) -> str:
    """EndToEndLatency's every-1000th line: ``i<TAB>elapsed ms`` (a Java double)."""
    return f"{index}\t{java_double(elapsed_ns / 1000.0 / 1000.0)}"


def e2e_percentiles_line(latencies_ms: Sequence[int]) -> str:
    """``Percentiles: 50th = a, 99th = b, 99.9th = c`` over whole-ms latencies."""
    p50, p99, p999 = percentiles(latencies_ms, 0.5, 0.99, 0.999)
    return f"Percentiles: 50th = {p50}, 99th = {p99}, 99.9th = {p999}"


def e2e_average_line(total_ns: float, count: int) -> str:
    """``Avg latency: %.4f ms``."""
    return f"Avg latency: {jfloat(_div(total_ns, count) / 1000.0 / 1000.0, 4)} ms"


# -- metrics ----------------------------------------------------------------------------------

_WINDOWS = ("min", "max", "avg", "p50", "p95", "p99", "p99_99")


def flatten_librdkafka_stats(stats: Mapping[str, Any]) -> dict[str, float | int | str]:
    """librdkafka's statistics JSON as Kafka-style metric names ``group:name:{tags}``.

    Top level scalars -> ``librdkafka:<field>:{client-id=..}``; each broker's scalars and
    its ``rtt``/``int_latency``/``outbuf_latency`` windows (µs) ->
    ``librdkafka-broker:<field>[-<stat>]:{broker=..}``; each topic's ``batchsize``/
    ``batchcnt`` windows and each partition's scalars (except the internal -1 partition) ->
    ``librdkafka-topic:...:{topic=..}`` / ``librdkafka-partition:...:{partition=.., topic=..}``.
    """
    out: dict[str, float | int | str] = {}
    client = stats.get("client_id", "")

    def scalars(group: str, tags: str, node: Mapping[str, Any]) -> None:
        for key, value in node.items():
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float | str):
                out[f"{group}:{key}:{{{tags}}}"] = value
            elif isinstance(value, Mapping) and "avg" in value:
                for stat in _WINDOWS:
                    if stat in value:
                        out[f"{group}:{key}-{stat}:{{{tags}}}"] = value[stat]

    scalars("librdkafka", f"client-id={client}", stats)
    for name, broker in sorted((stats.get("brokers") or {}).items()):
        scalars("librdkafka-broker", f"broker={name}, client-id={client}", broker)
    for name, topic in sorted((stats.get("topics") or {}).items()):
        scalars("librdkafka-topic", f"client-id={client}, topic={name}", topic)
        for pid, part in sorted((topic.get("partitions") or {}).items()):
            if str(pid) == "-1":
                continue
            scalars(
                "librdkafka-partition",
                f"client-id={client}, partition={pid}, topic={name}",
                part,
            )
    return out


def format_metrics(metrics: Mapping[str, float | int | str]) -> list[str]:
    """Kafka's ``ToolsUtils.printMetrics`` lines: a blank line, ``Metric Name`` / ``Value``
    header, then ``name : value`` sorted by name, names padded to the longest, floats
    ``%.3f``. Nothing for no metrics."""
    if not metrics:
        return []
    width = max(len(name) for name in metrics)
    lines = ["", f"{'Metric Name'.ljust(width)}   Value"]
    for name in sorted(metrics):
        value = metrics[name]
        shown = jfloat(value, 3) if isinstance(value, float) else str(value)
        lines.append(f"{name.ljust(width)} : {shown}")
    return lines


# -- the cluster check every perf tool does first ---------------------------------------------


def require_topic(
    client: Any, bootstrap: str, topic: str | None, timeout_ms: int, *, hint: str = ""
) -> int:
    """Ask ``client`` (a confluent-kafka Producer, Consumer or AdminClient) for metadata of
    ``topic`` (of the cluster when None) within ``timeout_ms``; return its partition count.

    A producer's request may auto-create the topic where the cluster allows it (as Kafka's
    producer does); a consumer's never does. Raises ``ToolError`` when no broker answered
    (naming ``bootstrap``) or the topic does not exist (``hint`` says what to do).
    """
    from confluent_kafka import KafkaError, KafkaException

    from franz.admin.options import ToolError

    try:
        metadata = client.list_topics(topic, timeout=timeout_ms / 1000.0)
    except KafkaException as exc:
        raise ToolError(
            f"could not reach the cluster at {bootstrap} within {timeout_ms} ms "
            f"({exc.args[0].str() if exc.args else exc}); check that the broker is running "
            "and the address is right, or raise --timeout"
        ) from None
    if topic is None:
        return 0
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        error = found.error if found is not None else None
        if error is None or error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise ToolError(f"topic {topic!r} does not exist{hint}")
        raise ToolError(f"topic {topic!r}: {error.str()}")
    return len(found.partitions)


# -- librdkafka logging and statistics --------------------------------------------------------

#: librdkafka's log lines in the perf tools go through this Python logger (served by poll),
#: WARNING and up to stderr; a tool disables it when its run fails, so the one-line error is
#: not buried under them.
CLIENT_LOGGER_NAME = "franz.perf.librdkafka"


def client_observers(
    config: dict[str, Any], *, print_metrics: bool
) -> tuple[logging.Logger, list[str]]:
    """Add the perf tools' librdkafka ``logger`` (unless ``config`` has one) and, with
    ``print_metrics``, a ``stats_cb`` collecting librdkafka's statistics JSON every second
    (``statistics.interval.ms`` 1000 unless set) to ``config``; return the logger and the
    list the statistics go to."""
    stats_json: list[str] = []
    if print_metrics:
        config.setdefault("statistics.interval.ms", 1000)
        config["stats_cb"] = stats_json.append
    logger = logging.getLogger(CLIENT_LOGGER_NAME)
    config.setdefault("logger", logger)
    return logger, stats_json
