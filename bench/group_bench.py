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

This module is the CLI, the tables and the order of the runs; the consumers and what one run
measures are in ``bench.group_clients``, the start-to-report lifecycle in ``bench.harness``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.broker_clients import MockCluster, create_topic, register
from bench.group_clients import (
    CommitRun,
    RebalanceRun,
    System,
    commit_once,
    rebalance_once,
)
from bench.harness import (
    budgeted,
    git_commit,
    parse_names,
    parse_overrides,
    rotate,
    run_scenarios,
    run_suite,
    stop_owned,
)
from bench.report import Findings, fmt_or_dash, ratios_of, render_markdown_table, summarize

__all__ = [
    "CASES",
    "SCENARIOS",
    "Results",
    "Settings",
    "main",
    "paired_ratios",
    "parse_args",
    "settings_from_args",
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


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 3)
    if runs < 1:
        raise SystemExit("--runs must be >= 1")
    if args.commit_seconds is not None and args.commit_seconds <= 0:
        raise SystemExit("--commit-seconds must be > 0")
    return Settings(
        mode="quick" if quick else "full",
        runs=runs,
        scenarios=parse_names(args.only, SCENARIOS),
        cases=parse_names(args.cases, [c[0] for c in CASES], "case(s)"),
        commit_seconds=args.commit_seconds or (2.0 if quick else 3.0),
        settle_timeout=15.0 if quick else 20.0,
        mock_rebalance_runs=args.mock_rebalance_runs
        if args.mock_rebalance_runs is not None
        else (0 if quick else 1),
        budgets={"rebalance": 40.0, "commit": 30.0}
        if quick
        else {"rebalance": 150.0, "commit": 60.0},
        overrides=parse_overrides(args.override),
        results_dir=Path(args.results_dir) if args.results_dir else REPO / "bench" / "results",
    )


# -- aggregation and tables (pure) ------------------------------------------------------------


paired_ratios = ratios_of  # figures paired by run index (run i of both measured back to back)


def _span(values: Sequence[float], spec: str) -> tuple[str, str]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-", "-"
    s = summarize(values)
    return format(s["median"], spec), f"{s['min']:{spec}}-{s['max']:{spec}}"


class Results(Findings):
    """Everything one run of the bench measured, keyed by (case or "commit", system label)."""

    def __init__(self) -> None:
        super().__init__()
        self.rebalance: dict[tuple[str, str], list[RebalanceRun]] = {}
        self.commit: dict[str, list[CommitRun]] = {}
        self.case_labels: dict[str, str] = {}

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
                    fmt_or_dash(max((r.max_ms for r in runs), default=None), ".1f"),
                    _span(cpu, ".2f")[0],
                    fmt_or_dash(max(rss, default=None), ",.0f"),
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
        return "\n".join(parts + self.findings_lines())


# -- systems and the bench -------------------------------------------------------------------


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
        stop_owned(self.owned, self.results.warn)

    def rounds(self, scenario: str) -> Iterator[tuple[int, System]]:
        """``(run index, system)``, the order rotating every run, within the budget."""
        plan = ((i, system) for i in range(self.cfg.runs) for system in rotate(self.systems, i))
        return budgeted(plan, self.cfg.budgets[scenario], scenario, self.results.warn)

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
        budget = cfg.budgets["rebalance"]
        for i, runs, system, (key, label, client, extra) in budgeted(
            plan, budget, "rebalance", res.warn
        ):
            # the third member subscribes at a phase of the others' heartbeat interval that
            # moves with the run: (i + 0.5) / runs of it, so the runs sample the whole cycle
            phase = HEARTBEAT_MS[key] / 1000 * (i + 0.5) / runs
            group = f"rebalance-{key}-{i}-{system.key}"
            limit = cfg.settle_timeout if system.key == "franz" else MOCK_WAIT_S
            run = rebalance_once(system, group, client, extra, n, phase, limit, res.warn)
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

    def scenario_commit(self) -> None:
        cfg, res = self.cfg, self.results
        n = cfg.commit_partitions
        for system in self.systems:
            system.make_topic("commit", n)
        for i, system in self.rounds("commit"):
            try:
                run = commit_once(
                    system, f"commit-{i}-{system.key}", n, cfg.settle_timeout, cfg.commit_seconds
                )
            except Exception as exc:
                res.warn(f"commit on {system.label}: {exc!r}")
                continue
            res.commit.setdefault(system.label, []).append(run)
            print(
                f"[commit] run {i + 1}/{cfg.runs}  {system.label:<6} {run.commits:,} commits "
                f"in {run.seconds:.2f} s: {run.commits_s:,.0f}/s, {run.offsets_s:,.0f} "
                f"offsets/s, p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms, broker CPU "
                f"{fmt_or_dash(run.broker_cpu_s, '.2f')} s, RSS "
                f"{fmt_or_dash(run.broker_rss_mib, ',.0f')} MiB, errors {run.errors}",
                flush=True,
            )

    def run(self) -> None:
        self.start()
        run_scenarios(self, SCENARIOS, self.cfg.scenarios, self.results.warn)


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
    import kafka  # type: ignore[import-untyped]

    return "\n".join(
        [
            f"# Group bench, {stamp} ({cfg.mode})",
            "",
            f"- commit {git_commit()}; confluent-kafka "
            f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]}); "
            f"kafka-python {kafka.__version__}",
            f"- {machine.get('cpus')} CPUs, {machine.get('mem_total_mib')} MiB, "
            f"{machine.get('platform')}, Python {machine.get('python')}; load average at "
            f"start {machine.get('loadavg_start')}",
            f"- {cfg.runs} run(s) per system and case; rebalance topic "
            f"{cfg.rebalance_partitions} partitions; commit loop {cfg.commit_seconds:g} s "
            f"over {cfg.commit_partitions} partitions; franz overrides: "
            f"{cfg.overrides or 'none (broker defaults)'}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    return run_suite("group", cfg, Results(), Bench, header, caveats())


if __name__ == "__main__":
    sys.exit(main())
