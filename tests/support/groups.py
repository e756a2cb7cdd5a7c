"""Consumer-group members driven by real clients, and bounded waits, for the group tests.

A *member* is one real consumer in a consumer group, running in its own thread (or process)
and reporting what the group coordinator gave it:

- ``ConfluentMember`` (confluent-kafka / librdkafka), ``KafkaPythonMember`` (kafka-python) and
  ``AiokafkaMember`` (aiokafka, an asyncio loop in the member's thread) ``subscribe`` to topics,
  poll continuously and record every record delivered (``records``), every rebalance callback
  (``events``: assign / revoke / lost with the partitions the client passed) and the current
  assignment as the client reports it (``assignment``).
- ``KcatMember`` is ``kcat -G`` (librdkafka's balanced consumer, a separate process); its
  assignment comes from kcat's rebalance lines on stderr and its records from ``-J`` output.
- ``MemberProcess`` runs a ``ConfluentMember`` in a child Python process that reports its
  assignment as JSON lines, so a test can SIGKILL a consumer *process* (no LeaveGroup, no
  goodbye: the coordinator has to notice through the session timeout).

Client objects are not thread-safe (kafka-python's in particular), so a member's client is only
touched by the member's own thread: ``call(fn)`` runs ``fn(client)`` there and returns its
result. Commits and ``committed`` lookups go through it.

Every wait is bounded and says what it saw: ``wait_until(predicate, timeout, what)`` raises an
``AssertionError`` naming the goal and the last observation, and ``wait_for_assignment`` checks
a group's assignments (disjoint, covering exactly the partitions, of the expected sizes) and
shows each member's assignment, events and client log tail when it fails.

Client settings chosen for speed: ``session.timeout.ms`` 6000 (Kafka's default
``group.min.session.timeout.ms``) and heartbeats every 500 ms, so a rebalance is noticed in
half a second; ``auto.offset.reset`` earliest; auto-commit off unless a test turns it on.
librdkafka's log (``debug=cgrp``, plus ``protocol`` when ``FRANZ_TEST_DEBUG`` is set) is
captured per member and shown in failure messages.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import inspect
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import confluent_kafka
from confluent_kafka.admin import AdminClient

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    from kafka import ConsumerRebalanceListener as KafkaPythonListener
    from kafka.structs import OffsetAndMetadata as KafkaPythonOffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaPythonTopicPartition

import aiokafka
from aiokafka import ConsumerRebalanceListener as AiokafkaListener
from aiokafka.structs import OffsetAndMetadata as AiokafkaOffsetAndMetadata
from aiokafka.structs import TopicPartition as AiokafkaTopicPartition

from tests.support.clients import Consumed, as_consumed
from tests.support.wire import WireClient, offset_fetch

__all__ = [
    "GROUP_BROKER_OVERRIDES",
    "HEARTBEAT_INTERVAL_MS",
    "SESSION_TIMEOUT_MS",
    "TP",
    "AiokafkaMember",
    "ConfluentMember",
    "GroupMember",
    "KafkaPythonMember",
    "KcatMember",
    "MemberProcess",
    "RebalanceEvent",
    "close_all",
    "committed_offsets",
    "describe_group",
    "event_counts",
    "make_member",
    "wait_for_assignment",
    "wait_until",
]

T = TypeVar("T")

#: A topic partition as a plain value: ``(topic, partition)``.
TP = tuple[str, int]

MemberClient = Literal["confluent-kafka", "kafka-python", "aiokafka", "kcat"]

#: Broker overrides every group test uses: no initial rebalance delay (Kafka's default 3 s
#: would make every first join of an empty group wait 3 s).
GROUP_BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}

#: Kafka's default ``group.min.session.timeout.ms``: the shortest session a broker accepts.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500

_REPO_ROOT = Path(__file__).resolve().parents[2]
_LOG_LINES = 400


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    observe: Callable[[], object] | None = None,
    interval: float = 0.05,
) -> T:
    """Poll ``predicate`` until it returns a truthy value and return that value.

    After ``timeout`` seconds raise ``AssertionError("timed out after ... waiting for
    <what>; observed: ...")``, where the observation is ``observe()`` if given, else the
    predicate's last value.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            observed = observe() if observe is not None else value
            raise AssertionError(
                f"timed out after {timeout:.1f} s waiting for {what}; observed: {observed}"
            )
        time.sleep(interval)


@dataclass(frozen=True)
class RebalanceEvent:
    """One rebalance callback as the client made it: ``kind`` is assign, revoke or lost;
    ``partitions`` what the client passed (the full set for eager protocols, the increment for
    cooperative ones); ``at`` is ``time.monotonic()``."""

    kind: Literal["assign", "revoke", "lost"]
    partitions: frozenset[TP]
    at: float

    def __repr__(self) -> str:
        return f"{self.kind}{_fmt(self.partitions)}"


def _fmt(partitions: Iterable[TP]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(partitions)) + "]"


class _LogCapture(logging.Handler):
    """Appends a client's log records to a member's ``log``; with ``thread_marks``, only
    records from threads whose name contains one of them (kafka-python and aiokafka log
    through module-level loggers shared by every client in the process)."""

    def __init__(self, lines: collections.deque[str], thread_marks: tuple[str, ...] = ()) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines
        self.thread_marks = thread_marks

    def emit(self, record: logging.LogRecord) -> None:
        if self.thread_marks and not any(m in (record.threadName or "") for m in self.thread_marks):
            return
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        self.lines.append(f"{stamp}.{int(record.msecs):03d} {record.getMessage()}")


def _attach_log(member: GroupMember, logger_name: str, *thread_marks: str) -> Callable[[], None]:
    """Capture ``logger_name`` at DEBUG into ``member.log``; returns the detach function."""
    logger = logging.getLogger(logger_name)
    logger.setLevel(logging.DEBUG)
    handler = _LogCapture(member.log, thread_marks)
    logger.addHandler(handler)
    return lambda: logger.removeHandler(handler)


class GroupMember:
    """A subscribed consumer in its own thread. Subclasses implement ``_open``, ``_poll``,
    ``_close_client`` and the commit operations over their client.

    Public state (read from any thread): ``assignment``, ``records``, ``events``, ``errors``
    (client-reported errors, as text), ``log`` (client log tail), ``error`` (the exception
    that stopped the member's thread, if any).
    """

    client: MemberClient

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        *,
        name: str,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topics = list(topics)
        self.name = name
        self.config = dict(config or {})
        self.records: list[Consumed] = []
        self.events: list[RebalanceEvent] = []
        self.errors: list[str] = []
        self.log: collections.deque[str] = collections.deque(maxlen=_LOG_LINES)
        self.error: BaseException | None = None
        self._assignment: frozenset[TP] = frozenset()
        self._commands: queue.Queue[tuple[Callable[[Any], Any], Future[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self.closed = False

    # -- lifecycle

    def start(self, timeout: float = 30.0) -> Self:
        self._thread = threading.Thread(target=self._main, name=f"member-{self.name}", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise AssertionError(f"{self.describe()}: client did not start in {timeout} s")
        if self.error is not None:
            raise AssertionError(f"{self.describe()}: client failed to start") from self.error
        return self

    def close(self, timeout: float = 30.0) -> None:
        """Close the client the clean way (it leaves the group) and stop the thread."""
        if self.closed:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise AssertionError(f"{self.describe()}: did not close within {timeout} s")
        self.closed = True
        self._assignment = frozenset()

    def _main(self) -> None:
        try:
            self._open()
        except BaseException as exc:
            self.error = exc
            self._started.set()
            return
        self._started.set()
        try:
            while not self._stop.is_set():
                self._run_commands()
                self._poll()
        except BaseException as exc:
            self.error = exc
        finally:
            self._fail_commands()
            try:
                self._close_client()
            except BaseException as exc:
                self.errors.append(f"close: {exc!r}")

    def _run_commands(self) -> None:
        while True:
            try:
                fn, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(self._client()))
            except BaseException as exc:
                future.set_exception(exc)

    def _fail_commands(self) -> None:
        while True:
            try:
                _, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError(f"{self.name} stopped"))

    def call(self, fn: Callable[[Any], T | Awaitable[T]], timeout: float = 30.0) -> T:
        """Run ``fn(client)`` in the member's thread (between two polls); its result (awaited
        first, for aiokafka)."""
        if self.closed or self._stop.is_set():
            raise RuntimeError(f"{self.name} is closed")
        future: Future[T] = Future()
        self._commands.put((fn, future))
        return future.result(timeout)

    # -- what the member saw

    @property
    def assignment(self) -> frozenset[TP]:
        return self._assignment

    def partitions(self, topic: str | None = None) -> frozenset[int]:
        """The assigned partition numbers (of ``topic``, or of the only subscribed topic)."""
        wanted = topic if topic is not None else self.topics[0]
        return frozenset(p for t, p in self._assignment if t == wanted)

    def assign_events(self) -> int:
        return sum(1 for e in self.events if e.kind == "assign")

    def describe(self) -> str:
        state = "closed" if self.closed else "running"
        if self.error is not None:
            state = f"crashed: {self.error!r}"
        return (
            f"{self.client} member {self.name!r} ({state}): assignment {_fmt(self._assignment)}, "
            f"{len(self.records)} record(s), events {self.events[-12:]}"
            + (f", errors {self.errors[-5:]}" if self.errors else "")
        )

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(list(self.log)[-lines:])

    def diagnose(self, lines: int = 40) -> str:
        """``describe()`` and the tail of the client's log, for failure messages."""
        return f"{self.describe()}\n  client log tail:\n    " + "\n    ".join(
            list(self.log)[-lines:]
        )

    def _record(self, kind: Literal["assign", "revoke", "lost"], partitions: Iterable[Any]) -> None:
        self.events.append(
            RebalanceEvent(
                kind, frozenset((tp.topic, tp.partition) for tp in partitions), time.monotonic()
            )
        )

    # -- per client

    def _client(self) -> Any:
        raise NotImplementedError

    def _open(self) -> None:
        raise NotImplementedError

    def _poll(self) -> None:
        raise NotImplementedError

    def _close_client(self) -> None:
        raise NotImplementedError

    def commit(
        self, offsets: Mapping[TP, int | tuple[int, str | None]] | None = None
    ) -> dict[TP, str | None]:
        """Commit synchronously: the consumed positions (``offsets`` None) or the given
        ``{(topic, partition): offset or (offset, metadata)}``. Returns per-partition errors
        (None where the commit succeeded)."""
        raise NotImplementedError

    def committed(self, partitions: Iterable[TP]) -> dict[TP, tuple[int, str | None]]:
        """The group's committed ``(offset, metadata)`` per partition (-1 where none)."""
        raise NotImplementedError


def _split(value: int | tuple[int, str | None]) -> tuple[int, str | None]:
    return value if isinstance(value, tuple) else (value, None)


# -- confluent-kafka ---------------------------------------------------------------------------


class ConfluentMember(GroupMember):
    """A confluent-kafka ``Consumer`` subscribed with on_assign/on_revoke/on_lost callbacks.

    ``config`` entries are librdkafka properties; they override the defaults (for example
    ``partition.assignment.strategy``, ``group.instance.id``, ``enable.auto.commit``).
    """

    client: MemberClient = "confluent-kafka"

    def _client(self) -> confluent_kafka.Consumer:
        return self._consumer

    def _open(self) -> None:
        logger = logging.getLogger(f"franz-tests.member.{id(self)}")
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        logger.addHandler(_LogCapture(self.log))
        debug = "cgrp,protocol" if os.environ.get("FRANZ_TEST_DEBUG") else "cgrp"
        settings: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.name,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 2000,
            "debug": debug,
            "logger": logger,
            "error_cb": lambda err: self.errors.append(str(err)),
            **self.config,
        }
        self._consumer = confluent_kafka.Consumer(settings)
        self._consumer.subscribe(
            self.topics,
            on_assign=lambda c, ps: self._record("assign", ps),
            on_revoke=lambda c, ps: self._record("revoke", ps),
            on_lost=lambda c, ps: self._record("lost", ps),
        )

    def _poll(self) -> None:
        msg = self._consumer.poll(0.1)
        if msg is not None:
            if msg.error() is not None:
                self.errors.append(str(msg.error()))
            else:
                headers = tuple(msg.headers() or ())
                self.records.append(
                    Consumed(
                        msg.partition(),
                        msg.offset(),
                        msg.key(),
                        msg.value(),
                        headers,
                        msg.timestamp()[1],
                        None,
                    )
                )
        self._assignment = frozenset((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def _close_client(self) -> None:
        self._consumer.close()

    def member_id(self) -> str | None:
        return self.call(lambda c: c.memberid())

    def commit(
        self, offsets: Mapping[TP, int | tuple[int, str | None]] | None = None
    ) -> dict[TP, str | None]:
        def run(consumer: confluent_kafka.Consumer) -> dict[TP, str | None]:
            if offsets is None:
                result = consumer.commit(asynchronous=False)
            else:
                tps = []
                for (topic, partition), value in offsets.items():
                    offset, metadata = _split(value)
                    tp = confluent_kafka.TopicPartition(topic, partition, offset)
                    if metadata is not None:
                        tp = confluent_kafka.TopicPartition(
                            topic, partition, offset, metadata=metadata
                        )
                    tps.append(tp)
                result = consumer.commit(offsets=tps, asynchronous=False)
            return {
                (tp.topic, tp.partition): None if tp.error is None else str(tp.error)
                for tp in result or []
            }

        return self.call(run)

    def committed(self, partitions: Iterable[TP]) -> dict[TP, tuple[int, str | None]]:
        wanted = [confluent_kafka.TopicPartition(t, p) for t, p in partitions]
        result = self.call(lambda c: c.committed(wanted, timeout=10))
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in result}


# -- kafka-python ------------------------------------------------------------------------------


class _Recorder:
    """A rebalance listener (kafka-python's and aiokafka's have the same two callbacks)
    that records every callback on its member."""

    def __init__(self, member: GroupMember) -> None:
        self.member = member

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.member._record("revoke", revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.member._record("assign", assigned)


class _KafkaPythonRecorder(_Recorder, KafkaPythonListener):  # type: ignore[misc]
    pass


class KafkaPythonMember(GroupMember):
    """A kafka-python ``KafkaConsumer`` subscribed with a ``ConsumerRebalanceListener``.

    ``config`` entries are ``KafkaConsumer`` keyword arguments.
    """

    client: MemberClient = "kafka-python"

    def _client(self) -> Any:
        return self._consumer

    def _open(self) -> None:
        # kafka-python's coordinator logs from the member's thread and from its heartbeat
        # thread, named "kafka-coordinator-heartbeat-thread | <group>".
        self._detach_log = _attach_log(
            self, "kafka.coordinator", threading.current_thread().name, f"| {self.group}"
        )
        settings: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "group_id": self.group,
            "client_id": self.name,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            "auto_offset_reset": "earliest",
            "enable_auto_commit": False,
            "metadata_max_age_ms": 2000,
            **self.config,
        }
        self._consumer = kafka.KafkaConsumer(**settings)
        # Know the topics' partitions before the first JoinGroup. Otherwise a leader may
        # assign nothing ("No partition metadata for topic"), and its rejoin once the
        # metadata arrives can hang in kafka-python 3.0.12: if that join+sync outlasts one
        # poll() timeout, the join task completes in the background after the leader's
        # assignment snapshot already matches the metadata, so need_rejoin() turns False,
        # the finished task is never consumed, _on_join_complete never runs (no partitions,
        # no listener call) and heartbeats stay disabled until the coordinator expires the
        # member (its LeaveGroup at close then gets UNKNOWN_MEMBER_ID). Seen in this suite.
        for topic in self.topics:
            self._consumer.partitions_for_topic(topic)
        self._consumer.subscribe(self.topics, listener=_KafkaPythonRecorder(self))

    def _poll(self) -> None:
        polled = self._consumer.poll(timeout_ms=100)
        for records in polled.values():
            self.records.extend(as_consumed(records))
        self._assignment = frozenset((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def _close_client(self) -> None:
        try:
            self._consumer.close(autocommit=bool(self.config.get("enable_auto_commit", False)))
        finally:
            self._detach_log()

    def commit(
        self, offsets: Mapping[TP, int | tuple[int, str | None]] | None = None
    ) -> dict[TP, str | None]:
        def run(consumer: Any) -> dict[TP, str | None]:
            if offsets is None:
                consumer.commit()
                return dict.fromkeys(self._assignment)
            wanted = {}
            for (topic, partition), value in offsets.items():
                offset, metadata = _split(value)
                wanted[KafkaPythonTopicPartition(topic, partition)] = KafkaPythonOffsetAndMetadata(
                    offset, metadata or "", -1
                )
            consumer.commit(wanted)
            return dict.fromkeys(offsets)

        return self.call(run)

    def committed(self, partitions: Iterable[TP]) -> dict[TP, tuple[int, str | None]]:
        def run(consumer: Any) -> dict[TP, tuple[int, str | None]]:
            out: dict[TP, tuple[int, str | None]] = {}
            for topic, partition in partitions:
                got = consumer.committed(
                    KafkaPythonTopicPartition(topic, partition), metadata=True, timeout_ms=10_000
                )
                out[(topic, partition)] = (-1, None) if got is None else (got.offset, got.metadata)
            return out

        return self.call(run)


# -- aiokafka ----------------------------------------------------------------------------------


class _AiokafkaRecorder(_Recorder, AiokafkaListener):  # type: ignore[misc]
    pass


class AiokafkaMember(GroupMember):
    """An aiokafka ``AIOKafkaConsumer`` with ``group_id``, run by an asyncio loop in the
    member's thread. ``config`` entries are ``AIOKafkaConsumer`` keyword arguments; ``call``
    functions may return awaitables (they are awaited in the loop)."""

    client: MemberClient = "aiokafka"

    def _client(self) -> Any:
        return self._consumer

    def _main(self) -> None:
        asyncio.run(self._amain())

    async def _amain(self) -> None:
        detach_log = _attach_log(self, "aiokafka.consumer", threading.current_thread().name)
        try:
            await self._arun()
        finally:
            detach_log()

    async def _arun(self) -> None:
        try:
            settings: dict[str, Any] = {
                "bootstrap_servers": self.bootstrap,
                "group_id": self.group,
                "client_id": self.name,
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                "auto_offset_reset": "earliest",
                "enable_auto_commit": False,
                "metadata_max_age_ms": 2000,
                **self.config,
            }
            self._consumer = aiokafka.AIOKafkaConsumer(**settings)
            await asyncio.wait_for(self._consumer.start(), 30)
            self._consumer.subscribe(self.topics, listener=_AiokafkaRecorder(self))
        except BaseException as exc:
            self.error = exc
            self._started.set()
            return
        self._started.set()
        try:
            while not self._stop.is_set():
                await self._arun_commands()
                polled = await self._consumer.getmany(timeout_ms=100)
                for records in polled.values():
                    self.records.extend(as_consumed(records))
                self._assignment = frozenset(
                    (tp.topic, tp.partition) for tp in self._consumer.assignment()
                )
        except BaseException as exc:
            self.error = exc
        finally:
            self._fail_commands()
            try:
                await asyncio.wait_for(self._consumer.stop(), 30)
            except BaseException as exc:
                self.errors.append(f"stop: {exc!r}")

    async def _arun_commands(self) -> None:
        while True:
            try:
                fn, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(self._consumer)
                if inspect.isawaitable(result):
                    result = await result
                future.set_result(result)
            except BaseException as exc:
                future.set_exception(exc)

    def commit(
        self, offsets: Mapping[TP, int | tuple[int, str | None]] | None = None
    ) -> dict[TP, str | None]:
        def run(consumer: Any) -> Any:
            if offsets is None:
                return consumer.commit()
            wanted = {}
            for (topic, partition), value in offsets.items():
                offset, metadata = _split(value)
                wanted[AiokafkaTopicPartition(topic, partition)] = AiokafkaOffsetAndMetadata(
                    offset, metadata or ""
                )
            return consumer.commit(wanted)

        self.call(run)
        return dict.fromkeys(offsets if offsets is not None else self._assignment)

    def committed(self, partitions: Iterable[TP]) -> dict[TP, tuple[int, str | None]]:
        wanted = list(partitions)

        async def run(consumer: Any) -> dict[TP, tuple[int, str | None]]:
            out: dict[TP, tuple[int, str | None]] = {}
            for topic, partition in wanted:
                got = await consumer.committed(AiokafkaTopicPartition(topic, partition))
                out[(topic, partition)] = (-1 if got is None else got, None)
            return out

        return self.call(run)


# -- kcat -G -----------------------------------------------------------------------------------

_KCAT_REBALANCE = re.compile(r"rebalanced \(memberid ([^)]*)\): (assigned|revoked): ?(.*)$")
_KCAT_PARTITION = re.compile(r"(\S+) \[(\d+)\]")


class KcatMember(GroupMember):
    """``kcat -G <group> <topics>``: librdkafka's balanced consumer as a separate process.

    kcat prints ``% Group <g> rebalanced (memberid <id>): assigned: <t> [<p>], ...`` (and
    ``revoked: ...``) on stderr at each rebalance and, with ``-J -u``, one JSON envelope per
    record on stdout, unbuffered. ``close`` sends SIGTERM, on which kcat closes its consumer
    (a LeaveGroup) and exits. ``config`` entries are passed as ``-X key=value``.
    """

    client: MemberClient = "kcat"

    def start(self, timeout: float = 30.0) -> Self:
        args = ["kcat", "-b", self.bootstrap, "-G", self.group, *self.topics, "-J", "-u"]
        settings = {
            "client.id": self.name,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "auto.offset.reset": "earliest",
            **self.config,
        }
        for key, value in settings.items():
            args += ["-X", f"{key}={value}"]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        return self

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                envelope = json.loads(raw.decode("utf-8", "surrogateescape"))
            except ValueError:
                self.errors.append(f"stdout: {raw[:200]!r}")
                continue
            key, value = envelope.get("key"), envelope.get("payload")
            self.records.append(
                Consumed(
                    envelope["partition"],
                    envelope["offset"],
                    None if key is None else key.encode("utf-8", "surrogateescape"),
                    None if value is None else value.encode("utf-8", "surrogateescape"),
                    (),
                    envelope.get("ts", -1),
                    None,
                )
            )

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.log.append(line)
            match = _KCAT_REBALANCE.search(line)
            if match is None:
                if "ERROR" in line or "error" in line:
                    self.errors.append(line)
                continue
            parts = frozenset((t, int(p)) for t, p in _KCAT_PARTITION.findall(match.group(3)))
            if match.group(2) == "assigned":
                self.events.append(RebalanceEvent("assign", parts, time.monotonic()))
                self._assignment = parts
            else:
                self.events.append(RebalanceEvent("revoke", parts, time.monotonic()))
                self._assignment = self._assignment - parts

    def close(self, timeout: float = 30.0) -> None:
        """SIGTERM (kcat leaves the group and exits); SIGKILL if it outlives ``timeout``."""
        if self.closed:
            return
        self.closed = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.describe()}: kcat ignored SIGTERM") from None
        for reader in self._readers:
            reader.join(5)
        _close_pipes(self.proc)
        self._assignment = frozenset()

    def describe(self) -> str:
        exited = self.proc.poll()
        state = f"exited {exited}" if exited is not None else "running"
        return (
            f"kcat -G member {self.name!r} ({state}): assignment {_fmt(self._assignment)}, "
            f"{len(self.records)} record(s), events {self.events[-12:]}"
        )

    def call(self, fn: Callable[[Any], T | Awaitable[T]], timeout: float = 30.0) -> T:
        raise NotImplementedError("kcat runs in its own process")


# -- a consumer process to SIGKILL -------------------------------------------------------------


class MemberProcess:
    """A ``ConfluentMember`` in a child process (``python -m tests.support.groups member``).

    The child writes one JSON line per change of its assignment (``{"assignment": [[topic,
    partition], ...], "member_id": ...}``) and exits when its stdin closes (so it cannot
    outlive the test). ``kill()`` is SIGKILL: the consumer sends nothing more, not even a
    LeaveGroup, and the OS closes its sockets.
    """

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        *,
        name: str,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.assignment: frozenset[TP] = frozenset()
        self.member_id: str | None = None
        self.lines: list[str] = []
        args = [sys.executable, "-m", "tests.support.groups", "member"]
        args += ["--bootstrap", bootstrap, "--group", group, "--name", name]
        for topic in topics:
            args += ["--topic", topic]
        for key, value in (config or {}).items():
            args += ["--config", f"{key}={value}"]
        self.proc = subprocess.Popen(
            args,
            cwd=_REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if line.startswith("{"):
                report = json.loads(line)
                self.assignment = frozenset((t, p) for t, p in report["assignment"])
                self.member_id = report.get("member_id")

    def partitions(self, topic: str) -> frozenset[int]:
        return frozenset(p for t, p in self.assignment if t == topic)

    def kill(self) -> None:
        """SIGKILL the consumer process and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(5)
        _close_pipes(self.proc)
        self.assignment = frozenset()

    def close(self, timeout: float = 30.0) -> None:
        """Close stdin (the child closes its consumer cleanly and exits); SIGKILL if needed."""
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(5)
        _close_pipes(self.proc)

    def describe(self) -> str:
        code = self.proc.poll()
        state = "running" if code is None else f"exited {code}"
        return (
            f"consumer process {self.name!r} pid {self.proc.pid} ({state}): assignment "
            f"{_fmt(self.assignment)}; output tail: {self.lines[-15:]}"
        )


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _member_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.groups member")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--topic", action="append", required=True)
    parser.add_argument("--config", action="append", default=[])
    args = parser.parse_args(argv)
    config: dict[str, Any] = dict(item.split("=", 1) for item in args.config)
    member = ConfluentMember(
        args.bootstrap, args.group, args.topic, name=args.name, config=config
    ).start()
    stdin_closed = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.buffer.read()
        stdin_closed.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    reported: frozenset[TP] | None = None
    member_id: str | None = None
    while not stdin_closed.wait(0.05):
        if member.error is not None:
            print(f"member crashed: {member.error!r}", flush=True)
            return 1
        current = member.assignment
        if current != reported or member_id is None:
            if member_id is None:
                with contextlib.suppress(Exception):
                    member_id = member.member_id() or None
            reported = current
            print(json.dumps({"assignment": sorted(current), "member_id": member_id}), flush=True)
    member.close()
    return 0


# -- group-wide helpers ------------------------------------------------------------------------

Member = GroupMember | MemberProcess


def make_member(
    client: MemberClient,
    bootstrap: str,
    group: str,
    topics: Sequence[str],
    *,
    name: str,
    config: Mapping[str, Any] | None = None,
) -> GroupMember:
    """Start a member of ``group`` with ``client``."""
    cls: type[GroupMember] = {
        "confluent-kafka": ConfluentMember,
        "kafka-python": KafkaPythonMember,
        "aiokafka": AiokafkaMember,
        "kcat": KcatMember,
    }[client]
    return cls(bootstrap, group, topics, name=name, config=config).start()


def close_all(members: Iterable[Member]) -> None:
    """Close every member still open, in parallel (each leave may wait on a rebalance)."""
    threads = [
        threading.Thread(target=_close_quietly, args=(m,), daemon=True)
        for m in members
        if not getattr(m, "closed", False)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(40)


def _close_quietly(member: Member) -> None:
    with contextlib.suppress(Exception):
        member.close()


def _describe_members(members: Sequence[Member], log_lines: int = 0) -> str:
    parts = []
    for m in members:
        parts.append("\n  " + m.describe())
        if log_lines and isinstance(m, GroupMember) and m.log:
            tail = list(m.log)[-log_lines:]
            parts.append("\n    log tail:\n      " + "\n      ".join(tail))
    return "".join(parts)


def wait_for_assignment(
    members: Sequence[Member],
    partitions: Collection[TP],
    *,
    sizes: Sequence[int] | None = None,
    after: Mapping[int, int] | None = None,
    timeout: float = 30.0,
    what: str = "",
) -> dict[str, frozenset[TP]]:
    """Wait until the members' assignments are disjoint and cover exactly ``partitions``.

    ``sizes`` (any order) are the expected assignment sizes, one per member. ``after`` maps
    ``id(member)`` to the member's ``assign_events()`` count taken before a membership change:
    each such member must have had a newer assign callback (so an assignment left over from
    before the change does not count). Returns ``{member name: assignment}``; on timeout the
    failure lists every member's assignment and events and its client log tail.
    """
    wanted = frozenset(partitions)

    def settled() -> dict[str, frozenset[TP]] | None:
        if any(isinstance(m, GroupMember) and m.error is not None for m in members):
            return None
        current = [m.assignment for m in members]
        union: set[TP] = set()
        for a in current:
            if union & a:
                return None
            union |= a
        if union != wanted:
            return None
        if sizes is not None and sorted(len(a) for a in current) != sorted(sizes):
            return None
        if after is not None:
            for m in members:
                if (
                    isinstance(m, GroupMember)
                    and id(m) in after
                    and m.assign_events() <= after[id(m)]
                ):
                    return None
        return {m.name: a for m, a in zip(members, current, strict=True)}

    for m in members:
        if isinstance(m, GroupMember) and m.error is not None:
            raise AssertionError(f"{m.describe()}") from m.error
    goal = f"{len(members)} member(s) to share {_fmt(wanted)}"
    if sizes is not None:
        goal += f" with sizes {sorted(sizes)}"
    return wait_until(
        settled,
        timeout,
        f"{what}: {goal}" if what else goal,
        observe=lambda: _describe_members(members, log_lines=25),
    )


def event_counts(members: Iterable[GroupMember]) -> dict[int, int]:
    """``{id(member): assign_events()}``, for ``wait_for_assignment(after=...)``."""
    return {id(m): m.assign_events() for m in members}


def describe_group(bootstrap: str, group: str, timeout: float = 15.0) -> Any:
    """confluent-kafka's ``ConsumerGroupDescription`` of ``group`` (DescribeGroups)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout)


def committed_offsets(
    bootstrap: str, group: str, timeout: float = 15.0
) -> dict[TP, tuple[int, str | None]]:
    """Every committed ``(offset, metadata)`` of ``group``: one OffsetFetch v8 for all topics
    on the raw wire client, so metadata comes back exactly as stored.

    Not through confluent-kafka: its binding reads commit metadata as a C string, so metadata
    committed by another client (which sends no NUL terminator) comes back with whatever
    bytes follow it in memory (librdkafka issue #4649), or fails to decode.
    """
    with WireClient.connect(bootstrap, timeout=timeout) as client:
        fetched = offset_fetch(client, group)
    out: dict[TP, tuple[int, str | None]] = {}
    for tp, (offset, metadata, error) in fetched.items():
        if error:
            raise AssertionError(f"OffsetFetch of {group!r}: {tp}: error {error}")
        out[tp] = (offset, metadata)
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "member":
        sys.exit(_member_main(sys.argv[2:]))
    sys.exit(f"usage: python -m tests.support.groups member --bootstrap ... (got {sys.argv[1:]})")
