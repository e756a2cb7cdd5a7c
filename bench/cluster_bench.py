"""Cluster bench: the figures of issue 16 (controller failover, CreateTopics across brokers).

Systems: Debian's ZooKeeper (``tests.support.zookeeper.ZooKeeperServer``, a free loopback
port, its own data dir, ZooKeeper's shipped ``tickTime=2000``, so the negotiated session
timeout may go up to 40 s) and three ``franz broker`` processes in cluster mode
(``tests.support.broker.BrokerProcess`` with ``broker.id`` and ``zookeeper.connect`` on a
fresh chroot). The peer of the CreateTopics figure is one embedded broker (no ZooKeeper) in
the same run.

Scenarios:

- ``failover``: per ``zookeeper.session.timeout.ms`` (Kafka's default 18000 first, then a
  shorter one to show the controller's own cost), a fresh cluster with one 6-partition RF 3
  topic; ``runs`` times: read the controller from ``/controller``, SIGKILL it, time until
  ``/controller`` names another broker, and until every survivor's Metadata (raw Metadata v12
  over TCP to each broker alone) names the survivors, the new controller and the same live
  leader for every partition; then restart the killed broker and time until all three
  brokers' Metadata agree again.
- ``create``: one ``AdminClient.create_topics`` call of N topics x 6 partitions (RF 3 on the
  cluster, RF 1 on the embedded broker), timed until every future resolved and until every
  broker's Metadata shows every partition with a leader.

Every process is stopped by PID at the end (``harness.run_suite``), and the temp dir removed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.broker_clients import register, sample_process, unregister
from bench.harness import (
    git_commit,
    parse_names,
    run_scenarios,
    run_suite,
    stop_owned,
)
from bench.report import Findings, render_markdown_table

__all__ = ["ClusterView", "Settings", "converged", "main"]

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ("failover", "create")
KAFKA_SESSION_MS = 18000  # Kafka's default zookeeper.session.timeout.ms (KIP-537)
MIN_FREE_BYTES = 2 << 30
FAILOVER_TOPIC = "failover"
POLL_S = 0.05


@dataclass(frozen=True)
class Settings:
    mode: str
    scenarios: tuple[str, ...]
    results_dir: Path
    runs: int
    session_ms: tuple[int, ...]
    create_runs: int
    topics: int
    partitions: int


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.cluster_bench",
        description="Controller failover and CreateTopics on 3 franz brokers + ZooKeeper.",
    )
    p.add_argument("--quick", action="store_true", help="2 failovers at 6 s, 20 topics, ~2 min")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="failover,create")
    p.add_argument("--runs", type=int, help="failovers per session timeout (5; quick 2)")
    p.add_argument(
        "--session-ms",
        help="comma-separated zookeeper.session.timeout.ms values (18000,6000; quick 6000)",
    )
    p.add_argument("--create-runs", type=int, help="CreateTopics runs per system (3; quick 1)")
    p.add_argument("--topics", type=int, help="topics per CreateTopics call (100; quick 20)")
    p.add_argument("--partitions", type=int, default=6, help="partitions per topic (6)")
    p.add_argument("--results-dir", help="where cluster-<timestamp>.md goes (bench/results)")
    return p.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    session = args.session_ms or ("6000" if quick else f"{KAFKA_SESSION_MS},6000")
    return Settings(
        mode="quick" if quick else "full",
        scenarios=parse_names(args.scenarios, SCENARIOS),
        results_dir=Path(args.results_dir) if args.results_dir else REPO / "bench" / "results",
        runs=args.runs or (2 if quick else 5),
        session_ms=tuple(int(s) for s in session.split(",") if s.strip()),
        create_runs=args.create_runs or (1 if quick else 3),
        topics=args.topics or (20 if quick else 100),
        partitions=args.partitions,
    )


# -- what a broker's Metadata says (pure) ---------------------------------------------------------


@dataclass(frozen=True)
class ClusterView:
    """One broker's Metadata answer: live broker ids, controller id, leader per partition."""

    brokers: tuple[int, ...]
    controller: int
    leaders: dict[tuple[str, int], int]


def converged(
    views: Sequence[ClusterView | None],
    live: Sequence[int],
    controller: int | None,
    expected: dict[str, int],
) -> bool:
    """Every view lists exactly ``live``, names ``controller`` (when given) and agrees with
    the others on the leaders; every partition of ``expected`` (topic -> count) has a live
    leader. A missing view (the broker did not answer) is not converged."""
    if not views or any(v is None for v in views):
        return False
    first = views[0]
    assert first is not None
    for view in views:
        assert view is not None
        if sorted(view.brokers) != sorted(live) or view.leaders != first.leaders:
            return False
        if controller is not None and view.controller != controller:
            return False
        if view.controller not in live:
            return False
    for topic, count in expected.items():
        for p in range(count):
            if first.leaders.get((topic, p), -1) not in live:
                return False
    return True


def read_view(bootstrap: str) -> ClusterView | None:
    """Metadata v12 (all topics) from this broker alone; None when it does not answer."""
    from tests.support.wire import WireClient, metadata

    try:
        client = WireClient.connect(bootstrap, timeout=5.0, client_id="franz-cluster-bench")
    except OSError:
        return None
    try:
        response = metadata(client, None)
    except (OSError, ConnectionError):
        return None
    finally:
        client.close()
    leaders = {
        (str(t.name), int(p.partition_index)): int(p.leader_id)
        for t in response.topics
        if t.error_code == 0
        for p in t.partitions
        if p.error_code == 0
    }
    return ClusterView(
        brokers=tuple(int(b.node_id) for b in response.brokers),
        controller=int(response.controller_id),
        leaders=leaders,
    )


def wait_for(
    check: Callable[[], bool],
    timeout_s: float,
    what: str,
    started: float,
    describe: Callable[[], str] | None = None,
) -> float:
    """Poll ``check`` every 50 ms until true; seconds since ``started``. Prints progress.

    On timeout raises ``TimeoutError`` whose message ends with ``describe()`` (the state seen).
    """
    last_print = time.monotonic()
    while not check():
        now = time.monotonic()
        if now - started > timeout_s:
            seen = f"; seen: {describe()}" if describe is not None else ""
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s{seen}")
        if now - last_print >= 5.0:
            print(f"    ... waiting for {what}: {now - started:.1f} s", flush=True)
            last_print = now
        time.sleep(POLL_S)
    return time.monotonic() - started


# -- results ------------------------------------------------------------------------------------


@dataclass
class FailoverRun:
    session_ms: int
    killed: int
    new_controller: int
    controller_s: float
    converged_s: float
    rejoined_s: float


@dataclass
class CreateRun:
    system: str
    topics: int
    partitions: int
    created_s: float
    visible_s: float
    #: Partitions the earlier runs of this system left on the brokers (runs accumulate).
    before: int = 0

    @property
    def partitions_s(self) -> float:
        return self.topics * self.partitions / self.visible_s


class Results(Findings):
    def __init__(self) -> None:
        super().__init__()
        self.failovers: list[FailoverRun] = []
        self.creates: list[CreateRun] = []
        self.rss_mib: dict[str, float] = {}
        self.failed: list[str] = []

    def rss(self, label: str, pids: Sequence[int]) -> None:
        for pid in pids:
            sample = sample_process(pid)
            if sample is not None:
                self.rss_mib[label] = max(self.rss_mib.get(label, 0.0), sample.rss_mib)

    def failover_table(self) -> str:
        rows = []
        for session in sorted({r.session_ms for r in self.failovers}, reverse=True):
            runs = [r for r in self.failovers if r.session_ms == session]
            for i, r in enumerate(runs, 1):
                rows.append(
                    [
                        f"{session}",
                        f"{i}",
                        f"{r.killed} -> {r.new_controller}",
                        f"{r.controller_s:.2f}",
                        f"{r.converged_s:.2f}",
                        f"{r.converged_s - r.controller_s:.2f}",
                        f"{r.rejoined_s:.2f}",
                    ]
                )
            rows.append(
                [
                    f"{session}",
                    f"median of {len(runs)}",
                    "",
                    f"{statistics.median(r.controller_s for r in runs):.2f}",
                    f"{statistics.median(r.converged_s for r in runs):.2f}",
                    f"{statistics.median(r.converged_s - r.controller_s for r in runs):.2f}",
                    f"{statistics.median(r.rejoined_s for r in runs):.2f}",
                ]
            )
        return render_markdown_table(
            [
                "session ms",
                "run",
                "controller",
                "new controller s",
                "converged s",
                "converged - controller s",
                "restarted broker back s",
            ],
            rows,
            "lllrrrr",
        )

    def create_table(self) -> str:
        rows = []
        for system in dict.fromkeys(r.system for r in self.creates):
            runs = [r for r in self.creates if r.system == system]
            for i, r in enumerate(runs, 1):
                rows.append(
                    [
                        system,
                        f"{i}",
                        f"{r.topics} x {r.partitions}",
                        f"{r.before:,}",
                        f"{r.created_s:.2f}",
                        f"{r.visible_s:.2f}",
                        f"{r.partitions_s:,.0f}",
                    ]
                )
            if len(runs) > 1:
                rows.append(
                    [
                        system,
                        f"median of {len(runs)}",
                        "",
                        "",
                        f"{statistics.median(r.created_s for r in runs):.2f}",
                        f"{statistics.median(r.visible_s for r in runs):.2f}",
                        f"{statistics.median(r.partitions_s for r in runs):,.0f}",
                    ]
                )
        return render_markdown_table(
            [
                "system",
                "run",
                "topics x partitions",
                "partitions already there",
                "futures done s",
                "all metadata s",
                "partitions/s",
            ],
            rows,
            "lllrrrr",
        )

    def markdown(self) -> str:
        parts: list[str] = []
        if self.failovers:
            parts += [
                "## Controller SIGKILL to a new controller and converged metadata",
                "",
                self.failover_table(),
                "",
            ]
        if self.failed:
            parts += [
                "Failed failover runs (the series stopped there):",
                "",
                *[f"- {f}" for f in self.failed],
                "",
            ]
        if self.creates:
            parts += ["## CreateTopics in one call", "", self.create_table(), ""]
        if self.rss_mib:
            parts += [
                "## Broker RSS (MiB, highest seen per broker set)",
                "",
                render_markdown_table(
                    ["where", "RSS MiB"], [[k, f"{v:.0f}"] for k, v in self.rss_mib.items()], "lr"
                ),
                "",
            ]
        return "\n".join(parts + self.findings_lines())


# -- the systems --------------------------------------------------------------------------------


class Cluster:
    """ZooKeeper's chroot + three brokers; ``stop()`` stops the brokers (not ZooKeeper)."""

    def __init__(self, base: Path, zk_connect: str, session_ms: int, owned: list[Any]) -> None:
        from kazoo.client import KazooClient

        from tests.support.broker import BrokerProcess

        chroot = f"franz-bench-{uuid.uuid4().hex[:12]}"
        self.connect = f"{zk_connect}/{chroot}"
        self.owned = owned
        self.brokers = {
            i: BrokerProcess(
                base / f"{chroot}-broker-{i}",
                {
                    "broker.id": str(i),
                    "zookeeper.connect": self.connect,
                    "zookeeper.session.timeout.ms": str(session_ms),
                },
            )
            for i in (1, 2, 3)
        }
        self.kazoo = KazooClient(hosts=self.connect, timeout=15)

    def start(self) -> Cluster:
        for broker in self.brokers.values():
            self.owned.append(broker)
            broker.start()
            register(broker.pid, broker)
        self.kazoo.start(timeout=15)
        started = time.monotonic()
        wait_for(lambda: self.converged({}), 60, "3 brokers registered", started)
        return self

    def live(self) -> list[int]:
        return [i for i, b in self.brokers.items() if b.proc is not None]

    def pids(self) -> list[int]:
        return [b.pid for b in self.brokers.values() if b.proc is not None]

    def bootstrap(self) -> str:
        return ",".join(self.brokers[i].bootstrap for i in self.live())

    def controller(self) -> int | None:
        import json

        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.kazoo.get("/controller")
        except NoNodeError:
            return None
        return int(json.loads(data)["brokerid"])

    def converged(self, expected: dict[str, int], controller: int | None = None) -> bool:
        live = self.live()
        views = [read_view(self.brokers[i].bootstrap) for i in live]
        return converged(views, live, controller, expected)

    def describe(self) -> str:
        """What ZooKeeper and each live broker's Metadata say now (for a failed wait)."""
        parts = [f"/controller {self.controller()}"]
        parts.append(f"/brokers/ids {sorted(self.kazoo.get_children('/brokers/ids'))}")
        for t in sorted(self.kazoo.get_children("/brokers/topics")):
            for p in sorted(self.kazoo.get_children(f"/brokers/topics/{t}/partitions")):
                data, _ = self.kazoo.get(f"/brokers/topics/{t}/partitions/{p}/state")
                parts.append(f"{t}-{p} state {data.decode()}")
        for i in self.live():
            view = read_view(self.brokers[i].bootstrap)
            if view is None:
                parts.append(f"broker {i}: no answer")
                continue
            leaders = ", ".join(f"{t}-{p}:{lead}" for (t, p), lead in sorted(view.leaders.items()))
            parts.append(
                f"broker {i}: brokers {sorted(view.brokers)}, controller {view.controller}, "
                f"leaders {leaders}"
            )
        return "; ".join(parts)

    def stop(self) -> None:
        self.kazoo.stop()
        self.kazoo.close()
        for broker in self.brokers.values():
            if broker in self.owned:
                pid = broker.proc.pid if broker.proc is not None else None
                broker.stop()
                self.owned.remove(broker)
                if pid is not None:
                    unregister(pid)


def create_topics(bootstrap: str, names: list[str], partitions: int, rf: int) -> float:
    """One ``create_topics`` call; seconds until every future resolved (raises on an error)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    # socket.timeout.ms (60 s by default) would drop a CreateTopics still in flight.
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000})
    started = time.monotonic()
    futures = admin.create_topics(
        [NewTopic(n, partitions, rf) for n in names], operation_timeout=280, request_timeout=300
    )
    for future in futures.values():
        future.result(360)
    return time.monotonic() - started


class Bench:
    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg = cfg
        self.base = base
        self.results = results
        self.owned: list[Any] = []
        self.zk: Any = None

    def start_zookeeper(self) -> str:
        from tests.support.zookeeper import ZooKeeperServer, zookeeper_available

        if self.zk is None:
            if not zookeeper_available():
                raise RuntimeError("ZooKeeper not installed (scripts/setup.sh: zookeeper)")
            # ZooKeeper's shipped tickTime: sessions from 4 s up to 40 s (20 ticks).
            self.zk = ZooKeeperServer(self.base / "zookeeper", tick_ms=2000, min_session_ms=4000)
            self.owned.append(self.zk)
            self.zk.start()
            assert self.zk.proc is not None
            register(self.zk.proc.pid, self.zk.proc)
            took = self.zk.wait_ready(60)
            print(f"  ZooKeeper on {self.zk.connect_string} ready in {took:.1f} s", flush=True)
        return str(self.zk.connect_string)

    def new_cluster(self, session_ms: int) -> Cluster:
        began = time.monotonic()
        cluster = Cluster(self.base, self.start_zookeeper(), session_ms, self.owned).start()
        print(
            f"  3 brokers registered in {time.monotonic() - began:.1f} s "
            f"(session timeout {session_ms} ms, chroot {cluster.connect})",
            flush=True,
        )
        return cluster

    def run(self) -> None:
        free = shutil.disk_usage(self.base).free
        print(f"  free disk under {self.base}: {free / (1 << 30):.1f} GiB", flush=True)
        if free < MIN_FREE_BYTES:
            raise SystemExit(f"need {MIN_FREE_BYTES >> 30} GiB free, have {free >> 20} MiB")
        run_scenarios(self, SCENARIOS, self.cfg.scenarios, self.results.warn)

    def close(self) -> None:
        stop_owned(self.owned, self.results.warn)

    def scenario_failover(self) -> None:
        for session_ms in self.cfg.session_ms:
            self.results.note(
                f"session timeout {session_ms} ms"
                + (" (Kafka's default)" if session_ms == KAFKA_SESSION_MS else "")
                + ": ZooKeeper deletes the dead controller's ephemerals only when its session "
                "expires (checked every tickTime = 2 s), so this term dominates"
            )
            cluster = self.new_cluster(session_ms)
            try:
                self.failovers(cluster, session_ms)
            finally:
                self.results.rss(f"3 brokers, failover, session {session_ms} ms", cluster.pids())
                cluster.stop()

    def failovers(self, cluster: Cluster, session_ms: int) -> None:
        limit = session_ms / 1000 + 60
        for i in range(1, self.cfg.runs + 1):
            try:
                self.failover(cluster, session_ms, limit, i)
            except TimeoutError as exc:
                self.results.warn(f"failover {i} (session {session_ms} ms): {exc}")
                self.results.failed.append(f"session {session_ms} ms, run {i}: {exc}".split(";")[0])
                return

    def failover(self, cluster: Cluster, session_ms: int, limit: float, i: int) -> None:
        # A fresh topic per run: with no replication yet a restarted broker never rejoins the
        # ISR, so an older topic's ISR shrinks with every kill until no live replica is left
        # (leader -1, as Kafka with unclean.leader.election.enable=false).
        topic = f"{FAILOVER_TOPIC}-{i}"
        expected = {topic: 6}
        create_topics(cluster.bootstrap(), [topic], 6, 3)
        wait_for(
            lambda: cluster.converged(expected),
            60,
            f"{topic} leaders",
            time.monotonic(),
            cluster.describe,
        )
        old = cluster.controller()
        if old is None:
            raise RuntimeError("no /controller znode")
        victim = cluster.brokers[old]
        pid = victim.pid
        started = time.monotonic()
        victim.kill()  # SIGKILL + reap
        unregister(pid)
        survivors = cluster.live()
        try:

            def moved() -> bool:
                current = cluster.controller()
                return current is not None and current != old

            controller_s = wait_for(moved, limit, "a new /controller", started, cluster.describe)
            new = cluster.controller()
            assert new is not None
            print(f"    new controller {new} after {controller_s:.2f} s", flush=True)
            converged_s = wait_for(
                lambda: cluster.converged(expected, new),
                60,
                f"survivors' metadata (killed {old}, controller {new})",
                started,
                cluster.describe,
            )
            self.results.rss(f"3 brokers, failover, session {session_ms} ms", cluster.pids())
        finally:
            restarted = time.monotonic()
            self.owned.remove(victim)
            self.owned.append(victim)
            victim.start()
            register(victim.pid, victim)
        rejoined_s = wait_for(
            lambda: cluster.converged(expected, new),
            60,
            f"3 brokers' metadata (restarted {old}, controller {new})",
            restarted,
            cluster.describe,
        )
        run = FailoverRun(session_ms, old, new, controller_s, converged_s, rejoined_s)
        self.results.failovers.append(run)
        print(
            f"  failover {i}/{self.cfg.runs} (session {session_ms} ms): killed {old}, "
            f"controller {new} after {controller_s:.2f} s, survivors converged after "
            f"{converged_s:.2f} s; broker {old} back in {rejoined_s:.2f} s; "
            f"survivors {survivors}",
            flush=True,
        )

    def scenario_create(self) -> None:
        cfg = self.cfg
        cluster = self.new_cluster(KAFKA_SESSION_MS)
        try:
            for i in range(cfg.create_runs):
                self.create_run(
                    cluster.bootstrap(), "3 brokers, RF 3", 3, i, lambda e: cluster.converged(e)
                )
                self.results.rss("3 brokers, create", cluster.pids())
        except Exception as exc:  # keep the embedded broker's figures
            self.results.warn(f"create on 3 brokers: {exc!r}")
        finally:
            cluster.stop()
        from tests.support.broker import BrokerProcess

        embedded = BrokerProcess(self.base / "embedded")
        self.owned.append(embedded)
        embedded.start()
        register(embedded.pid, embedded)
        try:
            for i in range(cfg.create_runs):

                def visible(expected: dict[str, int]) -> bool:
                    return converged([read_view(embedded.bootstrap)], [0], None, expected)

                self.create_run(embedded.bootstrap, "1 embedded broker, RF 1", 1, i, visible)
                self.results.rss("1 embedded broker, create", [embedded.pid])
        finally:
            pid = embedded.pid
            embedded.stop()
            self.owned.remove(embedded)
            unregister(pid)

    def create_run(
        self,
        bootstrap: str,
        system: str,
        rf: int,
        i: int,
        visible: Callable[[dict[str, int]], bool],
    ) -> None:
        cfg = self.cfg
        names = [f"bench-{i}-{t:03d}" for t in range(cfg.topics)]
        print(
            f"  {system}: CreateTopics {cfg.topics} x {cfg.partitions} (run {i + 1}, "
            f"{i * cfg.topics * cfg.partitions} partitions already there)",
            flush=True,
        )
        started = time.monotonic()
        created_s = create_topics(bootstrap, names, cfg.partitions, rf)
        expected = dict.fromkeys(names, cfg.partitions)
        visible_s = wait_for(lambda: visible(expected), 300, "every partition's leader", started)
        run = CreateRun(
            system,
            cfg.topics,
            cfg.partitions,
            created_s,
            visible_s,
            before=i * cfg.topics * cfg.partitions,
        )
        self.results.creates.append(run)
        print(
            f"  {system}: futures done {created_s:.2f} s, every broker's metadata "
            f"{visible_s:.2f} s, {run.partitions_s:,.0f} partitions/s",
            flush=True,
        )


def caveats(cfg: Settings) -> list[str]:
    return [
        "The machine is shared: other sessions' load is in the load averages above and below; "
        "the figures are wall-clock seconds under that load.",
        "Failover time = session expiry (ZooKeeper deletes /controller and the dead broker's "
        "/brokers/ids entry when the session times out, rounded up to the next 2 s tick) + "
        "the election + the new controller's LeaderAndIsr/UpdateMetadata to the survivors.",
        "Metadata is read with raw Metadata v12 requests to each broker alone, polled every "
        f"{POLL_S * 1000:.0f} ms, so each time is late by up to one poll.",
        "No replication yet (next issue): leaders move, no data is copied; a restarted "
        "broker is not made leader again (no preferred election within the run).",
        "CreateTopics runs go to the same brokers one after the other, so later runs meet "
        "the earlier runs' partitions already there.",
    ]


def header(cfg: Settings, machine: dict[str, Any], stamp: str) -> str:
    import confluent_kafka

    return "\n".join(
        [
            f"# Cluster bench, {stamp} ({cfg.mode})",
            "",
            f"- commit {git_commit()}; confluent-kafka {confluent_kafka.version()} "
            f"(librdkafka {confluent_kafka.libversion()[0]}); Debian ZooKeeper, tickTime 2000",
            f"- {machine.get('cpus')} CPUs, {machine.get('mem_total_mib')} MiB, "
            f"{machine.get('platform')}, Python {machine.get('python')}; load average at "
            f"start {machine.get('loadavg_start')}",
            f"- failover: {cfg.runs} run(s) per zookeeper.session.timeout.ms in "
            f"{', '.join(map(str, cfg.session_ms))}; CreateTopics: {cfg.create_runs} run(s) "
            f"of {cfg.topics} topics x {cfg.partitions} partitions per system",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    return run_suite("cluster", cfg, Results(), Bench, header, caveats(cfg))


if __name__ == "__main__":
    sys.exit(main())
