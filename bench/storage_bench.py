"""Storage engine benchmark: franz's ``Log`` against plain file I/O, in the same run.

Run ``python -m bench.storage_bench [--quick] [--dir DIR] [--out results.json]``; see
``bench/README.md`` for what each figure means.

Scenarios (each bounded in time; systems measured back to back, order rotating per run):

1. ``append``: ``Log.append_as_leader`` of 16 KiB and 1 MiB v2 batches vs a plain
   ``os.write`` loop (and buffered ``f.write``) of the same bytes in the same directory.
2. ``read``: ``Log.read(offset, 1 MiB, max_offset=hw)`` + ``os.sendfile`` to a loopback
   socket drained by another process, over the whole log written by scenario 1, vs
   ``sendfile`` of the same ``.log`` files in 1 MiB chunks without the lookup.
3. ``stored``: 16 KiB appends to an empty log vs to a log already holding 10 GiB.

Batches come from a pool of distinct copies (64 MiB by default, larger than the CPU
caches) built before timing; franz patches ``baseOffset`` in place, so the harness writes
0 back before each append (8 bytes, measured separately and reported). Nothing is fsynced
inside a timed section.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import parse_names
from bench.report import Ratio, Report, Row, Run, fmt_bytes, machine_info, prewarm
from bench.storage_io import (
    VALUE_SIZE,
    BatchTemplate,
    Drain,
    GiB,
    KeptLog,
    KiB,
    MiB,
    Range,
    build_template,
    chunk_ranges,
    cpu_seconds,
    franz_append_loop,
    franz_ranges,
    franz_read_run,
    fwrite,
    make_pool,
    maxrss_mib,
    reset_only_loop,
    sendfile_run,
    write_loop,
)
from franz.clock import SystemClock
from franz.config.topic import LogConfig
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import LogManager

__all__ = ["SCENARIOS", "Bench", "Settings", "main", "parse_args", "settings_from_args"]

SCENARIOS = ("append", "read", "stored")
_DISK_MARGIN = 2 * GiB


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    mode: str
    runs: int
    append_bytes: int
    measure_bytes: int
    prefill_bytes: int
    segment_bytes: int
    pool_bytes: int
    read_max_bytes: int
    run_limit_s: float
    budgets: dict[str, float]
    scenarios: tuple[str, ...]
    prewarm: bool = True

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.storage_bench",
        description="Benchmark franz's storage engine against plain file I/O in the same run.",
    )
    p.add_argument("--quick", action="store_true", help="~200 MiB runs, 1 GiB pre-fill, < 2 min")
    p.add_argument("--dir", help="parent of the data directory (default: the system temp dir)")
    p.add_argument("--out", help="write the results as JSON to this file")
    p.add_argument("--runs", type=int, help="runs per system (default 7, quick 3)")
    p.add_argument("--size-mb", type=int, help="MiB appended per append run (default 1280)")
    p.add_argument("--measure-mb", type=int, help="MiB appended per 'stored' run (default 512)")
    p.add_argument("--prefill-mb", type=int, help="MiB stored before 'stored' runs (10240)")
    p.add_argument("--segment-mb", type=int, default=1024, help="segment.bytes in MiB")
    p.add_argument("--pool-mb", type=int, default=64, help="MiB of distinct batch copies")
    p.add_argument(
        "--no-prewarm",
        action="store_true",
        help="do not write+delete a scratch file before each timed append run (see README)",
    )
    p.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help="comma-separated subset of " + ", ".join(SCENARIOS),
    )
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    scenarios = parse_names(args.scenarios, SCENARIOS)
    append_bytes = (args.size_mb or (200 if quick else 1280)) * MiB
    measure_bytes = min((args.measure_mb or (128 if quick else 512)) * MiB, append_bytes)
    if args.measure_mb:
        measure_bytes = args.measure_mb * MiB
    prefill_bytes = args.prefill_mb if args.prefill_mb is not None else (1024 if quick else 10240)
    runs = args.runs or (3 if quick else 7)
    if runs < 1:
        raise SystemExit("--runs must be >= 1")
    budgets = (
        {"append": 40.0, "read": 15.0, "prefill": 20.0, "stored": 25.0}
        if quick
        else {"append": 150.0, "read": 45.0, "prefill": 120.0, "stored": 90.0}
    )
    return Settings(
        mode="quick" if quick else "full",
        runs=runs,
        append_bytes=append_bytes,
        measure_bytes=measure_bytes,
        prefill_bytes=prefill_bytes * MiB,
        segment_bytes=args.segment_mb * MiB,
        pool_bytes=args.pool_mb * MiB,
        read_max_bytes=MiB,
        run_limit_s=5.0 if quick else 20.0,
        budgets=budgets,
        scenarios=scenarios,
        prewarm=not args.no_prewarm,
    )


# -- the bench ------------------------------------------------------------------------------


@dataclass
class Bench:
    cfg: Settings
    base: Path
    report: Report
    templates: dict[str, BatchTemplate] = field(default_factory=dict)
    pools: dict[str, list[bytearray]] = field(default_factory=dict)
    kept: dict[str, KeptLog] = field(default_factory=dict)
    managers: list[LogManager] = field(default_factory=list)

    # -- helpers -------------------------------------------------------------------------

    def open_manager(self, directory: Path) -> LogManager:
        manager = LogManager(
            [directory],
            default_config=LogConfig(segment_bytes=self.cfg.segment_bytes),
            clock=SystemClock(),
        )
        manager.startup()
        self.managers.append(manager)
        return manager

    def drop_manager(self, manager: LogManager, directory: Path) -> None:
        manager.close_without_shutdown()  # no fsync: the data is deleted right away
        self.managers.remove(manager)
        shutil.rmtree(directory, ignore_errors=True)

    def check_disk(self, need: int, what: str) -> int:
        free = shutil.disk_usage(self.base).free
        if free >= need + _DISK_MARGIN:
            return need
        scaled = max(0, free - _DISK_MARGIN)
        self.report.warn(
            f"{what}: {fmt_bytes(free)} free in {self.base}, {fmt_bytes(need)} + "
            f"{fmt_bytes(_DISK_MARGIN)} margin wanted; scaling down to {fmt_bytes(scaled)}"
        )
        return scaled

    def prewarm(self, nbytes: int) -> None:
        """Write then delete a scratch file a bit larger than the coming run (untimed).

        On a VM with virtio-balloon free page reporting, pages freed for ~2 s go back to
        the host and the next first touch of each costs a host fault (~10x slower page-cache
        writes). A broker that keeps its page cache never sees that; freshly deleted
        page-cache pages are reused first, so this gives every timed run, franz's and the
        references', the same warm start. ``--no-prewarm`` turns it off.
        """
        if self.cfg.prewarm:
            prewarm(self.base, nbytes)

    def progress(self, tag: str, run_no: int, row: Row, run: Run) -> None:
        cut = "  [CUT by time limit]" if run.truncated else ""
        print(
            f"[{tag}] run {run_no}/{self.cfg.runs}  {row.system:<32} "
            f"{fmt_bytes(run.nbytes):>10} in {run.seconds:6.2f} s: {run.mb_s:7,.0f} MB/s, "
            f"{run.batches_s:9,.0f} batches/s, {run.cpu_s_per_gb:5.2f} CPU-s/GB{cut}",
            flush=True,
        )

    def flush_log(self, log: Log, deadline: float, what: str) -> None:
        """fsync ``log`` segment by segment, outside any timed section, within a deadline."""
        start = time.perf_counter()
        bases = [segment.base_offset for segment in log.segments[1:]] + [log.log_end_offset]
        for upto in bases:
            if time.perf_counter() > deadline:
                self.report.warn(f"{what}: fsync stopped by its time limit (writeback continues)")
                return
            log.flush(upto)
        print(
            f"  (fsynced {what}, {fmt_bytes(log.size_in_bytes)}, in "
            f"{time.perf_counter() - start:.1f} s, untimed)",
            flush=True,
        )

    # -- scenario 1: append ----------------------------------------------------------------

    def franz_append_run(
        self, directory: Path, key: str, n: int, deadline: float, *, keep: bool
    ) -> Run:
        template, pool = self.templates[key], self.pools[key]
        manager = self.open_manager(directory)
        log = manager.get_or_create_log(TopicPartition("bench", 0))
        c0, t0 = cpu_seconds(), time.perf_counter()
        done, cut = franz_append_loop(log, pool, n, deadline)
        t1, c1 = time.perf_counter(), cpu_seconds()
        if (
            log.size_in_bytes != done * template.size
            or log.log_end_offset != done * template.records
        ):
            raise RuntimeError(
                f"franz log has {log.size_in_bytes} bytes, {log.log_end_offset} records"
            )
        log.update_high_watermark(log.log_end_offset)
        if keep:  # for the read scenario; fsynced now so its dirty pages weigh on no later run
            self.kept[key] = KeptLog(manager, log, template, directory)
            self.flush_log(log, time.perf_counter() + self.cfg.budgets["prefill"], f"the {key} log")
        else:
            self.drop_manager(manager, directory)
        return Run(t1 - t0, done * template.size, done, c1 - c0, cut)

    def write_run(
        self, directory: Path, key: str, n: int, deadline: float, *, buffered: bool
    ) -> Run:
        template, pool = self.templates[key], self.pools[key]
        directory.mkdir(parents=True)
        path = directory / "reference.log"
        if buffered:
            with open(path, "wb") as f:
                c0, t0 = cpu_seconds(), time.perf_counter()
                done, cut = write_loop(fwrite, f, pool, n, deadline)
                f.flush()
                t1, c1 = time.perf_counter(), cpu_seconds()
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                c0, t0 = cpu_seconds(), time.perf_counter()
                done, cut = write_loop(os.write, fd, pool, n, deadline)
                t1, c1 = time.perf_counter(), cpu_seconds()
            finally:
                os.close(fd)
        if path.stat().st_size != done * template.size:
            raise RuntimeError(
                f"{path} has {path.stat().st_size} bytes, not {done * template.size}"
            )
        shutil.rmtree(directory)
        return Run(t1 - t0, done * template.size, done, c1 - c0, cut)

    def scenario_append(self) -> None:
        cfg, report = self.cfg, self.report
        start = time.perf_counter()
        deadline = start + cfg.budgets["append"]
        amount = self.check_disk(2 * cfg.append_bytes, "append") // 2
        systems = ("franz", "os.write", "f.write")
        names = {
            "franz": "franz Log.append_as_leader",
            "os.write": "reference os.write",
            "f.write": "reference f.write (buffered)",
        }
        rows: dict[tuple[str, str], Row] = {}
        counts: dict[str, int] = {}
        for key, template in self.templates.items():
            case = f"{template.label} batches"
            counts[key] = max(1, amount // template.size)
            for system in systems:
                rows[key, system] = report.row(
                    f"append.{key}.{system}", "append", case, names[system], franz=system == "franz"
                )
            report.add_ratio(
                Ratio(
                    f"append.{key}.vs_os_write",
                    f"append {template.label}: franz / os.write",
                    f"append.{key}.franz",
                    f"append.{key}.os.write",
                    low=0.80,
                )
            )
            report.add_ratio(
                Ratio(
                    f"append.{key}.vs_f_write",
                    f"append {template.label}: franz / f.write",
                    f"append.{key}.franz",
                    f"append.{key}.f.write",
                )
            )
            overhead = reset_only_loop(self.pools[key], counts[key])
            report.notes[f"append.{key}.harness_us_per_batch"] = overhead / counts[key] * 1e6
            print(
                f"  {template.label}: {template.size} B per batch, {template.records} records, "
                f"{counts[key]} batches ({fmt_bytes(counts[key] * template.size)}) per run, pool "
                f"of {len(self.pools[key])}; harness reset {overhead / counts[key] * 1e6:.2f} "
                "us/batch (inside franz's time)",
                flush=True,
            )
        for r in range(cfg.runs):
            if r and time.perf_counter() > deadline:
                report.warn(f"append: time budget spent, stopping after {r} run(s)")
                break
            last = r == cfg.runs - 1
            for key in self.templates:
                order = systems[r % 3 :] + systems[: r % 3]
                for system in order:
                    self.prewarm(counts[key] * self.templates[key].size)
                    run_deadline = min(deadline, time.perf_counter() + cfg.run_limit_s)
                    directory = self.base / f"append-{key}-{system}-r{r}"
                    if system == "franz":
                        run = self.franz_append_run(
                            directory, key, counts[key], run_deadline, keep=last
                        )
                    else:
                        run = self.write_run(
                            directory, key, counts[key], run_deadline, buffered=system == "f.write"
                        )
                    rows[key, system].runs.append(run)
                    self.progress(f"append {key}", r + 1, rows[key, system], run)

    # -- scenario 2: read ------------------------------------------------------------------

    def prepare_read_logs(self, deadline: float) -> None:
        for key in self.templates:
            if key in self.kept:
                continue
            amount = self.check_disk(self.cfg.append_bytes, "read (prepare)")
            n = max(1, amount // self.templates[key].size)
            directory = self.base / f"read-{key}"
            run = self.franz_append_run(directory, key, n, deadline, keep=True)
            print(f"  (wrote the {key} log for reading: {run.mb_s:,.0f} MB/s, untimed)", flush=True)

    def scenario_read(self) -> None:
        cfg, report = self.cfg, self.report
        start = time.perf_counter()
        self.prepare_read_logs(start + cfg.budgets["prefill"])
        for kept in self.kept.values():
            self.flush_log(
                kept.log, start + cfg.budgets["prefill"], f"the {kept.template.label} log"
            )
        deadline = time.perf_counter() + cfg.budgets["read"]
        rows: dict[tuple[str, str], Row] = {}
        for key, kept in self.kept.items():
            case = f"{kept.template.label}-batch log, {fmt_bytes(kept.log.size_in_bytes)}"
            rows[key, "franz"] = report.row(
                f"read.{key}.franz", "read", case, "franz Log.read + sendfile", franz=True
            )
            rows[key, "ranges"] = report.row(
                f"read.{key}.ranges", "read", case, "reference sendfile, same ranges", franz=False
            )
            rows[key, "chunks"] = report.row(
                f"read.{key}.chunks", "read", case, "reference sendfile 1 MiB chunks", franz=False
            )
            for ref, what in (("ranges", "same ranges"), ("chunks", "1 MiB chunks")):
                report.add_ratio(
                    Ratio(
                        f"read.{key}.vs_{ref}",
                        f"read {kept.template.label}-batch log: franz / sendfile {what}",
                        f"read.{key}.franz",
                        f"read.{key}.{ref}",
                    )
                )
        ranges: dict[str, list[Range]] = {}
        for key, kept in self.kept.items():
            best = float("inf")
            for _ in range(3):  # the lookup alone, without sending: CPU only, stable
                began = time.perf_counter()
                ranges[key] = franz_ranges(kept, cfg.read_max_bytes)
                best = min(best, time.perf_counter() - began)
            us = best / len(ranges[key]) * 1e6
            gb = kept.log.size_in_bytes / 1e9
            report.notes[f"read.{key}.lookup_us_per_read"] = us
            report.footnotes.append(
                f"Log.read lookup alone ({kept.template.label}-batch log): {us:.1f} us per "
                f"{fmt_bytes(cfg.read_max_bytes)} read, {best / gb:.3f} s per GB."
            )
            print(f"  {report.footnotes[-1]}", flush=True)
        chunks = {key: chunk_ranges(kept, cfg.read_max_bytes) for key, kept in self.kept.items()}
        systems = ("franz", "ranges", "chunks")
        with Drain() as drain:
            for r in range(cfg.runs):
                if r and time.perf_counter() > deadline:
                    report.warn(f"read: time budget spent, stopping after {r} run(s)")
                    break
                for key, kept in self.kept.items():
                    order = systems[r % 3 :] + systems[: r % 3]
                    for system in order:
                        run_deadline = min(deadline, time.perf_counter() + cfg.run_limit_s)
                        if system == "franz":
                            run = franz_read_run(drain, kept, cfg.read_max_bytes, run_deadline)
                        else:
                            todo = ranges[key] if system == "ranges" else chunks[key]
                            run = sendfile_run(drain, todo, kept.template.size, run_deadline)
                        rows[key, system].runs.append(run)
                        self.progress(f"read {key}", r + 1, rows[key, system], run)
        for key in list(self.kept):
            kept = self.kept.pop(key)
            self.drop_manager(kept.manager, kept.directory)

    # -- scenario 3: appends with data already stored ------------------------------------------

    def scenario_stored(self) -> None:
        cfg, report = self.cfg, self.report
        start = time.perf_counter()
        template16, pool16 = self.templates["16k"], self.pools["16k"]
        measure = cfg.measure_bytes
        prefill = self.check_disk(cfg.prefill_bytes + 2 * measure * cfg.runs, "stored")
        prefill = max(0, prefill - 2 * measure * cfg.runs)
        directory = self.base / "stored"
        manager = self.open_manager(directory)
        big = manager.get_or_create_log(TopicPartition("stored", 0))
        template1m, pool1m = self.templates["1m"], self.pools["1m"]
        n_prefill = prefill // template1m.size
        if n_prefill:
            c0, t0 = cpu_seconds(), time.perf_counter()
            done, cut = franz_append_loop(big, pool1m, n_prefill, start + cfg.budgets["prefill"])
            t1, c1 = time.perf_counter(), cpu_seconds()
            fill = Run(t1 - t0, done * template1m.size, done, c1 - c0, cut)
            report.notes["stored.prefill"] = fill.to_json()
            print(
                f"  pre-filled {fmt_bytes(fill.nbytes)} with 1 MiB appends in {fill.seconds:.1f} s "
                f"({fill.mb_s:,.0f} MB/s, {len(big.segments)} segments)",
                flush=True,
            )
            if cut:
                report.warn(
                    f"stored: pre-fill stopped by its time limit at {fmt_bytes(fill.nbytes)}"
                )
            self.flush_log(big, time.perf_counter() + cfg.budgets["prefill"], "the pre-filled log")
        stored = fmt_bytes(big.size_in_bytes)
        case = "16 KiB appends"
        empty_row = report.row("stored.empty", "stored", case, "franz, 0 B stored", franz=True)
        full_row = report.row("stored.full", "stored", case, f"franz, {stored} stored", franz=True)
        report.notes["stored.bytes"] = big.size_in_bytes
        report.add_ratio(
            Ratio(
                "stored.full_vs_empty",
                f"append 16 KiB: {stored} stored / 0 B stored",
                "stored.full",
                "stored.empty",
                low=0.90,
                high=1.10,
            )
        )
        n = max(1, measure // template16.size)
        deadline = time.perf_counter() + cfg.budgets["stored"]
        for r in range(cfg.runs):
            if r and time.perf_counter() > deadline:
                report.warn(f"stored: time budget spent, stopping after {r} run(s)")
                break
            order = ("empty", "full") if r % 2 == 0 else ("full", "empty")
            for which in order:
                if which == "empty":
                    tp = TopicPartition("empty", r)
                    log = manager.get_or_create_log(tp)
                else:
                    log = big
                self.prewarm(n * template16.size)
                run_deadline = min(deadline, time.perf_counter() + cfg.run_limit_s)
                leo, size = log.log_end_offset, log.size_in_bytes
                c0, t0 = cpu_seconds(), time.perf_counter()
                done, cut = franz_append_loop(log, pool16, n, run_deadline)
                t1, c1 = time.perf_counter(), cpu_seconds()
                if log.size_in_bytes - size != done * template16.size:
                    raise RuntimeError("stored: the log did not grow by what was appended")
                if log.log_end_offset - leo != done * template16.records:
                    raise RuntimeError("stored: the log end offset did not move as expected")
                run = Run(t1 - t0, done * template16.size, done, c1 - c0, cut)
                if which == "empty":
                    manager.delete_log(tp)
                    row = empty_row
                else:
                    self.flush_log(log, time.perf_counter() + 30, "the appended tail")
                    row = full_row
                row.runs.append(run)
                self.progress("stored", r + 1, row, run)
        self.drop_manager(manager, directory)

    # -- driver ----------------------------------------------------------------------------

    def run(self) -> None:
        cfg = self.cfg
        print("building batches ...", flush=True)
        self.templates["16k"] = build_template("16 KiB", 16 * KiB)
        self.templates["1m"] = build_template("1 MiB", 1 * MiB)
        per_run = max(cfg.append_bytes, cfg.measure_bytes)
        for key, template in self.templates.items():
            self.pools[key] = make_pool(template, cfg.pool_bytes, max(1, per_run // template.size))
            self.report.notes[f"batch.{key}"] = {
                "bytes": template.size,
                "records": template.records,
                "value_bytes": VALUE_SIZE,
                "pool_copies": len(self.pools[key]),
            }
        for name in SCENARIOS:
            if name not in cfg.scenarios:
                continue
            print(f"\n## scenario: {name}", flush=True)
            began = time.perf_counter()
            getattr(self, f"scenario_{name}")()
            self.report.rss[name] = maxrss_mib()
            print(
                f"  scenario {name} took {time.perf_counter() - began:.1f} s; "
                f"peak RSS {maxrss_mib():,.0f} MiB",
                flush=True,
            )

    def close(self) -> None:
        for manager in list(self.managers):
            manager.close_without_shutdown()
        self.managers.clear()
        self.kept.clear()


# -- main -----------------------------------------------------------------------------------


def caveats(report: Report) -> list[str]:
    m = report.machine
    harness = ", ".join(
        f"{k.split('.')[1]}: {v:.2f} us/batch"
        for k, v in report.notes.items()
        if k.endswith("harness_us_per_batch")
    )
    return [
        "Page cache, not disk: nothing is fsynced inside a timed section (franz's defaults "
        "flush.messages/flush.ms never flush), so append MB/s is Python work plus the copy "
        "into the page cache. Each run's data is deleted right after it, so its dirty pages "
        "are dropped, not written back; the logs kept for reading and the pre-filled log are "
        "fsynced outside the timed sections. The disk itself (~1 GB/s with fdatasync per "
        "performance-anchors.md) is not measured.",
        f"Dirty-page limits: vm.dirty_background_ratio={m.get('vm.dirty_background_ratio')}%, "
        f"vm.dirty_ratio={m.get('vm.dirty_ratio')}% of {m.get('mem_total_mib')} MiB RAM; "
        "writing more than that (the 'stored' pre-fill) makes the kernel write back and "
        "throttle the writer.",
        "Reads are served from the page cache (the logs were just written): the hot-consumer "
        "case, not a cold read. The socket's far end drains in another process, so CPU-s/GB "
        "of read rows is the sender's alone. Loopback TCP here is bimodal (the same sendfile "
        "loop moves 1.3-8 GB/s from run to run): read ratios are +-50 %; the 'Log.read "
        "lookup alone' lines are the stable measure of franz's read cost.",
        "Free page reporting (virtio-balloon) is "
        + {True: "ON", False: "off", None: "unknown"}[m.get("free_page_reporting")]
        + ": with it, memory free for ~2 s goes back to the host and page-cache writes into "
        "re-faulted pages run ~10x slower. "
        + (
            "Before each timed append run a scratch file of the run's size is written and "
            "deleted (untimed) so every run, franz's and the references', starts on warm pages."
            if report.params.get("prewarm")
            else "--no-prewarm was given: append figures include cold-page faults at random."
        )
        + " Slow outliers remain possible (a reporting pass during a run); fast ones are not.",
        "Batches are cycled from a pool of distinct copies "
        f"({fmt_bytes(report.params['pool_bytes'])} per size); franz patches baseOffset in "
        "place, so the harness writes 0 back before each append; that cost is inside "
        f"franz's time ({harness or 'not measured'}); no per-append buffer copy is measured.",
        f"{m.get('cpus')} CPUs, {m.get('platform')}, file system {m.get('filesystem')}; a "
        "shared VM: any single figure is +-30 %; compare the paired ratios (systems are "
        "measured back to back and their order rotates every run). Load average at start "
        f"{m.get('loadavg_start')}, at end {m.get('loadavg_end')}.",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = settings_from_args(args)
    parent = Path(args.dir) if args.dir else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="franz-storage-bench-", dir=parent))
    report = Report(benchmark="storage", mode=cfg.mode, params=cfg.to_json())
    report.machine = machine_info(str(base))
    started = time.perf_counter()
    print(
        f"franz storage bench ({cfg.mode}): {cfg.runs} runs, {fmt_bytes(cfg.append_bytes)} per "
        f"append run, segment.bytes {fmt_bytes(cfg.segment_bytes)}, pre-fill "
        f"{fmt_bytes(cfg.prefill_bytes)}, {fmt_bytes(cfg.measure_bytes)} per 'stored' run; "
        f"data in {base} ({report.machine.get('filesystem')})",
        flush=True,
    )
    if "tmpfs" in str(report.machine.get("filesystem")):
        report.warn("the data dir is on tmpfs: every figure is RAM, not a file system")
    bench = Bench(cfg, base, report)
    try:
        bench.run()
    finally:
        bench.close()
        shutil.rmtree(base, ignore_errors=True)
    report.duration_s = time.perf_counter() - started
    report.machine["loadavg_end"] = (
        Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else None
    )
    report.caveats = caveats(report)
    print(f"\n## Results ({cfg.mode} mode, {report.duration_s:.0f} s)\n")
    print(report.markdown())
    print("\nCaveats:")
    for caveat in report.caveats:
        print(f"- {caveat}")
    if report.warnings:
        print("\nWarnings:")
        for warning in report.warnings:
            print(f"- {warning}")
    if args.out:
        Path(args.out).write_text(json.dumps(report.to_json(), indent=2) + "\n")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
