"""Memory and connection bounds at the listener: what one peer can make the broker hold.

Kafka's behaviour these tests follow (SocketServer, ConnectionQuotas, NetworkReceive and the
request memory pool at 3.9), with Franz's own bound where Kafka has none:

* a frame's size prefix is a claim, not memory: the broker holds only the bytes that arrived
  (Kafka's pool reserves the announced size; with the default ``queued.max.request.bytes=-1``
  Kafka itself allocates it, which is the attack the first test measures);
* ``queued.max.request.bytes`` bounds the requests being received, over all connections:
  with the pool exhausted, connections that need memory stop being read (muted), none is
  dropped, and they are read again when memory is released;
* ``max.connections.per.ip`` (and its ``.overrides``): a connection over the limit is closed
  at once, with Kafka's log line; the existing ones keep working;
* ``max.connections``: at the limit the broker stops accepting (Kafka's acceptor blocks); the
  waiting client is served once a connection closes;
* ``socket.request.receive.timeout.ms`` (Franz's key, Kafka has none): a connection whose
  request has not fully arrived within that bound is closed, however it trickles bytes,
  while a connection silent between requests is left to ``connections.max.idle.ms``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.produce.v9.response import ProduceResponse

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, consume_with, create_topic, produce_with
from tests.support.wire import (
    WireClient,
    api_versions,
    batch,
    fetch_all,
    produce,
    produce_request,
)

MIB = 1 << 20
CLOSE_TIMEOUT = 10.0
#: RSS a broker may gain while five peers each announce a 100 MiB request and send a few
#: bytes of it (a bound on memory, not on time: it is about 500 MiB when the announced
#: size is allocated up front).
RSS_GROWTH_BOUND = 64 * MIB


def rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in bytes, from ``/proc/<pid>/status``."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


@pytest.fixture
def started(broker_factory, tmp_path) -> Iterator[callable]:  # type: ignore[valid-type]
    """``started(**overrides)`` (``_`` for ``.``): a broker that must stop cleanly."""
    made: list[BrokerProcess] = []

    def start(**overrides: str) -> BrokerProcess:
        config = {k.replace("_", "."): v for k, v in overrides.items()}
        proc = broker_factory(tmp_path / f"b{len(made)}", config).start()
        made.append(proc)
        return proc

    yield start
    for proc in made:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.output()}"
        assert "Traceback" not in proc.output(), proc.output()


def round_trip(bootstrap: str, topic: str, start: int, count: int = 50) -> None:
    """confluent-kafka produces ``count`` records and reads them back from ``start``."""
    records = [OutRecord(f"k{start + i}".encode(), b"v" * 100) for i in range(count)]
    produce_with("confluent-kafka", bootstrap, topic, records)
    consumed = consume_with("confluent-kafka", bootstrap, topic, {0: start}, count)
    assert [(c.offset, c.key) for c in consumed] == [
        (start + i, r.key) for i, r in enumerate(records)
    ]


# -- memory: announced sizes are not allocated -------------------------------------------------


def test_announced_100_mib_frames_do_not_grow_the_broker(started, capsys):
    """Five peers each send a 100 MiB size prefix and 16 bytes; a real client still produces
    and consumes, and the broker's RSS (high-water mark included) grows by < 64 MiB."""
    broker = started()
    create_topic(broker.bootstrap, "alive")
    round_trip(broker.bootstrap, "alive", 0)
    rss_before, _ = rss(broker.pid)
    attackers = [WireClient.connect(broker.bootstrap) for _ in range(5)]
    try:
        for attacker in attackers:
            attacker.send_bytes(struct.pack(">i", 100 * MIB) + b"\x00\x12" + b"x" * 14)
        round_trip(broker.bootstrap, "alive", 50)
        with WireClient.connect(broker.bootstrap) as probe:
            assert api_versions(probe)
        rss_after, hwm_after = rss(broker.pid)
        for attacker in attackers:
            assert not attacker.wait_closed(0), "a peer mid-request was closed"
    finally:
        for attacker in attackers:
            attacker.close()
    with capsys.disabled():
        print(
            f"\nbroker RSS before {rss_before / MIB:.1f} MiB, after five 100 MiB prefixes "
            f"{rss_after / MIB:.1f} MiB (+{(rss_after - rss_before) / MIB:.1f}), "
            f"peak {hwm_after / MIB:.1f} MiB (+{(hwm_after - rss_before) / MIB:.1f})"
        )
    assert rss_after - rss_before < RSS_GROWTH_BOUND
    assert hwm_after - rss_before < RSS_GROWTH_BOUND


def test_a_5_mib_produce_is_served(started):
    """A large request still works, with the memory pool unbounded and bounded."""
    for pool in ("-1", str(8 * MIB)):
        broker = started(
            message_max_bytes=str(8 * MIB),
            socket_request_max_bytes=str(8 * MIB),
            queued_max_request_bytes=pool,
        )
        records = [(f"k{i}".encode(), bytes([i % 251]) * 50_000) for i in range(110)]
        big = batch(*records)
        assert len(big) > 5 * MIB
        create_topic(broker.bootstrap, "big")
        with WireClient.connect(broker.bootstrap) as client:
            response = produce(client, "big", 0, big)
            assert response.error_code == ErrorCode.NONE, response
            got = [(r.key, r.value) for r in fetch_all(client, "big")]
        assert got == records


def test_a_bounded_request_pool_mutes_instead_of_dropping(started):
    """``queued.max.request.bytes`` = ``socket.request.max.bytes`` = 1 MiB: a peer that
    announced 1 MiB and sent 100 bytes holds the whole pool; a producer whose 600 KiB request
    then arrives is muted (not answered, not closed) until that memory is released (the
    peer goes away), and is then served, its records stored."""
    broker = started(
        queued_max_request_bytes=str(MIB),
        socket_request_max_bytes=str(MIB),
        message_max_bytes=str(MIB),
    )
    create_topic(broker.bootstrap, "pool")
    hog = WireClient.connect(broker.bootstrap)
    producer = WireClient.connect(broker.bootstrap)
    try:
        hog.send_bytes(struct.pack(">i", MIB) + b"\x00\x00" + b"h" * 98)
        with WireClient.connect(broker.bootstrap) as other:  # the hog's bytes are read by now
            assert api_versions(other)
        records = [(f"k{i}".encode(), b"p" * 60_000) for i in range(10)]
        correlation_id = producer.send(produce_request({("pool", 0): batch(*records)}))
        assert not producer.wait_closed(1.0), "a muted connection was closed"
        assert producer.pending == b"", "answered while the pool was exhausted"
        hog.abort()
        response = producer.recv(ProduceResponse, correlation_id, timeout=CLOSE_TIMEOUT)
        [topic] = response.responses
        [partition] = topic.partition_responses
        assert (partition.error_code, partition.base_offset) == (ErrorCode.NONE, 0), response
        got = [(r.key, r.value) for r in fetch_all(producer, "pool")]
        assert got == records
    finally:
        hog.close()
        producer.close()


def test_queued_max_request_bytes_below_socket_request_max_bytes_is_refused(tmp_path):
    proc = BrokerProcess(tmp_path / "b", {"queued.max.request.bytes": "1000"})
    with pytest.raises(RuntimeError, match=r"queued\.max\.request\.bytes must be larger or equal"):
        proc.start()


# -- connections ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [
        {"max.connections.per.ip": "3"},
        {"max.connections.per.ip.overrides": "127.0.0.1:3"},
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "localhost:3"},
    ],
    ids=["per-ip", "override", "zero-but-overridden-by-host-name"],
)
def test_a_connection_over_max_connections_per_ip_is_closed(broker_factory, tmp_path, limits):
    broker = broker_factory(tmp_path / "b", limits).start()
    clients = [WireClient.connect(broker.bootstrap) for _ in range(3)]
    try:
        for client in clients:
            assert api_versions(client)
        with WireClient.connect(broker.bootstrap) as extra:
            assert extra.wait_closed(CLOSE_TIMEOUT), "the 4th connection from 127.0.0.1 stayed"
        for client in clients:
            assert api_versions(client), "an existing connection stopped working"
        clients.pop().close()
        deadline = time.monotonic() + CLOSE_TIMEOUT
        while True:  # the broker sees the close asynchronously: retry until the slot is free
            replacement = WireClient.connect(broker.bootstrap)
            if not replacement.wait_closed(0.2):
                break
            replacement.close()
            assert time.monotonic() < deadline, "the freed slot was never given back"
        clients.append(replacement)
        assert api_versions(replacement)
    finally:
        for client in clients:
            client.close()
    assert (
        "Rejected connection from 127.0.0.1, address already has the configured maximum "
        "of 3 connections." in broker.output()
    )
    assert broker.stop() == 0, broker.output()


def test_max_connections_waits_for_a_free_slot(broker_factory, tmp_path):
    """At ``max.connections`` the broker stops accepting (Kafka's acceptor blocks): the next
    client is neither served nor refused, and is served once a connection closes."""
    broker = broker_factory(tmp_path / "b", {"max.connections": "2"}).start()
    first, second = (WireClient.connect(broker.bootstrap) for _ in range(2))
    waiting = WireClient.connect(broker.bootstrap)  # completed by the kernel's backlog
    try:
        for client in (first, second):
            assert api_versions(client)
        correlation_id = waiting.send(
            ApiVersionsRequest(client_software_name="t", client_software_version="0")
        )
        assert not waiting.wait_closed(1.0), "the connection over max.connections was closed"
        assert waiting.pending == b"", "served over max.connections"
        first.close()
        response = waiting.recv(ApiVersionsResponse, correlation_id, timeout=CLOSE_TIMEOUT)
        assert response.error_code == ErrorCode.NONE
        assert api_versions(second)
    finally:
        for client in (first, second, waiting):
            client.close()
    assert "max.connections=2 reached" in broker.output()
    assert broker.stop() == 0, broker.output()


# -- stalled requests -------------------------------------------------------------------------


def test_a_request_trickled_past_the_receive_timeout_is_closed(broker_factory, tmp_path):
    """``socket.request.receive.timeout.ms=1000``: a peer that sends a 1000-byte request one
    byte every 100 ms (so it is never idle for long) is closed; a connection that is silent
    between requests for longer than that is not (``connections.max.idle.ms`` governs it)."""
    broker = broker_factory(tmp_path / "b", {"socket.request.receive.timeout.ms": "1000"}).start()
    silent = WireClient.connect(broker.bootstrap)
    assert api_versions(silent)
    trickler = WireClient.connect(broker.bootstrap)
    try:
        started = time.monotonic()
        trickler.send_bytes(struct.pack(">i", 1000))
        deadline = started + CLOSE_TIMEOUT
        closed = False
        sent = 0
        while not closed and time.monotonic() < deadline and sent < 990:
            try:
                trickler.send_bytes(b"\x00")
            except OSError:
                closed = True
                break
            sent += 1
            closed = trickler.wait_closed(0.1)
        assert closed, f"still open after {sent} bytes trickled"
        # A lower bound only (the broker cannot have started its clock before we sent).
        assert time.monotonic() - started >= 1.0, "closed before the receive timeout"
        assert api_versions(silent), "a connection silent between requests was closed"
    finally:
        trickler.close()
        silent.close()
    assert "was not received within socket.request.receive.timeout.ms=1000" in broker.output()
    assert broker.stop() == 0, broker.output()
