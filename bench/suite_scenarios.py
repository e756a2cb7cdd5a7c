"""The suite's six scenarios, each a function of the running :class:`bench.suite.Suite`.

Each one measures franz and the references that can do the scenario meaningfully, in runs
whose systems' order rotates (``Suite.rounds``, bounded by the scenario's budget), and says
in the scenario's notes which reference is left out and why (rather than faking a row).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TYPE_CHECKING

from bench.broker_bench import latency_run
from bench.broker_clients import (
    MockCluster,
    create_topic,
    parse_json_line,
    python_child,
    register,
    run_timed,
)
from bench.kafka_peer import (
    consumer_perf_args,
    parse_consumer_performance,
    parse_producer_performance,
    producer_perf_args,
)
from bench.peer_clients import peer_child
from bench.report import prewarm
from bench.suite_results import KAFKA, Measure

if TYPE_CHECKING:
    from bench.suite import Server, Suite

__all__ = ["consume", "latency", "partitions", "perftest", "produce", "sizes", "stored"]

GiB = 1024**3
MiB = 1024**2
FRANZ, MOCK_KCAT, MOCK_CLIENT, MOCK_PROC = "franz", "mock in kcat", "mock in client", "mock process"
REDIS, NATS = "Redis Streams", "NATS JetStream"


def _kafka_child(s: Suite, command: str, system: str, topic: str, *args: object) -> Measure | None:
    """confluent-kafka child against franz, Kafka or the mock inside the client."""
    server = s.servers.get(system) if system in (FRANZ, KAFKA) else None
    if system in (FRANZ, KAFKA):
        if server is None:
            return None
        if command == "kafka-produce":
            create_topic(server.address, topic, 6)
        target: list[object] = ["--bootstrap", server.address]
    else:
        target = ["--mock-in-client"]
    seconds = s.cfg.run_timeout - 10
    return s.peer(
        command,
        server,
        "--topic", topic, "--seconds", seconds, *target, *args,
        what=f"{command}, {system}",
    )  # fmt: skip


def produce(s: Suite) -> None:
    cfg = s.cfg
    n, c = cfg.records, cfg.client_records
    r, nats = s.servers.get(REDIS), s.servers.get(NATS)
    kafka = [KAFKA] if KAFKA in s.servers else []
    c_cases = [(f"kcat -P {n:,}, acks={a}", a) for a in ("1", "all")]
    py_cases = [(f"confluent-kafka {c:,}, acks={a}", a) for a in ("1", "all")]
    c_systems, py_systems = [*kafka, FRANZ, MOCK_KCAT], [*kafka, FRANZ, MOCK_CLIENT]
    plan = [(case, sys_, acks, "c") for case, acks in c_cases for sys_ in c_systems]
    plan += [(c_cases[0][0], REDIS + " (redis-benchmark XADD)", "1", "rb")] if r else []
    plan += [(case, sys_, acks, "py") for case, acks in py_cases for sys_ in py_systems]
    plan += [(py_cases[0][0], REDIS + " (redis-py pipeline 1000)", "1", "rpy")] if r else []
    plan += [(py_cases[0][0], NATS + " (nats-py publish_async)", "1", "nats")] if nats else []
    by_case: dict[str, list[tuple[str, str, str]]] = {}
    for case, system, acks, how in plan:
        by_case.setdefault(case, []).append((system, acks, how))
    systems = [(case, entry) for case, entries in by_case.items() for entry in entries]
    for i, (case, (system, acks, how)) in s.rounds("produce", systems):
        tag = f"produce-{how}-{acks}-{i}"
        m: Measure | None
        if how == "c":
            m = s.kcat_produce(system, tag, n, 100, acks)
            if m is not None and system in (FRANZ, KAFKA) and acks == "1":
                s.backlog[system] = tag
        elif how == "rb":
            m = s.redis_bench(tag, cfg.redis_bench_records, 100)
            if m is not None:
                old = s.backlog.get(REDIS)
                s.backlog[REDIS] = tag
                if old:
                    s.redis_drop(old)
        elif how == "rpy" and r is not None:
            m = s.peer("redis-produce", r, "--port", r.address.split(":")[1], "--key", tag,
                       "--records", cfg.redis_py_records, "--seconds", cfg.peer_seconds,
                       what="redis-py produce")  # fmt: skip
            s.redis_drop(tag)
        elif how == "nats" and nats is not None:
            m = s.peer("nats-produce", nats, "--url", f"nats://{nats.address}", "--stream", tag,
                       "--records", cfg.nats_records, "--seconds", cfg.peer_seconds,
                       what="nats-py produce")  # fmt: skip
            if m is not None:
                s.backlog[NATS] = tag
        else:
            m = _kafka_child(s, "kafka-produce", system, tag, "--records", c, "--acks", acks)
        if m is not None:
            s.record("produce", case, system, i % cfg.runs, m)
    s.res.scenario_note(
        "produce",
        "Redis and NATS have no acks setting: Redis answers XADD once the entry is in memory "
        "(the AOF is written and fsynced every second), NATS answers a publish once the "
        "stream has stored it (JetStream's PubAck); their rows sit in the acks=1 cases. "
        "redis-benchmark (C, 50 connections, pipelines of 100) is the C client's peer of "
        "kcat; redis-py (pipelines of 1,000) and nats-py (publish_async) are the Python "
        "client's peers of confluent-kafka. With one broker, acks=all waits for the same "
        "single replica as acks=1 (franz's and Kafka's ISR is the leader alone). Apache Kafka "
        "runs the same kcat and confluent-kafka workloads into a 6-partition topic as franz.",
    )
    s.res.scenario_note(
        "produce",
        f"Python peers are cut at {cfg.peer_seconds:g} s (redis-py {cfg.redis_py_records:,} "
        f"records, nats-py {cfg.nats_records:,} at most): their rates are over what they did.",
    )


def consume(s: Suite) -> None:
    cfg = s.cfg
    r, nats = s.servers.get(REDIS), s.servers.get(NATS)
    brokers = {name: s.servers[name] for name in (KAFKA, FRANZ) if name in s.servers}
    for name in brokers:
        if name not in s.backlog and s.kcat_produce(name, "consume-backlog", cfg.records, 100):
            s.backlog[name] = "consume-backlog"
    if (
        r is not None
        and REDIS not in s.backlog
        and s.redis_bench("consume-backlog", cfg.redis_bench_records, 100)
    ):
        s.backlog[REDIS] = "consume-backlog"
    if nats is not None and NATS not in s.backlog:
        s.peer("nats-produce", nats, "--url", f"nats://{nats.address}", "--stream", "backlog",
               "--records", cfg.nats_records, "--seconds", cfg.peer_seconds * 3,
               what="nats-py fill")  # fmt: skip
        s.backlog[NATS] = "backlog"
    c_case, py_case = "kcat -C -e (C client)", "Python client"
    plan: list[tuple[str, str]] = []
    for name in brokers:
        if name in s.backlog:
            plan += [(c_case, name), (py_case, name)]
    if r is not None and REDIS in s.backlog:
        plan.append((py_case, REDIS + " (redis-py XRANGE 10,000)"))
    if nats is not None and NATS in s.backlog:
        plan.append((py_case, NATS + " (nats-py pull fetch 1,000)"))
    limit = cfg.run_timeout - 10
    for i, (case, system) in s.rounds("consume", plan):
        m = None
        if case == c_case and system in brokers:
            broker, topic = brokers[system], s.backlog[system]
            args = ["kcat", "-C", "-b", broker.address, "-t", topic, "-o", "beginning", "-e",
                    "-q", "-f", "x"]  # fmt: skip
            run, before, after = s.timed(args, broker, stdout="count")
            if run.ok:
                m = s.measure(run, before, after, run.out_bytes, run.out_bytes * 100)
                if run.out_bytes != cfg.records:
                    s.res.warn(f"kcat -C read {run.out_bytes:,} of {cfg.records:,}")
            else:
                s.res.warn(f"kcat -C, {system}: {run.describe_failure()}")
        elif system in brokers:
            m = _kafka_child(s, "kafka-consume", system, s.backlog[system])
        elif system.startswith(REDIS) and r is not None:
            m = s.peer("redis-consume", r, "--port", r.address.split(":")[1], "--key",
                       s.backlog[REDIS], "--batch", 10_000, "--seconds", cfg.peer_seconds,
                       what="redis-py XRANGE")  # fmt: skip
        elif nats is not None:
            m = s.peer("nats-consume", nats, "--url", f"nats://{nats.address}", "--stream",
                       s.backlog[NATS], "--batch", 1000, "--seconds", min(limit, 30),
                       what="nats-py fetch")  # fmt: skip
        if m is not None:
            s.record("consume", case, system, i, m)
    s.res.scenario_note(
        "consume",
        f"Backlogs: franz and Kafka {cfg.records:,} records of 100 B each (kcat -P, 6 "
        "partitions); Redis "
        f"{cfg.redis_bench_records:,} entries (redis-benchmark XADD); NATS only what nats-py "
        f"published in one produce run (at most {cfg.nats_records:,}: it publishes ~15-20k/s, a "
        "2,000,000-message backlog would not fit the time budget). redis-py reads are cut at "
        f"{cfg.peer_seconds:g} s.",
    )
    s.res.scenario_note(
        "consume",
        "Not references here: the mock broker keeps only the last ~5 MiB per partition and "
        "answers a fetch with one stored batch per partition, so it cannot serve a backlog "
        "(see broker_bench); kcat cannot read Redis or NATS, so the C case has franz alone. "
        "Redis XRANGE and the NATS pull consumer read from the start, without a consumer "
        "group (as franz's readers use assign(), no commits).",
    )


def sizes(s: Suite) -> None:
    cfg = s.cfg
    r, nats = s.servers.get(REDIS), s.servers.get(NATS)
    systems = [FRANZ, MOCK_KCAT] + ([REDIS] if r else []) + ([NATS] if nats else [])
    systems = ([KAFKA] if KAFKA in s.servers else []) + systems
    plan = [(size, system) for size in cfg.sizes for system in systems]
    counts = {size: max(1, min(cfg.size_max_records, cfg.size_bytes // size)) for size in cfg.sizes}
    nats_s = min(cfg.peer_seconds, 3.0)  # its rate is flat in the run's length; 5 sizes x runs
    for size in cfg.sizes:
        s.input(counts[size], size)  # untimed, before the runs
    for i, (size, system) in s.rounds("sizes", plan):
        n, case, tag = counts[size], f"{size:,} B", f"size-{size}-{i}"
        m: Measure | None
        if system in (KAFKA, FRANZ, MOCK_KCAT):
            m = s.kcat_produce(system, tag, n, size)
        elif system == REDIS:
            m = s.redis_bench(tag, n, size)
            s.redis_drop(tag)
        else:
            assert nats is not None
            m = s.peer("nats-produce", nats, "--url", f"nats://{nats.address}", "--stream", tag,
                       "--records", n, "--value-size", size, "--seconds", nats_s,
                       what=f"nats-py produce {size} B")  # fmt: skip
        if m is not None:
            s.record("sizes", case, system, i % cfg.runs, m, x=size)
    s.res.scenario_note(
        "sizes",
        f"Each run sends {cfg.size_bytes // MiB} MiB of values (at most "
        f"{cfg.size_max_records:,} records) with acks=1: kcat -P for Kafka, franz and the "
        "mock in kcat, redis-benchmark XADD (50 connections, pipeline scaled down so at "
        "most 16 MiB "
        f"are in flight) for Redis, nats-py publish_async for NATS (cut at "
        f"{min(cfg.peer_seconds, 3.0):g} s). Plot: sizes.png.",
    )


def latency(s: Suite) -> None:
    cfg = s.cfg
    franz, r, nats = s.servers.get(FRANZ), s.servers.get(REDIS), s.servers.get(NATS)
    kafka = s.servers.get(KAFKA)
    systems = ([KAFKA] if kafka else []) + ([FRANZ] if franz else []) + [MOCK_CLIENT]
    systems += ([REDIS] if r else []) + ([NATS] if nats else [])
    consumers = {
        KAFKA: "confluent-kafka, fetch.wait.max.ms=500",
        FRANZ: "confluent-kafka, fetch.wait.max.ms=500",
        MOCK_CLIENT: "confluent-kafka, fetch.wait.max.ms=0",
        REDIS: "redis-py XADD / XREAD BLOCK (thread)",
        NATS: "nats-py js.publish / ordered push consumer",
    }
    timeout = cfg.latency_seconds + 45
    common: list[object] = ["--rate", cfg.latency_rate, "--seconds", cfg.latency_seconds]
    for i, system in s.rounds("latency", systems):
        topic = f"latency-{i}"
        broker = franz if system == FRANZ else kafka if system == KAFKA else None
        if broker is not None:
            create_topic(broker.address, topic, 1)
            args = python_child("latency", "--topic", topic, "--bootstrap", broker.address,
                                "--fetch-wait-ms", 500, *common)  # fmt: skip
        elif system == MOCK_CLIENT:
            args = python_child("latency", "--topic", topic, "--mock-in-client",
                                "--fetch-wait-ms", 0, *common)  # fmt: skip
        elif system == REDIS and r is not None:
            args = peer_child("redis-latency", "--port", r.address.split(":")[1], "--key", topic,
                              *common)  # fmt: skip
        else:
            assert nats is not None
            args = peer_child("nats-latency", "--url", f"nats://{nats.address}", "--stream",
                              topic, *common)  # fmt: skip
        run = run_timed(args, timeout=timeout, stdout="capture")
        if not run.ok:
            s.res.warn(f"latency, {system}: {run.describe_failure()}")
            continue
        out = parse_json_line(run.stdout)
        lat = latency_run(out["latencies_us"], out["sent"])
        s.res.add_latency(system, consumers[system], lat)
        print(f"[latency] run {i + 1}  {system:<16} p50 {lat.p50:.3f} ms, p99 {lat.p99:.3f} ms, "
              f"p99.9 {lat.p999:.3f} ms, max {lat.max:.3f} ms, lost {lat.lost}",
              flush=True)  # fmt: skip
    s.res.scenario_note(
        "latency",
        f"One 100 B record every {1000 / cfg.latency_rate:g} ms for {cfg.latency_seconds:g} s "
        "per run; producer and consumer in one process, one clock (perf_counter_ns); latency "
        "= received - sent; 'lost' = not back within 2 s of the end. franz's and Kafka's "
        "consumers long-poll (the same client and settings); the mock holds an empty fetch "
        "for the whole wait, so its row busy-polls "
        "(fetch.wait.max.ms=0) and is the client's floor, not a like-for-like reference. "
        "Redis: XADD on one connection, XREAD BLOCK on another in a thread. NATS: js.publish "
        "waits for the PubAck before the next send. Plot: latency.png.",
    )


def partitions(s: Suite) -> None:
    cfg = s.cfg
    kafka = s.start_kafka("kafka-partitions", 1)
    franz = s.start_franz("franz-partitions", 1)
    mock = MockCluster().start()
    register(mock.pid, mock)
    s.owned.append(mock)
    from bench.suite import Server

    servers: dict[str, Server] = {KAFKA: kafka} if kafka is not None else {}
    if franz is not None:
        servers[FRANZ] = franz
    servers[MOCK_PROC] = Server(MOCK_PROC, mock.bootstrap, mock.pid)
    made: dict[tuple[str, int], str] = {}
    path = s.input(cfg.partition_records, 100)
    plan = [(p, system) for p in cfg.partition_counts for system in servers]
    for i, (count, system) in s.rounds("partitions", plan):
        server, topic = servers[system], f"partitions-{count}"
        if (system, count) not in made:
            t0 = time.monotonic()
            if system in (FRANZ, KAFKA):
                create_topic(server.address, topic, count, timeout=120.0)
            else:
                mock.create_topic(topic, count)
            made[(system, count)] = f"created in {time.monotonic() - t0:.1f} s"
        args = ["kcat", "-P", "-b", server.address, "-t", topic, "-X", "acks=1"]
        run, before, after = s.timed(args, server, stdin=path)
        if not run.ok:
            s.res.warn(f"partitions {count}, {system}: {run.describe_failure()}")
            continue
        m = s.measure(run, before, after, cfg.partition_records, cfg.partition_records * 100)
        m.note = f"topic {made[(system, count)]}"
        label = f"{count:,} partition" + ("s" if count > 1 else "")
        s.record("partitions", label, system, i % cfg.runs, m, x=count)
    s.res.scenario_note(
        "partitions",
        f"kcat -P of {cfg.partition_records:,} records of 100 B (acks=1, keyless: librdkafka's "
        "sticky partitioner) into one topic of N partitions. Kafka, franz and the mock are "
        "started for this scenario alone and keep every topic made so far (1 + 6 + 64 + 1,000 "
        "partitions by the end): RSS/HWM is the server's after the runs, cumulative. "
        "Reference: the mock "
        "in a process of its own (the mock inside kcat always makes 4 partitions). Redis "
        "Streams and NATS have no partitioned topics (one stream per partition would be a "
        "different workload): no rows. Plot: partitions.png.",
    )


def _fill(s: Suite, system: str, server: Server, target: int, tag: str, deadline: float) -> int:
    """Untimed: add payload to the stored topic/stream until ``target`` bytes; bytes added."""
    cfg, added = s.cfg, 0
    size = 10_000 if system in (FRANZ, KAFKA) else 100_000
    per_file = cfg.fill_file_mib * MiB // (size + 1)
    while added < target and time.monotonic() < deadline:
        if system in (FRANZ, KAFKA):
            path = s.input(per_file, size)
            run = run_timed(["kcat", "-P", "-b", server.address, "-t", tag, "-X", "acks=1"],
                            timeout=120.0, stdin_path=path)  # fmt: skip
            if not run.ok:
                raise RuntimeError(f"filling {system}: {run.describe_failure()}")
            added += per_file * size
        else:
            n = max(1, min(per_file, (target - added) // size + 1))
            m = s.peer("nats-produce", server, "--url", f"nats://{server.address}", "--stream",
                       tag, "--records", n, "--value-size", size, "--seconds", 60,
                       what="nats fill")  # fmt: skip
            if m is None:
                raise RuntimeError("filling NATS failed")
            added += m.nbytes
    return added


def stored(s: Suite) -> None:
    cfg, res = s.cfg, s.res
    # a franz (and a Kafka) of its own, like the partitions scenario's: no earlier scenario's
    # topics in it
    kafka = s.start_kafka("kafka-stored", 6)
    franz, nats = s.start_franz("franz-stored", 6), s.servers.get(NATS)
    free = shutil.disk_usage(s.base).free
    levels = [lv for lv in cfg.stored_levels_gib if lv * GiB + 4 * GiB < free]
    if len(levels) < len(cfg.stored_levels_gib):
        res.warn(f"stored: {free / GiB:.0f} GiB free; levels above {levels[-1]} GiB skipped")
    end = time.monotonic() + cfg.budgets["stored"]
    plans = [(KAFKA, kafka, levels), (FRANZ, franz, levels)]
    plans += [(NATS, nats, list(cfg.nats_stored_levels_gib))]
    plans = [plan for plan in plans if plan[1] is not None]
    fill_s: dict[str, float] = {}
    for n, (system, server, system_levels) in enumerate(plans):
        assert server is not None
        # each system gets an equal share of what is left of the budget
        deadline = time.monotonic() + (end - time.monotonic()) / (len(plans) - n)
        tag, have = "stored", 0
        if system in (FRANZ, KAFKA):
            create_topic(server.address, tag, 6)
        for level in system_levels:
            t0 = time.monotonic()
            have += _fill(s, system, server, int(level * GiB) - have, tag, deadline)
            os.sync()  # untimed: the fill's dirty pages are written back before measuring
            fill_s[system] = fill_s.get(system, 0.0) + time.monotonic() - t0
            if have < level * GiB:
                res.warn(f"stored: {system} reached {have / GiB:.1f} GiB, not {level} GiB, "
                         "within the budget; later levels skipped")  # fmt: skip
                break
            # one row per level (the same case for every system, so franz / Kafka pairs up);
            # what the topic held before the level's first run is the row's x and note
            case, x = f"{level:g} GiB level", round(have / GiB, 2)
            for i in range(cfg.runs):
                if time.monotonic() > deadline:
                    break
                m: Measure | None
                prewarm(s.base, cfg.stored_records * 140)
                if system in (FRANZ, KAFKA):
                    m = _stored_kcat(s, system, server, tag)
                else:
                    m = s.peer("nats-produce", server, "--url", f"nats://{server.address}",
                               "--stream", tag, "--records", cfg.nats_records, "--seconds",
                               cfg.peer_seconds, what="nats produce (stored)")  # fmt: skip
                if m is None:
                    continue
                m.note = f"{have / GiB:.2f} GiB stored before this run"
                have += m.nbytes
                s.record("stored", case, system, i, m, x=x)
    franz_fill, kafka_fill = fill_s.get(FRANZ, 0.0), fill_s.get(KAFKA, 0.0)
    res.scenario_note(
        "stored",
        "franz and Kafka are started for this scenario alone (their only topic is this one); "
        "each system gets an equal share of the scenario's budget. "
        f"Each measurement appends 100 B records to one 6-partition topic (kcat -P of "
        f"{cfg.stored_records:,}, acks=1) or one file-storage stream (NATS: nats-py, cut at "
        f"{cfg.peer_seconds:g} s) that already holds the stated amount; between levels the "
        f"topic is filled untimed with 10 KB records (franz {franz_fill:.0f} s of filling, "
        f"Kafka {kafka_fill:.0f} s) or "
        "100 KB messages (NATS), then os.sync() (untimed) so the fill's write-back does not "
        "throttle the measurement, and a scratch file is written and deleted before each run "
        "(the pre-warm of broker_bench). 'vs first level' is the row's median over the same "
        "system's median at the lowest level: flat is 100 %. A level's runs add to what is "
        "stored (the case says what the topic held before the first). NATS goes to "
        f"{max(cfg.nats_stored_levels_gib)} GiB only (nats-py fills at ~100-200 MB/s; 10 GiB "
        "would not fit the budget). Redis keeps a stream in memory, so gigabytes stored are "
        "a question of RAM, not of a log on disk: no rows; the mock keeps ~5 MiB per "
        "partition: no rows. Plot: stored.png.",
    )


def _stored_kcat(s: Suite, system: str, server: Server, topic: str) -> Measure | None:
    cfg = s.cfg
    path = s.input(cfg.stored_records, 100)
    args = ["kcat", "-P", "-b", server.address, "-t", topic, "-X", "acks=1"]
    run, before, after = s.timed(args, server, stdin=path)
    if not run.ok:
        s.res.warn(f"stored, {system}: {run.describe_failure()}")
        return None
    return s.measure(run, before, after, cfg.stored_records, cfg.stored_records * 100)


def perftest(s: Suite) -> None:
    """Kafka's ``kafka-producer-perf-test`` then ``kafka-consumer-perf-test`` (the Java client)
    against Kafka and franz: each run produces ``perf_records`` x 100 B into a fresh
    6-partition topic, then reads them back in a group of its own."""
    cfg, libs = s.cfg, s.libs
    brokers = [name for name in (KAFKA, FRANZ) if name in s.servers]
    if libs is None or not brokers:
        why = "--no-kafka" if not s.cfg.kafka else "Kafka's jars are missing (see the warnings)"
        s.res.scenario_note("perftest", f"Not run: {why}.")
        return
    n, size = cfg.perf_records, 100
    produce_case = f"ProducerPerformance {n:,} x {size} B, acks=1"
    consume_case = f"ConsumerPerformance {n:,} (fetch time)"
    for i, system in s.rounds("perftest", brokers):
        server, topic = s.servers[system], f"perf-{i}"
        create_topic(server.address, topic, 6)
        args = producer_perf_args(libs, server.address, topic, n, size, "1")
        run, before, after = s.timed(args, server, stdout="capture")
        if not run.ok:
            s.res.warn(f"ProducerPerformance, {system}: {run.describe_failure()}")
            continue
        perf = parse_producer_performance(run.stdout)
        m = s.measure(run, before, after, perf.records, perf.records * size,
                      perf.records / perf.records_s)  # fmt: skip
        m.note = f"send-to-ack p50 {perf.p50_ms:g} ms, p99 {perf.p99_ms:g} ms"
        s.record("perftest", produce_case, system, i, m)
        args = consumer_perf_args(libs, server.address, topic, n)
        run, before, after = s.timed(args, server, stdout="capture")
        if not run.ok:
            s.res.warn(f"ConsumerPerformance, {system}: {run.describe_failure()}")
            continue
        got = parse_consumer_performance(run.stdout)
        if got.records < n:
            s.res.warn(f"ConsumerPerformance, {system}: read {got.records:,} of {n:,}")
        m = s.measure(run, before, after, got.records, got.records * size,
                      max(got.fetch_ms, 1.0) / 1000)  # fmt: skip
        m.note = f"group join {got.rebalance_ms:,.0f} ms, whole run {got.seconds:.2f} s"
        s.record("perftest", consume_case, system, i, m)
    s.res.scenario_note(
        "perftest",
        "Kafka's own tools on the Java client (the same jars as the Kafka broker): "
        f"ProducerPerformance --num-records {n:,} --record-size {size} --throughput -1 "
        "acks=1 (the producer's defaults otherwise), timed by its own summary (records / its "
        "records/sec); then ConsumerPerformance --messages N in a group of its own, timed by "
        "its fetch.time.ms (after the group join; the join time is in the run's note). The "
        "broker CPU is over the whole tool run (JVM start-up included); client CPU-s is the "
        "tool's JVM. One topic per run and system, 6 partitions.",
    )
