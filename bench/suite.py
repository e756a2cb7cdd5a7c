"""The benchmark suite: franz and the systems users would pick instead, same machine, same run.

Run ``python -m bench.suite [--quick] [--only produce,consume,sizes,latency,partitions,stored]
[--runs N] [--results-dir DIR]``; see ``bench/README.md`` ("suite") for what every table and
plot means and what each reference is, and is not, a reference for.

Systems, all started by the suite on loopback with data in its temp dir and stopped by PID:
Apache Kafka 3.9 (ZooKeeper and ``kafka.Kafka`` with ``kafka-server-start.sh``'s JVM flags,
from the jars ``scripts/fetch-kafka-reference.sh`` caches: :mod:`bench.kafka_peer`; the first
reference, its rows lead every case and the report opens with Franz / Kafka), franz
(``tests.support.broker.BrokerProcess``), librdkafka's mock broker (inside kcat or the
Python client via ``test.mock.num.brokers=1``, or hosted in a process of its own:
``broker_clients.MockCluster``), Redis Streams (``redis-server``, AOF ``everysec``) and NATS
JetStream (``nats-server -js``, file storage) from :mod:`bench.peers`. Clients: ``kcat``,
``redis-benchmark``, Kafka's ProducerPerformance / ConsumerPerformance, and the Python
children of :mod:`bench.peer_clients` and ``bench.broker_clients`` (confluent-kafka,
redis-py, nats-py), each printing one JSON line.

Every run has a time limit, every scenario a budget (a scenario over it skips its remaining
runs with a warning), the systems' order rotates every run. The report (one Markdown table
per scenario), ``results.json`` and the PNG plots go to ``<results dir>/suite-<stamp>/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.broker_clients import (
    ChildRun,
    ProcSample,
    create_topic,
    make_input,
    parse_json_line,
    register,
    run_timed,
    sample_process,
    unregister,
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
from bench.kafka_peer import (
    KAFKA_JVM_FLAGS,
    KafkaPeer,
    KafkaUnavailable,
    ZooKeeperPeer,
    kafka_libs,
    kafka_version,
)
from bench.peer_clients import peer_child
from bench.peers import (
    NatsServer,
    RedisServer,
    parse_redis_benchmark,
    redis_benchmark_args,
    tool_version,
)
from bench.plots import write_plots
from bench.report import prewarm
from bench.suite_results import KAFKA, Measure, Results, Target

T = TypeVar("T")

__all__ = ["SCENARIOS", "Settings", "main", "parse_args", "settings_from_args"]

SCENARIOS = ("produce", "consume", "sizes", "latency", "partitions", "stored", "perftest")
GiB = 1024**3
MiB = 1024**2
REPO = Path(__file__).resolve().parents[1]
FRANZ, MOCK_KCAT, MOCK_CLIENT, MOCK_PROC = "franz", "mock in kcat", "mock in client", "mock process"
REDIS, NATS = "Redis Streams", "NATS JetStream"


@dataclass(frozen=True)
class Settings:
    mode: str
    runs: int
    records: int  # kcat produce and the consume backlog, 100 B
    client_records: int  # confluent-kafka produce
    redis_bench_records: int
    redis_py_records: int
    nats_records: int
    peer_seconds: float  # time limit of a Python peer loop
    size_bytes: int  # payload per run of the size sweep
    size_max_records: int
    sizes: tuple[int, ...]
    latency_seconds: float
    latency_rate: float
    partition_counts: tuple[int, ...]
    partition_records: int
    stored_levels_gib: tuple[float, ...]
    nats_stored_levels_gib: tuple[float, ...]
    stored_records: int  # per measurement at a level
    fill_file_mib: int
    perf_records: int  # Kafka's ProducerPerformance / ConsumerPerformance, 100 B
    kafka: bool  # run Apache Kafka beside franz
    run_timeout: float
    budgets: dict[str, float]
    scenarios: tuple[str, ...]
    results_dir: Path
    overrides: dict[str, str] = field(default_factory=dict)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.suite",
        description="franz against Apache Kafka 3.9, librdkafka's mock, Redis Streams and "
        "NATS JetStream.",
    )
    p.add_argument("--quick", action="store_true", help="1 run, small sizes (< 3 min)")
    p.add_argument("--only", default=",".join(SCENARIOS), help="subset of " + ",".join(SCENARIOS))
    p.add_argument("--runs", type=int, help="runs per system and case (default 3, quick 1)")
    p.add_argument("--results-dir", help="parent of suite-<stamp>/ (default bench/results)")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="server.properties override for franz (repeatable)")  # fmt: skip
    p.add_argument("--no-kafka", action="store_true",
                   help="leave Apache Kafka out (it needs Java and ~1.5 GiB of RAM)")  # fmt: skip
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 3)
    if runs < 1:
        raise SystemExit("--runs must be >= 1")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    parent = Path(args.results_dir) if args.results_dir else REPO / "bench" / "results"
    budgets = (
        dict(
            produce=50.0,
            consume=30.0,
            sizes=55.0,
            latency=25.0,
            partitions=70.0,
            stored=60.0,
            perftest=40.0,
        )
        if quick
        else dict(
            produce=240.0,
            consume=120.0,
            sizes=190.0,
            latency=120.0,
            partitions=240.0,
            stored=360.0,
            perftest=150.0,
        )
    )
    return Settings(
        mode="quick" if quick else "full",
        runs=runs,
        records=200_000 if quick else 2_000_000,
        client_records=100_000 if quick else 1_000_000,
        redis_bench_records=200_000 if quick else 2_000_000,
        redis_py_records=50_000 if quick else 300_000,
        nats_records=20_000 if quick else 100_000,
        peer_seconds=2.0 if quick else 5.0,
        size_bytes=(24 if quick else 128) * MiB,
        size_max_records=200_000 if quick else 2_000_000,
        sizes=(10, 100, 1024, 10 * 1024, 100 * 1024),
        latency_seconds=1.0 if quick else 5.0,
        latency_rate=1000.0,
        partition_counts=(1, 6, 64, 1000),
        partition_records=200_000 if quick else 1_000_000,
        stored_levels_gib=(0.0, 0.5, 1.0) if quick else (0.0, 1.0, 2.5, 5.0, 10.0),
        nats_stored_levels_gib=(0.0, 0.25) if quick else (0.0, 0.5, 1.0),
        stored_records=200_000 if quick else 1_000_000,
        fill_file_mib=64 if quick else 256,
        perf_records=100_000 if quick else 1_000_000,
        kafka=not args.no_kafka,
        run_timeout=30.0 if quick else 90.0,
        budgets=budgets,
        scenarios=parse_names(args.only, SCENARIOS),
        results_dir=parent / f"suite-{stamp}",
        overrides=parse_overrides(args.override),
    )


def fmt_size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 else f"{n} B"


# -- turning the clients' output into measures (pure) -------------------------------------------


def measure(
    run: ChildRun,
    before: ProcSample | None,
    after: ProcSample | None,
    records: int,
    nbytes: int,
    seconds: float | None = None,
) -> Measure:
    """A run's :class:`Measure`: the child's wall time (unless ``seconds`` says otherwise) and
    CPU, the server's CPU delta and memory from its /proc samples around the run."""
    return Measure(
        records,
        nbytes,
        run.seconds if seconds is None else seconds,
        client_cpu_s=run.cpu_s,
        broker_cpu_s=after.cpu_s - before.cpu_s if before and after else None,
        rss_mib=after.rss_mib if after else None,
        hwm_mib=after.hwm_mib if after else None,
    )


def child_measure(
    out: dict[str, Any], run: ChildRun, before: ProcSample | None, after: ProcSample | None
) -> tuple[Measure, str | None]:
    """The :class:`Measure` of a ``peer_clients`` throughput child's JSON line, and a problem.

    The child's own loop time and CPU are used (not the process's, which includes the
    interpreter's start-up); a ``stored`` count that differs from ``records`` is the problem.
    """
    m = measure(run, before, after, int(out["records"]), int(out["bytes"]), out["seconds"])
    m.client_cpu_s, m.cut = float(out["cpu_s"]), bool(out["cut"])
    problem = None
    if out.get("stored") is not None and out["stored"] != out["records"]:
        problem = f"{out['stored']:,} stored of {out['records']:,} sent"
    elif out.get("errors"):
        problem = f"{out['errors']:,} errors"
    return m, problem


def parse_kcat_version(text: str) -> tuple[str, str]:
    """``(kcat version, librdkafka version)`` from ``kcat -V``'s ``Version`` line, or ``?``."""
    line = next((ln for ln in text.splitlines() if ln.startswith("Version ")), "")
    kcat = line.removeprefix("Version ").split(" (")[0] or "?"
    linked = line.split("librdkafka ")[-1].split()[0] if "librdkafka " in line else "?"
    return kcat, linked


# -- the suite ----------------------------------------------------------------------------------


@dataclass
class Server:
    """A server process the suite measures: its address and PID for /proc samples."""

    name: str
    address: str
    pid: int

    def sample(self) -> ProcSample | None:
        return sample_process(self.pid)


class Suite:
    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg, self.base, self.res = cfg, base, results
        self.owned: list[Any] = []
        self.servers: dict[str, Server] = {}
        self.redis: RedisServer | None = None
        self.zookeeper: ZooKeeperPeer | None = None
        self.libs: Path | None = None  # Kafka's jars
        self.nats: NatsServer | None = None
        self.inputs: dict[tuple[int, int], Path] = {}
        self.backlog: dict[str, str] = {}  # system -> topic / key / stream of cfg.records

    # -- systems ---------------------------------------------------------------------------

    def start_franz(self, name: str, partitions: int) -> Server | None:
        from tests.support.broker import BrokerProcess

        overrides = {"num.partitions": str(partitions), **self.cfg.overrides}
        broker = BrokerProcess(self.base / name, overrides)
        try:
            broker.start(timeout=60.0)
        except RuntimeError as exc:
            self.res.warn(f"franz ({name}) did not start: {str(exc)[-1500:]}")
            return None
        register(broker.pid, broker)
        self.owned.append(broker)
        print(f"  {name}: {broker.bootstrap} (pid {broker.pid})", flush=True)
        self.warm_coordinator(broker.bootstrap)
        self.warm_up(broker.bootstrap)
        return Server(FRANZ, broker.bootstrap, broker.pid)

    def warm_coordinator(self, bootstrap: str) -> None:
        """Untimed: make franz create ``__consumer_offsets`` before any timed run.

        confluent-kafka's consumers need a ``group.id``, and a consumer with one looks up its
        coordinator in the background as soon as it exists; franz creates the 50 partitions
        of ``__consumer_offsets`` (a file and an fsync each) on the first FindCoordinator.
        Without this, that creation would overlap the first timed Python run (py-spy showed
        it as 36 % of franz's busy time in the first confluent-kafka produce run). Kafka gets
        the same (it creates the topic on the first FindCoordinator too).
        """
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        from bench.broker_clients import BENCH_GROUP

        t0 = time.monotonic()
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": BENCH_GROUP,
                             "log_level": 3})  # fmt: skip
        try:
            consumer.committed([TopicPartition("franz-suite-warm-up", 0)], timeout=60.0)
        except KafkaException as exc:
            self.res.warn(f"franz: warming the group coordinator up failed: {exc}")
        finally:
            consumer.close()
        print(f"  {bootstrap}: group coordinator ready in {time.monotonic() - t0:.1f} s",
              flush=True)  # fmt: skip

    def start_kafka(self, name: str, partitions: int) -> Server | None:
        """An Apache Kafka broker of its own (data dir ``name``, ZooKeeper chroot ``/name``);
        the first call starts ZooKeeper, or finds Kafka's jars missing and warns once."""
        if not self.cfg.kafka:
            return None
        if self.zookeeper is None:
            if self.libs is not None:  # ZooKeeper failed before: warned then
                return None
            try:
                self.libs = kafka_libs()
            except KafkaUnavailable as exc:
                self.cfg = dataclasses.replace(self.cfg, kafka=False)
                self.res.warn(f"Apache Kafka's rows are skipped: {exc}")
                return None
            zookeeper = ZooKeeperPeer(self.base / "zookeeper", self.libs)
            try:
                zookeeper.start(timeout=60.0)
            except RuntimeError as exc:
                self.res.warn(f"ZooKeeper did not start; Apache Kafka's rows are skipped: {exc}")
                return None
            self.owned.append(zookeeper)
            self.zookeeper = zookeeper
            print(f"  zookeeper (for Kafka): {zookeeper.address} (pid {zookeeper.pid})")
        assert self.libs is not None
        kafka = KafkaPeer(self.base / name, self.libs, self.zookeeper.address, chroot=name,
                          partitions=partitions)  # fmt: skip
        try:
            kafka.start(timeout=120.0)
        except RuntimeError as exc:
            self.res.warn(f"Apache Kafka ({name}) did not start: {str(exc)[-1500:]}")
            return None
        self.owned.append(kafka)
        print(f"  {name}: Apache Kafka {kafka_version()} at {kafka.address} (pid {kafka.pid})",
              flush=True)  # fmt: skip
        self.warm_coordinator(kafka.address)
        self.warm_up(kafka.address)
        return Server(KAFKA, kafka.address, kafka.pid)

    def warm_up(self, bootstrap: str) -> None:
        """Untimed: ``kcat -P`` of ``cfg.records`` x 100 B into a topic of its own and ``kcat
        -C`` of them, so a JVM broker's JIT has compiled the produce and fetch paths before
        the first timed run (a broker in production is long-running); franz gets the same."""
        t0 = time.monotonic()
        create_topic(bootstrap, "suite-warm-up", 6)
        path = self.input(self.cfg.records, 100)
        produce = ["kcat", "-P", "-b", bootstrap, "-t", "suite-warm-up", "-X", "acks=1"]
        run_timed(produce, timeout=self.cfg.run_timeout, stdin_path=path)
        consume = ["kcat", "-C", "-b", bootstrap, "-t", "suite-warm-up", "-o", "beginning",
                   "-e", "-q", "-f", "x"]  # fmt: skip
        run_timed(consume, timeout=self.cfg.run_timeout)
        print(f"  {bootstrap}: warmed up in {time.monotonic() - t0:.1f} s", flush=True)

    def start(self) -> None:
        print("starting the systems ...", flush=True)
        kafka = self.start_kafka("kafka", 6)
        if kafka is not None:
            self.servers[KAFKA] = kafka
        franz = self.start_franz("franz", 6)
        if franz is not None:
            self.servers[FRANZ] = franz
        for cls, name in ((RedisServer, REDIS), (NatsServer, NATS)):
            server = cls(self.base / cls.name)
            try:
                server.start()
            except (RuntimeError, OSError) as exc:
                self.res.warn(f"{cls.name} did not start; its rows are skipped: {exc}")
                continue
            self.owned.append(server)
            self.servers[name] = Server(name, server.address, server.pid)
            print(f"  {name}: {server.address} (pid {server.pid})", flush=True)
            if isinstance(server, RedisServer):
                self.redis = server
            else:
                self.nats = server

    def close(self) -> None:
        self.note_zookeeper()
        self.stop_franz()
        stop_owned(self.owned, self.res.warn)
        try:
            self.res.plots = write_plots(self.res, self.cfg.results_dir)
            out = self.cfg.results_dir / "results.json"
            out.write_text(json.dumps(self.res.to_json(), indent=1, default=str))
        except Exception as exc:  # the tables still get written
            self.res.warn(f"writing the plots / results.json failed: {exc!r}")

    def note_zookeeper(self) -> None:
        """ZooKeeper's own CPU and memory, which the Kafka rows leave out."""
        sample = self.zookeeper.sample() if self.zookeeper is not None else None
        if sample is not None:
            self.res.scenario_note(
                "kafka",
                f"Kafka's rows measure the broker process (kafka.Kafka) alone. ZooKeeper, which "
                f"a ZooKeeper-mode Kafka needs, used {sample.cpu_s:.1f} CPU-s over the whole "
                f"suite and ended at {sample.rss_mib:,.0f} MiB RSS (HWM {sample.hwm_mib:,.0f}); "
                "franz's metadata is in its own process (no ZooKeeper in this suite).",
            )

    def stop_franz(self) -> None:
        """Stop the franz brokers first, by PID; a non-zero exit is warned with its output."""
        from tests.support.broker import BrokerProcess

        for owner in reversed(self.owned):
            if isinstance(owner, BrokerProcess) and owner.proc is not None:
                pid = owner.proc.pid
                code = owner.stop()
                unregister(pid)
                if code:
                    tail = "\n".join(owner.output().strip().splitlines()[-12:])
                    self.res.warn(f"franz (pid {pid}) exited with {code} on SIGTERM:\n{tail}")

    # -- helpers ---------------------------------------------------------------------------

    def rounds(self, scenario: str, items: Sequence[T]) -> Iterator[tuple[int, T]]:
        """``(run index, item)``: every item once per run, the order rotating every run."""
        plan = ((i, item) for i in range(self.cfg.runs) for item in rotate(list(items), i))
        return budgeted(plan, self.cfg.budgets[scenario], scenario, self.res.warn)

    def input(self, records: int, size: int) -> Path:
        """A kcat -P input file of ``records`` lines of ``size`` characters (made once)."""
        path = self.inputs.get((records, size))
        if path is None:
            path = self.base / f"input-{records}x{size}.txt"
            make_input(path, records, size)
            self.inputs[(records, size)] = path
        return path

    def timed(
        self, args: list[str], server: Server | None, *, stdin: Path | None = None, **kw: Any
    ) -> tuple[ChildRun, ProcSample | None, ProcSample | None]:
        """Run a client child; the server's /proc samples before and after."""
        before = server.sample() if server else None
        run = run_timed(args, timeout=self.cfg.run_timeout, stdin_path=stdin, **kw)
        after = server.sample() if server else None
        return run, before, after

    def record(
        self,
        scenario: str,
        case: str,
        system: str,
        i: int,
        m: Measure,
        *,
        x: float | None = None,
    ) -> None:
        self.res.add(scenario, case, system, m, franz=system.startswith(FRANZ), x=x)
        extra = f", broker CPU {m.broker_cpu_s:.2f} s" if m.broker_cpu_s is not None else ""
        extra += f", RSS {m.rss_mib:,.0f} MiB" if m.rss_mib else ""
        extra += " (cut)" if m.cut else ""
        print(
            f"[{scenario}] run {i + 1}  {case:<34} {system:<34} {m.records:>10,} in "
            f"{m.seconds:6.2f} s: {m.records_s:>11,.0f} rec/s {m.mb_s:8.1f} MB/s{extra}"
            + (f"  [{m.note}]" if m.note else ""),
            flush=True,
        )

    def measure(
        self,
        run: ChildRun,
        before: ProcSample | None,
        after: ProcSample | None,
        records: int,
        nbytes: int,
        seconds: float | None = None,
    ) -> Measure:
        return measure(run, before, after, records, nbytes, seconds)

    def kcat_produce(
        self, system: str, topic: str, records: int, size: int, acks: str = "1"
    ) -> Measure | None:
        """``kcat -P`` of ``records`` lines of ``size`` B into franz, Kafka or the mock in kcat."""
        server = self.servers.get(system) if system in (FRANZ, KAFKA) else None
        if system in (FRANZ, KAFKA):
            if server is None:
                return None
            create_topic(server.address, topic, 6)
            target = ["-b", server.address]
        else:
            target = ["-b", "127.0.0.1:9", "-X", "test.mock.num.brokers=1"]
        path = self.input(records, size)
        prewarm(self.base, records * (size + 40))
        args = ["kcat", "-P", *target, "-t", topic, "-X", f"acks={acks}"]
        run, before, after = self.timed(args, server, stdin=path)
        if not run.ok:
            self.res.warn(f"kcat -P, {system}, {topic}: {run.describe_failure()}")
            return None
        return self.measure(run, before, after, records, records * size)

    def redis_bench(self, key: str, records: int, size: int) -> Measure | None:
        if self.redis is None:
            return None
        server = self.servers[REDIS]
        clients, pipeline = 50, max(1, min(100, (16 * MiB) // (50 * size)))
        value = "v" * size
        args = redis_benchmark_args(self.redis.port, key, value, records, clients, pipeline)
        prewarm(self.base, records * (size + 40))
        run, before, after = self.timed(args, server, stdout="capture")
        if not run.ok:
            self.res.warn(f"redis-benchmark {key}: {run.describe_failure()}")
            return None
        m = self.measure(run, before, after, records, records * size)
        own = parse_redis_benchmark(run.stdout).rps
        m.note = f"-c {clients} -P {pipeline}; redis-benchmark's own {own:,.0f} rps"
        return m

    def peer(self, command: str, server: Server | None, *args: object, what: str) -> Measure | None:
        """A Python child (``peer_clients``); its own loop time, the server's CPU and RSS."""
        run, before, after = self.timed(peer_child(command, *args), server, stdout="capture")
        if not run.ok:
            self.res.warn(f"{what}: {run.describe_failure()}")
            return None
        m, problem = child_measure(parse_json_line(run.stdout), run, before, after)
        if problem:
            self.res.warn(f"{what}: {problem}")
        return m

    def redis_drop(self, key: str) -> None:
        if self.redis is not None:
            import redis

            redis.Redis(port=self.redis.port).unlink(key)

    # -- scenarios -------------------------------------------------------------------------

    def scenario_produce(self) -> None:
        from bench.suite_scenarios import produce

        produce(self)

    def scenario_consume(self) -> None:
        from bench.suite_scenarios import consume

        consume(self)

    def scenario_sizes(self) -> None:
        from bench.suite_scenarios import sizes

        sizes(self)

    def scenario_latency(self) -> None:
        from bench.suite_scenarios import latency

        latency(self)

    def scenario_partitions(self) -> None:
        from bench.suite_scenarios import partitions

        partitions(self)

    def scenario_stored(self) -> None:
        from bench.suite_scenarios import stored

        stored(self)

    def scenario_perftest(self) -> None:
        from bench.suite_scenarios import perftest

        perftest(self)

    def run(self) -> None:
        self.res.runs_per_row = self.cfg.runs
        self.start()
        run_scenarios(self, SCENARIOS, self.cfg.scenarios, self.res.warn)
        self.res.targets = issue_targets(self.cfg)
        if self.cfg.mode == "quick" or self.cfg.runs < 3:
            self.res.targets_caption = (
                "Quick mode or fewer than 3 runs: small runs dominated by start-up, so these "
                "verdicts say nothing about the targets; they are defined on full runs."
            )


def issue_targets(cfg: Settings) -> list[Target]:
    """Issue 3's targets, as rows of this suite (the consume-vs-mock one is broker_bench's),
    and issue 15's against Apache Kafka (>= 100 % on produce and consume, lower CPU-s/GB, a
    tenth of its RSS) when Kafka runs."""
    kcat = f"kcat -P {cfg.records:,}, acks=1"
    client = f"confluent-kafka {cfg.client_records:,}, acks=1"
    consume = "kcat -C -e (C client)"
    kafka = (
        [
            Target("kcat -P acks=1: franz / Kafka", "produce", kcat, KAFKA, "ratio", 1.0),
            Target(
                "kcat -P acks=all: franz / Kafka",
                "produce",
                kcat.replace("=1", "=all"),
                KAFKA,
                "ratio",
                1.0,
            ),
            Target("kcat -C -e: franz / Kafka", "consume", consume, KAFKA, "ratio", 1.0),
            Target(
                "kcat -P acks=1 broker CPU-s/GB: franz / Kafka",
                "produce",
                kcat,
                KAFKA,
                "cpu_ratio",
                1.0,
                False,
            ),
            Target(
                "kcat -C -e broker CPU-s/GB: franz / Kafka",
                "consume",
                consume,
                KAFKA,
                "cpu_ratio",
                1.0,
                False,
            ),
            Target(
                "broker RSS after kcat -P acks=1: franz / Kafka",
                "produce",
                kcat,
                KAFKA,
                "rss_ratio",
                0.1,
                False,
            ),
        ]
        if cfg.kafka
        else []
    )
    return [
        *kafka,
        Target("kcat -P records/s (Kafka's published 1 producer, 6 partitions)",
               "produce", kcat, FRANZ, "records_s", 821_557),
        Target("kcat -P: franz / mock in kcat", "produce", kcat, MOCK_KCAT, "ratio", 0.8),
        Target("kcat -C -e records/s", "consume", "kcat -C -e (C client)", FRANZ, "records_s",
               1_000_000),
        Target("confluent-kafka produce: franz / mock in client", "produce", client,
               MOCK_CLIENT, "ratio", 0.9),
        Target("end-to-end latency p50", "latency", "", FRANZ, "p50", 2.0, False),
        Target("end-to-end latency p99", "latency", "", FRANZ, "p99", 10.0, False),
    ]  # fmt: skip


# -- main ---------------------------------------------------------------------------------------


CAVEATS = [
    "Apache Kafka is the reference users compare with: one broker in ZooKeeper mode, the "
    "shipped server.properties and kafka-server-start.sh's JVM (1 GiB heap, G1), data in the "
    "same temp dir; it runs the same kcat and confluent-kafka workloads as franz and Kafka's "
    "perf-test tools run against both. Its rows measure the broker process alone (not "
    "ZooKeeper). Every broker gets an untimed warm-up (kcat -P and -C of the produce run's "
    "records) before its first timed run, so the JVM's JIT has compiled its hot paths.",
    "Each other reference answers one question: the mock broker inside kcat / the client is the "
    "client's ceiling (it stores nothing on disk and keeps only ~5 MiB per partition); Redis "
    "Streams is an in-memory log with an AOF fsynced every second; NATS JetStream stores to "
    "files. None of them is Kafka; the ratios say how franz compares with what a user could "
    "pick instead, not whether they are equivalent.",
    "kcat and redis-benchmark are timed from spawn to exit (start-up included); the Python "
    "children time their own loop (first request to last answer).",
    "A shared 2-core VM: client and server share the cores; single figures move by +-30 %; "
    "the order of the systems rotates every run and the ratios pair runs measured back to "
    "back.",
    "Page cache, not disk: franz's defaults never fsync on the produce path; its data, like "
    "Redis's AOF and NATS's store, lives in the suite's temp dir and is deleted at the end.",
]


def header(cfg: Settings, machine: dict[str, Any], stamp: str) -> str:
    import confluent_kafka

    kcat, linked = parse_kcat_version(
        run_timed(["kcat", "-V"], timeout=10.0, stdout="capture").stdout
    )
    runs = f"{cfg.runs} run(s) per system and case"
    if cfg.runs < 3:
        runs += " (fewer than 3: the medians are single runs, a smoke test, not figures to quote)"
    return "\n".join(
        [
            f"# Benchmark suite, {stamp} ({cfg.mode})",
            "",
            f"- commit {git_commit()}; kcat {kcat} (librdkafka {linked}); confluent-kafka "
            f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]}); "
            f"{tool_version(['redis-server', '--version'])}; "
            f"{tool_version(['nats-server', '--version'])}; " + kafka_line(cfg),
            f"- {machine.get('cpus')} CPUs, {machine.get('mem_total_mib')} MiB, "
            f"{machine.get('platform')}, Python {machine.get('python')}; data on "
            f"{machine.get('filesystem')}; load average at start {machine.get('loadavg_start')}",
            f"- {runs}; scenarios {', '.join(cfg.scenarios)}; franz overrides: "
            f"{cfg.overrides or 'none'}; plots and results.json in `{cfg.results_dir}`",
        ]
    )


def kafka_line(cfg: Settings) -> str:
    """Which Kafka ran, how, or why not."""
    if not cfg.kafka:
        return "Apache Kafka: not run (--no-kafka)"
    try:
        kafka_libs()
    except KafkaUnavailable:
        return "Apache Kafka: skipped (its jars are missing, see the warnings)"
    java = tool_version(["java", "-version"])
    return f"Apache Kafka {kafka_version()} (ZooKeeper mode, {java}, {' '.join(KAFKA_JVM_FLAGS)})"


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    began = time.monotonic()
    code = run_suite("suite", cfg, Results(), Suite, header, CAVEATS)
    print(f"suite wall time {time.monotonic() - began:.0f} s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
