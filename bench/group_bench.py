"""Group bench: the consumer-group figures of issue 4, each against librdkafka's mock.

Run ``python -m bench.group_bench [--quick] [--runs N] [--only rebalance,commit]``; see
``bench/README.md`` ("group_bench") for what each figure means.

Scenarios (the two systems measured back to back, their order rotating every run):

1. ``rebalance``: a 6-partition topic; two consumers of a fresh group subscribe and settle
   (untimed: the first rebalance of an empty group waits ``group.initial.rebalance.delay.ms``
   = 3000); then a third subscribes. Measured: from the third consumer's ``subscribe()`` to
   the moment the last of the three has its assignment of the new generation (the three
   latest assignments are disjoint and cover the 6 partitions), from ``on_assign`` /
   ``on_partitions_assigned`` timestamps (``time.monotonic()``). One thread per consumer in
   this process, each polling every 50 ms. Cases: confluent-kafka with its defaults
   (``session.timeout.ms`` 45000, ``heartbeat.interval.ms`` 3000), confluent-kafka with
   ``heartbeat.interval.ms=100``, kafka-python with its defaults (heartbeat 3000 ms,
   session 10000 ms). The eager protocol throughout (both clients' default assignors).
2. ``commit``: a 100-partition topic, one confluent-kafka consumer subscribed (the group's
   only member owns all 100 partitions), ``commit(offsets=[100 TopicPartitions],
   asynchronous=False)`` in a loop for a few seconds, every commit with new offsets.
   Measured: commits/s, partition-offsets/s, p50/p99 commit latency, the broker's CPU
   seconds over the loop (``/proc/<pid>/stat``) and its VmRSS after.

The systems: franz (``tests.support.broker.BrokerProcess``, broker defaults) and
librdkafka's mock cluster hosted in a process of its own (``bench.broker_clients.
MockCluster``; all members of a group must reach the same mock, which
``test.mock.num.brokers`` inside each client would not give). Every process started is
stopped by PID at the end, on an exception and on Ctrl-C/SIGTERM; every wait has a limit.
"""

from __future__ import annotations

import argparse
import datetime
import math
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.broker_bench import percentile
from bench.broker_clients import (
    MockCluster,
    ProcSample,
    create_topic,
    register,
    run_timed,
    sample_process,
    stop_all,
    unregister,
)
from bench.report import machine_info, render_markdown_table, summarize

__all__ = [
    "CASES",
    "SCENARIOS",
    "Assigned",
    "CommitRun",
    "RebalanceRun",
    "Results",
    "Settings",
    "commit_run",
    "main",
    "paired_ratios",
    "parse_args",
    "settings_from_args",
    "settled_at",
]

SCENARIOS = ("rebalance", "commit")
# (case key, label, client, extra client config)
CASES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("ck-default", "confluent-kafka, defaults (heartbeat 3000 ms)", "confluent", {}),
    (
        "ck-hb100",
        "confluent-kafka, heartbeat.interval.ms=100",
        "confluent",
        {"heartbeat.interval.ms": 100},
    ),
    ("kp-default", "kafka-python 3, defaults (heartbeat 3000 ms)", "kafka-python", {}),
)
HEARTBEAT_MS = {"ck-default": 3000, "ck-hb100": 100, "kp-default": 3000}
# The mock's JoinGroup timer into a stable group is session.timeout.ms - 1000 (44 s with
# both clients' 45 s default) and ignores heartbeats, so one run of one case shows it;
# kafka-python 3.0.12 does not get past its version probe against the mock.
MOCK_CASES = ("ck-default",)
MOCK_WAIT_S = 60.0
REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.05


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    mode: str
    runs: int
    scenarios: tuple[str, ...]
    cases: tuple[str, ...]
    rebalance_partitions: int = 6
    commit_partitions: int = 100
    commit_seconds: float = 5.0
    settle_timeout: float = 20.0  # two members settling, and the third joining (franz)
    mock_rebalance_runs: int = 1
    budgets: dict[str, float] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    results_dir: Path = REPO / "bench" / "results"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.group_bench",
        description="Consumer-group rebalance time and commit throughput, franz vs the mock.",
    )
    p.add_argument("--quick", action="store_true", help="1 run, shorter loops (~1 min)")
    p.add_argument("--only", default=",".join(SCENARIOS), help="subset of " + ",".join(SCENARIOS))
    p.add_argument(
        "--cases",
        default=",".join(c[0] for c in CASES),
        help="rebalance cases, subset of " + ",".join(c[0] for c in CASES),
    )
    p.add_argument("--runs", type=int, help="runs per system and case (default 3, quick 1)")
    p.add_argument(
        "--mock-rebalance-runs",
        type=int,
        help="rebalance runs on the mock, ~50 s each (default 1, quick 0)",
    )
    p.add_argument("--commit-seconds", type=float, help="seconds per commit loop (3, quick 2)")
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="server.properties override for the franz broker (repeatable)",
    )
    p.add_argument("--results-dir", help="where group-<timestamp>.md goes (bench/results)")
    return p.parse_args(argv)


def _names(text: str, known: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = set(names) - set(known)
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(sorted(unknown))}")
    return names


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 3)
    if runs < 1:
        raise SystemExit("--runs must be >= 1")
    if args.commit_seconds is not None and args.commit_seconds <= 0:
        raise SystemExit("--commit-seconds must be > 0")
    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--override wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()
    return Settings(
        mode="quick" if quick else "full",
        runs=runs,
        scenarios=_names(args.only, SCENARIOS, "scenario(s)"),
        cases=_names(args.cases, [c[0] for c in CASES], "case(s)"),
        commit_seconds=args.commit_seconds or (2.0 if quick else 3.0),
        settle_timeout=15.0 if quick else 20.0,
        mock_rebalance_runs=args.mock_rebalance_runs
        if args.mock_rebalance_runs is not None
        else (0 if quick else 1),
        budgets={"rebalance": 40.0, "commit": 30.0}
        if quick
        else {"rebalance": 150.0, "commit": 60.0},
        overrides=overrides,
        results_dir=Path(args.results_dir) if args.results_dir else REPO / "bench" / "results",
    )


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


def paired_ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Ratios of values paired by run index (run i of both measured back to back)."""
    return [a / b for a, b in zip(numerator, denominator, strict=False) if a > 0 and b > 0]


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None or math.isnan(value) else format(value, spec)


def _span(values: Sequence[float], spec: str) -> tuple[str, str]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-", "-"
    s = summarize(values)
    return format(s["median"], spec), f"{s['min']:{spec}}-{s['max']:{spec}}"


class Results:
    """Everything one run of the bench measured, keyed by (case or "commit", system label)."""

    def __init__(self) -> None:
        self.rebalance: dict[tuple[str, str], list[RebalanceRun]] = {}
        self.commit: dict[str, list[CommitRun]] = {}
        self.case_labels: dict[str, str] = {}
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"WARNING: {message}", flush=True)

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def rebalance_table(self) -> str:
        headers = [
            "case",
            "system",
            "rebalance s median",
            "min-max",
            "2-member start s",
            "broker CPU-s",
            "runs",
        ]
        body = []
        for (case, system), runs in self.rebalance.items():
            med, span = _span([r.seconds for r in runs], ".3f")
            first, _ = _span([r.first_settle_s for r in runs], ".2f")
            cpu = [r.broker_cpu_s for r in runs if r.broker_cpu_s is not None]
            body.append(
                [
                    self.case_labels.get(case, case),
                    system,
                    med,
                    span,
                    first,
                    _span(cpu, ".3f")[0],
                    str(len(runs)),
                ]
            )
        return render_markdown_table(headers, body, align="llrrrrr")

    def commit_table(self) -> str:
        headers = [
            "system",
            "commits/s median",
            "min-max",
            "offsets/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "broker CPU ms/commit",
            "broker RSS MiB",
            "errors",
            "runs",
        ]
        body = []
        for system, runs in self.commit.items():
            med, span = _span([r.commits_s for r in runs], ",.0f")
            cpu = [c for r in runs if (c := r.broker_cpu_ms_per_commit) is not None]
            rss = [r.broker_rss_mib for r in runs if r.broker_rss_mib is not None]
            body.append(
                [
                    system,
                    med,
                    span,
                    _span([r.offsets_s for r in runs], ",.0f")[0],
                    _span([r.p50_ms for r in runs], ".2f")[0],
                    _span([r.p99_ms for r in runs], ".2f")[0],
                    _fmt(max((r.max_ms for r in runs), default=None), ".1f"),
                    _span(cpu, ".2f")[0],
                    _fmt(max(rss, default=None), ",.0f"),
                    str(sum(r.errors for r in runs)),
                    str(len(runs)),
                ]
            )
        return render_markdown_table(headers, body, align="lrrrrrrrrrr")

    def ratio_rows(self, franz: str, reference: str) -> list[list[str]]:
        rows: list[tuple[str, list[float], list[float]]] = []
        for case in self.case_labels:
            a = [r.seconds for r in self.rebalance.get((case, franz), [])]
            b = [r.seconds for r in self.rebalance.get((case, reference), [])]
            rows.append((f"rebalance s, {self.case_labels[case]} (lower is better)", a, b))
        rows.append(
            (
                "commits/s (higher is better)",
                [r.commits_s for r in self.commit.get(franz, [])],
                [r.commits_s for r in self.commit.get(reference, [])],
            )
        )
        body = []
        for label, a, b in rows:
            ratios = paired_ratios(a, b)
            if ratios:
                med, span = _span(ratios, ".2f")
                body.append([label, med, span, str(len(ratios))])
        return body

    def markdown(self, franz: str = "franz", reference: str = "mock") -> str:
        parts: list[str] = []
        if self.rebalance:
            parts += [
                "### Rebalance: a third member joins a stable group of two",
                "",
                self.rebalance_table(),
                "",
            ]
        if self.commit:
            parts += [
                "### Synchronous commits of 100 partitions by one member",
                "",
                self.commit_table(),
                "",
            ]
        ratios = self.ratio_rows(franz, reference)
        if ratios:
            headers = ["franz / mock (paired runs)", "median", "min-max", "pairs"]
            parts += ["### Franz / mock", "", render_markdown_table(headers, ratios, "lrrr"), ""]
        parts.append(
            "Rebalance s: from the third consumer's subscribe() to the last on_assign of the "
            "generation holding all three (median over runs, min-max). 2-member start s: the "
            "untimed settle of the first two (an empty group's first rebalance). Broker CPU-s: "
            "/proc/<pid>/stat user+sys delta over the measured window. Commit latency: each "
            "commit(asynchronous=False) call, nearest-rank percentiles; ms/commit = broker "
            "CPU over the loop / commits; RSS after the loop."
        )
        if self.notes:
            parts += ["", "Notes:", *[f"- {n}" for n in self.notes]]
        if self.warnings:
            parts += ["", "Warnings:", *[f"- {w}" for w in self.warnings]]
        return "\n".join(parts)


# -- group members (threads of this process) -----------------------------------------------------


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


# -- systems and the bench -------------------------------------------------------------------


@dataclass
class System:
    key: str
    label: str
    bootstrap: str
    pid: int
    make_topic: Callable[[str, int], None]

    def sample(self) -> ProcSample | None:
        return sample_process(self.pid)


def _rotate(items: Sequence[System], i: int) -> list[System]:
    k = i % len(items) if items else 0
    return [*items[k:], *items[:k]]


def _cpu_delta(before: ProcSample | None, after: ProcSample | None) -> float | None:
    return after.cpu_s - before.cpu_s if before and after else None


class Bench:
    """Starts franz and the mock, runs the scenarios, fills :class:`Results`."""

    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg, self.base, self.results = cfg, base, results
        self.systems: list[System] = []
        self.owned: list[Any] = []

    def start(self) -> None:
        from tests.support.broker import BrokerProcess

        print("starting the systems ...", flush=True)
        mock = MockCluster().start()
        self.owned.append(mock)
        broker = BrokerProcess(self.base / "franz", dict(self.cfg.overrides))
        try:
            broker.start(timeout=60.0)
        except RuntimeError as exc:
            self.results.warn(f"franz broker did not start: {str(exc)[-1500:]}")
        else:
            register(broker.pid, broker)
            self.owned.append(broker)
            self.systems.append(
                System(
                    "franz",
                    "franz",
                    broker.bootstrap,
                    broker.pid,
                    lambda t, n: self._franz_topic(broker.bootstrap, t, n),
                )
            )
            print(f"  franz: {broker.bootstrap} (pid {broker.pid})", flush=True)
        self.systems.append(System("mock", "mock", mock.bootstrap, mock.pid, mock.create_topic))
        print(f"  mock process: {mock.bootstrap} (pid {mock.pid})", flush=True)

    def _franz_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        how = create_topic(bootstrap, topic, partitions)
        if how != "created":
            self.results.warn(f"franz topic {topic}: {how}")

    def close(self) -> None:
        for owner in reversed(self.owned):
            pid = owner.proc.pid if getattr(owner, "proc", None) is not None else None
            try:
                code = owner.stop()
                if code:
                    self.results.warn(f"franz exited with {code} on SIGTERM")
            except Exception as exc:
                print(f"stopping {owner}: {exc}; killing it", flush=True)
                owner.kill()
            if pid is not None:
                unregister(pid)
        self.owned.clear()

    def rounds(self, scenario: str) -> Iterator[tuple[int, System]]:
        deadline = time.monotonic() + self.cfg.budgets[scenario]
        for i in range(self.cfg.runs):
            for system in _rotate(self.systems, i):
                if time.monotonic() > deadline:
                    self.results.warn(
                        f"{scenario}: {self.cfg.budgets[scenario]:.0f} s budget spent; runs skipped"
                    )
                    return
                yield i, system

    # -- scenario 1: rebalance -----------------------------------------------------------

    def scenario_rebalance(self) -> None:
        cfg, res = self.cfg, self.results
        n = cfg.rebalance_partitions
        for system in self.systems:
            system.make_topic("rebalance", n)
        cases = [c for c in CASES if c[0] in cfg.cases]
        for key, label, _, _ in cases:
            res.case_labels[key] = label
        plan: list[tuple[int, int, System, tuple[str, str, str, dict[str, Any]]]] = []
        for system in self.systems:
            runs = cfg.runs if system.key == "franz" else cfg.mock_rebalance_runs
            wanted = cases if system.key == "franz" else [c for c in cases if c[0] in MOCK_CASES]
            plan += [(i, runs, system, case) for i in range(runs) for case in wanted]
        if cfg.mock_rebalance_runs == 0:
            res.note("rebalance: the mock was not measured (--mock-rebalance-runs 0).")
        plan.sort(key=lambda item: item[0])  # run 0 of every system and case first
        deadline = time.monotonic() + cfg.budgets["rebalance"]
        for i, runs, system, (key, label, client, extra) in plan:
            if time.monotonic() > deadline:
                res.warn(f"rebalance: {cfg.budgets['rebalance']:.0f} s budget spent; runs skipped")
                return
            # the third member subscribes at a phase of the others' heartbeat interval that
            # moves with the run: (i + 0.5) / runs of it, so the runs sample the whole cycle
            phase = HEARTBEAT_MS[key] / 1000 * (i + 0.5) / runs
            group = f"rebalance-{key}-{i}-{system.key}"
            limit = cfg.settle_timeout if system.key == "franz" else MOCK_WAIT_S
            run = self.rebalance_once(system, group, client, extra, n, phase, limit)
            if run is None:
                continue
            res.rebalance.setdefault((key, system.label), []).append(run)
            cpu = "" if run.broker_cpu_s is None else f", broker CPU {run.broker_cpu_s:.3f} s"
            print(
                f"[rebalance] run {i + 1}/{runs}  {system.label:<6} {label:<45} "
                f"{run.seconds:6.3f} s (joined {phase:.2f} s after the group settled; "
                f"first two settled in {run.first_settle_s:.2f} s{cpu})",
                flush=True,
            )

    def rebalance_once(
        self,
        system: System,
        group: str,
        client: str,
        extra: dict[str, Any],
        n: int,
        phase: float,
        timeout: float,
    ) -> RebalanceRun | None:
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
            self.results.warn(f"rebalance {group} on {system.label}: {exc}")
            return None
        finally:
            for m in members:
                m.halt.set()
            for m in members:
                m.join(15.0)
                if m.is_alive():
                    self.results.warn(f"{m.name}: consumer close() did not return in 15 s")

    # -- scenario 2: commit --------------------------------------------------------------

    def scenario_commit(self) -> None:
        cfg, res = self.cfg, self.results
        n = cfg.commit_partitions
        for system in self.systems:
            system.make_topic("commit", n)
        for i, system in self.rounds("commit"):
            try:
                run = self.commit_once(system, f"commit-{i}-{system.key}", n)
            except Exception as exc:
                res.warn(f"commit on {system.label}: {exc!r}")
                continue
            res.commit.setdefault(system.label, []).append(run)
            print(
                f"[commit] run {i + 1}/{cfg.runs}  {system.label:<6} {run.commits:,} commits "
                f"in {run.seconds:.2f} s: {run.commits_s:,.0f}/s, {run.offsets_s:,.0f} "
                f"offsets/s, p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms, broker CPU "
                f"{_fmt(run.broker_cpu_s, '.2f')} s, RSS {_fmt(run.broker_rss_mib, ',.0f')} "
                f"MiB, errors {run.errors}",
                flush=True,
            )

    def commit_once(self, system: System, group: str, n: int) -> CommitRun:
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
            deadline = time.monotonic() + self.cfg.settle_timeout
            while len(assigned) < n:
                consumer.poll(POLL_S)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{len(assigned)} of {n} partitions assigned")
            latencies: list[float] = []
            errors, k = 0, 0
            commit, clock = consumer.commit, time.perf_counter
            before, cpu0 = system.sample(), _self_cpu()
            start = clock()
            end = start + self.cfg.commit_seconds
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

    def run(self) -> None:
        self.start()
        for name in SCENARIOS:
            if name not in self.cfg.scenarios:
                continue
            print(f"\n## scenario: {name}", flush=True)
            began = time.perf_counter()
            try:
                getattr(self, f"scenario_{name}")()
            except Exception as exc:  # keep the other scenario's figures
                self.results.warn(f"{name}: stopped by an error: {exc!r}")
            print(f"  scenario {name} took {time.perf_counter() - began:.1f} s", flush=True)


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- main -------------------------------------------------------------------------------------


def caveats() -> list[str]:
    return [
        "The mock is librdkafka's mock cluster (1 broker) in a process of its own, reached over "
        "loopback like franz. Its group coordinator has its own timing rule: a JoinGroup into "
        "a stable group starts a timer of session.timeout.ms - 1000 (44 s with the clients' "
        "45 s default) and the leader is elected when it fires, however soon the members "
        "rejoin (rdkafka_mock_cgrp.c); an empty group waits 3000 ms. It keeps offsets in "
        "memory only; franz appends each commit to __consumer_offsets before it answers.",
        "Broker CPU-s comes from /proc in clock ticks (10 ms): a rebalance costs franz less "
        "than one or two ticks.",
        "The consumers run as threads of the bench process (one process, one clock); "
        "librdkafka's own threads do the protocol work, the Python threads only poll every "
        "50 ms, so a callback is seen at most ~50 ms late (plus GIL waits). kafka-python "
        "runs its protocol in the polling thread and a heartbeat thread.",
        "A shared 2-core VM with other engineers' tests running: single figures move a lot; "
        "read medians and the paired ratios.",
    ]


def header(cfg: Settings, machine: dict[str, Any], stamp: str) -> str:
    import confluent_kafka
    import kafka

    commit = run_timed(["git", "rev-parse", "--short", "HEAD"], timeout=10.0, stdout="capture")
    return "\n".join(
        [
            f"# Group bench, {stamp} ({cfg.mode})",
            "",
            f"- commit {commit.stdout.strip() or '?'}; confluent-kafka "
            f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]}); "
            f"kafka-python {kafka.__version__}",
            f"- {machine.get('cpus')} CPUs, {machine.get('mem_total_mib')} MiB, "
            f"{machine.get('platform')}, Python {machine.get('python')}; load average at "
            f"start {machine.get('loadavg_start')}",
            f"- {cfg.runs} run(s) per system and case; rebalance topic "
            f"{cfg.rebalance_partitions} partitions; commit loop {cfg.commit_seconds:g} s "
            f"over {cfg.commit_partitions} partitions; franz overrides: "
            f"{cfg.overrides or 'none (broker defaults)'}",
            "",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    base = Path(tempfile.mkdtemp(prefix="franz-group-bench-"))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = Results()
    machine = machine_info(str(base))

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    bench = Bench(cfg, base, results)
    started = time.perf_counter()
    interrupted = False
    print(f"franz group bench ({cfg.mode}): {', '.join(cfg.scenarios)}; temp dir {base}")
    try:
        bench.run()
    except KeyboardInterrupt:
        interrupted = True
        results.warn("interrupted: the figures below are partial")
    finally:
        bench.close()
        stop_all()
        shutil.rmtree(base, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    machine["loadavg_end"] = Path("/proc/loadavg").read_text().strip()
    text = header(cfg, machine, stamp) + results.markdown()
    text += "\n\nCaveats:\n" + "\n".join(f"- {c}" for c in caveats())
    took = time.perf_counter() - started
    text += f"\n\nTook {took:.0f} s; load average at end {machine['loadavg_end']}.\n"
    print("\n" + text)
    cfg.results_dir.mkdir(parents=True, exist_ok=True)
    out = cfg.results_dir / f"group-{stamp}.md"
    out.write_text(text)
    print(f"wrote {out}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
