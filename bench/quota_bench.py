"""Client quota bench (issue 20): what quota accounting costs the hot path.

Run ``python -m bench.quota_bench [--records N] [--rounds N]``.

Per round, one fresh embedded ``franz broker``:

1. ``none``: no client quota was ever configured (the request path's only cost is one
   attribute test per request);
2. ``other``: quotas for another client id (``producer_byte_rate``, ``consumer_byte_rate``
   and ``request_percentage`` on ``clients/other``), set with AlterClientQuotas: every
   request now goes through the quota path (the Produce size and the handler's time
   recorded for its client id, which resolves to "no quota": a dict lookup each), and
   every Fetch checks ``consumer_byte_rate``.

Each case produces ``--records`` 100-byte values with confluent-kafka (acks=1, 6
partitions, ``bench.broker_clients client``), then consumes them back; the figures are the
records/s of each, median over the rounds, and ``other`` / ``none``. On a shared 2-core box
those swing by tens of percent between runs, so the report adds the quota path's own cost
per request, measured in process (``ClientQuotas`` with ``clients/other`` set, one Produce
request of another client id: what the dispatcher adds). The reference is the same
broker without quotas, in the same run (a quota'd peer would measure its throttling, not
its accounting). The report goes to ``bench/results/quota-<timestamp>.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.broker_clients import create_topic, python_child, run_timed
from bench.harness import git_commit
from franz.admin.client_quotas import alter_client_quotas

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
_STARTED = re.compile(r"started: listener PLAINTEXT://([\d.]+):(\d+)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Broker:
    """One embedded ``franz broker`` in a temporary directory (this bench's own PID)."""

    def __init__(self, directory: Path) -> None:
        self.log = directory / "broker.out"
        port = _free_port()
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "franz",
                    "broker",
                    "--override",
                    f"listeners=PLAINTEXT://127.0.0.1:{port}",
                    "--override",
                    f"log.dirs={directory / 'logs'}",
                    "--override",
                    "num.partitions=6",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            match = _STARTED.search(self.log.read_text(errors="replace"))
            if match:
                self.bootstrap = f"{match.group(1)}:{match.group(2)}"
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"franz broker did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _client(bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    run = run_timed(
        python_child(
            "client",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--records",
            records,
            "--consume",
            "--timeout",
            120,
        ),
        timeout=300,
        stdout="capture",
    )
    line = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    if not line:
        raise RuntimeError(f"bench client failed: {run.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(line)
    return result


def _quota_for_other(bootstrap: str) -> None:
    [(_, code, message)] = alter_client_quotas(
        bootstrap,
        [
            (
                (("client-id", "other"),),
                {
                    "producer_byte_rate": 1048576.0,
                    "consumer_byte_rate": 1048576.0,
                    "request_percentage": 50.0,
                },
            )
        ],
    )
    if code != 0:
        raise RuntimeError(f"AlterClientQuotas failed: {code} {message}")


def _path_cost_ns(count: int = 200_000) -> tuple[float, float]:
    """ns per request of the dispatcher's quota path for a client without a quota, and of
    the ``enabled`` test alone (the whole cost while no quota was ever set)."""
    import asyncio
    import timeit

    from franz.broker.client_quotas import ClientQuotas
    from franz.metadata.client_quota_store import Changes
    from franz.security.client_quota import QuotaEntity

    class _NoStore:
        async def entity_configs(self, entity: QuotaEntity) -> dict[str, str]:
            return {}

        async def all_entity_configs(self) -> dict[QuotaEntity, dict[str, str]]:
            return {}

        async def alter(self, entity: QuotaEntity, changes: Changes) -> None:
            return None

    quotas = ClientQuotas(_NoStore())
    asyncio.run(quotas.load())
    off = timeit.timeit(lambda: quotas.enabled, number=count) / count * 1e9
    quotas.apply(
        QuotaEntity(None, "other"),
        {"producer_byte_rate": "1048576", "consumer_byte_rate": "1", "request_percentage": "50"},
    )

    def path() -> None:
        now = quotas.now_ms()
        quotas.produce.record("ANONYMOUS", "rdkafka", 16384, now)
        started = time.perf_counter_ns()
        elapsed = time.perf_counter_ns() - started
        quotas.request.record("ANONYMOUS", "rdkafka", elapsed * 1e-7, now)

    on = timeit.timeit(path, number=count) / count * 1e9
    return off, on


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quota_bench")
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    rates: dict[str, dict[str, list[float]]] = {
        case: {"produce": [], "consume": []} for case in ("none", "other")
    }
    started = time.time()
    for round_no in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="franz-quota-bench-") as tmp:
            broker = _Broker(Path(tmp))
            try:
                for case in ("none", "other"):
                    if case == "other":
                        _quota_for_other(broker.bootstrap)
                    topic = f"quota-{case}-{round_no}"
                    create_topic(broker.bootstrap, topic, 6)
                    result = _client(broker.bootstrap, topic, args.records)
                    produce, consume = result["produce"], result["consume"]
                    rates[case]["produce"].append(produce["acked"] / produce["seconds"])
                    rates[case]["consume"].append(consume["records"] / consume["seconds"])
                    print(
                        f"round {round_no + 1} {case}: produce "
                        f"{rates[case]['produce'][-1]:,.0f} rec/s, consume "
                        f"{rates[case]['consume'][-1]:,.0f} rec/s",
                        flush=True,
                    )
            finally:
                broker.stop()
    lines = [
        f"# Client quota accounting cost ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))}"
        f" UTC, commit {git_commit()})",
        "",
        f"{args.records:,} records of 100 B, 6 partitions, confluent-kafka acks=1, "
        f"median of {args.rounds} round(s), one embedded broker per round.",
        "",
        "| case | produce rec/s | consume rec/s |",
        "|---|---|---|",
    ]
    medians = {
        case: {kind: statistics.median(values) for kind, values in kinds.items()}
        for case, kinds in rates.items()
    }
    for case, label in (("none", "no quota configured"), ("other", "quota for another client")):
        lines.append(
            f"| {label} | {medians[case]['produce']:,.0f} | {medians[case]['consume']:,.0f} |"
        )
    lines.append(
        f"| other / none | {medians['other']['produce'] / medians['none']['produce']:.1%} | "
        f"{medians['other']['consume'] / medians['none']['consume']:.1%} |"
    )
    off_ns, on_ns = _path_cost_ns()
    lines += [
        "",
        f"Quota path per request (in process): {on_ns:,.0f} ns with a quota for another "
        f"client, {off_ns:,.0f} ns (one attribute test) with none; at 3,000 Produce "
        f"requests/s (batches of hundreds to thousands of records) that is "
        f"{on_ns * 3000 / 1e7:.2f} % of a core.",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"quota-{time.strftime('%Y%m%d-%H%M', time.gmtime(started))}.md"
    path.write_text(report)
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
