"""kafka-python, aiokafka and kcat across a leader change (issue 17, "Acceptance": every
Python client and kcat produce with acks=all and consume across a leader change without
application errors). confluent-kafka's run is ``test_replication_chaos.py``'s.

Its own cluster (three ``franz broker`` processes). Per client and per way of moving the
leader, a topic of one partition, replication factor 3, ``min.insync.replicas=2``. The
client's producer sends numbered records (``0``, ``1``, ...) at acks=all with its own
retries (kafka-python's defaults: idempotent, ``retries`` unbounded; aiokafka and kcat with
``enable_idempotence`` / ``enable.idempotence`` on, so that a retried batch is written once,
the condition for "exactly once, in order"), while a group consumer of the same client reads
the topic. The partition is led by the broker that coordinates the consumer's group, and
mid-run that broker's leaderships move, the group's coordinator with them:

* ``controlled-shutdown``: its broker gets SIGTERM (the controller moves its leaderships
  first) and is started again once it exited;
* ``sigkill``: its broker is SIGKILLed (the controller elects a new leader from the ISR when
  the broker's ZooKeeper session expires) and started again once that happened.

The records keep being acknowledged through the change and after the broker returned and
rejoined the ISR, never pausing longer than ``STALL_S`` (kafka-python and aiokafka have one
produce in flight per partition when idempotent, so one that waits out its timeout stalls
the stream: the bug this found, see ``ReplicaManager.maybe_shrink_isrs``). Then:

* the producer saw no error (no failed delivery, no exception out of ``send``/``flush``; a
  client's own retries are invisible to the application by construction) and every record
  sent was acknowledged;
* the partition holds exactly the records sent, each once, in the order sent (offset n holds
  record n), and every replica's log is byte-identical to the leader's;
* the group consumer saw every offset, each with the log's record, and raised nothing (kcat's
  connection reports and librdkafka warnings, after which it recovers by itself, excepted).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import subprocess
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka

import aiokafka

from franz.coordinator.group.offsets_schema import partition_for
from tests.support.cluster import (
    BROKER_IDS,
    Cluster,
    eventually,
    isrs_whole,
    log_bytes,
    new_chroot,
    partition_state,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.groups import GROUP_BROKER_OVERRIDES, GroupMember, close_all, make_member
from tests.support.leaks import KAFKA_PYTHON_SOCKET_FILTERS, release_kafka_python_sockets
from tests.support.zookeeper import ZooKeeperServer

#: The Python clients leave the socket of a refused connection attempt (to the stopped
#: broker) to the garbage collector (``tests.support.leaks``).
pytestmark = KAFKA_PYTHON_SOCKET_FILTERS


@pytest.fixture(autouse=True)
def _release_leaked_sockets() -> Iterator[None]:
    yield
    release_kafka_python_sockets()


OFFSETS_TOPIC = "__consumer_offsets"
#: ``offsets.topic.num.partitions`` of ``tests/support/cluster.py``'s brokers.
OFFSETS_PARTITIONS = 3
CLIENTS = ("kafka-python", "aiokafka", "kcat")
MOVES = ("controlled-shutdown", "sigkill")
#: Short, so a returning broker rejoins the ISR quickly.
LAG_MS = 3000
#: Records acknowledged before the move, while the leader is gone or new, and after the
#: broker returned: enough to span several batches each time, few enough for short runs.
STEP = 150
#: The longest the acknowledgements may pause across the move (a stalled partition breaks
#: it; the figures here are about 1 s and 5 s): a controlled shutdown hands leadership over
#: before the broker goes; a SIGKILLed leader is replaced once its ZooKeeper session
#: (4 s) expired. Room for a busy machine.
STALL_S = {"controlled-shutdown": 15.0, "sigkill": 25.0}
#: One record every this many seconds (about 200 records/s: each client keeps up at acks=all).
INTERVAL_S = 0.005


@pytest.fixture(scope="module")
def ccluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-clients"))
    props = {"replica.lag.time.max.ms": str(LAG_MS), **GROUP_BROKER_OVERRIDES}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        # A FindCoordinator creates __consumer_offsets; wait until its ISRs are whole.
        def described() -> bool:
            admin = AdminClient({"bootstrap.servers": c.bootstrap()})
            try:
                admin.describe_consumer_groups(["warm-up"])["warm-up"].result(10)
            except Exception:
                return False
            return True

        eventually(described, 60, "a group coordinator answers")
        eventually(
            lambda: isrs_whole(c, OFFSETS_TOPIC, OFFSETS_PARTITIONS), 60, "offsets ISRs whole"
        )
        yield c


# -- producers: one thread each, numbered records to partition 0 ------------------------------


class NumberedProducer:
    """Sends ``0``, ``1``, ... to partition 0 of ``topic`` every ``INTERVAL_S`` until
    ``stop``; ``acked`` holds (offset, value) per acknowledgement, ``errors`` what the
    application saw go wrong."""

    client = ""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.acked: list[tuple[int, int]] = []
        #: When each acknowledgement arrived (``time.monotonic()``), in arrival order.
        self.ack_times: list[float] = []
        self.errors: list[str] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=f"produce-{self.client}")

    def start(self) -> NumberedProducer:
        self._thread.start()
        return self

    def longest_pause(self) -> float:
        """The longest time between two acknowledgements (seconds)."""
        with self._lock:
            times = list(self.ack_times)
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def stop(self, timeout: float = 150.0) -> None:
        """Stop sending and wait until every record sent is acknowledged or failed."""
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.client}: the producer did not finish"

    def _ack(self, offset: int, value: int) -> None:
        with self._lock:
            self.acked.append((offset, value))
            self.ack_times.append(time.monotonic())

    def _error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # an exception out of the client is an application error
            self._error(f"raised {exc!r}")

    def _run(self) -> None:
        raise NotImplementedError


class KafkaPythonProducer(NumberedProducer):
    """kafka-python's defaults: acks=all, ``enable_idempotence``, ``retries`` unbounded
    within ``delivery_timeout_ms`` (120 s)."""

    client = "kafka-python"

    def _run(self) -> None:
        producer = kafka.KafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", linger_ms=5, metadata_max_age_ms=2000
        )
        try:
            while not self._stop.is_set():
                n = self.sent
                future = producer.send(self.topic, str(n).encode(), partition=0)
                future.add_callback(lambda md, n=n: self._ack(md.offset, n))
                future.add_errback(lambda exc, n=n: self._error(f"record {n}: {exc!r}"))
                self.sent += 1
                time.sleep(INTERVAL_S)
            producer.flush(120)
        finally:
            producer.close(timeout=10)


class AiokafkaProducer(NumberedProducer):
    """aiokafka with ``enable_idempotence`` (so acks=all); it retries a batch until
    ``request_timeout_ms`` (40 s) passed."""

    client = "aiokafka"

    def _run(self) -> None:
        asyncio.run(self._arun())

    async def _arun(self) -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            metadata_max_age_ms=2000,
        )
        await asyncio.wait_for(producer.start(), 30)
        pending: list[asyncio.Future[Any]] = []
        try:
            while not self._stop.is_set():
                n = self.sent
                future = await producer.send(self.topic, str(n).encode(), partition=0)
                future.add_done_callback(lambda f, n=n: self._done(f, n))
                pending.append(future)
                self.sent += 1
                await asyncio.sleep(INTERVAL_S)
            await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 120)
        finally:
            await producer.stop()

    def _done(self, future: asyncio.Future[Any], n: int) -> None:
        if future.exception() is not None:
            self._error(f"record {n}: {future.exception()!r}")
        else:
            self._ack(future.result().offset, n)


#: kcat's delivery reports at verbosity 3 (``-v -v``), and its failures.
_KCAT_DELIVERED = re.compile(r"Message delivered to partition (\d+) \(offset (-?\d+)\)")
_KCAT_FAILED = re.compile(r"Delivery failed|ERROR|[Ff]ailed")


class KcatProducer(NumberedProducer):
    """``kcat -P`` reading one record per line from a pipe, with ``-X acks=all -X
    enable.idempotence=true`` (librdkafka then retries within ``message.timeout.ms``, 300 s)
    and ``-v -v``, so it reports each delivery with its offset; records of one partition are
    acknowledged in the order sent, so the n-th report is record n's."""

    client = "kcat"

    def _run(self) -> None:
        args = ["kcat", "-P", "-b", self.bootstrap, "-t", self.topic, "-p", "0", "-v", "-v"]
        for key, value in (("acks", "all"), ("enable.idempotence", "true"), ("linger.ms", "5")):
            args += ["-X", f"{key}={value}"]
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        reader = threading.Thread(target=self._read_reports, args=(proc,), daemon=True)
        reader.start()
        try:
            assert proc.stdin is not None
            while not self._stop.is_set():
                proc.stdin.write(b"%d\n" % self.sent)
                proc.stdin.flush()
                self.sent += 1
                time.sleep(INTERVAL_S)
            proc.stdin.close()
            code = proc.wait(120)  # kcat waits for every delivery report before it exits
            if code != 0:
                self._error(f"kcat exited with {code}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(10)
            assert proc.stderr is not None
            proc.stderr.close()

    def _read_reports(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            delivered = _KCAT_DELIVERED.search(line)
            if delivered is not None:
                self._ack(int(delivered.group(2)), self.acked_count())
            elif _KCAT_FAILED.search(line) and not _retried_by_librdkafka(line):
                self._error(line)


PRODUCERS: dict[str, type[NumberedProducer]] = {
    "kafka-python": KafkaPythonProducer,
    "aiokafka": AiokafkaProducer,
    "kcat": KcatProducer,
}

#: librdkafka's error_cb reports about connections (kcat prints them as ``% ERROR: ...``):
#: informational, the client reconnects and retries by itself; not an application error.
_TRANSIENT = re.compile(
    r"Broker transport failure|Connection refused|Disconnected|brokers are down|"
    r"Broker handle destroyed|Connect to .* failed"
)


#: A librdkafka log line (``%<syslog level>|<time>|<facility>|...``).
_LIBRDKAFKA_LOG = re.compile(r"^%(\d)\|")


def _retried_by_librdkafka(line: str) -> bool:
    """A connection report, or a librdkafka warning or notice (level 4+: a consumer's
    session timing out while its coordinator moves, after which it rejoins by itself)."""
    logged = _LIBRDKAFKA_LOG.match(line)
    if logged is not None and int(logged.group(1)) >= 4:
        return True
    return _TRANSIENT.search(line) is not None


# -- the test ---------------------------------------------------------------------------------


def coordinator_of(cluster: Cluster, group: str) -> int:
    """The broker leading the group's ``__consumer_offsets`` partition: its coordinator
    (-1 while it has no leader)."""
    state = partition_state(cluster, OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))
    return -1 if state is None else int(state["leader"])


def create_topic(cluster: Cluster, topic: str, leader: int) -> None:
    """One partition, RF 3, ``min.insync.replicas=2``, led by ``leader``."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    replicas = [leader, *(b for b in BROKER_IDS if b != leader)]
    new = NewTopic(topic, 1, replica_assignment=[replicas], config={"min.insync.replicas": "2"})
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(lambda: isrs_whole(cluster, topic), 60, f"{topic}: every replica in the ISR")


def read_log(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """Every (offset, value) of partition 0 below its high watermark (confluent-kafka)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:8]}"}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(out) < high and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append((message.offset(), int(message.value())))
        return out
    finally:
        consumer.close()


def leader(cluster: Cluster, topic: str) -> int:
    state = partition_state(cluster, topic)
    return -1 if state is None else int(state["leader"])


def move_leader(
    cluster: Cluster, topic: str, group: str, how: str, producer: NumberedProducer
) -> int:
    """Move the partition's leader (``how``) and the group's coordinator with it, wait for
    acknowledgements from the new leader, bring the old one's broker back and wait until it
    rejoined the ISR; the new leader. (The automatic preferred election may move both back
    afterwards.)"""
    old = leader(cluster, topic)
    assert old in BROKER_IDS
    broker = cluster.brokers[old]
    try:
        if how == "controlled-shutdown":
            assert broker.stop() == 0, broker.output()[-3000:]
        else:
            broker.kill()
        others = [b for b in BROKER_IDS if b != old]
        eventually(lambda: leader(cluster, topic) in others, 60, f"a leader other than {old}")
        new = leader(cluster, topic)
        eventually(lambda: coordinator_of(cluster, group) in others, 60, "the coordinator moves")
        count = producer.acked_count()
        eventually(
            lambda: producer.acked_count() >= count + STEP, 90, f"{producer.client}: acks resume"
        )
    finally:
        # Back in any case: the module's next tests need all three brokers.
        if broker.proc is None:
            restart_after_session_expiry(cluster, old)
    eventually(lambda: isrs_whole(cluster, topic), 90, f"broker {old} rejoins the ISR of {topic}")
    return new


def consumer_problems(member: GroupMember) -> list[str]:
    """What the group consumer's application saw go wrong: an exception out of its poll loop,
    or (kcat) an error line that is not a connection report librdkafka retries by itself."""
    problems = [e for e in member.errors if not _retried_by_librdkafka(e)]
    if member.error is not None:
        problems.append(f"raised {member.error!r}")
    return problems


@pytest.mark.parametrize("how", MOVES)
@pytest.mark.parametrize("client", CLIENTS)
def test_client_produces_and_consumes_across_a_leader_change(
    ccluster: Cluster, client: str, how: str
) -> None:
    cluster = ccluster
    topic = f"{client}-{how}-{uuid.uuid4().hex[:6]}"
    group = f"group-{topic}"
    # The partition's leader is also the group's coordinator: moving it moves both.
    coordinator = coordinator_of(cluster, group)
    assert coordinator in BROKER_IDS
    create_topic(cluster, topic, coordinator)
    assert leader(cluster, topic) == coordinator
    member = make_member(
        client,  # type: ignore[arg-type]
        cluster.bootstrap(),
        group,
        [topic],
        name=f"{client}-consumer",
    )
    try:
        producer = PRODUCERS[client](cluster.bootstrap(), topic).start()
        try:
            eventually(lambda: producer.acked_count() >= STEP, 60, f"{client}: first acks")
            old = leader(cluster, topic)
            new = move_leader(cluster, topic, group, how, producer)
            count = producer.acked_count()
            eventually(
                lambda: producer.acked_count() >= count + STEP,
                60,
                f"{client}: acks after the return",
            )
        finally:
            producer.stop()
        print(
            f"{client}, {how}: leader {old} -> {new}, {producer.sent} records acknowledged, "
            f"longest pause {producer.longest_pause():.2f} s"
        )
        assert producer.errors == [], producer.errors[:20]
        assert producer.longest_pause() < STALL_S[how], producer.longest_pause()
        assert len(producer.acked) == producer.sent, (len(producer.acked), producer.sent)
        assert sorted(producer.acked) == [(n, n) for n in range(producer.sent)]

        # Exactly the records sent, each once, in order; every replica holds the leader's bytes.
        log = read_log(cluster.bootstrap(), topic)
        assert log == [(n, n) for n in range(producer.sent)], (len(log), producer.sent, log[-5:])
        leader_bytes = log_bytes(cluster.brokers[leader(cluster, topic)], topic)
        for broker_id, broker in cluster.brokers.items():
            eventually(
                lambda broker=broker: log_bytes(broker, topic) == leader_bytes,
                30,
                f"broker {broker_id}'s log is the leader's",
            )

        # The group consumer read across the change: every offset, each with the log's record.
        def seen() -> dict[int, bytes | None]:
            return {r.offset: r.value for r in list(member.records)}

        eventually(
            lambda: len(seen()) >= producer.sent or member.error is not None,
            90,
            f"{client}'s group consumer reads every record",
        )
        assert consumer_problems(member) == []
        assert seen() == {n: str(n).encode() for n in range(producer.sent)}
    finally:
        close_all([member])  # a kcat member is a process: never left behind
    assert member.closed and consumer_problems(member) == []
