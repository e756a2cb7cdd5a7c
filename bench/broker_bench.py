"""Broker benchmark: the figures of issue 3, each against librdkafka's mock broker in the same run.

Run ``python -m bench.broker_bench [--quick] [--only produce,consume,client,latency,rss]
[--runs N] [--records N]``; see ``bench/README.md`` ("broker_bench") for what each figure
means and why each reference is what it is.

Scenarios (systems measured back to back, their order rotating every run):

1. ``produce``: ``kcat -P`` of 2,000,000 keyless 100 B records, acks=1, into a 6-partition
   topic of franz; the same kcat command with ``-X test.mock.num.brokers=1`` (the mock inside
   kcat: the issue's reference; it auto-creates 4 partitions, a constant of librdkafka's
   mock) and against the mock hosted in a process of its own with a 6-partition topic.
2. ``consume``: ``kcat -C -e -o beginning`` of those records; the mock keeps only the last
   ~5 MiB of each partition, so its row reads what it holds.
3. ``client``: confluent-kafka (Python) producer then consumer (``assign()``, no commits).
4. ``latency``: one record at a time at a fixed rate, a long-polling consumer, same clock.
5. ``rss``: franz's VmRSS/VmHWM with 1,000 partitions (10 topics x 100).

The broker is ``tests.support.broker.BrokerProcess`` (``python -m franz broker`` on an
ephemeral loopback port, data in a temp dir). Every process started is stopped by PID at the
end, on an exception and on Ctrl-C/SIGTERM; every run and every scenario has a time limit.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.broker_clients import (
    ChildRun,
    MockCluster,
    ProcSample,
    create_topic,
    make_input,
    offsets,
    parse_json_line,
    python_child,
    register,
    run_timed,
    sample_process,
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
from bench.report import (
    Findings,
    Ratio,
    fmt_bytes,
    fmt_or_dash,
    percentile,
    prewarm,
    ratios_of,
    render_markdown_table,
    summarize,
)
from bench.report import (
    verdict as target_verdict,
)

__all__ = [
    "SCENARIOS",
    "LatencyRun",
    "Measure",
    "Results",
    "Row",
    "Settings",
    "Target",
    "latency_run",
    "main",
    "paired_ratios",
    "parse_args",
    "settings_from_args",
]

SCENARIOS = ("produce", "consume", "client", "latency", "rss")
VALUE_SIZE = 100
KAFKA_PRODUCE_RECORDS_S = 821_557  # LinkedIn's 1 producer, 6 partitions, no replication
MB = 1e6
REPO = Path(__file__).resolve().parents[1]


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    mode: str
    runs: int
    records: int  # kcat produce/consume
    client_records: int
    latency_seconds: float
    latency_rate: float
    rss_topics: int
    rss_partitions_per_topic: int
    rss_records_per_partition: int
    partitions: int
    run_timeout: float
    budgets: dict[str, float]
    scenarios: tuple[str, ...]
    overrides: dict[str, str] = field(default_factory=dict)
    stand_in: bool = False
    results_dir: Path = REPO / "bench" / "results"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.broker_bench",
        description="Benchmark the franz broker against librdkafka's mock broker, same run.",
    )
    p.add_argument("--quick", action="store_true", help="1 run, smaller sizes (~1 min)")
    p.add_argument("--only", default=",".join(SCENARIOS), help="subset of " + ",".join(SCENARIOS))
    p.add_argument("--runs", type=int, help="runs per system (default 3, quick 1)")
    p.add_argument("--records", type=int, help="records per produce/consume/client run")
    p.add_argument("--latency-seconds", type=float, help="seconds per latency run (5, quick 1)")
    p.add_argument("--latency-rate", type=float, default=1000.0, help="records/s sent (1000)")
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="server.properties override for the franz broker (repeatable)",
    )
    p.add_argument(
        "--stand-in",
        action="store_true",
        help="put a second mock process where franz goes (tests the harness; rows say so)",
    )
    p.add_argument("--results-dir", help="where broker-<timestamp>.md goes (bench/results)")
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    scenarios = parse_names(args.only, SCENARIOS)
    runs = args.runs if args.runs is not None else (1 if quick else 3)
    if runs < 1:
        raise SystemExit("--runs must be >= 1")
    if args.records is not None and args.records < 1:
        raise SystemExit("--records must be >= 1")
    budgets = (
        {"produce": 150.0, "consume": 90.0, "client": 150.0, "latency": 90.0, "rss": 120.0}
        if quick
        else {"produce": 600.0, "consume": 300.0, "client": 600.0, "latency": 240.0, "rss": 240.0}
    )
    return Settings(
        mode="quick" if quick else "full",
        runs=runs,
        records=args.records or (300_000 if quick else 2_000_000),
        client_records=args.records or (200_000 if quick else 1_000_000),
        latency_seconds=args.latency_seconds or (1.0 if quick else 5.0),
        latency_rate=args.latency_rate,
        rss_topics=10,
        rss_partitions_per_topic=100,
        rss_records_per_partition=10 if quick else 100,
        partitions=6,
        run_timeout=60.0 if quick else 120.0,
        budgets=budgets,
        scenarios=scenarios,
        overrides=parse_overrides(args.override),
        stand_in=bool(args.stand_in),
        results_dir=Path(args.results_dir) if args.results_dir else REPO / "bench" / "results",
    )


# -- measurements and their aggregation (pure) ------------------------------------------------


@dataclass(slots=True)
class Measure:
    """One timed run of one system: records moved, wall seconds, CPU and the broker's memory."""

    records: int
    seconds: float
    client_cpu_s: float | None = None
    broker_cpu_s: float | None = None
    broker_rss_mib: float | None = None
    broker_hwm_mib: float | None = None
    stream_records_s: float | None = None  # consumers: first to last record, no start-up
    note: str = ""

    @property
    def records_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_s(self) -> float:
        """Payload MB/s (10^6 B): records x the 100 B value; keys, headers, framing excluded."""
        return self.records_s * VALUE_SIZE / MB


@dataclass(slots=True)
class Row:
    key: str
    scenario: str
    case: str
    system: str
    franz: bool
    runs: list[Measure] = field(default_factory=list)

    def stats(self, metric: str) -> dict[str, float] | None:
        values = [getattr(r, metric) for r in self.runs]
        values = [v for v in values if v is not None]
        return summarize(values) if values else None


def paired_ratios(numerator: Sequence[Measure], denominator: Sequence[Measure]) -> list[float]:
    """records/s ratios of runs paired by index (run i of both measured back to back)."""
    return ratios_of([m.records_s for m in numerator], [m.records_s for m in denominator])


@dataclass(slots=True)
class LatencyRun:
    """One latency run's percentiles in ms, records received and lost."""

    p50: float
    p99: float
    p999: float
    max: float
    received: int
    lost: int


def latency_run(latencies_us: Sequence[int], sent: int) -> LatencyRun:
    values = sorted(latencies_us)
    if not values:
        return LatencyRun(math.nan, math.nan, math.nan, math.nan, 0, sent)
    return LatencyRun(
        p50=percentile(values, 50) / 1000,
        p99=percentile(values, 99) / 1000,
        p999=percentile(values, 99.9) / 1000,
        max=values[-1] / 1000,
        received=len(values),
        lost=max(0, sent - len(values)),
    )


@dataclass(frozen=True, slots=True)
class Target:
    """An absolute target of the issue: the median of ``metric`` of row ``row``.

    ``row`` is a throughput row key (``metric`` a :class:`Measure` field) or a latency key
    (``latency/...``, ``metric`` a :class:`LatencyRun` field).
    """

    label: str
    value: float
    unit: str
    row: str
    metric: str
    higher_is_better: bool = True

    def verdict(self, measured: float | None) -> str:
        return target_verdict(measured, self.value, self.higher_is_better)


class Results(Findings):
    """Everything one run of the bench measured; renders as Markdown."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, Row] = {}
        self.ratios: list[Ratio] = []
        self.targets: list[Target] = []
        self.latency: dict[str, tuple[str, str, list[LatencyRun]]] = {}
        self.rss: list[tuple[str, int, float, float, float]] = []

    def row(self, key: str, scenario: str, case: str, system: str, *, franz: bool) -> Row:
        if key not in self.rows:
            self.rows[key] = Row(key, scenario, case, system, franz)
        return self.rows[key]

    def median(self, key: str, metric: str = "records_s") -> float | None:
        row = self.rows.get(key)
        stats = row.stats(metric) if row else None
        return stats["median"] if stats else None

    def ratio_stats(self, ratio: Ratio) -> dict[str, float] | None:
        num, den = self.rows.get(ratio.numerator), self.rows.get(ratio.denominator)
        if num is None or den is None:
            return None
        values = paired_ratios(num.runs, den.runs)
        return summarize(values) if values else None

    def target_value(self, target: Target) -> float | None:
        if target.row.startswith("latency/"):
            return self.latency_median(target.row, target.metric)
        return self.median(target.row, target.metric)

    def latency_median(self, key: str, field_name: str) -> float | None:
        entry = self.latency.get(key)
        values = [getattr(r, field_name) for r in entry[2]] if entry else []
        values = [v for v in values if not math.isnan(v)]
        return summarize(values)["median"] if values else None

    # -- rendering ---------------------------------------------------------------------------

    def throughput_table(self) -> str:
        vs: dict[str, str] = {}
        for ratio in self.ratios:
            stats = self.ratio_stats(ratio)
            if stats is not None and ratio.numerator not in vs:
                vs[ratio.numerator] = (
                    f"{stats['median']:.0%} of {self.rows[ratio.denominator].system}"
                )
        headers = [
            "scenario", "case", "system", "records/s median", "min-max", "MB/s",
            "client CPU-s", "broker CPU-s", "broker RSS/HWM MiB", "runs", "vs reference",
        ]  # fmt: skip
        body = []
        for row in self.rows.values():
            rate = row.stats("records_s")
            if rate is None:
                continue
            mb, ccpu, bcpu = row.stats("mb_s"), row.stats("client_cpu_s"), row.stats("broker_cpu_s")
            rss, hwm = row.stats("broker_rss_mib"), row.stats("broker_hwm_mib")
            body.append(
                [
                    row.scenario,
                    row.case,
                    row.system,
                    f"{rate['median']:,.0f}",
                    f"{rate['min']:,.0f}-{rate['max']:,.0f}",
                    fmt_or_dash(mb["median"] if mb else None, ",.1f"),
                    fmt_or_dash(ccpu["median"] if ccpu else None, ".2f"),
                    fmt_or_dash(bcpu["median"] if bcpu else None, ".2f"),
                    fmt_or_dash(rss["max"] if rss else None)
                    + "/"
                    + fmt_or_dash(hwm["max"] if hwm else None),
                    str(len(row.runs)),
                    vs.get(row.key, "-"),
                ]
            )
        return render_markdown_table(headers, body, align="lllrrrrrrrl")

    def ratios_table(self) -> str:
        headers = ["ratio (records/s, paired runs)", "median", "min-max", "target", "verdict"]
        body = []
        for ratio in self.ratios:
            stats = self.ratio_stats(ratio)
            if stats is None:
                continue
            verdict = ratio.verdict(stats["median"]).replace("FAIL", "short")
            body.append(
                [
                    ratio.label,
                    f"{stats['median']:.0%}",
                    f"{stats['min']:.0%}-{stats['max']:.0%}",
                    ratio.target_text,
                    verdict,
                ]
            )
        return render_markdown_table(headers, body, align="lrrll")

    def targets_table(self) -> str:
        body = []
        for target in self.targets:
            measured = self.target_value(target)
            op = ">=" if target.higher_is_better else "<="
            spec = ",.0f" if target.value >= 100 else ".2f"
            body.append(
                [
                    target.label,
                    fmt_or_dash(measured, spec),
                    f"{op} {target.value:{spec}} {target.unit}",
                    target.verdict(measured),
                ]
            )
        return render_markdown_table(
            ["figure", "franz (median)", "target", "verdict"], body, "lrll"
        )

    def latency_table(self) -> str:
        headers = [
            "system", "consumer", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "received", "lost",
            "runs",
        ]  # fmt: skip
        body = []
        for key, (system, consumer, runs) in self.latency.items():
            if not runs:
                continue

            def span(name: str, key: str = key, runs: list[LatencyRun] = runs) -> str:
                med = self.latency_median(key, name)
                values = [getattr(r, name) for r in runs if not math.isnan(getattr(r, name))]
                if med is None:
                    return "-"
                if len(values) == 1:
                    return f"{med:.3f}"
                return f"{med:.3f} ({min(values):.3f}-{max(values):.3f})"

            worst = max((r.max for r in runs if not math.isnan(r.max)), default=math.nan)
            body.append(
                [
                    system,
                    consumer,
                    span("p50"),
                    span("p99"),
                    span("p999"),
                    fmt_or_dash(worst, ".3f"),
                    str(sum(r.received for r in runs)),
                    str(sum(r.lost for r in runs)),
                    str(len(runs)),
                ]
            )
        return render_markdown_table(headers, body, align="llrrrrrrr")

    def rss_table(self) -> str:
        body = [
            [stage, str(parts), f"{rss:,.1f}", f"{hwm:,.1f}", f"{secs:.1f}"]
            for stage, parts, rss, hwm, secs in self.rss
        ]
        headers = ["stage", "partitions", "VmRSS MiB", "VmHWM MiB", "stage took s"]
        return render_markdown_table(headers, body, align="lrrrr")

    def markdown(self) -> str:
        parts: list[str] = []
        if any(row.runs for row in self.rows.values()):
            parts += ["### Throughput", "", self.throughput_table(), ""]
        if any(self.ratio_stats(r) for r in self.ratios):
            parts += ["### Franz / reference", "", self.ratios_table(), ""]
        if self.latency:
            parts += ["### End-to-end latency", "", self.latency_table(), ""]
        if self.rss:
            parts += ["### Broker memory with many partitions", "", self.rss_table(), ""]
        if self.targets:
            parts += ["### The issue's absolute targets", "", self.targets_table(), ""]
        parts.append(
            "records/s: median over runs (min-max); MB/s = payload (100 B values) 10^6 B/s. "
            "Ratios: median (min-max) of run-by-run ratios, the two runs back to back. CPU-s: "
            "user+sys of the client process (kcat or Python; for the mock-inside-the-client "
            "rows that includes the mock) and of the broker process (/proc/<pid>/stat delta). "
            "RSS/HWM: the broker's VmRSS after the run / VmHWM (peak since it started)."
        )
        return "\n".join(parts + self.findings_lines())


# -- systems ----------------------------------------------------------------------------------


@dataclass
class System:
    """Where the records go: a broker process (franz or a mock) or a mock inside the client."""

    key: str
    label: str
    franz: bool
    bootstrap: str = ""
    pid: int | None = None
    make_topic: Callable[[str, int], str] | None = None
    kcat_args: tuple[str, ...] = ()
    client_args: tuple[str, ...] = ()

    def sample(self) -> ProcSample | None:
        return sample_process(self.pid) if self.pid else None


# (row prefix, label, reference system, lowest passing ratio or None: information only);
# the ratio is row "<prefix>/franz" over row "<prefix>/<reference>".
RATIOS = [
    ("produce", "kcat -P: franz / mock in kcat (the issue's)", "mock-kcat", 0.8),
    ("produce", "kcat -P: franz / mock process", "mock-proc", None),
    ("consume", "kcat -C: franz / mock process (unequal counts)", "mock-proc", None),
    (
        "client-p",
        "confluent-kafka produce: franz / mock in client (the issue's)",
        "mock-client",
        0.9,
    ),
    (
        "client-c",
        "confluent-kafka consume: franz / mock in client (the issue's)",
        "mock-client",
        0.9,
    ),
    ("client-p", "confluent-kafka produce: franz / mock process", "mock-proc", None),
    ("client-c", "confluent-kafka consume: franz / mock process", "mock-proc", None),
]

TARGETS = [
    Target("kcat -P records/s (Kafka's published 1 producer, 6 partitions)",
           KAFKA_PRODUCE_RECORDS_S, "rec/s", "produce/franz", "records_s"),
    Target("kcat -C -e records/s", 1_000_000, "rec/s", "consume/franz", "records_s"),
    Target("end-to-end latency p50", 2.0, "ms", "latency/franz", "p50", higher_is_better=False),
    Target("end-to-end latency p99", 10.0, "ms", "latency/franz", "p99", higher_is_better=False),
]  # fmt: skip


def _measure(
    records: int, run: ChildRun, before: ProcSample | None, after: ProcSample | None
) -> Measure:
    return Measure(
        records,
        run.seconds,
        client_cpu_s=run.cpu_s,
        broker_cpu_s=after.cpu_s - before.cpu_s if before and after else None,
        broker_rss_mib=after.rss_mib if after else None,
        broker_hwm_mib=after.hwm_mib if after else None,
    )


def kcat_consume_args(bootstrap: str, topic: str) -> list[str]:
    """Read every partition from the start to the end, one byte of output per record."""
    return ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "x"]


class Bench:
    """Starts the systems, runs the scenarios, fills :class:`Results`."""

    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg = cfg
        self.base = base
        self.results = results
        self.systems: dict[str, System] = {}
        self.owned: list[Any] = []  # BrokerProcess / MockCluster objects, stopped at the end
        self.input_path = base / "records.txt"
        self.kept: dict[str, str] = {}  # system key -> a topic holding cfg.records records

    # -- systems ---------------------------------------------------------------------------

    def start_mock(self, key: str, label: str, *, franz: bool) -> System:
        mock = MockCluster().start()
        self.owned.append(mock)

        def make(name: str, partitions: int) -> str:
            mock.create_topic(name, partitions)
            return "created"

        print(f"  {label}: {mock.bootstrap} (pid {mock.pid})", flush=True)
        return System(key, label, franz, mock.bootstrap, mock.pid, make)

    def start_franz(self, name: str, overrides: dict[str, str]) -> System | None:
        from tests.support.broker import BrokerProcess

        broker = BrokerProcess(self.base / name, {**overrides, **self.cfg.overrides})
        try:
            broker.start(timeout=60.0)
        except RuntimeError as exc:
            self.results.warn(f"franz broker did not start: {str(exc)[-1500:]}")
            return None
        register(broker.pid, broker)
        self.owned.append(broker)
        probe = run_timed(["kcat", "-L", "-b", broker.bootstrap, "-m", "10"], timeout=20.0)
        if not probe.ok:
            self.results.warn(
                "franz does not answer kcat -L (does it speak Kafka yet?); its rows are "
                f"skipped: {probe.describe_failure()}"
            )
            return None

        def make(topic: str, partitions: int) -> str:
            return create_topic(broker.bootstrap, topic, partitions)

        print(f"  franz: {broker.bootstrap} (pid {broker.pid}, data {broker.data_dir})")
        return System("franz", "franz", True, broker.bootstrap, broker.pid, make)

    def start(self) -> None:
        cfg = self.cfg
        print("starting the systems ...", flush=True)
        label = f"mock process ({cfg.partitions} p.)"
        self.systems["mock-proc"] = self.start_mock("mock-proc", label, franz=False)
        self.systems["mock-kcat"] = System(
            "mock-kcat", "mock in kcat (4 p.)", False, "127.0.0.1:9",
            kcat_args=("-X", "test.mock.num.brokers=1"),
        )  # fmt: skip
        self.systems["mock-client"] = System(
            "mock-client", "mock in client (4 p.)", False, client_args=("--mock-in-client",)
        )
        franz: System | None
        if cfg.stand_in:
            franz = self.start_mock("franz", "franz STAND-IN (mock process)", franz=True)
            self.results.warn("--stand-in: the 'franz' rows are a second mock process")
        else:
            franz = self.start_franz("franz", {"num.partitions": str(cfg.partitions)})
        if franz is not None:
            self.systems["franz"] = franz

    def close(self) -> None:
        stop_owned(self.owned, self.results.warn)

    def pick(self, *keys: str) -> list[System]:
        return [self.systems[k] for k in keys if k in self.systems]

    # -- helpers ---------------------------------------------------------------------------

    def rounds(self, scenario: str, systems: list[System]) -> Iterator[tuple[int, System]]:
        """``(run index, system)``, the order rotating every run, within the budget."""
        plan = ((i, system) for i in range(self.cfg.runs) for system in rotate(systems, i))
        return budgeted(plan, self.cfg.budgets[scenario], scenario, self.results.warn)

    def make_topic(self, scenario: str, system: System, topic: str, partitions: int) -> None:
        how = system.make_topic(topic, partitions) if system.make_topic else "created"
        if how != "created":
            self.results.note(f"{scenario}, {system.label}: topics {how}")

    def progress(self, tag: str, system: System) -> Callable[[float], None]:
        start = system.sample()

        def report(elapsed: float) -> None:
            now = system.sample()
            cpu = f", broker CPU {now.cpu_s - start.cpu_s:.1f} s" if start and now else ""
            print(f"  [{tag}] {system.label}: still running at {elapsed:.0f} s{cpu}", flush=True)

        return report

    def add(self, key: str, case: str, system: System, i: int, m: Measure, what: str) -> None:
        """Keep ``m`` in row ``key/<system>`` and print the run's line."""
        scenario = key.split("-")[0]
        row = self.results.row(
            f"{key}/{system.key}", scenario, case, system.label, franz=system.franz
        )
        row.runs.append(m)
        parts = [
            f"[{key}] run {i + 1}/{self.cfg.runs}  {system.label:<30} {m.records:>10,} records "
            f"in {m.seconds:6.2f} s: {m.records_s:>10,.0f} rec/s {m.mb_s:6.1f} MB/s"
        ]
        if m.stream_records_s:
            parts.append(f"stream {m.stream_records_s:,.0f} rec/s")
        if m.client_cpu_s is not None:
            parts.append(f"{what} CPU {m.client_cpu_s:.2f} s")
        if m.broker_cpu_s is not None:
            parts.append(f"broker CPU {m.broker_cpu_s:.2f} s")
        if m.broker_rss_mib is not None:
            parts.append(f"broker RSS {m.broker_rss_mib:,.0f} MiB (HWM {m.broker_hwm_mib:,.0f})")
        print(", ".join(parts) + (f"  [{m.note}]" if m.note else ""), flush=True)

    def ensure_input(self) -> None:
        if not self.input_path.exists():
            t0 = time.perf_counter()
            size = make_input(self.input_path, self.cfg.records, VALUE_SIZE)
            took = time.perf_counter() - t0
            what = f"{self.cfg.records:,} lines of {VALUE_SIZE} B ({fmt_bytes(size)})"
            print(f"  input: {what}, {took:.1f} s", flush=True)

    def kcat_produce(self, system: System, topic: str, tag: str) -> ChildRun:
        return run_timed(
            ["kcat", "-P", "-b", system.bootstrap, "-t", topic, "-X", "acks=1", *system.kcat_args],
            stdin_path=self.input_path,
            timeout=self.cfg.run_timeout,
            progress=self.progress(tag, system),
        )

    def check_produced(self, system: System, topic: str, expected: int) -> str:
        """Untimed: the high watermarks add up to what was sent, on every partition."""
        if not system.pid:
            return ""
        per = [hi for _, hi in offsets(system.bootstrap, topic).values()]
        if sum(per) != expected:
            self.results.warn(
                f"{system.label} {topic}: {sum(per):,} records stored, not {expected:,}"
            )
        if any(n == 0 for n in per):
            self.results.warn(f"{system.label} {topic}: empty partitions: {per}")
        return "per partition " + "/".join(f"{n / max(1, sum(per)):.0%}" for n in per)

    # -- scenario 1: produce ---------------------------------------------------------------

    def scenario_produce(self) -> None:
        cfg = self.cfg
        self.ensure_input()
        case = f"kcat -P {cfg.records:,} x {VALUE_SIZE} B, acks=1"
        for i, system in self.rounds("produce", self.pick("franz", "mock-kcat", "mock-proc")):
            topic = f"produce-{i}"
            self.make_topic("produce", system, topic, cfg.partitions)
            prewarm(self.base, cfg.records * 140)
            before = system.sample()
            run = self.kcat_produce(system, topic, "produce")
            after = system.sample()
            if not run.ok:
                self.results.warn(f"produce, {system.label}: {run.describe_failure()}")
                continue
            m = _measure(cfg.records, run, before, after)
            m.note = self.check_produced(system, topic, cfg.records)
            self.kept[system.key] = topic
            self.add("produce", case, system, i, m, "kcat")

    # -- scenario 2: consume ---------------------------------------------------------------

    def filled_topic(self, system: System) -> str:
        """A topic holding ``records`` records: the produce scenario's, or one made now."""
        if system.key not in self.kept:
            self.ensure_input()
            self.make_topic("consume", system, "consume", self.cfg.partitions)
            run = self.kcat_produce(system, "consume", "consume, filling")
            if not run.ok:
                raise RuntimeError(f"filling {system.label}: {run.describe_failure()}")
            self.kept[system.key] = "consume"
        return self.kept[system.key]

    def scenario_consume(self) -> None:
        topics: dict[str, tuple[str, int]] = {}
        for system in self.pick("franz", "mock-proc"):
            topic = self.filled_topic(system)
            held = sum(hi - lo for lo, hi in offsets(system.bootstrap, topic).values())
            topics[system.key] = (topic, held)
        for i, system in self.rounds("consume", self.pick(*topics)):
            topic, held = topics[system.key]
            before = system.sample()
            run = run_timed(
                kcat_consume_args(system.bootstrap, topic),
                stdout="count",
                timeout=self.cfg.run_timeout,
                progress=self.progress("consume", system),
            )
            after = system.sample()
            if not run.ok:
                self.results.warn(f"consume, {system.label}: {run.describe_failure()}")
                continue
            if run.out_bytes != held:
                self.results.warn(f"consume, {system.label}: read {run.out_bytes:,} of {held:,}")
            m = _measure(run.out_bytes, run, before, after)
            if run.first_out_s is not None and run.last_out_s and run.last_out_s > run.first_out_s:
                m.stream_records_s = run.out_bytes / (run.last_out_s - run.first_out_s)
            case = "kcat -C -e -o beginning" + ("" if system.franz else " (what the mock holds)")
            self.add("consume", case, system, i, m, "kcat")

    # -- scenario 3: confluent-kafka client ------------------------------------------------

    def scenario_client(self) -> None:
        cfg, res, n = self.cfg, self.results, self.cfg.client_records
        for i, system in self.rounds("client", self.pick("franz", "mock-client", "mock-proc")):
            topic = f"client-{i}"
            self.make_topic("client", system, topic, cfg.partitions)
            prewarm(self.base, n * 140)
            before = system.sample()
            args: list[object] = ["--topic", topic, "--records", n, "--consume"]
            args += ["--timeout", cfg.run_timeout / 2, *system.client_args]
            if system.bootstrap:
                args += ["--bootstrap", system.bootstrap]
            run = run_timed(
                python_child("client", *args),
                stdout="capture",
                timeout=cfg.run_timeout,
                progress=self.progress("client", system),
            )
            after = system.sample()
            if not run.ok:
                res.warn(f"client, {system.label}: {run.describe_failure()}")
                continue
            out = parse_json_line(run.stdout)
            prod, cons = out["produce"], out["consume"]
            if prod["acked"] != n or prod["unflushed"]:
                res.warn(f"client, {system.label}: {prod['acked']:,} of {n:,} acknowledged")
            if cons["records"] != cons["expected"] or cons["errors"]:
                res.warn(
                    f"client, {system.label}: consumed {cons['records']:,} of "
                    f"{cons['expected']:,} held ({cons['errors']} errors)"
                )
            for key, part, case in (
                ("client-p", prod, f"confluent-kafka produce {n:,}"),
                ("client-c", cons, "confluent-kafka consume (all held)"),
            ):
                m = Measure(part["records"], part["seconds"], client_cpu_s=part["cpu_s"])
                if after is not None:
                    m.broker_rss_mib, m.broker_hwm_mib = after.rss_mib, after.hwm_mib
                if key == "client-p" and before and after:
                    m.note = f"broker CPU {after.cpu_s - before.cpu_s:.2f} s for produce + consume"
                self.add(key, case, system, i, m, "client")

    # -- scenario 4: latency ---------------------------------------------------------------

    def scenario_latency(self) -> None:
        cfg, res = self.cfg, self.results
        wait = {"franz": 500, "mock-client": 0}
        for i, system in self.rounds("latency", self.pick("franz", "mock-client")):
            topic = f"latency-{i}"
            self.make_topic("latency", system, topic, 1)
            args: list[object] = ["--topic", topic, "--rate", cfg.latency_rate]
            args += ["--seconds", cfg.latency_seconds, "--fetch-wait-ms", wait[system.key]]
            args += ["--timeout", cfg.run_timeout, *system.client_args]
            if system.bootstrap:
                args += ["--bootstrap", system.bootstrap]
            run = run_timed(
                python_child("latency", *args), stdout="capture", timeout=cfg.latency_seconds + 60
            )
            if not run.ok:
                res.warn(f"latency, {system.label}: {run.describe_failure()}")
                continue
            out = parse_json_line(run.stdout)
            lat = latency_run(out["latencies_us"], out["sent"])
            consumer = f"fetch.wait.max.ms={wait[system.key]}"
            res.latency.setdefault(f"latency/{system.key}", (system.label, consumer, []))[2].append(
                lat
            )
            print(
                f"[latency] run {i + 1}/{cfg.runs}  {system.label:<30} {lat.received:,} records at "
                f"{cfg.latency_rate:,.0f}/s ({consumer}): p50 {lat.p50:.3f} ms, p99 {lat.p99:.3f} "
                f"ms, p99.9 {lat.p999:.3f} ms, max {lat.max:.3f} ms, lost {lat.lost}",
                flush=True,
            )

    # -- scenario 5: RSS with many partitions ----------------------------------------------

    def scenario_rss(self) -> None:
        cfg, res = self.cfg, self.results
        per_topic, names = cfg.rss_partitions_per_topic, [f"rss-{t}" for t in range(cfg.rss_topics)]
        if cfg.stand_in:
            system = self.start_mock("rss", "franz STAND-IN (mock process)", franz=True)
        else:
            started = self.start_franz("franz-rss", {"num.partitions": str(per_topic)})
            if started is None:
                return
            system = started
        deadline = time.monotonic() + cfg.budgets["rss"]
        total, t0 = 0, time.monotonic()

        def stage(name: str) -> None:
            nonlocal t0
            s = system.sample()
            if s is not None:
                res.rss.append((name, total, s.rss_mib, s.hwm_mib, time.monotonic() - t0))
                mem = f"VmRSS {s.rss_mib:,.1f} MiB, VmHWM {s.hwm_mib:,.1f} MiB"
                print(f"[rss] {name}: {total} partitions, {mem}", flush=True)
            t0 = time.monotonic()

        time.sleep(1.0)  # let start-up settle
        stage("started, idle")
        for name in names:
            self.make_topic("rss", system, name, per_topic)
            total += per_topic
        stage(f"{len(names)} topics x {per_topic} partitions created")
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": system.bootstrap, "acks": 1, "log_level": 3})
        value = os.urandom(VALUE_SIZE)
        for name in names:
            for p in range(per_topic):
                for _ in range(cfg.rss_records_per_partition):
                    while True:
                        try:
                            producer.produce(name, value, partition=p)
                            break
                        except BufferError:
                            producer.poll(0.001)
            producer.poll(0)
        left = producer.flush(max(1.0, deadline - time.monotonic()))
        del producer
        if left:
            res.warn(f"rss: {left} records not acknowledged")
        stage(f"{cfg.rss_records_per_partition} records x {VALUE_SIZE} B produced to each")
        read = 0
        for name in names:
            run = run_timed(
                kcat_consume_args(system.bootstrap, name),
                stdout="count",
                timeout=max(5.0, deadline - time.monotonic()),
            )
            read += run.out_bytes
            if not run.ok:
                res.warn(f"rss: consuming {name}: {run.describe_failure()}")
                break
        stage(f"all read back once by kcat -C ({read:,} records)")
        res.note(
            f"rss: {system.label} started alone for this scenario ({len(names)} topics x "
            f"{per_topic} partitions, replication factor 1); VmHWM is the peak since start."
        )

    # -- driver ----------------------------------------------------------------------------

    def run(self) -> None:
        self.start()
        run_scenarios(self, SCENARIOS, self.cfg.scenarios, self.results.warn)
        for prefix, label, reference, low in RATIOS:
            num, den = f"{prefix}/franz", f"{prefix}/{reference}"
            self.results.ratios.append(Ratio(f"{num}:{den}", label, num, den, low=low))
        self.results.targets = [t for t in TARGETS if t.row.split("/")[0] in self.cfg.scenarios]


# -- main -------------------------------------------------------------------------------------


def caveats(cfg: Settings) -> list[str]:
    return [
        "The issue's produce reference is kcat with `-X test.mock.num.brokers=1`: the mock "
        "then lives inside kcat and auto-creates the topic with 4 partitions "
        "(librdkafka's mock has `defaults.partition_cnt = 4` and no setting for it). The "
        "'mock process' rows host the same mock code in a process of its own (ctypes on "
        "confluent-kafka's librdkafka: `rd_kafka_mock_topic_create`, "
        f"{cfg.partitions} partitions), reached over loopback TCP like franz, its CPU and "
        "RSS read from /proc like franz's; its ratios are information.",
        "The mock keeps only the last ~5 MiB of each partition and answers a fetch with one "
        "stored batch per partition, so it is no reference for reading a large backlog: its "
        "consume rows read what it holds (a few hundred thousand records), franz's read "
        "everything; the kcat consume ratio is information, not a target.",
        "Latency: franz's consumer long-polls (`fetch.wait.max.ms=500`); the mock holds an "
        "empty fetch for the whole wait, so its row uses `fetch.wait.max.ms=0` (a busy "
        "fetch loop) and is a floor for the client, not a like-for-like reference. Both "
        "clients set `socket.nagle.disable=true`, producer `linger.ms=0`, acks=1; the "
        "producer and the consumer run in one Python process, one thread, one clock.",
        "kcat 1.7.1 here links the system librdkafka (2.0.2), which predates "
        "`fetch.queue.backoff.ms`; the confluent-kafka consumers (librdkafka 2.16) set it to "
        "10 ms (its 1000 ms default caps a consumer).",
        "Before each produce and client run a scratch file a bit larger than the run is "
        "written and deleted (untimed): this VM returns memory that stays free ~2 s to the "
        "host, and first touches then cost host faults (see the storage bench's README).",
        "A shared 2-core VM: single figures move +-30 %; the systems run back to back in a "
        "rotating order and the ratios are of paired runs. Client and broker share the 2 "
        "cores, as the client and the mock inside it do.",
    ]


def header(cfg: Settings, machine: dict[str, Any], stamp: str) -> str:
    import confluent_kafka

    kcat = run_timed(["kcat", "-V"], timeout=10.0, stdout="capture")
    line = next((ln for ln in kcat.stdout.splitlines() if ln.startswith("Version")), "")
    kcat_version = line.removeprefix("Version ").split(" (")[0] or "?"
    linked = line.split("librdkafka ")[-1].split()[0] if "librdkafka" in line else "?"
    return "\n".join(
        [
            f"# Broker bench, {stamp} ({cfg.mode})",
            "",
            f"- commit {git_commit()}; kcat {kcat_version} (librdkafka "
            f"{linked}); confluent-kafka {confluent_kafka.version()} (librdkafka "
            f"{confluent_kafka.libversion()[0]})",
            f"- {machine.get('cpus')} CPUs, {machine.get('mem_total_mib')} MiB, "
            f"{machine.get('platform')}, Python {machine.get('python')}; data on "
            f"{machine.get('filesystem')}; load average at start {machine.get('loadavg_start')}",
            f"- {cfg.runs} run(s) per system; kcat {cfg.records:,} records, confluent-kafka "
            f"{cfg.client_records:,}, {VALUE_SIZE} B values, {cfg.partitions} partitions; "
            f"latency {cfg.latency_seconds:g} s at {cfg.latency_rate:,.0f}/s; franz overrides: "
            f"{cfg.overrides or 'none'}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    return run_suite("broker", cfg, Results(), Bench, header, caveats(cfg))


if __name__ == "__main__":
    sys.exit(main())
