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
from collections.abc import Iterator
from pathlib import Path

import pytest

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, consume_with, create_topic, produce_with
from tests.support.wire import (
    WireClient,
    api_versions,
    batch,
    fetch_all,
    produce,
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
    """A large request still works, also with a request memory pool smaller than it (the
    pool admits a request whenever it has memory left, as Kafka's does)."""
    for pool in ("-1", str(MIB)):
        broker = started(message_max_bytes=str(8 * MIB), queued_max_request_bytes=pool)
        records = [(f"k{i}".encode(), bytes([i % 251]) * 50_000) for i in range(110)]
        big = batch(*records)
        assert len(big) > 5 * MIB
        create_topic(broker.bootstrap, "big")
        with WireClient.connect(broker.bootstrap) as client:
            response = produce(client, "big", 0, big)
            assert response.error_code == ErrorCode.NONE, response
            got = [(r.key, r.value) for r in fetch_all(client, "big")]
        assert got == records
