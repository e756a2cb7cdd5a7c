"""An acks=all producer that times a cluster: :class:`AckProbe`, an idempotent confluent-kafka
producer (``acks=all``) on a thread of its own, sending one 100 B record every ``interval_s``
(to one partition, or round-robin over several) and noting when each is acknowledged.

- ``replication_bench`` arms it with :meth:`AckProbe.watch` to note the first acknowledgement
  of a record *sent at or after* a given instant (a kill), so an acknowledgement already on
  its way when the leader died never counts as the partition being back; :func:`longest_gap`
  (pure) is the longest stretch without acknowledgements around such an instant.
- ``reassign_bench`` reads its ``deliveries`` (sequence number, send and acknowledgement
  times: the send-to-ack latency of every record) and checks that every acknowledged
  sequence number is in the topic afterwards; :func:`probe_stamp` (pure) reads a record's
  sequence number and send time back from its value.

Times are ``time.monotonic_ns()`` of the bench's process.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["PROBE_VALUE_SIZE", "AckProbe", "longest_gap", "probe_stamp"]

_STAMP = struct.Struct(">qq")  # sequence number, time.monotonic_ns() at produce()
PROBE_VALUE_SIZE = 100
_QUIET = logging.getLogger("bench.ack_probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def probe_stamp(value: bytes | None) -> tuple[int, int] | None:
    """(sequence number, send time in ns) of an :class:`AckProbe` record; None for a value of
    another size (the probe's values are all ``PROBE_VALUE_SIZE`` bytes)."""
    if value is None or len(value) != PROBE_VALUE_SIZE:
        return None
    seq, sent_ns = _STAMP.unpack_from(value)
    return int(seq), int(sent_ns)


def longest_gap(ack_ns: Sequence[int], start_ns: int, end_ns: int) -> float:
    """Seconds of the longest stretch without an acknowledgement between the last one at or
    before ``start_ns`` (or ``start_ns`` itself) and ``end_ns``; ``ack_ns`` is sorted."""
    at = bisect.bisect_right(ack_ns, start_ns)
    previous = ack_ns[at - 1] if at > 0 else start_ns
    longest = 0
    for t in ack_ns[at:]:
        if t > end_ns:
            break
        longest = max(longest, t - previous)
        previous = t
    return max(longest, end_ns - previous if previous < end_ns else 0) / 1e9


class AckProbe:
    """An idempotent ``acks=all`` producer sending at a fixed rate to one partition, or
    round-robin to ``partitions``.

    Runs on its own thread (librdkafka releases the GIL while it waits); the main thread
    only reads the counters and uses :meth:`watch` / :meth:`wait_back`. Times are
    ``time.monotonic_ns()``; an acknowledgement is timed when its delivery report is served
    (``poll``), so each figure is late by at most one send interval. A fatal producer error
    (say UNKNOWN_PRODUCER_ID from a new leader that lacks the producer's state) is noted in
    ``fatal`` and the probe goes on with a new producer, as an application would have to.

    What it saw: ``deliveries`` (sequence number, send and acknowledgement times, in delivery
    order), ``errors`` (failed deliveries' error names), ``client_errors`` (the non-fatal
    errors librdkafka reports to ``error_cb``: connection hiccups it recovers from itself),
    ``retriable`` (error name -> ``KafkaError.retriable()``) and ``fatal``.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partition: int,
        interval_s: float,
        partitions: Sequence[int] = (),
    ) -> None:
        self.bootstrap, self.topic, self.partition = bootstrap, topic, partition
        self.partitions = tuple(partitions) or (partition,)
        self.interval_ns = int(interval_s * 1e9)
        self.sent = 0
        self.ack_ns: list[int] = []  # in delivery order, which is time order
        self.deliveries: list[tuple[int, int, int]] = []  # (seq, sent_ns, ack_ns)
        self.errors: list[str] = []
        self.client_errors: list[str] = []
        self.retriable: dict[str, bool] = {}
        self.fatal: list[str] = []
        self.left = 0
        self._watch_ns: int | None = None
        self.back_ns: int | None = None
        self._back = threading.Event()
        self._stop = threading.Event()
        self._fatal_now = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ack-probe", daemon=True)
        self.failure: BaseException | None = None
        self._flush_s = 30.0

    @property
    def acked(self) -> int:
        return len(self.ack_ns)

    def start(self, warmup_acks: int = 200, timeout_s: float = 60.0) -> AckProbe:
        """Start sending; return once ``warmup_acks`` records were acknowledged."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while self.acked < warmup_acks:
            if self.failure is not None or not self._thread.is_alive():
                raise RuntimeError(f"ack probe stopped: {self.failure!r}; {self.errors[:3]}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"ack probe: {self.acked} of {warmup_acks} warm-up records acknowledged "
                    f"in {timeout_s:.0f} s; errors {self.errors[:3]} {self.fatal[:3]}"
                )
            time.sleep(0.01)
        return self

    def watch(self, since_ns: int) -> None:
        """Note the first acknowledgement of a record sent at or after ``since_ns``."""
        self.back_ns = None
        self._back.clear()
        self._watch_ns = since_ns

    def wait_back(self, timeout_s: float) -> float | None:
        """Seconds from the watched instant to that acknowledgement; None if none came."""
        if not self._back.wait(timeout_s) or self.back_ns is None or self._watch_ns is None:
            return None
        return (self.back_ns - self._watch_ns) / 1e9

    def stop(self, flush_s: float = 30.0) -> None:
        self._flush_s = flush_s
        self._stop.set()
        self._thread.join(flush_s + 10.0)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            name = str(err.name() if hasattr(err, "name") else err)
            self.errors.append(name)
            self.retriable[name] = bool(err.retriable()) if hasattr(err, "retriable") else False
            return
        now = time.monotonic_ns()
        self.ack_ns.append(now)
        seq, sent_ns = _STAMP.unpack_from(msg.value())
        self.deliveries.append((seq, sent_ns, now))
        watch = self._watch_ns
        if watch is not None and self.back_ns is None and sent_ns >= watch:
            self.back_ns = now
            self._back.set()

    def _on_error(self, err: Any) -> None:
        if not err.fatal():
            self.client_errors.append(err.name())
            self.retriable[err.name()] = bool(err.retriable())
        elif not self._fatal_now.is_set():
            self.fatal.append(f"{err.name()}: {err.str()}")
            self._fatal_now.set()

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                "socket.nagle.disable": True,
                # connection refused by a killed broker is expected; fatal errors are kept
                "logger": _QUIET,
                "error_cb": self._on_error,
            }
        )

    def _run(self) -> None:
        from confluent_kafka import KafkaError, KafkaException

        try:
            producer = self._producer()
            pad = bytes(PROBE_VALUE_SIZE - _STAMP.size)
            seq = 0
            next_ns = time.monotonic_ns()
            while not self._stop.is_set():
                if self._fatal_now.is_set():
                    # Fatal: this producer refuses everything from now on; its pending
                    # records are dropped with it (an application would do the same).
                    with contextlib.suppress(KafkaException):
                        producer.purge()
                    producer = self._producer()
                    self._fatal_now.clear()
                now = time.monotonic_ns()
                try:
                    if now < next_ns:
                        producer.poll((next_ns - now) / 1e9)
                        continue
                    producer.produce(
                        self.topic,
                        _STAMP.pack(seq, now) + pad,
                        partition=self.partitions[seq % len(self.partitions)],
                        on_delivery=self._delivered,
                    )
                    seq += 1
                    self.sent = seq
                    next_ns = max(next_ns + self.interval_ns, now)
                    producer.poll(0)
                except BufferError:
                    producer.poll(0.001)
                except KafkaException as exc:  # poll() and produce() raise the fatal error
                    error = exc.args[0]
                    if not (error.fatal() or error.code() == KafkaError._FATAL):
                        raise
                    if error.code() == KafkaError._FATAL:  # "produce refused": why, poll says
                        try:
                            producer.poll(0)
                        except KafkaException as cause:
                            error = cause.args[0]
                    if not self._fatal_now.is_set():
                        self.fatal.append(f"{error.name()}: {error.str()}")
                        self._fatal_now.set()
            self.left = producer.flush(self._flush_s)
        except BaseException as exc:  # reported by start() / the bench
            self.failure = exc
