"""TLS benchmark (issue 20): produce and consume over an SSL listener against PLAINTEXT on the
same broker, in the same run.

Run ``python -m bench.tls_bench [--quick] [--runs N] [--records N] [--value-size B]``; see
``bench/README.md`` ("tls_bench").

One ``franz broker`` (``tests.support.broker.BrokerProcess``) listens on PLAINTEXT and SSL at
once (a PEM key store made with ``openssl`` by ``tests.support.tls``; no client
certificates: ``ssl.client.auth=none``, Kafka's default). Per run, in rotating order:

1. ``produce``: ``kcat -P`` of ``--records`` keyless records of ``--value-size`` bytes,
   acks=1, into a fresh 6-partition topic, over PLAINTEXT and over SSL;
2. ``consume``: ``kcat -C -e -o beginning`` of each topic over the same listener (the
   stream rate, first to last record, as ``broker_bench``: kcat's start-up is not counted).
   PLAINTEXT fetches go out with ``sendfile``; SSL ones are copied through OpenSSL
   (``franz.network.connection``, "TLS copies").

The figures are records/s and MB/s per listener, and the SSL / PLAINTEXT ratio of each run's
pair (median over runs); issue 20's targets are >= 60 % for produce and >= 40 % for consume.
kcat (librdkafka) encrypts on the client side in the same run, on the same cores: with 2
cores a TLS run pays both ends' encryption, as a real deployment on one host would.
Every child is stopped by PID at the end, on an exception and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.broker_clients import (
    create_topic,
    make_input,
    offsets,
    register,
    run_timed,
    stop_all,
    unregister,
)
from tests.support.broker import BrokerProcess
from tests.support.tls import make_pki

#: Issue 20's targets: SSL / PLAINTEXT.
TARGETS = {"produce": 0.60, "consume": 0.40}
PARTITIONS = 6
RUN_TIMEOUT_S = 300.0


@dataclass
class Measure:
    records: int
    seconds: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Results:
    value_size: int
    #: (scenario, listener) -> one Measure per run.
    measures: dict[tuple[str, str], list[Measure]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, scenario: str, listener: str, measure: Measure) -> None:
        self.measures.setdefault((scenario, listener), []).append(measure)

    def ratios(self, scenario: str) -> list[float]:
        ssl = self.measures.get((scenario, "SSL"), [])
        plain = self.measures.get((scenario, "PLAINTEXT"), [])
        return [s.records_per_s / p.records_per_s for s, p in zip(ssl, plain, strict=False)]

    def table(self) -> str:
        lines = [
            "| scenario | listener | records/s (median) | MB/s | runs |",
            "|---|---|---:|---:|---:|",
        ]
        record_bytes = self.value_size
        for (scenario, listener), runs in sorted(self.measures.items()):
            rate = statistics.median(m.records_per_s for m in runs)
            lines.append(
                f"| {scenario} | {listener} | {rate:,.0f} | "
                f"{rate * record_bytes / 1e6:,.1f} | {len(runs)} |"
            )
        lines += [
            "",
            "| scenario | SSL / PLAINTEXT (median) | per run | target |",
            "|---|---:|---|---:|",
        ]
        for scenario, target in TARGETS.items():
            ratios = self.ratios(scenario)
            if not ratios:
                continue
            median = statistics.median(ratios)
            verdict = "met" if median >= target else "NOT met"
            per_run = ", ".join(f"{r:.0%}" for r in ratios)
            lines.append(f"| {scenario} | {median:.0%} | {per_run} | >= {target:.0%} ({verdict}) |")
        return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.tls_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200,000 records, 1 run")
    parser.add_argument("--runs", type=int, default=None, help="runs (default 3, quick 1)")
    parser.add_argument("--records", type=int, default=None, help="records per run")
    parser.add_argument("--value-size", type=int, default=100, help="bytes per record")
    return parser.parse_args(argv)


class Bench:
    def __init__(self, work: Path, records: int, value_size: int) -> None:
        self.work = work
        self.records = records
        self.results = Results(value_size)
        self.input_path = work / "input.txt"
        make_input(self.input_path, records, value_size)
        self.pki = make_pki(work / "pki")
        self.broker = BrokerProcess(
            work / "broker",
            {
                "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "num.partitions": str(PARTITIONS),
                **self.pki.broker_ssl_props(),
            },
        )

    def kcat_args(self, listener: str) -> list[str]:
        if listener == "PLAINTEXT":
            return []
        return ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={self.pki / 'ca.pem'}"]

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.broker.ports[listener]}"

    def produce(self, listener: str, topic: str) -> None:
        create_topic(self.broker.bootstrap, topic, PARTITIONS)
        run = run_timed(
            ["kcat", "-P", "-b", self.bootstrap(listener), "-t", topic, "-X", "acks=1",
             *self.kcat_args(listener)],
            stdin_path=self.input_path,
            timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        if not run.ok:
            raise RuntimeError(run.describe_failure())
        stored = sum(hi for _, hi in offsets(self.broker.bootstrap, topic).values())
        if stored != self.records:
            self.results.warnings.append(f"{topic}: {stored:,} stored, not {self.records:,}")
        self.results.add("produce", listener, Measure(self.records, run.seconds))

    def consume(self, listener: str, topic: str) -> None:
        run = run_timed(
            ["kcat", "-C", "-b", self.bootstrap(listener), "-t", topic, "-o", "beginning",
             "-e", "-q", "-f", "x", *self.kcat_args(listener)],
            timeout=RUN_TIMEOUT_S,
            stdout="count",
        )  # fmt: skip
        if not run.ok:
            raise RuntimeError(run.describe_failure())
        if run.out_bytes != self.records:
            self.results.warnings.append(
                f"{topic} over {listener}: {run.out_bytes:,} records read, not {self.records:,}"
            )
        seconds = run.seconds
        if run.first_out_s is not None and run.last_out_s is not None:
            seconds = max(run.last_out_s - run.first_out_s, 1e-6)
        self.results.add("consume", listener, Measure(run.out_bytes, seconds))

    def run(self, runs: int) -> Results:
        self.broker.start()
        register(self.broker.pid, self.broker)
        try:
            for i in range(runs):
                order = ["PLAINTEXT", "SSL"] if i % 2 == 0 else ["SSL", "PLAINTEXT"]
                topics = {
                    listener: f"tls-bench-{listener.lower()}-{uuid.uuid4().hex[:6]}"
                    for listener in order
                }
                for listener in order:
                    self.produce(listener, topics[listener])
                for listener in order:
                    self.consume(listener, topics[listener])
                last = {k: v[-1].records_per_s for k, v in self.results.measures.items()}
                print(
                    f"  run {i + 1}/{runs}: "
                    + ", ".join(f"{s} {lst} {r:,.0f}/s" for (s, lst), r in sorted(last.items())),
                    flush=True,
                )
        finally:
            unregister(self.broker.pid)
            self.broker.stop()
        return self.results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    records = args.records or (200_000 if args.quick else 1_000_000)
    print(
        f"tls_bench: kcat -P / -C, {records:,} x {args.value_size} B, {PARTITIONS} partitions, "
        f"{runs} run(s), PLAINTEXT and SSL listeners of one franz broker",
        flush=True,
    )
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="franz-tls-bench-") as work:
            results = Bench(Path(work), records, args.value_size).run(runs)
    except KeyboardInterrupt:
        stop_all()
        return 130
    finally:
        stop_all()
    print()
    print(results.table())
    for warning in results.warnings:
        print(f"WARNING: {warning}")
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
