"""What the suite measured, and its Markdown tables and JSON (pure code, unit-tested).

Glossary: a *row* is one system measured in one *case* of one *scenario* (``produce``,
"C client, acks=1", "Redis (redis-benchmark XADD)"), over runs; a *reference* row is any row
of the same scenario and case that is not franz's; its *ratio* is franz's records/s over the
reference's, run by run (run i of both was measured back to back, the systems' order
rotating every run), summarised as the median and min-max. A row's ``x`` is the number the
plots put on their x axis (value size in bytes, GiB stored, partitions).

Units: MB = 10^6 B, GB = 10^9 B (MB/s is payload: the records' values; keys, headers and
framing are not counted); sizes of inputs in B/KiB/MiB/GiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.broker_bench import LatencyRun
from bench.report import Findings, fmt_or_dash, ratios_of, render_markdown_table, summarize
from bench.report import verdict as target_verdict

__all__ = [
    "KAFKA",
    "SCENARIO_TITLES",
    "Measure",
    "Results",
    "Row",
    "Target",
    "latency_span",
    "results_from_json",
]

MB = 1e6
GB = 1e9
KAFKA = "Apache Kafka"  # the peer users compare with first: its rows lead every case

SCENARIO_TITLES = {
    "produce": "Produce throughput, 100 B records",
    "consume": "Consume throughput of a backlog",
    "sizes": "Message size sweep (produce)",
    "latency": "End-to-end latency at a fixed rate",
    "partitions": "Partitions scaling (produce, broker RSS)",
    "stored": "Produce throughput versus data already stored",
    "perftest": "Kafka's perf-test tools (ProducerPerformance, ConsumerPerformance)",
}


@dataclass(slots=True)
class Measure:
    """One timed run: records and payload bytes moved, seconds, CPU and the server's memory.

    ``broker_cpu_s`` is the server process's utime + stime delta over the run
    (``/proc/<pid>/stat``), None where the server lives inside the client (the mock started
    by ``test.mock.num.brokers``); ``client_cpu_s`` is the client process's own.
    """

    records: int
    nbytes: int
    seconds: float
    client_cpu_s: float | None = None
    broker_cpu_s: float | None = None
    rss_mib: float | None = None
    hwm_mib: float | None = None
    cut: bool = False
    note: str = ""

    @property
    def records_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_s(self) -> float:
        return self.nbytes / MB / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_s_per_gb(self) -> float | None:
        if self.broker_cpu_s is None or self.nbytes <= 0:
            return None
        return self.broker_cpu_s / (self.nbytes / GB)


@dataclass(slots=True)
class Row:
    scenario: str
    case: str
    system: str
    franz: bool
    x: float | None = None
    runs: list[Measure] = field(default_factory=list)

    def stats(self, metric: str) -> dict[str, float] | None:
        values = [getattr(r, metric) for r in self.runs]
        values = [v for v in values if v is not None and not math.isnan(v)]
        return summarize(values) if values else None


@dataclass(frozen=True, slots=True)
class Target:
    """One of the broker issue's targets, read from the suite's rows.

    ``metric``: ``records_s`` (franz's median in row (scenario, case, system)), ``ratio``
    (franz over the reference row (scenario, case, system), median of paired runs),
    ``cpu_ratio`` (franz's median broker CPU-s/GB over the reference row's), ``rss_ratio``
    (franz's largest broker RSS over the reference row's), or a latency percentile
    ``p50``/``p99`` (franz's median; scenario/case unused).
    """

    label: str
    scenario: str
    case: str
    system: str
    metric: str
    value: float
    higher_is_better: bool = True

    def verdict(self, measured: float | None) -> str:
        return target_verdict(measured, self.value, self.higher_is_better)


def paired(numerator: list[Measure], denominator: list[Measure]) -> list[float]:
    """records/s ratios of runs paired by index (measured back to back)."""
    return ratios_of([m.records_s for m in numerator], [m.records_s for m in denominator])


def kafka_first(rows: list[Row]) -> list[Row]:
    """``rows`` grouped by case (cases in first-seen order), Apache Kafka's row first in each,
    then franz's, then the other references in the order they were measured."""
    cases = list(dict.fromkeys(r.case for r in rows))

    def rank(r: Row) -> tuple[int, int]:
        return cases.index(r.case), 0 if r.system == KAFKA else 1 if r.franz else 2

    return sorted(rows, key=rank)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def latency_span(runs: list[LatencyRun], name: str) -> str:
    """``median (min-max)`` in ms of one percentile over the runs; ``-`` if none."""
    values = [getattr(r, name) for r in runs if not math.isnan(getattr(r, name))]
    if not values:
        return "-"
    s = summarize(values)
    if len(values) == 1:
        return f"{s['median']:.3f}"
    return f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})"


class Results(Findings):
    """Rows by (scenario, case, system), latency runs by system, per-scenario notes, plots."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str, str], Row] = {}
        self.latency: dict[str, tuple[str, list[LatencyRun]]] = {}
        self.scenario_notes: dict[str, list[str]] = {}
        self.plots: list[Path] = []
        self.runs_per_row = 0
        self.targets: list[Target] = []
        self.targets_caption = ""

    def add(
        self,
        scenario: str,
        case: str,
        system: str,
        m: Measure,
        *,
        franz: bool,
        x: float | None = None,
    ) -> Row:
        key = (scenario, case, system)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(scenario, case, system, franz, x)
        row.runs.append(m)
        return row

    def add_latency(self, system: str, consumer: str, run: LatencyRun) -> None:
        self.latency.setdefault(system, (consumer, []))[1].append(run)

    def scenario_note(self, scenario: str, text: str) -> None:
        notes = self.scenario_notes.setdefault(scenario, [])
        if text not in notes:
            notes.append(text)

    def scenario_rows(self, scenario: str) -> list[Row]:
        return [r for r in self.rows.values() if r.scenario == scenario and r.runs]

    def franz_row(self, row: Row) -> Row | None:
        return next(
            (
                r
                for r in self.scenario_rows(row.scenario)
                if r.case == row.case and r.franz and r is not row
            ),
            None,
        )

    def ratio(self, row: Row) -> dict[str, float] | None:
        """franz's records/s over ``row``'s, paired runs of the same case; None for franz."""
        franz = None if row.franz else self.franz_row(row)
        values = paired(franz.runs, row.runs) if franz else []
        return summarize(values) if values else None

    def baseline_ratio(self, row: Row) -> float | None:
        """``row``'s median records/s over the same system's first row in its scenario."""
        first = next((r for r in self.scenario_rows(row.scenario) if r.system == row.system), None)
        if first is None or first is row:
            return None
        a, b = row.stats("records_s"), first.stats("records_s")
        return a["median"] / b["median"] if a and b and b["median"] > 0 else None

    def resource_ratio(self, row: Row, what: str) -> float | None:
        """franz's broker CPU-s/GB (median) or RSS (largest) over ``row``'s, same case."""
        franz = self.franz_row(row)
        metric, pick = ("cpu_s_per_gb", "median") if what == "cpu" else ("rss_mib", "max")
        a = franz.stats(metric) if franz else None
        b = row.stats(metric)
        return a[pick] / b[pick] if a and b and b[pick] > 0 else None

    def target_value(self, target: Target) -> float | None:
        if target.metric in ("p50", "p99", "p999"):
            entry = self.latency.get(target.system)
            values = [getattr(r, target.metric) for r in entry[1]] if entry else []
            values = [v for v in values if not math.isnan(v)]
            return summarize(values)["median"] if values else None
        row = self.rows.get((target.scenario, target.case, target.system))
        if row is None or not row.runs:
            return None
        if target.metric == "ratio":
            r = self.ratio(row)
            return r["median"] if r else None
        if target.metric in ("cpu_ratio", "rss_ratio"):
            return self.resource_ratio(row, target.metric.removesuffix("_ratio"))
        stats = row.stats(target.metric)
        return stats["median"] if stats else None

    # -- rendering -----------------------------------------------------------------------

    def targets_table(self) -> str:
        body = []
        for t in self.targets:
            measured = self.target_value(t)
            op = ">=" if t.higher_is_better else "<="
            if t.metric in ("ratio", "cpu_ratio", "rss_ratio"):
                shown, goal = (
                    fmt_or_dash(None if measured is None else measured * 100, ".0f"),
                    (f"{op} {t.value:.0%}"),
                )
                shown += " %" if measured is not None else ""
            elif t.metric == "records_s":
                shown, goal = fmt_or_dash(measured), f"{op} {t.value:,.0f} rec/s"
            else:
                shown, goal = fmt_or_dash(measured, ".3f"), f"{op} {t.value:g} ms"
            body.append([t.label, shown, goal, t.verdict(measured)])
        return render_markdown_table(
            ["target", "franz (median)", "target", "verdict"], body, "lrll"
        )

    def table(self, scenario: str) -> str:
        """One scenario's rows: rates (median, min-max), CPU, memory, runs, the ratios."""
        flat = scenario == "stored"
        headers = [
            "case", "system", "records/s median", "min-max", "MB/s", "broker CPU-s/GB",
            "client CPU-s", "broker RSS/HWM MiB", "runs",
            "vs first level" if flat else "franz / this (min-max)",
        ]  # fmt: skip
        body = []
        for row in kafka_first(self.scenario_rows(scenario)):
            rate = row.stats("records_s")
            assert rate is not None
            mb, cpu, ccpu = row.stats("mb_s"), row.stats("cpu_s_per_gb"), row.stats("client_cpu_s")
            rss, hwm = row.stats("rss_mib"), row.stats("hwm_mib")
            cut = sum(m.cut for m in row.runs)
            runs = f"{len(row.runs)}" + (f" ({cut} cut)" if cut else "")
            if flat:
                base = self.baseline_ratio(row)
                last = "-" if base is None else f"{base:.0%}"
            else:
                r = self.ratio(row)
                last = "-" if r is None else f"{r['median']:.0%} ({r['min']:.0%}-{r['max']:.0%})"
            body.append(
                [
                    row.case,
                    row.system,
                    f"{rate['median']:,.0f}",
                    f"{rate['min']:,.0f}-{rate['max']:,.0f}",
                    fmt_or_dash(mb["median"] if mb else None, ",.1f"),
                    fmt_or_dash(cpu["median"] if cpu else None, ".2f"),
                    fmt_or_dash(ccpu["median"] if ccpu else None, ".2f"),
                    fmt_or_dash(rss["max"] if rss else None)
                    + "/"
                    + fmt_or_dash(hwm["max"] if hwm else None),
                    runs,
                    last,
                ]
            )
        return render_markdown_table(headers, body, align="llrrrrrrrl")

    def kafka_pairs(self) -> list[tuple[Row, Row]]:
        """``(Kafka's row, franz's row)`` of every case both ran, in the report's order."""
        pairs = []
        for scenario in SCENARIO_TITLES:
            for row in self.scenario_rows(scenario):
                franz = self.franz_row(row) if row.system == KAFKA else None
                if franz is not None:
                    pairs.append((row, franz))
        return pairs

    def kafka_ratios(self) -> dict[str, dict[str, float]]:
        """``{"scenario: case": {"records/s": %, "broker CPU-s/GB": %, "broker RSS": %}}``,
        franz over Kafka in percent (what ``kafka.png`` draws); missing ratios left out."""
        out: dict[str, dict[str, float]] = {}
        for row, _ in self.kafka_pairs():
            rate = self.ratio(row)
            values = {
                "records/s": rate["median"] if rate else None,
                "broker CPU-s/GB": self.resource_ratio(row, "cpu"),
                "broker RSS": self.resource_ratio(row, "rss"),
            }
            out[f"{row.scenario}: {row.case}"] = {
                k: v * 100 for k, v in values.items() if v is not None
            }
        return out

    def kafka_table(self) -> str:
        """Franz against Apache Kafka, case by case: Kafka's figure first, then franz's, then
        franz / Kafka for records/s (paired runs' median), broker CPU-s/GB and broker RSS;
        latency percentiles at the end. Empty when there is no Kafka row."""
        headers = [
            "scenario", "case", "Kafka records/s", "franz records/s", "franz / Kafka",
            "Kafka CPU-s/GB", "franz CPU-s/GB", "franz / Kafka CPU", "Kafka RSS MiB",
            "franz RSS MiB", "franz / Kafka RSS",
        ]  # fmt: skip
        body = []
        for row, franz in self.kafka_pairs():
            ratio = self.ratio(row)
            k_rate, f_rate = row.stats("records_s"), franz.stats("records_s")
            k_cpu, f_cpu = row.stats("cpu_s_per_gb"), franz.stats("cpu_s_per_gb")
            k_rss, f_rss = row.stats("rss_mib"), franz.stats("rss_mib")
            body.append(
                [
                    row.scenario,
                    row.case,
                    fmt_or_dash(k_rate["median"] if k_rate else None),
                    fmt_or_dash(f_rate["median"] if f_rate else None),
                    "-" if ratio is None else f"{ratio['median']:.0%}",
                    fmt_or_dash(k_cpu["median"] if k_cpu else None, ".2f"),
                    fmt_or_dash(f_cpu["median"] if f_cpu else None, ".2f"),
                    _pct(self.resource_ratio(row, "cpu")),
                    fmt_or_dash(k_rss["max"] if k_rss else None),
                    fmt_or_dash(f_rss["max"] if f_rss else None),
                    _pct(self.resource_ratio(row, "rss")),
                ]
            )
        kafka = self.latency.get(KAFKA)
        franz_lat = next((runs for system, (_, runs) in self.latency.items()
                          if system.startswith("franz")), None)  # fmt: skip
        if kafka and franz_lat:
            for name, label in (("p50", "p50 ms"), ("p99", "p99 ms"), ("p999", "p99.9 ms")):
                k = _median_of(kafka[1], name)
                f = _median_of(franz_lat, name)
                ratio_text = "-" if k is None or f is None or k <= 0 else f"{f / k:.0%}"
                body.append(["latency", label, fmt_or_dash(k, ".3f"), fmt_or_dash(f, ".3f"),
                             ratio_text, "", "", "", "", "", ""])  # fmt: skip
        if not body:
            return ""
        return render_markdown_table(headers, body, align="llrrrrrrrrr")

    def latency_table(self) -> str:
        headers = ["system", "consumer", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "lost", "runs"]
        body = []
        ordered = sorted(self.latency.items(), key=lambda item: item[0] != KAFKA)
        for system, (consumer, runs) in ordered:
            worst = max((r.max for r in runs if not math.isnan(r.max)), default=math.nan)
            body.append(
                [
                    system,
                    consumer,
                    latency_span(runs, "p50"),
                    latency_span(runs, "p99"),
                    latency_span(runs, "p999"),
                    fmt_or_dash(worst, ".3f"),
                    str(sum(r.lost for r in runs)),
                    str(len(runs)),
                ]
            )
        return render_markdown_table(headers, body, align="llrrrrrr")

    def markdown(self) -> str:
        parts: list[str] = []
        kafka = self.kafka_table()
        if kafka:
            parts += ["### Franz / Apache Kafka", "", kafka, ""]
            notes = self.scenario_notes.get("kafka", [])
            parts += [f"- {n}" for n in notes] + ([""] if notes else [])
        for scenario, title in SCENARIO_TITLES.items():
            notes = self.scenario_notes.get(scenario, [])
            if scenario == "latency":
                if not self.latency:
                    continue
                parts += [f"### {title}", "", self.latency_table()]
            else:
                if not self.scenario_rows(scenario):
                    continue
                parts += [f"### {title}", "", self.table(scenario)]
            parts += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
        if self.targets:
            parts += ["### The broker issue's targets", "", self.targets_table(), ""]
            parts += [self.targets_caption, ""] if self.targets_caption else []
        if self.plots:
            parts += ["### Plots", "", *[f"- `{p}`" for p in self.plots], ""]
        parts.append(
            "records/s: median over the runs (min-max); MB/s: payload, 10^6 B/s. franz / this: "
            "franz's records/s over this reference's, run by run (back to back, the order "
            "rotating), median (min-max); above 100 % franz was faster. broker CPU-s/GB: the "
            "server process's user+sys CPU (/proc/<pid>/stat delta) per 10^9 B of payload ('-' "
            "where the server lives inside the client). client CPU-s: the client's own. RSS/HWM: "
            "the server's VmRSS after a run / VmHWM, largest over the runs. 'cut': the run hit "
            "its time limit; its rate is over what it did."
        )
        return "\n".join(parts + self.findings_lines())

    def to_json(self) -> dict[str, Any]:
        def measure(m: Measure) -> dict[str, Any]:
            return {
                "records": m.records,
                "bytes": m.nbytes,
                "seconds": m.seconds,
                "records_s": m.records_s,
                "mb_s": m.mb_s,
                "client_cpu_s": m.client_cpu_s,
                "broker_cpu_s": m.broker_cpu_s,
                "cpu_s_per_gb": m.cpu_s_per_gb,
                "rss_mib": m.rss_mib,
                "hwm_mib": m.hwm_mib,
                "cut": m.cut,
            }

        return {
            "rows": [
                {
                    "scenario": r.scenario,
                    "case": r.case,
                    "system": r.system,
                    "franz": r.franz,
                    "x": r.x,
                    "records_s": r.stats("records_s"),
                    "ratio_franz_over_this": self.ratio(r),
                    "runs": [measure(m) for m in r.runs],
                }
                for r in self.rows.values()
            ],
            "latency": {
                system: {"consumer": consumer, "runs": [vars_of(run) for run in runs]}
                for system, (consumer, runs) in self.latency.items()
            },
            "notes": self.scenario_notes,
            "warnings": self.warnings,
            "plots": [str(p) for p in self.plots],
        }

    def series(
        self, scenario: str, metric: str = "records_s"
    ) -> dict[str, list[tuple[float, ...]]]:
        """``{system: [(x, median, min, max), ...]}`` of ``scenario``'s rows with an ``x``."""
        out: dict[str, list[tuple[float, ...]]] = {}
        for row in self.scenario_rows(scenario):
            s = row.stats(metric)
            if row.x is None or s is None:
                continue
            out.setdefault(row.system, []).append((row.x, s["median"], s["min"], s["max"]))
        for points in out.values():
            points.sort()
        return out


def results_from_json(data: dict[str, Any]) -> Results:
    """The :class:`Results` a ``results.json`` was written from (rows, latency, notes).

    So the plots can be redrawn from a past run: ``python -m bench.plots results.json``.
    """
    res = Results()
    for row in data.get("rows", []):
        for run in row["runs"]:
            m = Measure(
                records=run["records"],
                nbytes=run["bytes"],
                seconds=run["seconds"],
                client_cpu_s=run.get("client_cpu_s"),
                broker_cpu_s=run.get("broker_cpu_s"),
                rss_mib=run.get("rss_mib"),
                hwm_mib=run.get("hwm_mib"),
                cut=bool(run.get("cut")),
            )
            res.add(row["scenario"], row["case"], row["system"], m, franz=row["franz"], x=row["x"])
    for system, entry in data.get("latency", {}).items():
        for run in entry["runs"]:
            res.add_latency(system, entry["consumer"], LatencyRun(**run))
    res.scenario_notes = dict(data.get("notes", {}))
    return res


def _median_of(runs: list[LatencyRun], name: str) -> float | None:
    values = [getattr(r, name) for r in runs if not math.isnan(getattr(r, name))]
    return summarize(values)["median"] if values else None


def vars_of(run: LatencyRun) -> dict[str, float]:
    return {name: getattr(run, name) for name in ("p50", "p99", "p999", "max", "received", "lost")}
