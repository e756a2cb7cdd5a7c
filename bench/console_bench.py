"""Web console benchmark (issue 21's figures): how fast ``franz console`` serves the topic list
of a cluster with 1,000 topics and a 100-message browser page.

Run ``python -m bench.console_bench [--quick] [--topics N] [--requests N] [--loads N]``; see
``bench/README.md`` ("console_bench").

One ``franz broker`` (``tests.support.broker.BrokerProcess``, a temporary data dir; the free
disk is checked first) gets ``--topics`` one-partition topics (CreateTopics in batches of 100)
and one more topic, ``console-bench-messages``, with ``MESSAGES`` JSON records with a key and
headers. One ``franz console`` (``tests.support.console.ConsoleProcess``) serves it. Pages
(the URL contract of ``franz/console``; a page that answers 404 is reported as missing and
skipped, so the bench runs on any branch):

* ``/`` (the overview: one DescribeCluster, one Metadata, per broker ApiVersions and
  DescribeLogDirs), the reference in the same run: the console's floor for a page that talks
  to the cluster;
* ``/topics`` (the topic list: one Metadata, one batched ListOffsets, DescribeLogDirs);
* ``/topics/console-bench-messages/messages?limit=100`` (the message browser).

Two figures per page, after one warm-up load:

* **time to first byte**: ``--requests`` sequential GETs with httpx (one keep-alive client),
  from sending to the response's headers (the console renders a whole page before it sends
  its headers, so this is the server's time); median and p95 (nearest rank);
* **full render**: ``--loads`` loads in headless Chromium (``tests.support.console.
  chromium``), ``performance.timing.loadEventEnd - navigationStart`` (request, server,
  transfer, parse, CSS, scripts, layout); median and p95, and the median of each phase
  (response start, response end, DOM interactive, load event end) to show where it goes.

Issue 21's target: < 300 ms for each figure of ``/topics`` and of the message browser. Every
child is stopped by PID at the end, on an exception and on Ctrl-C; the data dir is removed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from bench.broker_clients import register, stop_all, unregister
from bench.harness import git_commit
from bench.report import machine_info, percentile, render_markdown_table, verdict
from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, chromium

REPO: Final = Path(__file__).resolve().parents[1]
TARGET_MS: Final = 300.0
MESSAGES_TOPIC: Final = "console-bench-messages"
MESSAGES: Final = 200
#: Disk a run needs at least (1,000 topic directories with their sparse preallocated
#: indexes, the broker's logs, Chromium's profile), checked before starting.
MIN_FREE_BYTES: Final = 2 * 1024**3
CREATE_BATCH: Final = 100


@dataclass(frozen=True)
class Page:
    label: str
    path: str
    #: Whether issue 21's < 300 ms target applies (the reference page has none).
    targeted: bool


PAGES: Final = (
    Page("overview (reference)", "/", False),
    Page("topic list", "/topics", True),
    Page("message browser, 100", f"/topics/{MESSAGES_TOPIC}/messages?limit=100", True),
)


@dataclass
class PageResult:
    page: Page
    status: int = 0
    ttfb_ms: list[float] = field(default_factory=list)
    render_ms: list[float] = field(default_factory=list)
    #: Per load: ``PHASES`` in ms from navigationStart.
    phases_ms: list[list[float]] = field(default_factory=list)
    bytes: int = 0

    @property
    def available(self) -> bool:
        return self.status == 200


def _stats(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), percentile(ordered, 95)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.console_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100 topics, 10 requests, 3 loads")
    parser.add_argument("--topics", type=int, default=None, help="topics (default 1000)")
    parser.add_argument("--requests", type=int, default=None, help="httpx GETs per page (20)")
    parser.add_argument("--loads", type=int, default=None, help="Chromium loads per page (10)")
    parser.add_argument("--results-dir", help="where console-<timestamp>.md goes (bench/results)")
    return parser.parse_args(argv)


def create_topics(bootstrap: str, count: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"console-bench-{i:04d}" for i in range(count)]
    for start in range(0, count, CREATE_BATCH):
        batch = [NewTopic(n, 1, 1) for n in names[start : start + CREATE_BATCH]]
        for future in admin.create_topics(batch, request_timeout=120).values():
            future.result(180)
        print(f"  topics: {min(start + CREATE_BATCH, count):,}/{count:,}", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=30)
        ready = [t for t in names if t in metadata.topics and not metadata.topics[t].error]
        if len(ready) == count:
            return
        time.sleep(0.5)
    raise RuntimeError(f"only {len(ready)} of {count} topics have a leader after 120 s")


def produce_messages(bootstrap: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(MESSAGES_TOPIC, 1, 1)])[MESSAGES_TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(MESSAGES):
        value = {"order": i, "customer": f"c-{i % 17}", "items": [{"sku": i, "qty": 1 + i % 3}]}
        producer.produce(
            MESSAGES_TOPIC,
            json.dumps(value).encode(),
            key=f"order-{i}".encode(),
            headers=[("source", b"console-bench"), ("seq", str(i).encode())],
        )
    if producer.flush(60) != 0:
        raise RuntimeError(f"{MESSAGES} records to {MESSAGES_TOPIC} not all delivered")


def measure_ttfb(base: str, result: PageResult, requests: int) -> None:
    url = base.rstrip("/") + result.page.path
    with httpx.Client(timeout=60) as client:
        warm = client.get(url)
        result.status, result.bytes = warm.status_code, len(warm.content)
        if not result.available:
            return
        for _ in range(requests):
            began = time.perf_counter()
            with client.stream("GET", url) as response:
                result.ttfb_ms.append((time.perf_counter() - began) * 1000)
                response.read()


#: Navigation Timing of the loaded page, in ms from navigationStart (null until the load
#: event ended): response start (server), response end (transfer), DOM interactive (HTML
#: parsed), load event end (the full render).
_TIMING_JS: Final = """
const t = performance.timing;
if (!(t.loadEventEnd > 0)) return null;
return [t.responseStart, t.responseEnd, t.domInteractive, t.loadEventEnd]
  .map((v) => v - t.navigationStart);
"""
PHASES: Final = ("response start", "response end", "DOM interactive", "load event end")


def measure_render(driver: Any, base: str, result: PageResult, loads: int) -> None:
    url = base.rstrip("/") + result.page.path
    driver.get(url)  # warm-up (and Chromium's cache of the CSS and JS)
    for _ in range(loads):
        driver.get(url)
        timing = driver.execute_script(_TIMING_JS)
        deadline = time.monotonic() + 30
        while timing is None and time.monotonic() < deadline:
            time.sleep(0.05)
            timing = driver.execute_script(_TIMING_JS)
        if timing is not None:
            result.phases_ms.append([float(v) for v in timing])
            result.render_ms.append(float(timing[-1]))


def table(results: Sequence[PageResult]) -> str:
    rows = []
    for r in results:
        if not r.available:
            rows.append([r.page.label, f"`{r.page.path}`", f"HTTP {r.status}: not measured",
                         "", "", "", ""])  # fmt: skip
            continue
        ttfb, ttfb95 = _stats(r.ttfb_ms)
        full, full95 = _stats(r.render_ms) if r.render_ms else (float("nan"), float("nan"))
        worst = max(ttfb95, full95)
        rows.append([
            r.page.label, f"`{r.page.path}`", f"{r.bytes / 1024:,.0f} KiB",
            f"{ttfb:,.0f} / {ttfb95:,.0f}", f"{full:,.0f} / {full95:,.0f}",
            f"< {TARGET_MS:.0f}" if r.page.targeted else "—",
            verdict(worst, TARGET_MS, higher_is_better=False) if r.page.targeted else "",
        ])  # fmt: skip
    return render_markdown_table(
        ["page", "URL", "size", "TTFB ms (median / p95)", "full render ms (median / p95)",
         "target", "p95 vs target"],
        rows,
        "lllrrll",
    )  # fmt: skip


def phases_table(results: Sequence[PageResult]) -> str:
    """Where a full render's time goes: the median of each Navigation Timing phase."""
    rows = [
        [r.page.label, *(f"{statistics.median(p[i] for p in r.phases_ms):,.0f}"
                         for i in range(len(PHASES)))]
        for r in results
        if r.phases_ms
    ]  # fmt: skip
    return render_markdown_table(["page", *(f"{p} ms" for p in PHASES)], rows, "lrrrr")


def run(args: argparse.Namespace, work: Path) -> tuple[list[PageResult], dict[str, Any]]:
    topics = args.topics or (100 if args.quick else 1000)
    requests = args.requests or (10 if args.quick else 20)
    loads = args.loads or (3 if args.quick else 10)
    free = shutil.disk_usage(work).free
    if free < MIN_FREE_BYTES:
        raise SystemExit(f"console_bench: {free / 1024**3:.1f} GiB free under {work}: needs 2")
    info = machine_info(str(work))
    broker = BrokerProcess(work / "broker", {"num.partitions": "1"})
    broker.start()
    register(broker.pid, broker)
    results = [PageResult(p) for p in PAGES]
    try:
        print(f"  broker up at {broker.bootstrap}; creating {topics:,} topics", flush=True)
        began = time.monotonic()
        create_topics(broker.bootstrap, topics)
        print(f"  {topics:,} topics in {time.monotonic() - began:.1f} s", flush=True)
        produce_messages(broker.bootstrap)
        with ConsoleProcess(broker.bootstrap, work / "console") as console:
            assert console.proc is not None
            register(console.proc.pid, console.proc)
            for result in results:
                measure_ttfb(console.url, result, requests)
                state = "" if result.available else f" (HTTP {result.status}: skipped)"
                print(f"  TTFB {result.page.label}: {len(result.ttfb_ms)} GETs{state}", flush=True)
            driver = chromium()
            try:
                for result in (r for r in results if r.available):
                    measure_render(driver, console.url, result, loads)
                    median = statistics.median(result.render_ms) if result.render_ms else 0
                    print(
                        f"  render {result.page.label}: {len(result.render_ms)} loads, "
                        f"median {median:.0f} ms",
                        flush=True,
                    )
            finally:
                driver.quit()
            unregister(console.proc.pid)
    finally:
        unregister(broker.pid)
        broker.stop()
    info.update(topics=topics, requests=requests, loads=loads)
    return results, info


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print("console_bench: franz console against one franz broker", flush=True)
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="franz-console-bench-") as work:
            results, info = run(args, Path(work))
    except KeyboardInterrupt:
        stop_all()
        return 130
    finally:
        stop_all()
    body = (
        table(results)
        + "\n\nChromium's Navigation Timing, median of the loads, ms from navigationStart:\n\n"
        + phases_table(results)
    )
    missing = [r.page.path for r in results if not r.available]
    header = (
        f"# console_bench\n\n- commit {git_commit()}; {info['topics']:,} topics + "
        f"`{MESSAGES_TOPIC}` ({MESSAGES} JSON records); {info['requests']} httpx GETs and "
        f"{info['loads']} Chromium loads per page after one warm-up\n"
        f"- {info['cpus']} CPUs, Python {info['python']}, load average at start "
        f"{info['loadavg_start']}\n"
    )
    notes = "".join(f"- {path}: not served on this branch (skipped)\n" for path in missing)
    took = time.monotonic() - started
    report = f"{header}\n{body}\n\n{notes}\n({took:.0f} s)\n"
    print()
    print(body)
    if notes:
        print(notes, end="")
    out_dir = Path(args.results_dir) if args.results_dir else REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"console-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(report)
    print(f"\n({took:.0f} s; report {path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
