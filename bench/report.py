"""Measurement records, aggregation, Markdown rendering and the JSON shape of a bench run.

Pure code (no I/O besides reading a few /proc files in :func:`machine_info`), so the
harness pieces can be unit-tested without running a benchmark.

Units: MB = 10^6 bytes, GB = 10^9 bytes (as ``performance-anchors.md``); sizes of inputs
(batch sizes, amounts) are given in KiB/MiB/GiB.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "JSON_VERSION",
    "Findings",
    "Ratio",
    "Report",
    "Row",
    "Run",
    "fmt_bytes",
    "fmt_or_dash",
    "machine_info",
    "paired_ratios",
    "percentile",
    "prewarm",
    "ratios_of",
    "render_markdown_table",
    "summarize",
    "verdict",
]

JSON_VERSION = 1
MB = 1e6
GB = 1e9


def summarize(values: Iterable[float]) -> dict[str, float]:
    """``{"median", "min", "max", "n"}`` of ``values``; ValueError if there are none."""
    data = [float(v) for v in values]
    if not data:
        raise ValueError("no values to summarize")
    return {
        "median": statistics.median(data),
        "min": min(data),
        "max": max(data),
        "n": len(data),
    }


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``q`` % of values <= it."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 < q <= 100:
        raise ValueError("q must be in (0, 100]")
    rank = math.ceil(q / 100 * len(sorted_values))
    return float(sorted_values[max(rank, 1) - 1])


class Findings:
    """The notes and warnings a bench collects while it runs, rendered after its tables.

    A warning is printed as it happens (``WARNING: ...``) and kept; a note is kept once,
    however often it is given.
    """

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"WARNING: {message}", flush=True)

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def findings_lines(self) -> list[str]:
        """Markdown lines: a blank line and ``Notes:``, then the same for ``Warnings:``."""
        lines: list[str] = []
        if self.notes:
            lines += ["", "Notes:", *[f"- {n}" for n in self.notes]]
        if self.warnings:
            lines += ["", "Warnings:", *[f"- {w}" for w in self.warnings]]
        return lines


@dataclass(slots=True)
class Run:
    """One timed run: wall seconds, bytes and batches moved, process CPU seconds."""

    seconds: float
    nbytes: int
    batches: int
    cpu_seconds: float
    truncated: bool = False

    @property
    def mb_s(self) -> float:
        return self.nbytes / MB / self.seconds if self.seconds > 0 else 0.0

    @property
    def batches_s(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_s_per_gb(self) -> float:
        return self.cpu_seconds / (self.nbytes / GB) if self.nbytes else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "bytes": self.nbytes,
            "batches": self.batches,
            "cpu_seconds": self.cpu_seconds,
            "mb_s": self.mb_s,
            "batches_s": self.batches_s,
            "cpu_s_per_gb": self.cpu_s_per_gb,
            "truncated": self.truncated,
        }


@dataclass(slots=True)
class Row:
    """One line of the results table: a system measured in one scenario/case over runs."""

    id: str
    scenario: str
    case: str
    system: str
    is_franz: bool
    runs: list[Run] = field(default_factory=list)

    def stats(self, metric: str) -> dict[str, float] | None:
        if not self.runs:
            return None
        return summarize(getattr(run, metric) for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": self.scenario,
            "case": self.case,
            "system": self.system,
            "franz": self.is_franz,
            "runs": [run.to_json() for run in self.runs],
            "mb_s": self.stats("mb_s"),
            "batches_s": self.stats("batches_s"),
            "cpu_s_per_gb": self.stats("cpu_s_per_gb"),
            "truncated_runs": sum(run.truncated for run in self.runs),
        }


def ratios_of(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Ratios of figures paired by run index (run i of both measured back to back); a run
    with no figure (0) on either side is left out. Every bench's paired ratios are this."""
    return [a / b for a, b in zip(numerator, denominator, strict=False) if a > 0 and b > 0]


def verdict(measured: float | None, target: float, higher_is_better: bool = True) -> str:
    """``PASS`` or ``short`` against a one-sided target; ``not measured`` for None/NaN."""
    if measured is None or math.isnan(measured):
        return "not measured"
    ok = measured >= target if higher_is_better else measured <= target
    return "PASS" if ok else "short"


def paired_ratios(numerator: Sequence[Run], denominator: Sequence[Run]) -> list[float]:
    """MB/s ratios of runs paired by index (run i of both was measured back to back)."""
    return ratios_of([r.mb_s for r in numerator], [r.mb_s for r in denominator])


@dataclass(slots=True)
class Ratio:
    """``numerator`` MB/s over ``denominator`` MB/s, with an optional acceptance band."""

    id: str
    label: str
    numerator: str
    denominator: str
    low: float | None = None
    high: float | None = None

    @property
    def target_text(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:.0%} - {self.high:.0%}"
        if self.low is not None:
            return f">= {self.low:.0%}"
        return "info"

    def verdict(self, median: float) -> str:
        if self.low is None and self.high is None:
            return "-"
        ok = (self.low is None or median >= self.low) and (self.high is None or median <= self.high)
        return "PASS" if ok else "FAIL"


class Report:
    """Everything one bench run measured, printable as Markdown and as JSON."""

    def __init__(self, *, benchmark: str, mode: str, params: dict[str, Any]) -> None:
        self.benchmark = benchmark
        self.mode = mode
        self.params = params
        self.rows: dict[str, Row] = {}
        self.ratios: list[Ratio] = []
        self.warnings: list[str] = []
        self.caveats: list[str] = []
        self.notes: dict[str, Any] = {}
        self.footnotes: list[str] = []
        self.machine: dict[str, Any] = {}
        self.rss: dict[str, float] = {}
        self.duration_s = 0.0

    def row(self, id: str, scenario: str, case: str, system: str, *, franz: bool) -> Row:
        existing = self.rows.get(id)
        if existing is None:
            existing = self.rows[id] = Row(id, scenario, case, system, franz)
        return existing

    def add_ratio(self, ratio: Ratio) -> None:
        self.ratios.append(ratio)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"WARNING: {message}", flush=True)

    def ratio_stats(self, ratio: Ratio) -> dict[str, float] | None:
        """Median/min/max of the paired per-run ratios, plus ``best``: best run / best run."""
        num, den = self.rows.get(ratio.numerator), self.rows.get(ratio.denominator)
        if num is None or den is None:
            return None
        values = paired_ratios(num.runs, den.runs)
        if not values:
            return None
        stats = summarize(values)
        stats["best"] = max(r.mb_s for r in num.runs) / max(r.mb_s for r in den.runs)
        return stats

    # -- rendering -----------------------------------------------------------------------

    def figures_table(self) -> str:
        vs: dict[str, str] = {}
        for ratio in self.ratios:
            stats = self.ratio_stats(ratio)
            if stats is not None and ratio.numerator not in vs:
                den = self.rows[ratio.denominator]
                vs[ratio.numerator] = f"{stats['median']:.0%} of {den.system}"
        headers = [
            "scenario",
            "case",
            "system",
            "MB/s median",
            "MB/s min-max",
            "batches/s median",
            "CPU-s/GB",
            "runs",
            "vs reference",
        ]
        body = []
        for row in self.rows.values():
            mb, bs, cpu = row.stats("mb_s"), row.stats("batches_s"), row.stats("cpu_s_per_gb")
            if mb is None or bs is None or cpu is None:
                continue
            truncated = sum(run.truncated for run in row.runs)
            runs = f"{len(row.runs)}" + (f" ({truncated} cut)" if truncated else "")
            body.append(
                [
                    row.scenario,
                    row.case,
                    row.system,
                    f"{mb['median']:,.0f}",
                    f"{mb['min']:,.0f}-{mb['max']:,.0f}",
                    f"{bs['median']:,.0f}",
                    f"{cpu['median']:.2f}",
                    runs,
                    vs.get(row.id, "-"),
                ]
            )
        return render_markdown_table(headers, body, align="lllrrrrrl")

    def ratios_table(self) -> str:
        headers = [
            "ratio (MB/s, paired runs)",
            "median",
            "min-max",
            "best/best",
            "target",
            "verdict",
        ]
        body = []
        for ratio in self.ratios:
            stats = self.ratio_stats(ratio)
            if stats is None:
                continue
            body.append(
                [
                    ratio.label,
                    f"{stats['median']:.0%}",
                    f"{stats['min']:.0%}-{stats['max']:.0%}",
                    f"{stats['best']:.0%}",
                    ratio.target_text,
                    ratio.verdict(stats["median"]),
                ]
            )
        return render_markdown_table(headers, body, align="lrrrll")

    def markdown(self) -> str:
        parts = [self.figures_table(), "", self.ratios_table(), ""]
        parts.extend(self.footnotes)
        if self.rss:
            rss = ", ".join(f"{k} {v:,.0f} MiB" for k, v in self.rss.items())
            parts.append(f"Peak RSS (ru_maxrss) after: {rss}.")
        parts.append(
            "MB = 10^6 B. CPU-s/GB = (user + sys CPU of this process) / GB moved. "
            "Ratios: median (min-max) of run-by-run ratios, runs measured back to back; "
            "best/best = fastest franz run / fastest reference run (verdicts use the median)."
        )
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        ratios = []
        for ratio in self.ratios:
            stats = self.ratio_stats(ratio)
            ratios.append(
                {
                    "id": ratio.id,
                    "label": ratio.label,
                    "numerator": ratio.numerator,
                    "denominator": ratio.denominator,
                    "low": ratio.low,
                    "high": ratio.high,
                    "ratio": stats,
                    "verdict": ratio.verdict(stats["median"]) if stats else None,
                }
            )
        return {
            "benchmark": self.benchmark,
            "version": JSON_VERSION,
            "mode": self.mode,
            "duration_s": self.duration_s,
            "params": self.params,
            "machine": self.machine,
            "rows": [row.to_json() for row in self.rows.values()],
            "ratios": ratios,
            "rss_max_mib": self.rss,
            "notes": self.notes,
            "warnings": self.warnings,
            "caveats": self.caveats,
        }


def render_markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None
) -> str:
    """A GitHub Markdown table, padded for reading as plain text; ``align`` is ``l``/``r``."""
    width = len(headers)
    if any(len(row) != width for row in rows):
        raise ValueError("every row needs one cell per header")
    align = (align or "l" * width).ljust(width, "l")
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(3, *(len(row[i]) for row in cells)) for i in range(width)]

    def line(row: Sequence[str]) -> str:
        padded = (
            cell.rjust(widths[i]) if align[i] == "r" else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (widths[i] + 1) + ":" if align[i] == "r" else "-" * (widths[i] + 2)
            for i in range(width)
        )
        + "|"
    )
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def fmt_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KiB``, ``1310720`` -> ``1.25 MiB``; binary units, for input sizes."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{n:.0f} B"
            return f"{n:.2f}".rstrip("0").rstrip(".") + f" {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def fmt_or_dash(value: float | None, spec: str = ",.0f") -> str:
    """``value`` formatted with ``spec``; ``-`` for a figure not measured (None or NaN)."""
    return "-" if value is None or math.isnan(value) else format(value, spec)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _filesystem_of(path: str) -> str | None:
    mounts = _read("/proc/mounts")
    if mounts is None:
        return None
    path = os.path.realpath(path)
    best, fstype = "", None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1]
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fstype = mount, f"{parts[2]} on {mount} ({parts[0]})"
    return fstype


def machine_info(data_dir: str) -> dict[str, Any]:
    """What the figures depend on: cores, memory, file system, dirty-page limits, load."""
    meminfo = _read("/proc/meminfo") or ""
    mem_total = next(
        (line.split()[1] for line in meminfo.splitlines() if line.startswith("MemTotal:")), None
    )
    try:
        import crc32c

        crc_hw: bool | None = bool(crc32c.hardware_based)
    except (ImportError, AttributeError):
        crc_hw = None
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "mem_total_mib": int(mem_total) // 1024 if mem_total else None,
        "filesystem": _filesystem_of(data_dir),
        "vm.dirty_background_ratio": _read("/proc/sys/vm/dirty_background_ratio"),
        "vm.dirty_ratio": _read("/proc/sys/vm/dirty_ratio"),
        "vm.dirty_expire_centisecs": _read("/proc/sys/vm/dirty_expire_centisecs"),
        "loadavg_start": _read("/proc/loadavg"),
        "crc32c_hardware": crc_hw,
        "free_page_reporting": free_page_reporting(),
    }


def free_page_reporting() -> bool | None:
    """Whether a virtio-balloon with free page reporting (feature bit 5) is present.

    With it, guest pages free for ~2 s are handed back to the host, and touching them
    again costs a host page fault: page-cache writes into such pages run ~10x slower.
    """
    root = "/sys/bus/virtio/devices"
    try:
        devices = os.listdir(root)
    except OSError:
        return None
    for device in devices:
        kind = _read(f"{root}/{device}/device")
        features = _read(f"{root}/{device}/features") or ""
        if kind == "0x0005" and len(features) > 5 and features[5] == "1":
            return True
    return False


MiB = 1024 * 1024


def prewarm(directory: os.PathLike[str] | str, nbytes: int) -> None:
    """Write then delete a scratch file a bit larger than the coming run (untimed).

    This VM's virtio-balloon hands memory that stays free ~2 s back to the host; the next
    first touch of each such page costs a host fault, and a run writing into the page cache
    then goes ~10x slower at random. Freshly freed page-cache pages are reused first, so a
    write+delete just before each timed run gives every system the same warm start (see the
    storage bench's README, "Pre-warm").
    """
    if nbytes <= 0:
        return
    path = os.path.join(directory, "prewarm.tmp")
    zeros = bytes(MiB)
    left = nbytes + nbytes // 16 + 16 * MiB
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while left > 0:
            left -= os.write(fd, zeros if left >= MiB else zeros[:left])
    finally:
        os.close(fd)
        os.unlink(path)
