"""Reassignment bench (issue 18): move a 6-partition RF=2 topic holding 1 GiB from brokers
{1, 2} to {2, 3} under an idempotent acks=all producer, unthrottled and throttled, franz and
Apache Kafka 3.9 side by side, each moved by its own ``reassign-partitions`` tool.

Run ``python -m bench.reassign_bench [--quick] [--size-gb N] [--throttle B/S] [--peer kafka|none]``.

Systems: ``bench.replication_systems`` (one ZooKeeper; three ``franz broker`` processes, then
three Kafka 3.9 brokers, ids 1-3; each cluster's log dirs are deleted before the next starts).
Tools: ``python -m franz reassign-partitions`` for franz, Kafka's own
``kafka-reassign-partitions`` (``ReassignPartitionsCommand`` from the reference jars) for
Kafka. Per system and case (``unthrottled``, then ``throttled`` at ``--throttle`` B/s), on a
topic of its own, so that both cases move the same data from the same start:

1. a fresh topic of 6 partitions on {1, 2} (partition p on [1, 2] for even p, [2, 1] for
   odd p: each broker leads 3), filled by ``kcat -P -X acks=all`` with ``--size-gb`` GiB of
   1 KiB records (distinct random values), then an untimed ``os.sync()`` (so neither case
   moves data while the kernel writes the fill back);
2. the probe (``bench.ack_probe.AckProbe``): an idempotent acks=all confluent-kafka
   producer, ``--rate`` records/s (500) of 100 B round-robin over the 6 partitions, each
   record's send-to-ack latency kept; ``--before-s`` (10 s) of it before the move;
3. ``--execute`` of the plan that puts broker 3 in broker 1's place ([1, 2] -> [3, 2],
   [2, 1] -> [2, 3]; ``--throttle`` for the throttled case), then ``--verify
   --preserve-throttles`` every ``--verify-every`` s until every partition "is completed",
   then a final ``--verify`` that clears the throttles. Timed: from spawning ``--execute`` to
   the exit of the ``--verify`` that reported all 6 completed. Meanwhile a thread samples
   broker 3's ``.log`` bytes of the topic (every 0.2 s) and asks the controller for ongoing
   reassignments (ListPartitionReassignments, every 0.5 s), for the steady rate and the
   controller's own end;
4. checks: the probe stops (flushed); per partition, broker 3's log files hold exactly the
   high watermark's records (every batch read and CRC-checked, offsets without gaps) and a
   consumer reading through the cluster (broker 3 leads partitions 0, 2, 4) gets every
   offset up to the HW; broker 1 has no directory of the topic left (Kafka renames a
   deleted replica ``*-delete`` and removes it after ``file.delete.delay.ms``, 60 s: the
   wait is timed); the throttle configs are gone; every acknowledged probe record is in
   the topic exactly once; the probe's errors, by kind (failed deliveries, librdkafka's
   non-fatal client errors, fatal errors).

Figures: MB moved (10^6 B of broker 3's ``.log`` bytes of the topic afterwards), MB/s = that
over the execute-to-verify time, the steady rate (the slope of broker 3's bytes from 10 % to
90 % of the move, ``throttle_bench.catch_up_rate``) and both against the throttle (issue 18:
within 20 %; Kafka's leader-side quota window lets the first ~11 s burst, so the bytes of the
first 11 s are shown too), the probe's p50/p99 before and during the move. Every process is
stopped by PID at the end and the temp dir removed (``bench.harness.run_suite``); the report
goes to ``bench/results/reassign-<timestamp>.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ack_probe import AckProbe
from bench.broker_clients import make_input, offsets, run_timed
from bench.harness import parse_names, run_suite, stop_owned
from bench.reassign_checks import (
    LogCount,
    acked_check,
    consume_all,
    first_window_bytes,
    latency_summary,
    old_dirs,
    replica_records,
    verify_states,
)
from bench.reassign_report import Checks, Move, Results, caveats, header
from bench.replication_systems import (
    ClusterSystem,
    KafkaCluster,
    cluster_makers,
    log_bytes,
    require_free,
    start_zookeeper,
    wait_until,
)
from bench.throttle_bench import catch_up_rate

__all__ = ["Settings", "main", "parse_args", "settings_from_args", "source", "target"]

REPO = Path(__file__).resolve().parents[1]
CASES = ("unthrottled", "throttled")
PARTITIONS = 6
RECORD_SIZE = 1024
GIB = 1 << 30
MB = 1_000_000
SAMPLE_S = 0.2
CONTROLLER_EVERY_S = 0.5
QUOTA_WINDOW_S = 11  # replication.quota.window.num x replication.quota.window.size.seconds
SESSION_MS = 18000  # Kafka's default zookeeper.session.timeout.ms (nothing is killed here)


@dataclass(frozen=True)
class Settings:
    mode: str
    scenarios: tuple[str, ...]
    results_dir: Path
    size_bytes: int
    throttle: int
    peer: str
    rate: float = 500.0
    before_s: float = 10.0
    verify_every_s: float = 2.0

    @property
    def records(self) -> int:
        return self.size_bytes // RECORD_SIZE


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.reassign_bench",
        description="Issue 18's figures: a 6-partition RF=2 topic moved from brokers {1,2} to "
        "{2,3} unthrottled and throttled, under an acks=all producer, franz and Kafka 3.9.",
    )
    p.add_argument("--quick", action="store_true", help="0.2 GiB instead of 1 GiB")
    p.add_argument("--size-gb", type=float, help="GiB of 1 KiB records in the topic (1; quick 0.2)")
    p.add_argument(
        "--throttle", type=int, default=10_000_000, help="B/s of the throttled case (10000000)"
    )
    p.add_argument("--cases", default=",".join(CASES), help=",".join(CASES))
    p.add_argument("--peer", choices=("kafka", "none"), default="kafka", help="the reference")
    p.add_argument("--rate", type=float, default=500.0, help="probe records/s (500)")
    p.add_argument("--before-s", type=float, default=10.0, help="probe seconds before a move (10)")
    p.add_argument("--verify-every", type=float, default=2.0, help="s between --verify polls (2)")
    p.add_argument("--results-dir", help="where reassign-<timestamp>.md goes (bench/results)")
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    size_gb = args.size_gb or (0.2 if args.quick else 1.0)
    if size_gb <= 0 or args.throttle <= 0 or args.rate <= 0:
        raise SystemExit("--size-gb, --throttle and --rate must be positive")
    return Settings(
        mode="quick" if args.quick else "full",
        scenarios=parse_names(args.cases, CASES, "case(s)"),
        results_dir=Path(args.results_dir) if args.results_dir else REPO / "bench" / "results",
        size_bytes=int(size_gb * GIB),
        throttle=args.throttle,
        peer=args.peer,
        rate=args.rate,
        before_s=args.before_s,
        verify_every_s=args.verify_every,
    )


# -- the plan (pure) -------------------------------------------------------------------------------


def source(partitions: int = PARTITIONS) -> dict[int, list[int]]:
    """The topic's replicas before the move: [1, 2] for even partitions, [2, 1] for odd ones
    (brokers 1 and 2 lead half each)."""
    return {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(partitions)}


def target(assignment: dict[int, list[int]], old: int = 1, new: int = 3) -> dict[int, list[int]]:
    """The replicas after the move: ``new`` in ``old``'s place, so the partitions ``old`` led
    get ``new`` as their preferred leader (Kafka elects it when ``old`` leaves)."""
    return {p: [new if b == old else b for b in replicas] for p, replicas in assignment.items()}


# -- the bench -------------------------------------------------------------------------------------


class MoveSampler:
    """On a thread: broker 3's ``.log`` bytes of the topic every 0.2 s (``samples``), and, once
    :meth:`arm` is called (``--execute`` returned), the first moment the controller lists no
    ongoing reassignment of the topic (``controller_done``, ListPartitionReassignments every
    0.5 s) and the first sample where broker 1 has no directory of the topic left
    (``old_gone``). Times are ``time.monotonic()``."""

    def __init__(self, cluster: ClusterSystem, topic: str) -> None:
        from franz.admin.cluster_wire import ClusterClient

        self.cluster, self.topic = cluster, topic
        self.client = ClusterClient(
            cluster.bootstrap(), timeout_ms=10_000, client_id="franz-reassign-bench"
        )
        self.samples: list[tuple[float, int]] = []
        self.controller_done: float | None = None
        self.old_gone: float | None = None
        self._armed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="move-sampler", daemon=True)

    def start(self) -> MoveSampler:
        self._thread.start()
        return self

    def arm(self) -> None:
        self._armed = True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        log_dir, old_dir = self.cluster.log_dir(3), self.cluster.log_dir(1)
        next_ask = 0.0
        wanted = [(self.topic, p) for p in range(PARTITIONS)]
        while not self._stop.is_set():
            now = time.monotonic()
            self.samples.append((now, sum(log_bytes(log_dir, self.topic).values())))
            if self._armed and self.old_gone is None and not old_dirs(old_dir, self.topic):
                self.old_gone = now
            if self._armed and self.controller_done is None and now >= next_ask:
                next_ask = now + CONTROLLER_EVERY_S
                try:
                    if not self.client.list_reassignments(wanted):
                        self.controller_done = now
                except Exception:  # a hiccup of the controller: ask again
                    pass
            self._stop.wait(SAMPLE_S)


class Bench:
    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg = cfg
        self.base = base
        self.results = results
        self.owned: list[Any] = []
        self.input_path = base / "input.txt"

    def needed_bytes(self) -> int:
        """The input file, then per system (one at a time: its log dirs go before the next
        starts) two topics of RF=2 plus their moved copies, 10 % overhead, and 1 GiB."""
        cases = len(self.cfg.scenarios)
        return int(self.cfg.size_bytes * (1 + cases * 3 * 1.1)) + GIB

    def run(self) -> None:
        require_free(self.base, self.needed_bytes())
        zk = str(start_zookeeper(self.base, self.owned).connect_string)
        t0 = time.perf_counter()
        make_input(self.input_path, self.cfg.records, RECORD_SIZE)
        print(f"  input: {self.cfg.records:,} lines of {RECORD_SIZE} B, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
        for key, make in cluster_makers(self.cfg.peer, self.results.warn):
            cluster: ClusterSystem = make(self.base, zk, SESSION_MS, self.owned)
            self.results.labels[key] = cluster.label
            print(f"\n# {cluster.label} (chroot /{cluster.chroot})", flush=True)
            try:
                cluster.start()
                for case in self.cfg.scenarios:
                    print(f"\n## {cluster.label}: {case}", flush=True)
                    try:
                        self.results.moves.append(self.move(cluster, case))
                    except Exception as exc:  # keep the other case's figures
                        self.results.warn(f"{cluster.label}, {case}: stopped by {exc!r}")
            except Exception as exc:
                self.results.warn(f"{cluster.label}: {exc!r}")
            finally:
                cluster.stop()
                cluster.remove_data()

    def close(self) -> None:
        stop_owned(self.owned, self.results.warn)

    # -- the tools ---------------------------------------------------------------------------------

    def tool(self, cluster: ClusterSystem, *args: object) -> Any:
        """``reassign-partitions`` of the cluster's own kind, run to its exit (120 s at most)."""
        if isinstance(cluster, KafkaCluster):
            from bench.kafka_peer import reassign_partitions_args

            argv = reassign_partitions_args(cluster.libs, cluster.bootstrap(), *args)
        else:
            argv = [sys.executable, "-m", "franz", "reassign-partitions",
                    "--bootstrap-server", cluster.bootstrap(), *map(str, args)]  # fmt: skip
        return run_timed(argv, timeout=120.0, stdout="capture")

    # -- one case ----------------------------------------------------------------------------------

    def fill(self, cluster: ClusterSystem, topic: str) -> None:
        from tests.support.reassign import create_topic

        create_topic(cluster.bootstrap(), topic, [source()[p] for p in range(PARTITIONS)])
        cluster.wait_topic(topic, PARTITIONS, 2)
        t0 = time.perf_counter()
        run = run_timed(
            ["kcat", "-P", "-b", cluster.bootstrap(), "-t", topic, "-X", "acks=all"],
            stdin_path=self.input_path,
            timeout=max(300.0, self.cfg.size_bytes / (2 * MB)),
            progress=lambda s: print(f"    filling: {s:.0f} s", flush=True),
        )
        if not run.ok:
            raise RuntimeError(f"kcat -P: {run.describe_failure()}")
        want = self.cfg.records
        wait_until(
            lambda: sum(hi for _, hi in offsets(cluster.bootstrap(), topic).values()) >= want,
            60,
            f"{topic}: high watermarks at {want:,}",
        )
        took = time.perf_counter() - t0
        t1 = time.perf_counter()
        os.sync()
        print(f"  filled {topic}: {want:,} records in {took:.1f} s (kcat acks=all, "
              f"{self.cfg.size_bytes / MB / took:.0f} MB/s); os.sync() "
              f"{time.perf_counter() - t1:.1f} s", flush=True)  # fmt: skip

    def move(self, cluster: ClusterSystem, case: str) -> Move:
        cfg = self.cfg
        throttle = cfg.throttle if case == "throttled" else None
        topic = f"move-{case}-{uuid.uuid4().hex[:6]}"
        self.fill(cluster, topic)
        fill_bytes = sum(log_bytes(cluster.log_dir(1), topic).values())
        plan = self.base / f"{topic}.json"
        from tests.support.reassign import write_plan

        write_plan(plan, topic, target(source()))
        probe = AckProbe(
            cluster.bootstrap(), topic, 0, 1 / cfg.rate, partitions=range(PARTITIONS)
        ).start()
        move = Move(cluster.key, case, throttle, cfg.records, fill_bytes)
        sampler: MoveSampler | None = None
        try:
            before_ns = time.monotonic_ns()
            time.sleep(cfg.before_s)
            sampler = MoveSampler(cluster, topic).start()
            self.execute_and_verify(cluster, move, plan, sampler)
        finally:
            if sampler is not None:
                sampler.stop()
            probe.stop(flush_s=30.0)
        assert move.exec_ns is not None and move.verified_ns is not None and sampler is not None
        move.before = latency_summary(probe.deliveries, before_ns, move.exec_ns)
        move.during = latency_summary(probe.deliveries, move.exec_ns, move.verified_ns)
        move.moved = sum(log_bytes(cluster.log_dir(3), topic).values())
        move.steady_mb_s = catch_up_rate(sampler.samples, move.moved)
        move.first_window = first_window_bytes(sampler.samples, QUOTA_WINDOW_S)
        if sampler.controller_done is not None:
            move.controller_s = sampler.controller_done - move.exec_ns / 1e9
        print(f"  moved {move.moved / MB:,.0f} MB in {move.verify_s:.1f} s to --verify "
              f"completed ({move.mb_s:.1f} MB/s; steady {move.steady_mb_s} MB/s; "
              f"controller done at {move.controller_s} s)", flush=True)  # fmt: skip
        move.checks = self.check(cluster, topic, probe, move, sampler)
        return move

    def execute_and_verify(
        self, cluster: ClusterSystem, move: Move, plan: Path, sampler: MoveSampler
    ) -> None:
        """``--execute``, ``--verify --preserve-throttles`` until all 6 are completed, then
        the ``--verify`` that clears the throttles; times in ``move``."""
        common = ("--reassignment-json-file", plan)
        extra = ("--throttle", move.throttle) if move.throttle is not None else ()
        move.exec_ns = time.monotonic_ns()
        run = self.tool(cluster, *common, "--execute", *extra)
        move.execute_tool_s = run.seconds
        if not run.ok or "Successfully started partition reassignment" not in run.stdout:
            raise RuntimeError(f"--execute: {run.describe_failure()}\n{run.stdout[-800:]}")
        sampler.arm()
        rate = move.throttle or 20 * MB
        limit_s = 180 + 3 * self.cfg.size_bytes / rate
        last = ""
        while True:
            verify = self.tool(cluster, *common, "--verify", "--preserve-throttles")
            move.polls += 1
            last = verify.stdout
            states = verify_states(last, move_topic(plan))
            if verify.ok and sum(s == "completed" for s in states.values()) == PARTITIONS:
                move.verified_ns = time.monotonic_ns()
                break
            elapsed = (time.monotonic_ns() - move.exec_ns) / 1e9
            if elapsed > limit_s:
                self.tool(cluster, *common, "--cancel")
                raise TimeoutError(f"--verify: not completed after {elapsed:.0f} s:\n{last}")
            if move.polls % 5 == 0:
                done = sum(s == "completed" for s in states.values())
                print(f"    {elapsed:.0f} s: {done}/{PARTITIONS} completed, broker 3 holds "
                      f"{sampler.samples[-1][1] / MB:,.0f} MB", flush=True)  # fmt: skip
            time.sleep(self.cfg.verify_every_s)
        final = self.tool(cluster, *common, "--verify")
        move.cleared = final.ok and "Clearing broker-level throttles" in final.stdout

    def check(
        self, cluster: ClusterSystem, topic: str, probe: AckProbe, move: Move, sampler: MoveSampler
    ) -> Checks:
        from tests.support.reassign import NO_THROTTLES, throttles

        checks = Checks()
        bootstrap = cluster.bootstrap()
        # First, so that the time is the deletion's: franz removes a replica's directory at
        # once, Kafka renames it *-delete and removes it file.delete.delay.ms (60 s) later.
        assert move.exec_ns is not None
        try:
            if sampler.old_gone is None:
                wait_until(lambda: not old_dirs(cluster.log_dir(1), topic), 120, "broker 1 dirs")
            gone = sampler.old_gone or time.monotonic()
            checks.old_dirs_s = gone - move.exec_ns / 1e9
        except TimeoutError:
            checks.old_dirs_left = old_dirs(cluster.log_dir(1), topic)
        watermarks = offsets(bootstrap, topic)
        hw = {p: hi for p, (_, hi) in watermarks.items()}
        goal = target(source())
        state = cluster.state(topic)
        checks.replicas_ok = all(
            p in state and list(state[p].replicas) == r and sorted(state[p].isr) == sorted(r)
            for p, r in goal.items()
        )
        checks.led_by_3 = sorted(p for p, v in state.items() if v.leader == 3)
        held: dict[int, LogCount] = {}

        def broker3_holds_all() -> bool:
            held.update(replica_records(cluster.log_dir(3), topic))
            return all(p in held and held[p].holds(hw[p]) for p in hw)

        with contextlib.suppress(TimeoutError):  # reported below, partition by partition
            wait_until(broker3_holds_all, 60, "broker 3's logs at the high watermarks")
        checks.log_ok = sorted(p for p in hw if p in held and held[p].holds(hw[p]))
        t0 = time.monotonic()
        read = consume_all(bootstrap, topic, hw, timeout_s=120 + self.cfg.size_bytes / (5 * MB))
        checks.consume_s = time.monotonic() - t0
        checks.consumed_ok = sorted(
            p for p in hw if read.counts.get(p) == hw[p] and p not in read.gaps
        )
        checks.lost, checks.duplicated = acked_check(
            [seq for seq, _, _ in probe.deliveries], read.probe_seqs
        )
        checks.acked = len(probe.deliveries)
        checks.sent = probe.sent
        checks.unflushed = probe.left
        try:
            wait_until(lambda: throttles(bootstrap, topic) == NO_THROTTLES, 30, "throttles gone")
            checks.throttles_gone = True
        except TimeoutError:
            checks.throttles_gone = False
        checks.errors = list(probe.errors)
        checks.client_errors = list(probe.client_errors)
        checks.retriable = dict(probe.retriable)
        checks.fatal = list(probe.fatal)
        print(f"  checks: replicas {goal == {p: list(v.replicas) for p, v in state.items()}}, "
              f"broker 3 logs = HW {len(checks.log_ok)}/{PARTITIONS}, consumed = HW "
              f"{len(checks.consumed_ok)}/{PARTITIONS} in {checks.consume_s:.1f} s, acked "
              f"{checks.acked:,} lost {checks.lost} duplicated {checks.duplicated}, broker 1 "
              f"dirs gone at {checks.old_dirs_s} s, throttles gone {checks.throttles_gone}, "
              f"errors {sorted(set(checks.errors + checks.client_errors))} fatal "
              f"{checks.fatal[:1]}", flush=True)  # fmt: skip
        return checks


def move_topic(plan: Path) -> str:
    """The topic of a plan file the bench wrote (its name is ``<topic>.json``)."""
    return plan.stem


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    return run_suite("reassign", cfg, Results(cfg.throttle), Bench, header, caveats(cfg))


if __name__ == "__main__":
    sys.exit(main())
