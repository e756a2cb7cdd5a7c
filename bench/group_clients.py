"""Group bench: the consumers it measures with, and what one measured run gives.

A rebalance run (:func:`rebalance_once`) puts three :class:`Member` threads of this process
in one group: each a confluent-kafka or kafka-python consumer that subscribes when told,
polls every ``POLL_S`` (50 ms) and logs every assignment and revocation its rebalance
callback sees, with ``time.monotonic()``; :func:`settled_at` reads those logs. A commit run
(:func:`commit_once`) is one confluent-kafka consumer owning every partition, committing
all of them synchronously in a loop. Both sample the broker's ``/proc/<pid>/stat`` before
and after the measured window (:class:`System`).

Every wait has a limit; every consumer is closed (its thread joined, 15 s at most) before a
run returns.
"""

from __future__ import annotations

import math
import resource
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.broker_clients import ProcSample, sample_process
from bench.report import percentile

__all__ = [
    "POLL_S",
    "Assigned",
    "CommitRun",
    "Member",
    "RebalanceRun",
    "System",
    "commit_once",
    "commit_run",
    "rebalance_once",
    "settled_at",
]

POLL_S = 0.05


# -- measurements (pure) ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assigned:
    """A member's assignment as its rebalance callback saw it (``revoked``: now it has none)."""

    at: float  # time.monotonic()
    partitions: frozenset[int]
    revoked: bool = False


def settled_at(
    histories: Sequence[Sequence[Assigned]], since: float, partitions: int
) -> float | None:
    """When the group settled after ``since``: the time of the last member's assignment.

    Settled means every member's latest event is an assignment made at or after ``since``
    and the latest assignments are disjoint and cover ``range(partitions)`` (so they belong
    to one generation holding every member). None if not (yet) settled.
    """
    latest: list[Assigned] = []
    for history in histories:
        if not history or history[-1].revoked or history[-1].at < since:
            return None
        latest.append(history[-1])
    union: set[int] = set()
    for a in latest:
        union |= a.partitions
    if sum(len(a.partitions) for a in latest) != partitions or union != set(range(partitions)):
        return None
    return max(a.at for a in latest)


@dataclass(slots=True)
class RebalanceRun:
    """One rebalance: seconds from the third subscribe to settled; the untimed first settle."""

    seconds: float
    first_settle_s: float
    broker_cpu_s: float | None = None


@dataclass(slots=True)
class CommitRun:
    """One commit loop: commits done, wall seconds, latency percentiles (ms), broker cost."""

    commits: int
    seconds: float
    partitions: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    client_cpu_s: float | None = None
    broker_cpu_s: float | None = None
    broker_rss_mib: float | None = None
    errors: int = 0

    @property
    def commits_s(self) -> float:
        return self.commits / self.seconds if self.seconds > 0 else 0.0

    @property
    def offsets_s(self) -> float:
        return self.commits_s * self.partitions

    @property
    def broker_cpu_ms_per_commit(self) -> float | None:
        if self.broker_cpu_s is None or not self.commits:
            return None
        return self.broker_cpu_s * 1000 / self.commits


def commit_run(latencies_s: Sequence[float], seconds: float, partitions: int) -> CommitRun:
    """Summarise one loop's per-commit latencies (seconds) into a :class:`CommitRun`."""
    values = sorted(latencies_s)
    if not values:
        return CommitRun(0, seconds, partitions, math.nan, math.nan, math.nan)
    return CommitRun(
        commits=len(values),
        seconds=seconds,
        partitions=partitions,
        p50_ms=percentile(values, 50) * 1000,
        p99_ms=percentile(values, 99) * 1000,
        max_ms=values[-1] * 1000,
    )


# -- group members (threads of this process) -------------------------------------------------


class Member(threading.Thread):
    """One consumer in a thread: subscribes, polls every 50 ms, logs its assignments."""

    def __init__(
        self, name: str, client: str, bootstrap: str, group: str, topic: str, extra: dict[str, Any]
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.client, self.bootstrap, self.group, self.topic = client, bootstrap, group, topic
        self.extra = extra
        self.history: list[Assigned] = []
        self.ready = threading.Event()  # the consumer exists (constructed, not subscribed)
        self.go = threading.Event()  # subscribe now
        self.halt = threading.Event()
        self.subscribed_at: float | None = None
        self.error: str | None = None

    def _log(self, partitions: Sequence[int], revoked: bool = False) -> None:
        self.history.append(Assigned(time.monotonic(), frozenset(partitions), revoked))

    def run(self) -> None:
        try:
            if self.client == "confluent":
                self._run_confluent()
            else:
                self._run_kafka_python()
        except Exception as exc:  # reported by the bench
            self.error = repr(exc)
        finally:
            self.ready.set()

    def _loop(self, subscribe: Callable[[], None], poll: Callable[[], object]) -> None:
        self.ready.set()
        while not self.go.wait(0.05):
            if self.halt.is_set():
                return
        self.subscribed_at = time.monotonic()
        subscribe()
        while not self.halt.is_set():
            poll()

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "log_level": 3,
                **self.extra,
            }
        )
        try:
            self._loop(
                lambda: consumer.subscribe(
                    [self.topic],
                    on_assign=lambda c, ps: self._log([p.partition for p in ps]),
                    on_revoke=lambda c, ps: self._log([], revoked=True),
                ),
                lambda: consumer.poll(POLL_S),
            )
        finally:
            consumer.close()

    def _run_kafka_python(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer  # type: ignore[import-untyped]

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._log([], revoked=True)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._log([tp.partition for tp in assigned])

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            **self.extra,
        )
        try:
            self._loop(
                lambda: consumer.subscribe([self.topic], listener=Listener()),
                lambda: consumer.poll(timeout_ms=int(POLL_S * 1000)),
            )
        finally:
            consumer.close()


def _wait(
    what: str, check: Callable[[], float | None], timeout: float, members: list[Member]
) -> float | None:
    """Poll ``check`` every 10 ms until it gives a time, a member fails, or ``timeout``."""
    start = time.monotonic()
    next_note = start + 5.0
    while True:
        got = check()
        if got is not None:
            return got
        failed = [m for m in members if m.error]
        if failed:
            raise RuntimeError(f"{what}: {failed[0].name} failed: {failed[0].error}")
        now = time.monotonic()
        if now - start > timeout:
            return None
        if now >= next_note:
            print(f"    ... {what}: still waiting at {now - start:.0f} s", flush=True)
            next_note = now + 5.0
        time.sleep(0.01)


# -- one run ------------------------------------------------------------------------------------


@dataclass
class System:
    """A broker the runs go to (franz or the mock process): its address and its process."""

    key: str
    label: str
    bootstrap: str
    pid: int
    make_topic: Callable[[str, int], None]

    def sample(self) -> ProcSample | None:
        return sample_process(self.pid)


def _cpu_delta(before: ProcSample | None, after: ProcSample | None) -> float | None:
    return after.cpu_s - before.cpu_s if before and after else None


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rebalance_once(
    system: System,
    group: str,
    client: str,
    extra: dict[str, Any],
    n: int,
    phase: float,
    timeout: float,
    warn: Callable[[str], None],
) -> RebalanceRun | None:
    """One rebalance of ``group`` on ``system``: two members settle, then a third joins.

    The third subscribes ``phase`` seconds after the first two settled; each settling may
    take ``timeout`` seconds. None (and a warning) if the run failed.
    """
    members = [
        Member(f"{group}/m{k}", client, system.bootstrap, group, "rebalance", extra)
        for k in range(3)
    ]
    try:
        for m in members:
            m.start()
        for m in members:
            if not m.ready.wait(30.0) or m.error:
                raise RuntimeError(f"{m.name} did not start: {m.error or 'timeout'}")
        t0 = time.monotonic()
        members[0].go.set()
        members[1].go.set()
        two = members[:2]
        first = _wait(
            "two members settling",
            lambda: settled_at([m.history for m in two], t0, n),
            timeout,
            members,
        )
        if first is None:
            raise RuntimeError(f"the first two did not settle within {timeout:.0f} s")
        time.sleep(max(0.0, first + phase - time.monotonic()))
        before = system.sample()
        members[2].go.set()
        while members[2].subscribed_at is None and not members[2].error:
            time.sleep(0.001)
        since = members[2].subscribed_at or time.monotonic()
        done = _wait(
            "third member joining",
            lambda: settled_at([m.history for m in members], since, n),
            timeout,
            members,
        )
        after = system.sample()
        if done is None:
            raise RuntimeError(f"not settled {timeout:.0f} s after the third subscribe")
        return RebalanceRun(done - since, first - t0, _cpu_delta(before, after))
    except RuntimeError as exc:
        warn(f"rebalance {group} on {system.label}: {exc}")
        return None
    finally:
        for m in members:
            m.halt.set()
        for m in members:
            m.join(15.0)
            if m.is_alive():
                warn(f"{m.name}: consumer close() did not return in 15 s")


def commit_once(
    system: System, group: str, n: int, settle_timeout: float, seconds: float
) -> CommitRun:
    """Synchronous commits of all ``n`` partitions of topic ``commit`` for ``seconds``.

    Raises RuntimeError if the member is not assigned all ``n`` within ``settle_timeout``.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    assigned: list[int] = []
    consumer = Consumer(
        {
            "bootstrap.servers": system.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    try:
        consumer.subscribe(
            ["commit"], on_assign=lambda c, ps: assigned.extend(p.partition for p in ps)
        )
        deadline = time.monotonic() + settle_timeout
        while len(assigned) < n:
            consumer.poll(POLL_S)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(assigned)} of {n} partitions assigned")
        latencies: list[float] = []
        errors, k = 0, 0
        commit, clock = consumer.commit, time.perf_counter
        before, cpu0 = system.sample(), _self_cpu()
        start = clock()
        end = start + seconds
        while (t := clock()) < end:
            k += 1
            offsets = [TopicPartition("commit", p, k) for p in range(n)]
            try:
                out = commit(offsets=offsets, asynchronous=False)
                errors += sum(1 for tp in out or () if tp.error is not None)
            except KafkaException:
                errors += 1
            latencies.append(clock() - t)
        seconds = clock() - start
        cpu1, after = _self_cpu(), system.sample()
    finally:
        consumer.close()
    run = commit_run(latencies, seconds, n)
    run.errors, run.client_cpu_s = errors, cpu1 - cpu0
    run.broker_cpu_s = _cpu_delta(before, after)
    run.broker_rss_mib = after.rss_mib if after else None
    return run
